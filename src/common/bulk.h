/* SPDX-License-Identifier: MIT */
/* Bulk zeroing and copying of allocator blocks (calloc, realloc): a table of size ranges
 * over the backend's kernels (src/arch/<arch>/arch_bulk.h) and memset/memcpy, filled once
 * by axi_bulk_init. Measurements and thresholds: docs/bulk.md.
 * pre (zero, copy): addresses 16-byte aligned; n a multiple of 16 (blocks always are), 0
 * allowed; dst and src do not overlap. Allocate nothing, leave errno alone, any thread;
 * correct before axi_bulk_init too (the table starts on the baseline kernel). */
#ifndef AX_BULK_H
#define AX_BULK_H

#include <stddef.h>

/* Detect the CPU's kernels and fill the table: AXMALLOC_FORCE_ISA=<kernel> (any supported
 * kernel of the list, or "libc") for every size, else the backend's measured plan.
 * pre: axi_options read; no other thread allocates yet. */
__attribute__((visibility("hidden"))) void axi_bulk_init(void);
__attribute__((visibility("hidden"))) void axi_bulk_zero(void *p, size_t n);
__attribute__((visibility("hidden"))) void axi_bulk_copy(void *dst, const void *src, size_t n);
/* The kernel used for the largest sizes ("libc" = memset/memcpy); AXMALLOC_VERBOSE=1 also
 * prints every range when there is more than one. */
__attribute__((visibility("hidden"))) const char *axi_bulk_zero_name(void);
__attribute__((visibility("hidden"))) const char *axi_bulk_copy_name(void);

#endif
