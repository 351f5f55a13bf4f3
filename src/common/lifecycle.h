/* SPDX-License-Identifier: MIT */
/* Process init, thread start and exit, fork (lifecycle.c).
 * Layer: lifecycle (docs/design/10-lifecycle.md). */
#ifndef AX_LIFECYCLE_H
#define AX_LIFECYCLE_H

#include "types.h"

/* The calling thread's first allocation: process init if need be, then its heap. post: the
 * heap; NULL only when the OS has no memory for it. */
AXI_HIDDEN ax_heap_t *axi_thread_start(void);
/* post: the calling thread's heap, started if need be; NULL with errno = ENOMEM. */
AXI_HIDDEN ax_heap_t *axi_heap_get(void);

#endif
