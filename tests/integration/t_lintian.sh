#!/bin/bash
# SPDX-License-Identifier: MIT
# t_lintian: lintian on both Debian packages must report no error and no warning (E: and W:
# lines; info, pedantic and experimental tags are printed, not counted). The packages come
# from cpack -G DEB in the given build when it was configured with the prefix /usr, otherwise
# in the packaging build <build>/ax-pkgbuild that t_package uses too (configured here when
# it is not there yet, built incrementally otherwise). Also: each package's copyright file
# holds LICENSE's text in Debian's machine-readable format, and its changelog.gz is
# packaging/changelog compressed without a time stamp (gzip -n).
#
# No root needed. Exit 77 (skipped) without lintian (scripts/deps.sh installs it) or dpkg-deb.
#
# usage: t_lintian.sh build=<dir> source=<dir> cmake=<cmake> cpack=<cpack> generator=<name>
#          cc=<c compiler> cxx=<c++ compiler> version=<x.y>
set -u
export LC_ALL=C
unset DESTDIR CMAKE_GENERATOR

build='' source='' cmake=cmake cpack=cpack generator='' cc=cc cxx=c++ version=''
for a in "$@"; do
  case $a in
    build=* | source=* | cmake=* | cpack=* | generator=* | cc=* | cxx=* | version=*)
      printf -v "${a%%=*}" '%s' "${a#*=}" ;;
    *) echo "t_lintian: unknown argument '$a'"; exit 2 ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ] || [ ! -f "$source/CMakeLists.txt" ] || [ -z "$version" ]; then
  echo "t_lintian: need build=, source= and version= (see the header)"; exit 2
fi
for t in lintian dpkg-deb dpkg; do
  command -v "$t" >/dev/null || { echo "t_lintian: skipped: no $t (scripts/deps.sh)"; exit 77; }
done

W=$(mktemp -d "${TMPDIR:-/tmp}/t_lintian.XXXXXX")
trap 'rm -rf "$W"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
ok() { echo "ok   $*"; }
# quiet LOG CMD...: runs CMD with its output in $W/LOG, shown only when it fails.
quiet() {
  local log=$W/$1
  shift
  "$@" >"$log" 2>&1 && return 0
  echo "---- $* failed:"; tail -n 40 "$log"; return 1
}

prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$build/CMakeCache.txt")
if [ "$prefix" = /usr ]; then
  pkgbuild=$build
else
  pkgbuild=$build/ax-pkgbuild
  echo "t_lintian: $build has the prefix $prefix: packaging build in $pkgbuild (prefix /usr)"
  if [ ! -f "$pkgbuild/CMakeCache.txt" ]; then
    cfg=("$cmake" -S "$source" -B "$pkgbuild" -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_INSTALL_PREFIX=/usr -DAX_BUILD_TESTS=OFF -DAX_BUILD_BENCH=OFF -DAX_BUILD_FUZZ=OFF
      "-DCMAKE_C_COMPILER=$cc" "-DCMAKE_CXX_COMPILER=$cxx")
    [ -n "$generator" ] && cfg+=(-G "$generator")
    quiet configure.log "${cfg[@]}" || { echo "t_lintian: packaging build: configure failed"; exit 1; }
  fi
  quiet build.log "$cmake" --build "$pkgbuild" -j 2 ||
    { echo "t_lintian: packaging build: build failed"; exit 1; }
fi
(cd "$pkgbuild" && quiet cpack.log "$cpack" -G DEB -B "$W/debs") ||
  { echo "t_lintian: cpack -G DEB failed"; exit 1; }
arch=$(dpkg --print-architecture)
debs=("$W/debs/libaxmalloc0_${version}_$arch.deb" "$W/debs/libaxmalloc-dev_${version}_$arch.deb")
for deb in "${debs[@]}"; do
  [ -f "$deb" ] || { echo "t_lintian: cpack made no $(basename "$deb")"; exit 1; }
done

# ---- lintian ------------------------------------------------------------------------------
# -I --pedantic shows what else it would say; only E: and W: fail. (As root it says "running
# with root privileges is not recommended!", no tag.)
lintian -I --pedantic "${debs[@]}" >"$W/lintian.out" 2>&1
lrc=$?
sed 's/^/  lintian: /' "$W/lintian.out"
bad=$(grep -E '^[EW]: ' "$W/lintian.out")
if [ -n "$bad" ]; then
  fail "lintian reports errors or warnings:
$bad"
elif [ $lrc -ne 0 ]; then
  fail "lintian exited $lrc"
else
  ok "lintian --pedantic: no E: or W: on $(basename "${debs[0]}") $(basename "${debs[1]}")" \
    "($(grep -c '^[IPX]: ' "$W/lintian.out") info/pedantic/experimental tags)"
fi

# ---- copyright and changelog ----------------------------------------------------------------
# LICENSE's permission text, indented as a DEP-5 License: paragraph (empty lines: " .").
sed -n '/^Permission/,$p' "$source/LICENSE" | sed 's/^$/./; s/^/ /' >"$W/license.dep5"
holder=$(sed -n 's/^Copyright (c) //p' "$source/LICENSE")
# license_text FILE: what follows the last "License: Expat" line (the stand-alone paragraph).
license_text() {
  awk '{ l[NR] = $0 } /^License: Expat$/ { n = NR } END { for (i = n + 1; i <= NR; i++) print l[i] }' "$1"
}
for deb in "${debs[@]}"; do
  p=$(dpkg-deb -f "$deb" Package)
  x=$W/x.$p
  dpkg-deb -x "$deb" "$x"
  c=$x/usr/share/doc/$p/copyright
  if [ ! -f "$c" ]; then
    fail "$p: no /usr/share/doc/$p/copyright"
  elif ! head -n 1 "$c" | grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/'; then
    fail "$p: copyright is not in the machine-readable format: $(head -n 1 "$c")"
  elif ! grep -qxF "Copyright: $holder" "$c"; then
    fail "$p: copyright has no 'Copyright: $holder' (LICENSE's holder)"
  elif ! license_text "$c" | diff -q - "$W/license.dep5" >/dev/null; then
    fail "$p: copyright's License: Expat text differs from LICENSE's:
$(license_text "$c" | diff - "$W/license.dep5")"
  else
    ok "$p: copyright (DEP-5, $holder, LICENSE's text)"
  fi
  g=$x/usr/share/doc/$p/changelog.gz
  if [ ! -f "$g" ]; then
    fail "$p: no /usr/share/doc/$p/changelog.gz"
  elif ! gzip -dc "$g" | cmp -s - "$source/packaging/changelog"; then
    fail "$p: changelog.gz is not packaging/changelog"
  elif [ "$(od -An -tu4 -j4 -N4 "$g" | tr -d ' ')" != 0 ]; then
    fail "$p: changelog.gz has a time stamp (not gzip -n)"
  else
    top=$(head -n 1 "$source/packaging/changelog")
    ok "$p: changelog.gz (gzip -n): $top"
  fi
done

if [ "$fails" -ne 0 ]; then
  echo "t_lintian: $fails failure(s)"
  exit 1
fi
echo "t_lintian: both packages lintian-clean, copyright and changelog in place: OK"
