/* SPDX-License-Identifier: MIT */
/* The bulk-kernel dispatch plan that each backend's bulk_detect.c fills: arch-neutral, so
 * both arch_bulk.h files include this one copy. */
#ifndef AX_BULK_PLAN_H
#define AX_BULK_PLAN_H

#include <stddef.h>

/* ---- the dispatch plan ------------------------------------------------------------- */

/* A plan is up to AX_BULK_STEPS steps {from, kernel}: the kernel named `kernel` ("libc" is
 * memset/memcpy) handles sizes from `from` up to the next step's `from`. Steps ascend; the
 * first has from = 0; unused steps have kernel = NULL.
 * ax_arch_bulk_plan: the measured plan for the CPU found by ax_arch_bulk_detect (only
 * supported kernels in it). pre: ax_arch_bulk_detect ran. Allocates nothing. */
#define AX_BULK_STEPS 6
typedef struct ax_bulk_step {
  size_t from;
  const char *kernel;
} ax_bulk_step_t;

__attribute__((visibility("hidden"))) void ax_arch_bulk_plan(ax_bulk_step_t zero[AX_BULK_STEPS],
                                                             ax_bulk_step_t copy[AX_BULK_STEPS]);

#endif
