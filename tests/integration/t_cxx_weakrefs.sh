#!/bin/sh
# SPDX-License-Identifier: MIT
# t_cxx_weakrefs.sh <nm> <axmalloc.o>: every symbol axmalloc.o leaves undefined is either
# weak (the C++ runtime, taken weakly by new_delete.cc) or comes from libc/libgcc, so a C
# program can link axmalloc.o (or libaxmalloc.a whole) without libstdc++.
set -eu
nm=$1 obj=$2
strong=$("$nm" -u "$obj" | awk '$1 == "U" { print $2 }')
echo "strong undefined symbols of $obj:"; echo "$strong" | sed 's/^/  /'
# _Unwind_Backtrace, _Unwind_GetIP and _Unwind_Find_FDE (the stack walk of the modes,
# modes/stacks/unwind.c) are libgcc's, which every gcc link of a C program has (libgcc_s, or
# libgcc_eh with -static).
bad=$(echo "$strong" | grep -E '^(_Z|__cxa_|__gxx_|_Unwind_)' |
  grep -vxE '_Unwind_Backtrace|_Unwind_GetIP|_Unwind_Find_FDE' || true)
if [ -n "$bad" ]; then
  echo "FAIL: C++ runtime symbols referenced strongly:"; echo "$bad"; exit 1
fi
weak=$("$nm" -u "$obj" | awk '$1 == "w" { print $2 }' | tr '\n' ' ')
echo "weak: $weak"
case "$weak" in *_ZSt15get_new_handlerv*) ;; *) echo "FAIL: no weak get_new_handler"; exit 1 ;; esac
echo "t_cxx_weakrefs: OK"
