/* SPDX-License-Identifier: MIT */
/* The two flags atomic.h's choice of a plain or an atomic operation reads beside libc's
 * __libc_single_threaded: set by process init (options.c) and by fork's child handler
 * (lifecycle.c). */
#include "atomic.h"

bool axi_force_mt; /* AXMALLOC_FORCE_MT=1: atomics even while single-threaded */
bool axi_forked;   /* we are a fork child */
