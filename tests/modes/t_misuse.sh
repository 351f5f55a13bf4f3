#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The heap misuse probes (t_misuse.c, t_misuse_cxx.cc), each in a process of its own, under
# glibc's malloc, axmalloc (preloaded), axmalloc's checked mode (AXMALLOC_CHECK=1) and axmalloc
# with guarded sampling at every allocation the pool can hold (AXMALLOC_GUARD=1, issue 43): a
# table of what each catches by group, then the checks:
#   - every probe as tests/modes/misuse_expected.txt says, for axmalloc, checked mode and guard
#     mode: '+' caught, '-' not caught ('?' either way), so a probe that starts or stops being
#     caught shows;
#   - axmalloc catches at least as many as glibc does in the same run, and at least
#     AX_MISUSE_MIN_DEFAULT; checked mode at least AX_MISUSE_MIN_CHECKED (issue 29's targets);
#     guard mode at least as many as axmalloc's default (sampling only adds checks).
# A probe is caught when it does not print NOT_CAUGHT (it died first, or found what it tests)
# within the time limit, as mimalloc-bench's bench.sh judges its security tests.
#
#   t_misuse.sh PROG PROG_CXX LIB EXPECTED [EMULATOR]
#
# EMULATOR: how to run an aarch64 program ('|' separates its words), empty natively; the
# library is then preloaded into the guest (qemu -E LD_PRELOAD=), not into qemu.
set -uo pipefail
prog=$1 prog_cxx=$2 lib=$3 expected=$4
IFS='|' read -r -a emu <<<"${5:-}"
limit=${AX_MISUSE_TIMEOUT:-$([ ${#emu[@]} -gt 0 ] && echo 60 || echo 10)}
min_default=${AX_MISUSE_MIN_DEFAULT:-68}
min_checked=${AX_MISUSE_MIN_CHECKED:-100}
unset AXMALLOC_CHECK AXMALLOC_PROF AXMALLOC_LEAKS AXMALLOC_MTE LD_PRELOAD
unset AXMALLOC_GUARD AXMALLOC_GUARD_PLACE AXMALLOC_GUARD_SLOTS AXMALLOC_GUARD_HANDLER
modes=(glibc default checked guard)
sizes=(small:8 medium:4096 large:262144)

# caught MODE PROGRAM ARGS...: status 0 when the probe was caught
caught() {
  local mode=$1 pre=() env=()
  shift
  case $mode in
  glibc) ;;
  default) pre=(LD_PRELOAD="$lib") ;;
  checked) pre=(LD_PRELOAD="$lib") env=(AXMALLOC_CHECK=1) ;;
  guard) pre=(LD_PRELOAD="$lib") env=(AXMALLOC_GUARD=1) ;;
  esac
  local out st
  if [ ${#emu[@]} -gt 0 ]; then
    [ ${#pre[@]} -gt 0 ] && pre=(-E "${pre[0]}")
    out=$(env "${env[@]}" timeout -k 5 "$limit" "${emu[@]}" "${pre[@]}" "$@" 2>/dev/null | tr -d '\0')
  else
    out=$(env "${env[@]}" "${pre[@]}" timeout -k 5 "$limit" "$@" 2>/dev/null | tr -d '\0')
  fi
  st=$? # (pipefail: timeout's status)
  { [ "$st" = 124 ] || [ "$st" = 137 ]; } && return 1 # timed out
  ! grep -q NOT_CAUGHT <<<"$out"
}

group_of() {
  case $1 in
  *memcpy*) echo "overflow, underflow by memcpy" ;;
  *_overflow | *_underflow) echo "overflow, underflow by a store" ;;
  double_free*) echo "double free" ;;
  invalid_free*) echo "invalid free" ;;
  write_after_free* | zero_after_free | *_reuse*) echo "after free: write, zero, reuse" ;;
  zero_on_malloc) echo "zero on malloc" ;;
  *zero_size*) echo "zero-size reads, writes" ;;
  impossibly_large_malloc | executable_heap) echo "impossible size, executable heap" ;;
  *) echo "C++ new/delete mismatch" ;;
  esac
}

# every (probe, size) as "name size-label program args..."; C++ probes have one size
runs=()
while read -r p; do
  for s in "${sizes[@]}"; do runs+=("$p ${s%%:*} $prog $p ${s#*:}"); done
done < <("${emu[@]}" "$prog" list)
while read -r p; do runs+=("$p - $prog_cxx $p"); done < <("${emu[@]}" "$prog_cxx" list)

declare -A got total group_total
fails=0
for r in "${runs[@]}"; do
  read -r name size rest <<<"$r"
  g=$(group_of "$name")
  group_total[$g]=$((${group_total[$g]:-0} + 1))
  for m in "${modes[@]}"; do
    # shellcheck disable=SC2086 # (rest: the program and its arguments)
    if caught "$m" $rest; then
      got[$m,$name,$size]=+
      total[$m]=$((${total[$m]:-0} + 1))
      total[$m,$g]=$((${total[$m,$g]:-0} + 1))
    else
      got[$m,$name,$size]=-
    fi
  done
done

printf '%-36s %6s %8s %8s %6s\n' "group (probes)" glibc axmalloc checked guard
for g in "overflow, underflow by a store" "overflow, underflow by memcpy" "double free" \
  "invalid free" "after free: write, zero, reuse" "zero on malloc" "zero-size reads, writes" \
  "impossible size, executable heap" "C++ new/delete mismatch"; do
  printf '%-36s %6s %8s %8s %6s\n' "$g (${group_total[$g]:-0})" "${total[glibc,$g]:-0}" \
    "${total[default,$g]:-0}" "${total[checked,$g]:-0}" "${total[guard,$g]:-0}"
done
printf '%-36s %6s %8s %8s %6s\n' "total (${#runs[@]})" "${total[glibc]:-0}" "${total[default]:-0}" \
  "${total[checked]:-0}" "${total[guard]:-0}"

# what each probe did, in the expectations' format (AX_MISUSE_SHOW=1)
if [ "${AX_MISUSE_SHOW:-}" = 1 ]; then
  for r in "${runs[@]}"; do
    read -r name size _ <<<"$r"
    [ "$size" = small ] || [ "$size" = - ] || continue
    labels=(small medium large)
    [ "$size" = - ] && labels=(-)
    line=$(printf '%-32s ' "$name")
    for m in default checked guard; do
      for l in "${labels[@]}"; do line+=${got[$m,$name,$l]}; done
      line+=$([ ${#labels[@]} = 1 ] && echo "        " || echo "      ")
    done
    echo "$line"
  done
fi

# the expectations: "probe default checked guard", each a '+', '-' or '?' per size (small
# medium large; one for a C++ probe)
while read -r name want_d want_c want_g; do
  case $name in '' | '#'*) continue ;; esac
  labels=(small medium large)
  [ ${#want_d} = 1 ] && labels=(-)
  for i in "${!labels[@]}"; do
    for m in default checked guard; do
      case $m in
      default) want=${want_d:$i:1} ;;
      checked) want=${want_c:$i:1} ;;
      guard) want=${want_g:$i:1} ;;
      esac
      have=${got[$m,$name,${labels[$i]}]:-}
      if [ -z "$want" ]; then
        echo "FAIL: $expected has no $m column for $name (${labels[$i]})"
        fails=$((fails + 1))
      elif [ -z "$have" ]; then
        echo "FAIL: $expected names $name (${labels[$i]}), which is no probe"
        fails=$((fails + 1))
      elif [ "$want" != "?" ] && [ "$want" != "$have" ]; then
        echo "FAIL: $name (${labels[$i]}) in $m mode: $([ "$have" = + ] && echo caught || echo not caught), $expected says $want"
        fails=$((fails + 1))
      fi
    done
  done
  seen+=("$name")
done <"$expected"
for r in "${runs[@]}"; do
  read -r name _ <<<"$r"
  [[ " ${seen[*]} " == *" $name "* ]] || {
    echo "FAIL: probe $name is not in $expected"
    fails=$((fails + 1))
    seen+=("$name")
  }
done
if [ "${total[default]:-0}" -lt "${total[glibc]:-0}" ] || [ "${total[default]:-0}" -lt "$min_default" ]; then
  echo "FAIL: axmalloc catches ${total[default]:-0}, fewer than glibc (${total[glibc]:-0}) or $min_default"
  fails=$((fails + 1))
fi
if [ "${total[guard]:-0}" -lt "${total[default]:-0}" ]; then
  echo "FAIL: guard mode (AXMALLOC_GUARD=1) catches ${total[guard]:-0}, fewer than axmalloc's default (${total[default]:-0})"
  fails=$((fails + 1))
fi
if [ "${total[checked]:-0}" -lt "$min_checked" ]; then
  echo "FAIL: checked mode catches ${total[checked]:-0}, fewer than $min_checked"
  fails=$((fails + 1))
fi
[ "$fails" = 0 ] && echo "t_misuse: OK" || echo "t_misuse: $fails failures"
[ "$fails" = 0 ]
