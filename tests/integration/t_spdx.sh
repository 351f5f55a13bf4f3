#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# t_spdx: every source file of the repository (C, C++, shell, Python, CMake, Lua, Perl, the
# man pages, the launcher) names its license, MIT (LICENSE), on one of its first two lines;
# data files, documents and the Debian changelog are exempt. Skips (77) outside a git tree.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || { echo "t_spdx: not a git tree"; exit 77; }
missing=()
n=0
while IFS= read -r f; do
  case $f in
    fuzz/corpus/* | tests/platform/thp/*) continue ;;
    *.c | *.h | *.cc | *.sh | *.py | *.cmake | *.pl | *.lua | *.1 | *.3 | *.in | */CMakeLists.txt | \
      CMakeLists.txt | .ci/run) ;;
    *) continue ;;
  esac
  n=$((n + 1))
  head -n 2 "$ROOT/$f" | grep -q 'SPDX-License-Identifier: MIT' || missing+=("$f")
done < <(git -C "$ROOT" ls-files)
if [ ${#missing[@]} -gt 0 ]; then
  echo "t_spdx: ${#missing[@]} of $n source files lack 'SPDX-License-Identifier: MIT' in their first two lines: ${missing[*]}"
  exit 1
fi
echo "t_spdx: all $n source files carry the SPDX line"
