# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared helpers for scripts/test.sh and scripts/bench.sh (sourced, not run).
# Expects ROOT (the repository root) to be set.

# ax_configure <dir> [toolchain-file] [cmake args...]
# Configures <dir> (Release) for this checkout. A cache left by another source tree (a copied
# checkout) or made with another toolchain file is dropped first; an existing build keeps its
# generator, a new one uses Ninja when installed.
ax_configure() {
  local dir=$1 tc=${2:-} args=()
  shift $(($# < 2 ? $# : 2))
  if [[ -f $dir/CMakeCache.txt ]]; then
    local home old_tc
    home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$dir/CMakeCache.txt")
    old_tc=$(sed -n 's/^CMAKE_TOOLCHAIN_FILE:[A-Z]*=//p' "$dir/CMakeCache.txt")
    if [[ $home != "$ROOT" || $old_tc != "$tc" ]]; then
      echo "$dir was configured for '$home' (toolchain '$old_tc'): reconfiguring"
      rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
    fi
  fi
  if [[ ! -f $dir/CMakeCache.txt ]] && command -v ninja >/dev/null 2>&1; then
    args+=(-G Ninja)
  fi
  [[ -z $tc ]] || args+=("-DCMAKE_TOOLCHAIN_FILE=$tc")
  cmake -S "$ROOT" -B "$dir" "${args[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
}

# ax_build <dir>
ax_build() { cmake --build "$1" -j "${JOBS:-2}"; }
