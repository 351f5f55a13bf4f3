#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian 12 (bookworm) packages that axmalloc's build, tests and benchmarks need.
#
#   bash scripts/deps.sh            # install what is missing (root, or sudo)
#   bash scripts/deps.sh --check    # also build and run a static C++ aarch64 hello under qemu
#
# Idempotent: when every package is already installed it touches nothing and returns at once
# (no apt-get update). Otherwise it runs `apt-get update` once, then one `apt-get install`.
set -euo pipefail

PKGS=(
  # native build
  build-essential cmake ninja-build python3 time
  # AArch64 cross build, run under qemu-user. libc6-dev-arm64-cross has libc.a and
  # libstdc++-12-dev-arm64-cross has libstdc++.a: both needed for `-static` test programs.
  gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
  libstdc++-12-dev-arm64-cross qemu-user
  # SIMD kernels (one source, several ISAs)
  libsimde-dev
  # benchmarks (host only) and the allocators we compare against
  libbenchmark-dev libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev libtbb-dev
  hyperfine gnuplot-nox
  # instruction counts (callgrind), memcheck and its client-request headers (AX_VALGRIND)
  valgrind
  # the installed package's consumer test (tests/integration/t_install.sh)
  pkgconf
  # Debian packages (cpack -G DEB, tests/integration/t_package.sh): dpkg-shlibdeps (libaxmalloc0's
  # Depends, cmake/package.cmake, which also writes shlibs: CPack's detection of shared objects
  # with file(1) is not used) and dpkg-architecture
  dpkg-dev
  # the packages' checks: lintian (tests/integration/t_lintian.sh: no error, no warning), man and groff
  # (tests/integration/t_man.sh renders the manual pages with warnings on; t_package runs man -w)
  lintian man-db groff-base
  # the heap profiler's test reads its profiles with google-pprof (tests/modes/t_prof.sh);
  # google-pprof --svg draws with graphviz's dot, without which it writes an empty file
  # (README's "Heap profiling", tests/integration/t_pprof_svg.sh and t_docs.py)
  google-perftools graphviz
  # fuzzing (scripts/fuzz.sh): clang and its libFuzzer runtime
  clang libclang-rt-14-dev
  # the format stage of scripts/test.sh (.clang-format on every C and C++ file)
  clang-format
  # real programs under LD_PRELOAD (tests/integration/t_progs.sh)
  libpython3.11-testsuite sqlite3 lua5.4 perl git stress-ng
  # glibc 2.36's own malloc tests, built from its source tarball (scripts/glibc_tests.sh)
  glibc-source
)

check=0
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    -h | --help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "deps.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

# One dpkg-query call for all packages; names that dpkg has never heard of print nothing.
missing=()
installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PKGS[@]}" 2>/dev/null |
  awk '$2 == "installed" { print $1 }' || true)
for p in "${PKGS[@]}"; do
  grep -qxF -- "$p" <<<"$installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "deps.sh: all ${#PKGS[@]} packages present"
else
  echo "deps.sh: installing ${#missing[@]} missing package(s): ${missing[*]}"
  SUDO=()
  if ((EUID != 0)); then
    if command -v sudo >/dev/null 2>&1; then
      SUDO=(sudo)
    else
      echo "deps.sh: not root and no sudo: install as root: apt-get install ${missing[*]}" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  APT=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q)
  # Retry transient mirror failures a couple of times.
  retry() {
    local n
    for n in 1 2 3; do
      "$@" && return 0
      echo "deps.sh: attempt $n failed: $*" >&2
      sleep $((n * 5))
    done
    return 1
  }
  # Always refresh the lists once before installing: a fresh machine may have none, or stale
  # ones that point at versions the mirror no longer serves.
  retry "${APT[@]}" update
  retry "${APT[@]}" install -y --no-install-recommends "${missing[@]}"
fi

if ((check)); then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cat >"$tmp/hello.cc" <<'EOF'
#include <iostream>
#include <stdexcept>
#include <string>
int main() {
  try { throw std::runtime_error("ok"); } catch (const std::exception &e) { std::cout << e.what() << "\n"; }
  return std::string("ok").size() == 2 ? 0 : 1;
}
EOF
  aarch64-linux-gnu-g++ -O2 -static -pthread -o "$tmp/hello" "$tmp/hello.cc"
  for cpu in max cortex-a57; do
    out=$(QEMU_CPU=$cpu qemu-aarch64 "$tmp/hello")
    [[ "$out" == ok ]] || { echo "deps.sh: static C++ aarch64 hello failed under qemu -cpu $cpu" >&2; exit 1; }
  done
  echo "deps.sh: check ok (static C++ aarch64 binary runs under qemu-aarch64, cpu max and cortex-a57)"
fi
