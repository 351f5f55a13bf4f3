/* SPDX-License-Identifier: MIT */
/* The leak checker's gate (leak_gate.c): the scan at exit (leak_scan.c) closes it, every free,
 * huge realloc and unmap of leak mode passes it (axi_leak_hold .. axi_leak_release), malloc's
 * record (leak.c) marks its block by it. Below both the recording and the scan; and what a
 * live block's side word holds in leak mode, which the three share.
 * Layer: modes (docs/design/09-modes.md). */
#ifndef AX_LEAK_GATE_H
#define AX_LEAK_GATE_H

#include "atomic.h"
#include "types.h"

/* A live block's side word (stacks/side.h) in leak mode: size << 32 | stack id (the depot's,
 * stacks/depot.h); 0 while the block is not live. */
#define AX_LEAK_REACHED ((uint64_t)1 << 31)  /* (at exit) reached from a root */
#define AX_LEAK_NEW ((uint64_t)1 << 30)      /* made while the scan ran: not counted */
#define AX_LEAK_GONE ((uint64_t)1 << 29)     /* freed while the scan ran: not counted */
#define AX_LEAK_INDIRECT ((uint64_t)1 << 28) /* (at exit) not reached, but from a lost block */
#define AX_LEAK_ID (((uint64_t)1 << 24) - 1) /* the stack id (< 2^24: the depot's size) */
#define AX_LEAK_BIG UINT32_MAX               /* the size does not fit: the huge header has it */

/* The scan at exit reads the heap while other threads run: a free, a huge block's realloc or
 * an unmap holds the gate while it changes what the scan may read, and waits while a scan
 * runs, p (a block going, or NULL) then counted as gone. Nested holds pass. os.c calls them
 * through its seam (state.h, axi_seams), filled by axi_leak_init. pre: axi_leaks. */
AXI_HIDDEN void axi_leak_hold(const void *p);
AXI_HIDDEN void axi_leak_release(void);

/* While the gate is closed, every free, realloc of a huge block and unmap waits
 * (axi_leak_hold), and every block recorded is AX_LEAK_NEW. Close: false when the threads
 * inside did not leave within the bound (then it is open again). pre: one scan, in the thread
 * that opens it again. */
AXI_HIDDEN bool axi_leak_gate_close(void);
AXI_HIDDEN void axi_leak_gate_open(void);
/* A thread waiting at the closed gate is stopped there: its stack from sp up (its registers
 * spilled below its caller's frames first) is a root, as the exiting thread's is. Each pushes
 * one record on axi_leak_parked, in its waiting frame, as it starts to wait; the scan takes
 * the list away before it opens the gate. */
typedef struct ax_leak_parked {
  struct ax_leak_parked *next;
  uintptr_t sp;
} ax_leak_parked_t;
AXI_HIDDEN extern ax_atomic_word axi_leak_parked;
/* fn on the blocks other threads, still alive, made last before the gate closed: they may
 * hold them in their registers only. */
AXI_HIDDEN void axi_leak_held(void (*fn)(uintptr_t p));

/* The side word w of the block at p, just made, gets v (size and stack): AX_LEAK_NEW too while
 * the gate is closed, else the block goes in the thread's ring of its last blocks made. */
AXI_HIDDEN void axi_leak_gate_made(void *p, ax_atomic_word *w, uintptr_t v);
/* The gate's slots and the barrier. pre: process init, leak mode. */
AXI_HIDDEN void axi_leak_gate_init(void);

#endif
