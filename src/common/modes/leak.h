/* SPDX-License-Identifier: MIT */
/* The exact leak checker (leak.c; contracts there): every live block recorded with its size
 * and stack in its side word (stacks/side.h, in leak_gate.h's format), the check at exit.
 * The gate the free paths pass is leak_gate.h's, the scan at exit leak_scan.h's.
 * Layer: modes (docs/design/09-modes.md). */
#ifndef AX_LEAK_H
#define AX_LEAK_H

#include "types.h"

AXI_HIDDEN void axi_leak_init(void);
AXI_HIDDEN void axi_leak_ready(void);
AXI_HIDDEN void axi_leak_new(void *p, size_t size);
AXI_HIDDEN void axi_leak_forget(ax_page_t *page, void *p);
AXI_HIDDEN void axi_leak_resize(void *p, size_t size);

#endif
