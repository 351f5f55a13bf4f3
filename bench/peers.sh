#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# peers.sh [DIR] -- optional: build the allocators Debian does not package from their public
# release tags, so that anyone can add them to a comparison (needs internet, git, cmake, a C
# and C++ compiler; about 3 minutes on 2 cores). Every command is printed before it runs.
#
#   snmalloc  0.7.5   github.com/microsoft/snmalloc   libsnmallocshim.so (CMake)
#   mimalloc  v3.4.3  github.com/microsoft/mimalloc   libmimalloc.so     (CMake)
#   rpmalloc  2.0.1   github.com/mjansson/rpmalloc    librpmalloc.so     (one cc command: its
#                                                     own build is a ninja generator script)
#
# DIR defaults to build/peers (git ignores build*/). Prints the AX_EXTRA_PEERS line last:
#
#   bash bench/peers.sh
#   AX_EXTRA_PEERS="$(bash bench/peers.sh | tail -n 1)" bash scripts/bench.sh
#
# Environment: SNMALLOC_TAG, MIMALLOC_TAG, RPMALLOC_TAG override the tags; JOBS (2).
# The default report (scripts/bench.sh) leaves these peers out: its readers rebuild it from
# Debian packages alone.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${1:-$ROOT/build/peers}
SNMALLOC_TAG=${SNMALLOC_TAG:-0.7.5}
MIMALLOC_TAG=${MIMALLOC_TAG:-v3.4.3}
RPMALLOC_TAG=${RPMALLOC_TAG:-2.0.1}
JOBS=${JOBS:-2}
mkdir -p "$DIR"
cd "$DIR"

run() { printf '+ %s\n' "$*" >&2; "$@"; }
# clone URL TAG DIR: a shallow clone of the tag (once; a different tag starts over).
clone() {
  if [[ -d $3/.git && $(git -C "$3" describe --tags 2>/dev/null) == "$2" ]]; then
    echo "peers.sh: $3 is at $2 already" >&2
    return
  fi
  rm -rf "$3"
  run git clone --quiet --depth 1 --branch "$2" "$1" "$3"
}

# snmalloc: the LD_PRELOAD shim, no tests.
clone https://github.com/microsoft/snmalloc "$SNMALLOC_TAG" snmalloc
run cmake -S snmalloc -B snmalloc/build -DCMAKE_BUILD_TYPE=Release -DSNMALLOC_BUILD_TESTING=OFF
run cmake --build snmalloc/build -j "$JOBS" --target snmallocshim

# mimalloc 3: the shared library only (overriding malloc, its default).
clone https://github.com/microsoft/mimalloc "$MIMALLOC_TAG" mimalloc
run cmake -S mimalloc -B mimalloc/build -DCMAKE_BUILD_TYPE=Release -DMI_BUILD_TESTS=OFF \
  -DMI_BUILD_STATIC=OFF -DMI_BUILD_OBJECT=OFF
run cmake --build mimalloc/build -j "$JOBS" --target mimalloc

# rpmalloc: what its configure.py builds as the shared library (rpmalloc.c includes malloc.c,
# the malloc/free overrides, with ENABLE_OVERRIDE at its default 1).
clone https://github.com/mjansson/rpmalloc "$RPMALLOC_TAG" rpmalloc
run cc -O3 -DNDEBUG -DENABLE_DYNAMIC_LINK=1 -fPIC -shared -pthread -Irpmalloc/rpmalloc \
  -o rpmalloc/librpmalloc.so rpmalloc/rpmalloc/rpmalloc.c

sn=$DIR/snmalloc/build/libsnmallocshim.so
mi=$(find "$DIR/mimalloc/build" -maxdepth 1 -name 'libmimalloc.so' -print -quit)
rp=$DIR/rpmalloc/librpmalloc.so
for f in "$sn" "$mi" "$rp"; do
  [[ -n $f && -e $f ]] || { echo "peers.sh: ${f:-libmimalloc.so} was not built" >&2; exit 1; }
done
echo "peers.sh: built; add them to a run with AX_EXTRA_PEERS:" >&2
echo "snmalloc=$sn mimalloc3=$mi rpmalloc=$rp"
