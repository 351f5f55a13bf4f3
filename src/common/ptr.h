/* SPDX-License-Identifier: MIT */
/* What a pointer given to free, realloc or malloc_usable_size is (ptr.c).
 * Layer: entry (docs/design/11-entry.md). */
#ifndef AX_PTR_H
#define AX_PTR_H

#include "types.h"

AXI_HIDDEN void axi_ptr_classify(const char *fn, void *p, bool keep, ax_ptr_t *x);

#endif
