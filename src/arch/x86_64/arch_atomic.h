/* SPDX-License-Identifier: MIT */
/* x86-64 atomics: the ax_arch_<op>_<order> seam src/common/atomic.h calls, and the plain
 * _local twins it calls while single-threaded.
 *
 * The compiler's __atomic builtins give exactly the instructions we want here, so there is
 * no inline asm: x86-64 (TSO) makes every plain load an acquire and every plain store a
 * release, so loads and stores of every order are MOV; cas is LOCK CMPXCHG, xchg is XCHG
 * (implicitly locked), fetch_add LOCK XADD. fetch_and/fetch_or are LOCK AND / LOCK OR when
 * the old value is unused (every use in src/common today) and a LOCK CMPXCHG loop when it
 * is used: x86 has no instruction returning the old value of an AND/OR (LOCK BTS/BTR only
 * when one bit is set and only that bit is tested, which gcc picks by itself).
 * The acquire/release orders (atomic_builtin.h) still matter on x86: they stop the compiler
 * moving other accesses across the operation.
 */
#ifndef AX_X86_64_ARCH_ATOMIC_H
#define AX_X86_64_ARCH_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

typedef uintptr_t ax_atomic_word; /* accessed only through the ax_arch_* functions */

/* The atomic instructions in use (ax_info, AXMALLOC_VERBOSE, tests). */
static inline const char *ax_arch_atomics_name(void) { return "x86-lock"; }

/* The ax_arch_<op>_<order> seam: the builtins are the instructions listed above, so this
 * backend is atomic_builtin.h (which is also what AX_ATOMICS_BUILTIN asks for, for TSan). */
#include "../generic/atomic_builtin.h"
#include "../generic/atomic_local.h" /* the plain single-threaded twins, the same everywhere */

#endif
