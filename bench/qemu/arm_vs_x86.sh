#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# arm_vs_x86.sh [BUILD_DIR] [CROSS_DIR] -- instructions per operation, AArch64 against x86-64:
# a markdown table of bench/callgrind/budget.sh's operations, counted by callgrind on the
# native build and by qemu-aarch64 (bench/qemu/insn_count.c) on the cross builds, each on the
# CPU whose atomics it runs:
#
#   runtime/max         CROSS_DIR (default build-aarch64), atomics chosen at run time: LSE
#   runtime/cortex-a57  the same library on an ARMv8.0 core: LL/SC
#   lse/max             CROSS_DIR-lse  (-DAX_AARCH64_ATOMICS=lse)
#   llsc/cortex-a57     CROSS_DIR-llsc (-DAX_AARCH64_ATOMICS=llsc)
#   runtime/max MTE     CROSS_DIR on max with AXMALLOC_MTE=1: every block tagged (mte.c)
#
# A column whose build is missing is left out (with a note). The last column is runtime/max
# over x86: the ISA's own difference (loads and stores apart, a 4-instruction PLT stub, TLS
# through the GOT) as well as ours.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${1:-build} CROSS=${2:-build-aarch64}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
[[ $CROSS = /* ]] || CROSS=$ROOT/$CROSS
BUDGET=$ROOT/bench/callgrind/budget.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cols=(x86-64) files=("$TMP/x86") notes=()
bash "$BUDGET" --counts "$BUILD" >"$TMP/x86"
for cfg in "runtime/max:$CROSS:max:" "runtime/cortex-a57:$CROSS:cortex-a57:" \
           "lse/max:$CROSS-lse:max:" "llsc/cortex-a57:$CROSS-llsc:cortex-a57:" \
           "runtime/max MTE:$CROSS:max:AXMALLOC_MTE=1"; do
  IFS=: read -r name dir cpu envs <<<"$cfg"
  if [[ ! -e $dir/libaxmalloc.so ]]; then notes+=("$name: $dir/libaxmalloc.so not built, left out"); continue; fi
  f=$TMP/${name//[\/ ]/-}
  env $envs bash "$BUDGET" --qemu "$cpu" --counts "$dir" >"$f"
  cols+=("$name") files+=("$f")
done

hdr="| operation |" sep="|---|"
for c in "${cols[@]}"; do hdr+=" $c |"; sep+="---:|"; done
[[ ${#cols[@]} -gt 1 ]] && { hdr+=" ${cols[1]} / x86 |"; sep+="---:|"; }
echo "Instructions per operation: x86-64 by callgrind, AArch64 by qemu-aarch64 7.2 with bench/qemu/insn_count.c"
echo "(\`bash bench/qemu/arm_vs_x86.sh\`; each count is (run B - run A) / ops, see bench/callgrind/budget.sh)"
echo
echo "$hdr"; echo "$sep"
while IFS='|' read -r name label x86; do
  row="| $label | $x86 |"
  first=
  for f in "${files[@]:1}"; do
    v=$(awk -F'|' -v n="$name" '$1 == n { print $3 }' "$f")
    row+=" $v |"; first=${first:-$v}
  done
  [[ -z $first ]] || row+=" $(awk -v a="$first" -v b="$x86" 'BEGIN { printf "%.2f", a / b }') |"
  echo "$row"
done <"$TMP/x86"
for n in "${notes[@]}"; do echo; echo "Note: $n"; done
