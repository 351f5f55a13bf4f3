/* SPDX-License-Identifier: MIT */
/* The leak checker's scan at exit (leak_scan.c; the report is leak.c's).
 * Layer: modes (docs/design/09-modes.md). */
#ifndef AX_LEAK_SCAN_H
#define AX_LEAK_SCAN_H

#include "types.h"

typedef struct ax_leak_tally {
  uint64_t n[3], bytes[3]; /* [0] lost directly, [1] still reachable, [2] lost indirectly */
} ax_leak_tally_t;
/* Marks every live block reachable from the roots (the loaded objects' writable segments but
 * the allocator's own, the calling thread's stack, registers and static TLS), then every lost
 * block another lost block points at (indirect), counts each block in its stack, and sums
 * them, with the gate closed (leak_gate.h). pre: the leak checker
 * ran from the start. post: NULL, or why nothing was counted. */
AXI_HIDDEN const char *axi_leak_scan(ax_leak_tally_t *sum);

#endif
