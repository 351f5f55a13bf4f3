#!/bin/bash
# SPDX-License-Identifier: MIT
# t_man: the manual pages man/axmalloc.1 (the launcher) and man/axmalloc.3 (the API and the
# options), from the source tree:
#   1. each renders with man -l and with warnings on (groff -man -ww -z; man --warnings, as
#      lintian runs it) without a warning; lexgrog reads its NAME line (lintian's whatis
#      check); its .TH names its section and this version;
#   2. they say what the sources say: axmalloc.1 has every option, variable and exit status
#      of `axmalloc --help` (the build tree's launcher); axmalloc.3 every ax_* function of
#      include/axmalloc.h and every AXMALLOC_* variable src/ reads; both every signal name
#      AXMALLOC_PROF_SIGNAL takes (src/common/options.c). (Not the other way round: a page
#      may document what is on its way.)
#
# No root, no build beyond the launcher; about a second. Exit 77 (skipped) without man or
# groff (man-db, groff-base: scripts/deps.sh).
#
# usage: t_man.sh source=<dir> launcher=<build>/axmalloc version=<x.y>
set -u
export LC_ALL=C MANWIDTH=100
unset MANPAGER PAGER MANOPT MANPATH

source='' launcher='' version=''
for a in "$@"; do
  case $a in
    source=* | launcher=* | version=*) printf -v "${a%%=*}" '%s' "${a#*=}" ;;
    *) echo "t_man: unknown argument '$a'"; exit 2 ;;
  esac
done
if [ ! -f "$source/man/axmalloc.1" ] || [ ! -x "$launcher" ] || [ -z "$version" ]; then
  echo "t_man: need source=, launcher= and version= (see the header)"; exit 2
fi
for t in man groff; do
  command -v "$t" >/dev/null || { echo "t_man: skipped: no $t (scripts/deps.sh)"; exit 77; }
done

W=$(mktemp -d "${TMPDIR:-/tmp}/t_man.XXXXXX")
trap 'rm -rf "$W"' EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
ok() { echo "ok   $*"; }

# ---- 1. rendering -------------------------------------------------------------------------
for sec in 1 3; do
  page=$source/man/axmalloc.$sec
  name=axmalloc.$sec
  groff -man -ww -z "$page" >"$W/groff.$sec" 2>&1
  [ $? -eq 0 ] && [ ! -s "$W/groff.$sec" ] && ok "$name: groff -man -ww -z: no warning" ||
    fail "$name: groff -man -ww -z: $(cat "$W/groff.$sec")"
  # lintian: man --warnings -E UTF-8 -l -Tutf8 -Z, its stderr must be empty
  LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" >/dev/null 2>"$W/warn.$sec"
  [ $? -eq 0 ] && [ ! -s "$W/warn.$sec" ] && ok "$name: man --warnings -l: no warning" ||
    fail "$name: man --warnings -l: $(cat "$W/warn.$sec")"
  man -l "$page" 2>"$W/err.$sec" | col -b >"$W/text.$sec"
  if [ -s "$W/err.$sec" ] || ! grep -q "^AXMALLOC($sec)[[:space:]]" "$W/text.$sec" ||
    ! grep -q '^NAME$' "$W/text.$sec"; then
    fail "$name: man -l: $(head -n 3 "$W/text.$sec") $(cat "$W/err.$sec")"
  else
    ok "$name: man -l: $(wc -l <"$W/text.$sec") lines"
  fi
  th=$(grep -m 1 '^\.TH ' "$page")
  grep -qE "^\.TH AXMALLOC $sec [0-9]{4}-[0-9]{2}-[0-9]{2} \"axmalloc ${version//./\\.}\" " <<<"$th" &&
    ok "$name: $th" || fail "$name: .TH is '$th', expected section $sec and \"axmalloc $version\""
  if command -v lexgrog >/dev/null; then
    w=$(lexgrog "$page" 2>&1)
    grep -q "^$page: \"axmalloc - " <<<"$w" && ok "$name: lexgrog: $(head -n 1 <<<"$w" | sed 's/^[^:]*: //')" ||
      fail "$name: lexgrog cannot read the NAME line: $w"
  fi
done

# ---- 2. what the pages must say -------------------------------------------------------------
# has SEC WORD: the rendered page SEC has WORD, whole.
has() { grep -qwF -- "$2" "$W/text.$1"; }
# missing SEC WHAT WORD...: fails once, naming the words page SEC lacks.
missing() {
  local sec=$1 what=$2 w lack=()
  shift 2
  for w in "$@"; do has "$sec" "$w" || lack+=("$w"); done
  if [ ${#lack[@]} -eq 0 ]; then
    ok "axmalloc.$sec: all $# $what"
  else
    fail "axmalloc.$sec lacks ${#lack[@]} of the $# $what: ${lack[*]}"
  fi
}

help=$("$launcher" --help 2>&1) || fail "axmalloc --help: exit $?"
mapfile -t opts < <(sed -n '/^Options:/,/^$/p' <<<"$help" | grep -oE '(^|[ ,])--?[a-z][a-z-]*' |
  sed 's/^[ ,]*//' | sort -u)
mapfile -t vars < <(grep -oE 'AXMALLOC_[A-Z0-9_]*[A-Z0-9]' <<<"$help" | sort -u)
mapfile -t codes < <(sed -n '/^Exit status:/,/^$/p' <<<"$help" | grep -oE '\b[0-9]+\b' | sort -u)
[ ${#opts[@]} -ge 8 ] && [ ${#vars[@]} -ge 5 ] && [ ${#codes[@]} -ge 4 ] ||
  fail "axmalloc --help: found only ${#opts[@]} options, ${#vars[@]} variables, ${#codes[@]} exit statuses"
missing 1 "options of axmalloc --help" "${opts[@]}"
missing 1 "variables of axmalloc --help" "${vars[@]}"
lack=()
for c in "${codes[@]}"; do
  sed -n '/^EXIT STATUS$/,/^[A-Z]/p' "$W/text.1" | grep -qE "^ +$c( |$)" || lack+=("$c")
done
[ ${#lack[@]} -eq 0 ] && ok "axmalloc.1: EXIT STATUS lists ${codes[*]}" ||
  fail "axmalloc.1: EXIT STATUS lacks ${lack[*]} (of axmalloc --help's ${codes[*]})"

# The signal names AXMALLOC_PROF_SIGNAL takes (options.c's parse_signal: its names and the
# SIG prefix), in both pages: axmalloc.1 says which, not only "a name such as".
mapfile -t signames < <(sed -n '/^static enum verdict parse_signal/,/^}/p' "$source/src/common/options.c" |
  grep -oE '"[A-Z][A-Z0-9]*"' | tr -d '"' | sort -u)
[ ${#signames[@]} -ge 4 ] || fail "found only ${#signames[@]} signal names in options.c's parse_signal: ${signames[*]}"
missing 1 "signal names of options.c's parse_signal" "${signames[@]}"
missing 3 "signal names of options.c's parse_signal" "${signames[@]}"

mapfile -t funcs < <(grep -oE '\bax_[a-z0-9_]+\(' "$source/include/axmalloc.h" | tr -d '(' | sort -u)
mapfile -t envs < <(grep -rhoE 'AXMALLOC_[A-Z0-9_]*[A-Z0-9]' "$source/src" | sort -u)
[ ${#funcs[@]} -ge 10 ] && [ ${#envs[@]} -ge 10 ] ||
  fail "found only ${#funcs[@]} ax_* functions in axmalloc.h, ${#envs[@]} AXMALLOC_* names in src/"
missing 3 "ax_* functions of axmalloc.h" "${funcs[@]}"
missing 3 "AXMALLOC_* variables of src/" "${envs[@]}"
# Each function in the NAME line too (man ax_malloc finds the page through it).
name3=$(sed -n '/^NAME$/,/^[A-Z]/p' "$W/text.3" | tr -s ' \n' ' ')
lack=()
for f in "${funcs[@]}"; do grep -qwF -- "$f" <<<"$name3" || lack+=("$f"); done
[ ${#lack[@]} -eq 0 ] && ok "axmalloc.3: NAME names all ${#funcs[@]} functions" ||
  fail "axmalloc.3: NAME lacks ${lack[*]}"

if [ "$fails" -ne 0 ]; then
  echo "t_man: $fails failure(s)"
  exit 1
fi
echo "t_man: axmalloc(1) and axmalloc(3) render without warnings and cover the sources: OK"
