#!/bin/bash
# SPDX-License-Identifier: MIT
# t_install: install the build tree into a private prefix, check the installed files,
# then use them the way a user would and run what was built:
#   1. cmake --install <build> --prefix <tmp>/prefix: the exact file list, the SONAME
#      chain, axmalloc.o relocatable, the .pc naming the prefix; also a DESTDIR staging
#      install into /usr, whose .pc must name /usr;
#   2. the consumer project (tests/integration/consumer) through find_package(axmalloc): shared,
#      -static and axmalloc.o programs, C and C++;
#   3. plain compiler lines through pkg-config: cc prog.c $(pkg-config --cflags --libs
#      axmalloc), and -static with --static, C and C++.
# Every program must print OK; shared ones must name the installed libaxmalloc.so.0 as
# the home of ax_malloc (not the build tree's).
#
# usage: t_install.sh build=<dir> consumer=<dir> cmake=<cmake> generator=<name>
#          cc=<c compiler> cxx=<c++ compiler> libdir=<rel> includedir=<rel> version=<x.y>
#          cross=<0|1> toolchain=<file or empty> emulator=<emulator argv joined by |>
# In a cross build the consumer gets the same toolchain file and every program runs under
# the emulator (qemu-aarch64 -L /usr/aarch64-linux-gnu), LD_LIBRARY_PATH passed with -E.
set -u
export LC_ALL=C
unset LD_LIBRARY_PATH LD_PRELOAD AXMALLOC_STATS PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
unset DESTDIR CMAKE_PREFIX_PATH CMAKE_GENERATOR

build='' consumer='' cmake=cmake generator='' cc=cc cxx=c++ libdir=lib includedir=include
version='' cross=0 toolchain='' emulator=
for a in "$@"; do
  case $a in
    build=* | consumer=* | cmake=* | generator=* | cc=* | cxx=* | libdir=* | includedir=* | \
      version=* | cross=* | toolchain=* | emulator=*) printf -v "${a%%=*}" '%s' "${a#*=}" ;;
    *) echo "t_install: unknown argument '$a'"; exit 2 ;;
  esac
done
if [ ! -d "$build" ] || [ ! -f "$consumer/CMakeLists.txt" ] || [ -z "$version" ]; then
  echo "t_install: need build=, consumer= and version= (see the header)"; exit 2
fi
case $cross in 1 | ON | TRUE | true | on) cross=1 ;; *) cross=0 ;; esac
emu=()
[ -n "$emulator" ] && IFS='|' read -r -a emu <<<"$emulator"
if [ "$cross" = 1 ] && [ ${#emu[@]} -eq 0 ]; then
  echo "t_install: cross build without an emulator: cannot run the programs"; exit 2
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/t_install.XXXXXX")
trap 'rm -rf "$W"' EXIT
P=$W/prefix
L=$P/$libdir
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
# quiet LOG CMD...: runs CMD with its output in $W/LOG, shown only when it fails.
quiet() {
  local log=$W/$1
  shift
  "$@" >"$log" 2>&1 && return 0
  echo "---- $* failed:"; tail -n 40 "$log"; return 1
}

# ---- 1. install -----------------------------------------------------------------------
quiet install.log "$cmake" --install "$build" --prefix "$P" || {
  echo "t_install: cmake --install failed"; exit 1; }
expect=$(printf '%s\n' bin/axmalloc "$includedir/axmalloc.h" "$libdir/axmalloc.o" \
  "$libdir/cmake/axmalloc/axmalloc-config-version.cmake" \
  "$libdir/cmake/axmalloc/axmalloc-config.cmake" "$libdir/libaxmalloc.a" \
  "$libdir/libaxmalloc.so" "$libdir/libaxmalloc.so.0" "$libdir/libaxmalloc.so.$version" \
  "$libdir/pkgconfig/axmalloc.pc" share/man/man1/axmalloc.1.gz share/man/man3/axmalloc.3.gz |
  sort)
got=$(cd "$P" && find . ! -type d | sed 's|^\./||' | sort)
[ "$got" = "$expect" ] || fail "installed files differ from the expected list:
$(diff <(echo "$expect") <(echo "$got"))"
[ "$(readlink "$L/libaxmalloc.so")" = libaxmalloc.so.0 ] || fail "libaxmalloc.so -> $(readlink "$L/libaxmalloc.so")"
[ "$(readlink "$L/libaxmalloc.so.0")" = "libaxmalloc.so.$version" ] || fail "libaxmalloc.so.0 -> $(readlink "$L/libaxmalloc.so.0")"
if command -v readelf >/dev/null; then
  readelf -d "$L/libaxmalloc.so.$version" | grep -q 'soname: \[libaxmalloc.so.0\]' ||
    fail "libaxmalloc.so.$version: SONAME is not libaxmalloc.so.0"
  readelf -h "$L/axmalloc.o" | grep -q 'Type:.*REL' || fail "axmalloc.o is not relocatable"
fi
grep -qxF "prefix=$P" "$L/pkgconfig/axmalloc.pc" || fail "axmalloc.pc does not say prefix=$P"
# The launcher, written at install time, preloads the library of this prefix.
[ -x "$P/bin/axmalloc" ] || fail "bin/axmalloc is not executable"
grep -qxF "ax_default_lib='$L/libaxmalloc.so.0'" "$P/bin/axmalloc" ||
  fail "bin/axmalloc does not preload $L/libaxmalloc.so.0: $(grep '^ax_default_lib=' "$P/bin/axmalloc")"
# A staged install for a package: files under DESTDIR, the .pc naming the real prefix.
if quiet destdir.log env DESTDIR="$W/stage" "$cmake" --install "$build" --prefix /usr; then
  grep -qx "prefix=/usr" "$W/stage/usr/$libdir/pkgconfig/axmalloc.pc" 2>/dev/null ||
    fail "DESTDIR install: no $W/stage/usr/$libdir/pkgconfig/axmalloc.pc with prefix=/usr"
  [ -f "$W/stage/usr/$includedir/axmalloc.h" ] || fail "DESTDIR install: no axmalloc.h"
  grep -qxF "ax_default_lib='/usr/$libdir/libaxmalloc.so.0'" "$W/stage/usr/bin/axmalloc" 2>/dev/null ||
    fail "DESTDIR install: no $W/stage/usr/bin/axmalloc preloading /usr/$libdir/libaxmalloc.so.0"
else
  fail "DESTDIR=$W/stage cmake --install --prefix /usr"
fi

# run NAME CHECK PROGRAM [LD_LIBRARY_PATH]: runs PROGRAM (under the emulator when cross),
# which must exit 0 and end its output with OK. CHECK: "lib" = it must report ax_malloc in
# the installed library; "stats" = run with AXMALLOC_STATS=1, axmalloc's exit statistics
# must show mallocs > 0 (for programs that cannot ask axmalloc themselves); "-" = nothing.
nrun=0
run() {
  local name=$1 check=$2 prog=$3 llp=${4:-} out rc m
  local envs=()
  nrun=$((nrun + 1))
  [ -n "$llp" ] && envs+=("LD_LIBRARY_PATH=$llp")
  [ "$check" = stats ] && envs+=(AXMALLOC_STATS=1)
  if [ "$cross" = 1 ]; then
    local e qe=()
    for e in "${envs[@]}"; do qe+=(-E "$e"); done
    out=$("${emu[@]}" "${qe[@]}" "$prog" 2>&1)
  else
    out=$(env "${envs[@]}" "$prog" 2>&1)
  fi
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q 'OK$' <<<"$out"; then
    fail "$name: exit $rc: $out"
    return
  fi
  case $check in
    lib)
      grep -qxF "ax_malloc in: $L/libaxmalloc.so.0" <<<"$out" ||
        { fail "$name: ax_malloc not from $L/libaxmalloc.so.0: $out"; return; } ;;
    stats)
      m=$(sed -n 's/^ *mallocs *\([0-9][0-9]*\).*/\1/p' <<<"$out" | head -n 1)
      if [ -z "$m" ] || [ "$m" -eq 0 ]; then
        fail "$name: no axmalloc statistics with mallocs > 0 (glibc's malloc linked?): $out"
        return
      fi ;;
  esac
  echo "ok   $name: $(grep 'OK$' <<<"$out" | tail -n 1)${m:+ (axmalloc mallocs $m)}"
}

# ---- 2. CMake consumer ------------------------------------------------------------------
# Native: found through CMAKE_PREFIX_PATH. Cross: the toolchain's CMAKE_FIND_ROOT_PATH
# would re-root that prefix into the target sysroot, so point axmalloc_DIR at the package.
cfg=("$cmake" -S "$consumer" -B "$W/cbuild" -DCMAKE_BUILD_TYPE=Release)
[ -n "$generator" ] && cfg+=(-G "$generator")
if [ "$cross" = 1 ]; then
  cfg+=("-DCMAKE_TOOLCHAIN_FILE=$toolchain" "-Daxmalloc_DIR=$L/cmake/axmalloc")
else
  cfg+=("-DCMAKE_C_COMPILER=$cc" "-DCMAKE_CXX_COMPILER=$cxx" "-DCMAKE_PREFIX_PATH=$P")
fi
if quiet consumer-configure.log "${cfg[@]}" &&
  quiet consumer-build.log "$cmake" --build "$W/cbuild" -j 2; then
  grep -qF "axmalloc $version: $L/libaxmalloc.so.$version" "$W/consumer-configure.log" ||
    fail "consumer: find_package did not find $L/libaxmalloc.so.$version"
  # The shared ones run through the build RPATH CMake gives them.
  run cmake_c_shared lib "$W/cbuild/c_shared"
  run cmake_cxx_shared lib "$W/cbuild/cxx_shared"
  for p in c_static c_object c_object_var cxx_static cxx_object cxx_static_nobadalloc \
    cxx_object_nobadalloc; do
    run "cmake_$p" - "$W/cbuild/$p"
  done
  run cmake_c_static_nomalloc stats "$W/cbuild/c_static_nomalloc"
else
  fail "consumer project: configure or build failed"
fi

# ---- 3. pkg-config ----------------------------------------------------------------------
# PKG_CONFIG_LIBDIR replaces the default search path: only our .pc is visible (a cross
# build must not see the host's). PKG_CONFIG_SYSROOT_DIR stays unset: the .pc paths are
# already the real ones.
PKGCONF=$(command -v pkg-config || command -v pkgconf) || PKGCONF=
if [ -z "$PKGCONF" ]; then
  fail "pkg-config not found (Debian package pkgconf)"
else
  export PKG_CONFIG_LIBDIR=$L/pkgconfig
  mv=$("$PKGCONF" --modversion axmalloc 2>&1)
  [ "$mv" = "$version" ] || fail "pkg-config --modversion axmalloc: '$mv', expected $version"
  for c in "c_shared cc main.c" "cxx_shared cxx main.cc" "c_static cc main.c" \
    "nomalloc_static cc nomalloc.c" "cxx_static cxx main.cc" \
    "nobadalloc_static cxx nobadalloc.cc"; do
    read -r name comp source <<<"$c"
    comp=${!comp}
    if [[ $name == *_static ]]; then
      flags=$("$PKGCONF" --static --cflags --libs axmalloc) && flags="-static $flags"
    else
      flags=$("$PKGCONF" --cflags --libs axmalloc)
    fi
    # Word splitting of $flags is intended, as in a Makefile.
    # shellcheck disable=SC2086
    if ! quiet "pc_$name.log" "$comp" -o "$W/pc_$name" "$consumer/$source" $flags; then
      fail "pc_$name: $comp ... $flags: build failed"
    elif [ "$name" = nomalloc_static ]; then
      run "pc_$name" stats "$W/pc_$name"
    elif [[ $name == *_static ]]; then
      run "pc_$name" - "$W/pc_$name"
    else # no RPATH: found through LD_LIBRARY_PATH
      run "pc_$name" lib "$W/pc_$name" "$L"
    fi
  done
fi

if [ "$fails" -ne 0 ]; then
  echo "t_install: $fails failure(s) ($nrun programs run)"
  exit 1
fi
echo "t_install: installed tree, CMake package and pkg-config file work ($nrun programs): OK"
