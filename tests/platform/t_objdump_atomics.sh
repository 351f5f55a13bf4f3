#!/bin/bash
# SPDX-License-Identifier: MIT
# Instruction-level check of the AArch64 atomics in the built library (runs on the host).
#
#   t_objdump_atomics.sh <libaxmalloc.so> <runtime|lse|llsc> [objdump]
#
# Asserts, in the disassembly of the library:
#   - no call to (or import of) a libgcc outline-atomic helper (__aarch64_cas8_acq_rel,
#     __aarch64_swp8_acq, __aarch64_ldadd8_relax, ...): every atomic is inline;
#   - LDAR and STLR present (ax_arch_load_acquire / ax_arch_store_release);
#   - lse:     CASAL or CASL, and LDADD*, present; no exclusive (LDXR/LDAXR/STXR/STLXR);
#   - llsc:    LDAXR and STLXR present; no LSE instruction at all (CAS*, SWP*, LDADD*, ...);
#   - runtime: both families present.
# and prints a few lines of each, with the function they are in.
set -u
lib=${1:?usage: $0 <libaxmalloc.so> <runtime|lse|llsc> [objdump]}
mode=${2:?mode}
objdump=${3:-aarch64-linux-gnu-objdump}
case $mode in runtime | lse | llsc) ;; *) echo "bad mode $mode" >&2; exit 2 ;; esac

dis=$("$objdump" -d --no-show-raw-insn "$lib") || { echo "$objdump -d $lib failed" >&2; exit 2; }
dyn=$("$objdump" -T "$lib") || exit 2
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# "function<TAB>address<TAB>mnemonic<TAB>operands", one line per instruction
insns=$(awk -F'\t' '
  /^[0-9a-f]+ <.*>:$/ { fn = $0; sub(/^[0-9a-f]+ /, "", fn); next }
  /^ *[0-9a-f]+:\t/ { addr = $1; sub(/^ */, "", addr); sub(/:$/, "", addr)
                      print fn "\t" addr "\t" $2 "\t" $3 }' <<<"$dis")
[ -n "$insns" ] || { echo "FAIL: no instructions parsed from $lib"; exit 1; }

ops='add|clr|eor|set|smax|smin|umax|umin'
lse_re="^(cas|casp|swp|ld($ops)|st($ops))(a|al|l)?[bh]?\$"
excl_re='^(ldx|ldax|stx|stlx)(r[bh]?|p)$'
count() { awk -F'\t' -v re="$1" '$3 ~ re' <<<"$insns" | wc -l; }
show() { # the first 3 instructions matching $1, with their function
  awk -F'\t' -v re="$1" '$3 ~ re { printf "    %-34s %8s  %-8s %s\n", $1, $2, $3, $4
                                   if (++n == 3) exit }' <<<"$insns"
}

if grep -q '__aarch64_' <<<"$dis$dyn"; then
  bad "outline-atomic helper referenced:"
  grep '__aarch64_' <<<"$dis$dyn" | head -5
fi

n_lse=$(count "$lse_re")
n_excl=$(count "$excl_re")
helpers=$([ $fail = 0 ] && echo none || echo SOME)
echo "$lib ($mode): $n_lse LSE atomic instructions, $n_excl exclusive loads/stores," \
  "$(grep -c . <<<"$insns") instructions in all; __aarch64_ helpers: $helpers"

need() { # need <label> <regex>
  local n; n=$(count "$2")
  if [ "$n" -gt 0 ]; then echo "  $1: $n, e.g."; show "$2"; else bad "no $1 in $mode mode"; fi
}
need ldar '^ldar$'
need stlr '^stlr$'
if [ "$mode" != llsc ]; then
  need "casal/casl" '^casa?l$'
  need "ldadd*" '^ldadd(a|al|l)?$'
  need "swpa/swpal" '^swpa(l)?$'
  need "ldsetal" '^ldsetal$'
  need "ldclral" '^ldclral$'
fi
if [ "$mode" != lse ]; then
  need ldaxr '^ldaxr$'
  need stlxr '^stlxr$'
  need ldxr '^ldxr$'
fi
if [ "$mode" = lse ] && [ "$n_excl" -ne 0 ]; then
  bad "exclusive load/store in an lse build:"; show "$excl_re"
fi
if [ "$mode" = llsc ] && [ "$n_lse" -ne 0 ]; then
  bad "LSE instruction in an llsc build:"; show "$lse_re"
fi

[ $fail = 0 ] && echo "t_objdump_atomics ($mode): OK"
exit $fail
