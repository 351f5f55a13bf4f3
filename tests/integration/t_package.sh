#!/bin/bash
# SPDX-License-Identifier: MIT
# t_package: build the Debian packages with CPack, install them on this machine, use them
# the way a user would, and remove them again:
#   1. cpack -G DEB: from the given build when it was configured with the prefix /usr,
#      otherwise from a packaging build of the same sources in <build>/ax-pkgbuild
#      (-DCMAKE_INSTALL_PREFIX=/usr, library only: GNUInstallDirs gives /usr its
#      lib/<multiarch>, see cmake/package.cmake); then the two files' names, control fields
#      (Depends, shlibs, the ldconfig trigger, no maintainer script, the Maintainer that
#      packaging/copyright and changelog name) and exact file lists;
#   2. apt-get install ./libaxmalloc0_*.deb ./libaxmalloc-dev_*.deb: dpkg -L lists every file,
#      they exist, ldconfig's cache has libaxmalloc.so.0, man -w finds axmalloc(1) and (3);
#   3. cc prog.c $(pkg-config --cflags --libs axmalloc) (C, C++, -static --static) and the
#      project tests/integration/consumer through find_package(axmalloc), both against /usr, nothing
#      else on any search path; every program must print OK and shared ones must name
#      /usr/lib/<multiarch>/libaxmalloc.so.0 as the home of ax_malloc;
#   4. /usr/bin/axmalloc: --version, and sort and python3 run through it (their output, the
#      --verbose banner, the --stats report);
#   5. apt-get remove --purge: both packages gone, every file of theirs gone, ldconfig's
#      cache without libaxmalloc.
# The packages are purged on every exit after the install, failed or not (trap).
#
# Root only: exit 77 (skipped) when not root or without dpkg. Also skipped when
# libaxmalloc0 or libaxmalloc-dev is installed (in any state) or a file they would own is
# already in /usr (cmake --install --prefix /usr?): the machine's own install is not
# touched. One run at a time per machine (a lock file, against another build's ctest); a
# run killed while the packages were installed is cleaned up by the next one (a marker
# file says the packages are the test's).
#
# usage: t_package.sh build=<dir> source=<dir> consumer=<dir> cmake=<cmake> cpack=<cpack>
#          generator=<name> cc=<c compiler> cxx=<c++ compiler> version=<x.y>
set -u
export LC_ALL=C
unset LD_LIBRARY_PATH LD_PRELOAD PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
unset DESTDIR CMAKE_PREFIX_PATH CMAKE_GENERATOR axmalloc_DIR
for v in $(env | sed -n 's/^\(AXMALLOC_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export DEBIAN_FRONTEND=noninteractive

build='' source='' consumer='' cmake=cmake cpack=cpack generator='' cc=cc cxx=c++ version=''
for a in "$@"; do
  case $a in
    build=* | source=* | consumer=* | cmake=* | cpack=* | generator=* | cc=* | cxx=* | \
      version=*) printf -v "${a%%=*}" '%s' "${a#*=}" ;;
    *) echo "t_package: unknown argument '$a'"; exit 2 ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ] || [ ! -f "$source/CMakeLists.txt" ] ||
  [ ! -f "$consumer/CMakeLists.txt" ] || [ -z "$version" ]; then
  echo "t_package: need build=, source=, consumer= and version= (see the header)"; exit 2
fi

PKGS=(libaxmalloc0 libaxmalloc-dev)
skip() {
  echo "t_package: skipped: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (it installs packages system-wide)"
for t in dpkg dpkg-deb dpkg-query apt-get; do
  command -v "$t" >/dev/null || skip "no $t (not a Debian system)"
done
for t in dpkg-shlibdeps dpkg-architecture; do
  command -v "$t" >/dev/null ||
    { echo "t_package: no $t: install dpkg-dev (scripts/deps.sh)"; exit 1; }
done
PKGCONF=$(command -v pkg-config || command -v pkgconf) ||
  { echo "t_package: no pkg-config: install pkgconf (scripts/deps.sh)"; exit 1; }
arch=$(dpkg --print-architecture)
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
[ -n "$ma" ] || { echo "t_package: dpkg-architecture gave no multiarch triplet"; exit 1; }
L=/usr/lib/$ma
# ax_malloc's file as the dynamic linker names it: /lib/<multiarch> on a merged-/usr system
# (/lib -> usr/lib, ldconfig lists /lib first), which is the same file.
same_lib() { [ "$(readlink -f "$1")" = "$(readlink -f "$L/libaxmalloc.so.0")" ]; }
# What the packages install (non-directories), as dpkg-deb lists them.
RUNTIME_FILES=("./usr/bin/axmalloc" "./usr/lib/$ma/libaxmalloc.so.0"
  "./usr/lib/$ma/libaxmalloc.so.$version" "./usr/share/man/man1/axmalloc.1.gz"
  "./usr/share/doc/libaxmalloc0/copyright" "./usr/share/doc/libaxmalloc0/changelog.gz")
DEV_FILES=("./usr/include/axmalloc.h" "./usr/lib/$ma/axmalloc.o"
  "./usr/lib/$ma/cmake/axmalloc/axmalloc-config-version.cmake"
  "./usr/lib/$ma/cmake/axmalloc/axmalloc-config.cmake" "./usr/lib/$ma/libaxmalloc.a"
  "./usr/lib/$ma/libaxmalloc.so" "./usr/lib/$ma/pkgconfig/axmalloc.pc"
  "./usr/share/man/man3/axmalloc.3.gz" "./usr/share/doc/libaxmalloc-dev/copyright"
  "./usr/share/doc/libaxmalloc-dev/changelog.gz")

# ---- one run per machine; a killed run's packages ------------------------------------
lockdir=/run/lock
[ -d "$lockdir" ] || lockdir=/tmp
exec 9>"$lockdir/axmalloc-t_package.lock"
if command -v flock >/dev/null && ! flock -w 600 9; then
  echo "t_package: another t_package held $lockdir/axmalloc-t_package.lock for 10 minutes"
  exit 1
fi
marker=/var/tmp/axmalloc-t_package.installed
# pkg_status PACKAGE: dpkg's status word for it ("installed", "config-files", ...), or
# nothing when dpkg has never heard of it or it was purged.
pkg_status() {
  dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null | grep -v '^not-installed$'
}
if [ -f "$marker" ]; then
  echo "t_package: $marker: a killed run left the packages installed: purging them"
  dpkg --purge "${PKGS[@]}" >/dev/null 2>&1
  rm -f "$marker"
fi
for p in "${PKGS[@]}"; do
  s=$(pkg_status "$p")
  [ -z "$s" ] || skip "$p is on this machine (status $s): it is not this test's to remove" \
    "(apt-get remove --purge ${PKGS[*]} to run the test)"
done
for f in "${RUNTIME_FILES[@]}" "${DEV_FILES[@]}"; do
  if [ -e "${f#.}" ] || [ -L "${f#.}" ]; then
    skip "${f#.} exists (an install into /usr outside dpkg?): not overwriting it"
  fi
done
if ldconfig -p | grep -q 'libaxmalloc\.so'; then
  skip "ldconfig already knows a libaxmalloc: $(ldconfig -p | grep 'libaxmalloc\.so' | head -n 1)"
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/t_package.XXXXXX")
chmod 755 "$W" # apt's _apt user reads the .deb files from here
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then
    echo "t_package: purging ${PKGS[*]} (cleanup)"
    dpkg --purge "${PKGS[@]}" >/dev/null 2>&1 || echo "t_package: dpkg --purge failed"
    rm -f "$marker"
  fi
  rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
ok() { echo "ok   $*"; }
phase() { echo "---- $* (at ${SECONDS}s)"; }
# quiet LOG CMD...: runs CMD with its output in $W/LOG, shown only when it fails.
quiet() {
  local log=$W/$1
  shift
  "$@" >"$log" 2>&1 && return 0
  echo "---- $* failed:"; tail -n 40 "$log"; return 1
}
# abort MESSAGE: give up (the trap purges what was installed).
abort() {
  fail "$*"
  echo "t_package: $fails failure(s), stopped"
  exit 1
}

# ---- 1. the packages ------------------------------------------------------------------
phase "1. cpack -G DEB"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$build/CMakeCache.txt")
if [ "$prefix" = /usr ]; then
  pkgbuild=$build
  echo "t_package: packaging $build (prefix /usr)"
else
  # kept in the build tree: t_lintian packages from the same one (and a rerun is incremental)
  pkgbuild=$build/ax-pkgbuild
  echo "t_package: $build has the prefix $prefix: packaging build in $pkgbuild (prefix /usr)"
  cfg=("$cmake" -S "$source" -B "$pkgbuild" -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_INSTALL_PREFIX=/usr -DAX_BUILD_TESTS=OFF -DAX_BUILD_BENCH=OFF -DAX_BUILD_FUZZ=OFF
    "-DCMAKE_C_COMPILER=$cc" "-DCMAKE_CXX_COMPILER=$cxx")
  [ -n "$generator" ] && cfg+=(-G "$generator")
  quiet pkgbuild-configure.log "${cfg[@]}" || abort "packaging build: configure failed"
  quiet pkgbuild-build.log "$cmake" --build "$pkgbuild" -j 2 || abort "packaging build: build failed"
fi
D=$W/debs
(cd "$pkgbuild" && quiet cpack.log "$cpack" -G DEB -B "$D") || abort "cpack -G DEB failed"
# (no warning either: CPack's "missing file" for the maintainer scripts it was kept from
# writing was one, cmake/package.cmake)
if grep -q 'CPack Warning' "$W/cpack.log"; then
  fail "cpack -G DEB warned: $(grep -A3 'CPack Warning' "$W/cpack.log" | head -n 8)"
fi
RT=$D/libaxmalloc0_${version}_$arch.deb
DEV=$D/libaxmalloc-dev_${version}_$arch.deb
got=$(cd "$D" && ls ./*.deb 2>/dev/null | sed 's|^\./||' | sort)
want=$(printf '%s\n' "$(basename "$DEV")" "$(basename "$RT")" | sort)
[ "$got" = "$want" ] || abort "cpack made '$(tr '\n' ' ' <<<"$got")', expected '$(tr '\n' ' ' <<<"$want")'"
ok "cpack: $(tr '\n' ' ' <<<"$got")"

# field DEB NAME: the control field
field() { dpkg-deb -f "$1" "$2"; }
check_field() {
  local deb=$1 name=$2 pattern=$3 v
  v=$(field "$deb" "$name")
  if grep -qxE -- "$pattern" <<<"$v"; then
    ok "$(basename "$deb"): $name: $v"
  else
    fail "$(basename "$deb"): $name is '$v', expected /$pattern/"
  fi
}
vre=${version//./\\.}
check_field "$RT" Package libaxmalloc0
check_field "$RT" Version "$vre"
check_field "$RT" Architecture "$arch"
check_field "$RT" Section libs
# dpkg-shlibdeps' list: libc6 and whatever else the library links (libgcc-s1 for the
# profiler's unwinder), each with a minimum version
check_field "$RT" Depends '([a-z0-9.+-]+ \(>= [0-9.]+\), )*libc6 \(>= [0-9.]+\)(, [a-z0-9.+-]+ \(>= [0-9.]+\))*'
check_field "$DEV" Package libaxmalloc-dev
check_field "$DEV" Version "$vre"
check_field "$DEV" Architecture "$arch"
check_field "$DEV" Section libdevel
check_field "$DEV" Depends "libaxmalloc0 \(= $vre\)"
# one identity: the Maintainer field, packaging/copyright's Upstream-Contact and the
# changelog's signature (cmake/package.cmake's default, unless configured otherwise)
contact=$(sed -n 's/^Upstream-Contact: //p' "$source/packaging/copyright")
signed=$(sed -n 's/^ -- \(.*>\)  .*/\1/p' "$source/packaging/changelog" | head -n 1)
[ "$contact" = "$signed" ] && ok "packaging/copyright and changelog: $contact" ||
  fail "packaging/copyright's Upstream-Contact '$contact' is not the changelog's signature '$signed'"
configured=$(sed -n 's/^AX_DEB_MAINTAINER:[A-Z]*=//p' "$pkgbuild/CMakeCache.txt")
for deb in "$RT" "$DEV"; do
  check_field "$deb" Maintainer '.+ <.+@.+>'
  if [ "$configured" = "$contact" ] || [ -z "$configured" ]; then
    m=$(field "$deb" Maintainer)
    [ "$m" = "$contact" ] || fail "$(basename "$deb"): Maintainer '$m' is not packaging/copyright's '$contact'"
  fi
  [ "$(field "$deb" Description | wc -l)" -ge 3 ] ||
    fail "$(basename "$deb"): no long description: $(field "$deb" Description)"
done
shlibs=$(dpkg-deb -I "$RT" shlibs 2>&1)
[ "$shlibs" = "libaxmalloc 0 libaxmalloc0 (>= $version)" ] &&
  ok "libaxmalloc0 shlibs: $shlibs" || fail "libaxmalloc0 shlibs: '$shlibs'"
triggers=$(dpkg-deb -I "$RT" triggers 2>&1)
grep -qx 'activate-noawait ldconfig' <<<"$triggers" &&
  ok "libaxmalloc0 triggers: $triggers" || fail "libaxmalloc0 triggers: '$triggers'"
# No maintainer scripts: ldconfig runs through the trigger (cmake/package.cmake).
members=$(dpkg-deb --ctrl-tarfile "$RT" | tar -t | sed 's|^\./||' | grep -v '^$' | sort | xargs)
[ "$members" = "control md5sums shlibs triggers" ] && ok "libaxmalloc0 control members: $members" ||
  fail "libaxmalloc0 control members: '$members', expected control md5sums shlibs triggers"
# files DEB: its non-directories, as dpkg-deb -c names them ("./usr/...")
files() { dpkg-deb --fsys-tarfile "$1" | tar -t | grep -v '/$' | sort; }
for which in RT DEV; do
  deb=${!which}
  if [ "$which" = RT ]; then want=$(printf '%s\n' "${RUNTIME_FILES[@]}" | sort); else
    want=$(printf '%s\n' "${DEV_FILES[@]}" | sort); fi
  got=$(files "$deb")
  [ "$got" = "$want" ] && ok "$(basename "$deb"): $(wc -l <<<"$got") files, as expected" ||
    fail "$(basename "$deb"): files differ from the expected list:
$(diff <(echo "$want") <(echo "$got"))"
done
# (the listing read whole first: grep -q stopping early kills dpkg-deb's tar with SIGPIPE)
listing=$(dpkg-deb -c "$RT")
grep -q '^-rwxr-xr-x root/root .* \./usr/bin/axmalloc$' <<<"$listing" ||
  fail "libaxmalloc0: ./usr/bin/axmalloc is not -rwxr-xr-x root/root: $(grep bin/axmalloc <<<"$listing")"

# ---- 2. install -------------------------------------------------------------------------
phase "2. apt-get install"
APT=(apt-get -q -y -o DPkg::Lock::Timeout=300 --no-install-recommends)
installed=1
echo "$$ ${PKGS[*]}" >"$marker"
quiet apt-install.log "${APT[@]}" install "$RT" "$DEV" ||
  abort "apt-get install ./$(basename "$RT") ./$(basename "$DEV") failed"
for p in "${PKGS[@]}"; do
  s=$(dpkg-query -W -f='${Status} ${Version}' "$p" 2>&1)
  [ "$s" = "install ok installed $version" ] && ok "$p: $s" || fail "$p: dpkg status '$s'"
done
listed=$( (dpkg -L libaxmalloc0; dpkg -L libaxmalloc-dev) 2>&1 | sort)
for f in "${RUNTIME_FILES[@]}" "${DEV_FILES[@]}"; do
  f=${f#.}
  grep -qxF "$f" <<<"$listed" || fail "dpkg -L does not list $f"
  [ -e "$f" ] || fail "$f: not on the disk after the install"
done
ok "dpkg -L: all $((${#RUNTIME_FILES[@]} + ${#DEV_FILES[@]})) files listed and present"
ldc=$(ldconfig -p | grep 'libaxmalloc\.so\.0 ')
ldf=$(sed -n 's/.* => //p' <<<"$ldc" | head -n 1)
[ -n "$ldf" ] && same_lib "$ldf" && ok "ldconfig -p: $(head -n 1 <<<"$ldc" | sed 's/^[[:space:]]*//')" ||
  fail "ldconfig -p does not list $L/libaxmalloc.so.0 (the ldconfig trigger did not run?): $ldc"

# The manual pages, where man finds them (man-db: scripts/deps.sh).
if command -v man >/dev/null; then
  for sec in 1 3; do
    m=$(man -w "$sec" axmalloc 2>&1)
    [ "$m" = "/usr/share/man/man$sec/axmalloc.$sec.gz" ] && ok "man -w $sec axmalloc: $m" ||
      fail "man -w $sec axmalloc: '$m', expected /usr/share/man/man$sec/axmalloc.$sec.gz"
  done
  m=$(man -w axmalloc 2>&1)
  [ "$m" = /usr/share/man/man1/axmalloc.1.gz ] && ok "man -w axmalloc: $m" ||
    fail "man -w axmalloc: '$m', expected /usr/share/man/man1/axmalloc.1.gz"
  m=$(MANPAGER=cat MANWIDTH=80 man axmalloc 2>&1 | col -b | sed -n '/^NAME$/{n;p;q}')
  grep -q '^ *axmalloc - ' <<<"$m" && ok "man axmalloc: NAME:$m" || fail "man axmalloc: NAME is '$m'"
else
  fail "no man: install man-db (scripts/deps.sh)"
fi

# ---- 3. consumers against /usr -------------------------------------------------------------
phase "3. consumers against /usr"
# run NAME CHECK PROGRAM: PROGRAM must exit 0 and end its output with OK. CHECK: "lib" = it
# must report ax_malloc in $L/libaxmalloc.so.0 (or /lib/<multiarch>'s, the same file on a
# merged-/usr system), and print axmalloc's banner under
# AXMALLOC_VERBOSE=1; "stats" = axmalloc's exit statistics, with mallocs > 0, under
# AXMALLOC_STATS=1; "-" = nothing more.
nrun=0
run() {
  local name=$1 check=$2 prog=$3 out rc m=
  local envs=()
  nrun=$((nrun + 1))
  [ "$check" = lib ] && envs+=(AXMALLOC_VERBOSE=1)
  [ "$check" = stats ] && envs+=(AXMALLOC_STATS=1)
  out=$(env "${envs[@]}" "$prog" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q 'OK$' <<<"$out"; then
    fail "$name: exit $rc: $out"
    return
  fi
  case $check in
    lib)
      m=$(sed -n 's/^ax_malloc in: //p' <<<"$out")
      [ -n "$m" ] && same_lib "$m" ||
        { fail "$name: ax_malloc not from $L/libaxmalloc.so.0: $out"; return; }
      m=
      grep -qF "axmalloc: version $version," <<<"$out" ||
        { fail "$name: no axmalloc banner under AXMALLOC_VERBOSE=1: $out"; return; } ;;
    stats)
      m=$(sed -n 's/^ *mallocs *\([0-9][0-9]*\).*/\1/p' <<<"$out" | head -n 1)
      if [ -z "$m" ] || [ "$m" -eq 0 ]; then
        fail "$name: no axmalloc statistics with mallocs > 0: $out"
        return
      fi ;;
  esac
  echo "ok   $name: $(grep 'OK$' <<<"$out" | tail -n 1)${m:+ (axmalloc mallocs $m)}"
}

mv=$("$PKGCONF" --modversion axmalloc 2>&1)
[ "$mv" = "$version" ] && ok "pkg-config --modversion axmalloc: $mv" ||
  fail "pkg-config --modversion axmalloc: '$mv', expected $version"
for c in "c_shared cc main.c" "cxx_shared cxx main.cc" "nomalloc_static cc nomalloc.c" \
  "cxx_static cxx main.cc"; do
  read -r name comp src <<<"$c"
  comp=${!comp}
  if [[ $name == *_static ]]; then
    flags=$("$PKGCONF" --static --cflags --libs axmalloc) && flags="-static $flags"
  else
    flags=$("$PKGCONF" --cflags --libs axmalloc)
  fi
  # Word splitting of $flags is intended, as in a Makefile.
  # shellcheck disable=SC2086
  if ! quiet "pc_$name.log" "$comp" -o "$W/pc_$name" "$consumer/$src" $flags; then
    fail "pc_$name: $comp $src $flags: build failed"
  elif [ "$name" = nomalloc_static ]; then
    run "pkg-config $name" stats "$W/pc_$name"
  elif [[ $name == *_static ]]; then
    run "pkg-config $name" - "$W/pc_$name"
  else # found by the dynamic linker in its default path, like any Debian library
    run "pkg-config $name" lib "$W/pc_$name"
  fi
done

cfg=("$cmake" -S "$consumer" -B "$W/cbuild" -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_C_COMPILER=$cc" "-DCMAKE_CXX_COMPILER=$cxx")
[ -n "$generator" ] && cfg+=(-G "$generator")
if quiet consumer-configure.log "${cfg[@]}" &&
  quiet consumer-build.log "$cmake" --build "$W/cbuild" -j 2; then
  grep -qF "axmalloc $version: $L/libaxmalloc.so.$version" "$W/consumer-configure.log" &&
    ok "find_package(axmalloc): $(grep -F "axmalloc $version:" "$W/consumer-configure.log" | sed 's/^-- //')" ||
    fail "consumer: find_package did not find $L/libaxmalloc.so.$version: $(grep 'axmalloc' "$W/consumer-configure.log")"
  run "cmake c_shared" lib "$W/cbuild/c_shared"
  run "cmake cxx_shared" lib "$W/cbuild/cxx_shared"
  for p in c_static c_object cxx_static cxx_object cxx_static_nobadalloc; do
    run "cmake $p" - "$W/cbuild/$p"
  done
  run "cmake c_static_nomalloc" stats "$W/cbuild/c_static_nomalloc"
else
  fail "tests/integration/consumer against /usr: configure or build failed"
fi

# ---- 4. the launcher ----------------------------------------------------------------------
phase "4. /usr/bin/axmalloc"
A=/usr/bin/axmalloc
v=$(PATH=/usr/bin:/bin axmalloc --version 2>&1)
[ "$v" = "axmalloc $version" ] && ok "axmalloc --version: $v" ||
  fail "axmalloc --version: '$v', expected 'axmalloc $version'"
"$A" --help | grep -qF "$L/libaxmalloc.so.0" && ok "axmalloc --help names $L/libaxmalloc.so.0" ||
  fail "axmalloc --help does not name $L/libaxmalloc.so.0"
pre=$("$A" -- env 2>&1 | grep '^LD_PRELOAD=')
[ "$pre" = "LD_PRELOAD=$L/libaxmalloc.so.0" ] && ok "axmalloc -- env: $pre" ||
  fail "axmalloc -- env: '$pre', expected LD_PRELOAD=$L/libaxmalloc.so.0"
out=$(printf 'pear\napple\nfig\n' | "$A" --verbose -- sort 2>"$W/sort.err")
if [ "$out" = "$(printf 'apple\nfig\npear')" ] &&
  grep -qF "axmalloc: version $version," "$W/sort.err"; then
  ok "axmalloc --verbose -- sort: sorted, $(grep -F 'axmalloc: version' "$W/sort.err")"
else
  fail "axmalloc --verbose -- sort: '$out'; stderr: $(cat "$W/sort.err")"
fi
out=$("$A" --stats python3 -c 'print(sum(range(10)))' 2>"$W/py.err")
m=$(sed -n 's/^ *mallocs *\([0-9][0-9]*\).*/\1/p' "$W/py.err" | head -n 1)
if [ "$out" = 45 ] && [ -n "$m" ] && [ "$m" -gt 0 ]; then
  ok "axmalloc --stats python3 -c 'print(sum(range(10)))': 45, axmalloc mallocs $m"
else
  fail "axmalloc --stats python3: '$out'; stderr: $(head -n 5 "$W/py.err")"
fi

# ---- 5. remove ----------------------------------------------------------------------------
phase "5. apt-get remove --purge"
if quiet apt-remove.log "${APT[@]}" remove --purge "${PKGS[@]}"; then
  installed=0
  rm -f "$marker"
  for p in "${PKGS[@]}"; do
    s=$(pkg_status "$p")
    [ -z "$s" ] || fail "$p: still known to dpkg after the purge (status $s)"
  done
  left=()
  while read -r f; do
    [ -n "$f" ] && { [ -e "$f" ] || [ -L "$f" ]; } && [ ! -d "$f" ] && left+=("$f")
  done <<<"$listed"
  [ ${#left[@]} -eq 0 ] || fail "left behind by the purge: ${left[*]}"
  ldc=$(ldconfig -p | grep 'libaxmalloc\.so')
  [ -z "$ldc" ] || fail "ldconfig -p still lists libaxmalloc after the purge: $ldc"
  [ ${#left[@]} -eq 0 ] && [ -z "$ldc" ] &&
    ok "apt-get remove --purge: packages, files and the ldconfig entry gone"
else
  fail "apt-get remove --purge ${PKGS[*]} failed"
fi

if [ "$fails" -ne 0 ]; then
  echo "t_package: $fails failure(s) ($nrun programs run)"
  exit 1
fi
echo "t_package: packages built, installed, used ($nrun programs, the launcher) and removed: OK"
