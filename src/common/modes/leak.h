/* SPDX-License-Identifier: MIT */
/* The exact leak checker's shared state: leak.c records every live block and its stack,
 * leak_scan.c finds at exit which of them are still reachable, symbolize.c names the frames
 * of the report. */
#ifndef AX_LEAK_H
#define AX_LEAK_H

#include "atomic.h"
#include "types.h"

/* ---- the side record of every live block ------------------------------------------------- */

/* Each live block has one word, found from its address alone: a directory of the 4 MiB
 * regions of the 48-bit address space (4,096 tables of 16,384 regions), each region's side
 * array one word per 16 bytes (2 MiB, mapped when a block of the region is first recorded,
 * never unmapped: a segment mapped again at the address finds it). The word is
 * size << 32 | stack id; 0 while the block is not live. The allocating thread writes it,
 * whichever thread frees it clears it: a block has one owner at a time (the program's
 * hand-off, or the allocator's lists, orders the two), so no lock and no atomic RMW. A huge
 * block starts 256 bytes into its header's region, or at a region's start when aligned to
 * one: its word is at index 16 or 0, where no block of a page ever starts (the header). */
#define AX_LEAK_L1 ((size_t)1 << (48 - 36))
#define AX_LEAK_L2 ((size_t)1 << (36 - AX_SEGMENT_SHIFT))
#define AX_LEAK_SIDE (AX_SEGMENT_SIZE >> 4)
#define AX_LEAK_REACHED ((uint64_t)1 << 31) /* (at exit) reached from a root */
#define AX_LEAK_NEW ((uint64_t)1 << 30)     /* made while the scan ran: not counted */
#define AX_LEAK_GONE ((uint64_t)1 << 29)    /* freed while the scan ran: not counted */
#define AX_LEAK_ID (AX_LEAK_GONE - 1)       /* the stack id (< 2^24: the depot's size) */
#define AX_LEAK_BIG UINT32_MAX              /* the size does not fit: the huge header has it */
AXI_HIDDEN extern ax_atomic_word axi_leak_dir[AX_LEAK_L1];
/* Every block ever recorded lies in [lo, hi) (each region with a side array, each huge block),
 * and none is bigger than max bytes: the scan's first test of a word, and how far back a huge
 * block's header may be (leak_scan.c). Each only grows, by CAS. */
AXI_HIDDEN extern ax_atomic_word axi_leak_lo, axi_leak_hi, axi_leak_max;

/* The side array of the region at r (NULL: none yet). Any thread. */
static inline ax_atomic_word *axi_leak_side(uintptr_t r) {
  uintptr_t l2 = ax_atomic_load_acquire(&axi_leak_dir[(r >> 36) & (AX_LEAK_L1 - 1)]);
  if (!l2)
    return NULL;
  return (ax_atomic_word *)ax_atomic_load_acquire(
      &((ax_atomic_word *)l2)[(r >> AX_SEGMENT_SHIFT) & (AX_LEAK_L2 - 1)]);
}
/* The side word of the block at p (NULL: its region has no side array). */
static inline ax_atomic_word *axi_leak_word(uintptr_t p) {
  ax_atomic_word *side = axi_leak_side(p);
  return side ? side + ((p & AX_SEGMENT_MASK) >> 4) : NULL;
}

/* ---- the stack depot --------------------------------------------------------------------- */

/* A stack of the allocations, kept once (append-only, mmapped, never freed): id 1 is the
 * stack not known (before constructors, inside the unwinder). At exit the check counts its
 * blocks there: [0] lost, [1] still reachable. */
#define AX_LEAK_DEPTH 30 /* frames kept, as LeakSanitizer's default */
#define AX_LEAK_NO_STACK 1u
typedef struct ax_leak_stack {
  uint64_t hash;
  uint32_t depth;
  uint32_t suppressed; /* (at exit) the pattern that matched + 1; 0: none */
  uint64_t n[2], bytes[2];
  uintptr_t pc[];
} ax_leak_stack_t;
AXI_HIDDEN extern char *axi_leak_depot;              /* the stacks, back to back */
AXI_HIDDEN extern ax_atomic_word axi_leak_depot_top; /* bytes used */
static inline ax_leak_stack_t *axi_leak_stack(uint32_t id) {
  return (ax_leak_stack_t *)(axi_leak_depot + (size_t)(id - 1) * 8);
}
static inline size_t axi_leak_stack_bytes(const ax_leak_stack_t *s) {
  return sizeof *s + s->depth * sizeof s->pc[0];
}

/* ---- leak_scan.c: the check at exit ------------------------------------------------------ */

typedef struct ax_leak_tally {
  uint64_t n[2], bytes[2]; /* [0] lost, [1] still reachable */
} ax_leak_tally_t;
/* Marks every live block reachable from the roots (the loaded objects' writable segments but
 * the allocator's own, the calling thread's stack, registers and static TLS), counts each
 * block in its stack, and sums them, with the gate closed (below). pre: the leak checker ran
 * from the start. post: NULL, or why nothing was counted. */
AXI_HIDDEN const char *axi_leak_scan(ax_leak_tally_t *sum);

/* The scan's gate (leak.c): while it is closed, every free, realloc of a huge block and unmap
 * waits (axi_leak_hold), and every block recorded is AX_LEAK_NEW. Close: false when the
 * threads inside did not leave within the bound (then it is open again). pre: one scan, in
 * the thread that opens it again. */
AXI_HIDDEN bool axi_leak_gate_close(void);
AXI_HIDDEN void axi_leak_gate_open(void);
/* A thread waiting at the closed gate is stopped there: its stack from sp up (its registers
 * spilled below its caller's frames first) is a root, as the exiting thread's is. Each pushes
 * one record on axi_leak_parked, in its waiting frame, as it starts to wait; the scan takes
 * the list away before it opens the gate. */
/* fn on the blocks other threads, still alive, made last before the gate closed: they may
 * hold them in their registers only (leak.c). */
AXI_HIDDEN void axi_leak_held(void (*fn)(uintptr_t p));
typedef struct ax_leak_parked {
  struct ax_leak_parked *next;
  uintptr_t sp;
} ax_leak_parked_t;
AXI_HIDDEN extern ax_atomic_word axi_leak_parked;

/* ---- symbolize.c --------------------------------------------------------------------------- */

typedef struct ax_sym {
  const char *name;     /* the enclosing function's symbol, NULL when none is known */
  uintptr_t off;        /* pc - the function's start */
  const char *module;   /* the loaded file's path, "" when not known */
  uintptr_t module_off; /* pc - the file's load address */
} ax_sym_t;
/* The function and the file of the code at pc, from the symbol tables of the loaded files
 * (.symtab, else .dynsym), read through read-only mappings: no allocation. The strings stay
 * valid until the process ends. pre: one thread at a time. */
AXI_HIDDEN void axi_symbolize(uintptr_t pc, ax_sym_t *out);

/* leak.c: the exact leak checker (leak.h has the rest, contracts at the definitions) */
AXI_HIDDEN void axi_leak_init(void);
AXI_HIDDEN void axi_leak_ready(void);
AXI_HIDDEN void axi_leak_new(void *p, size_t size);
AXI_HIDDEN void axi_leak_forget(ax_page_t *page, void *p);
AXI_HIDDEN void axi_leak_resize(void *p, size_t size);
AXI_HIDDEN uint32_t axi_leak_stack_here(void);
AXI_HIDDEN void axi_leak_set(uintptr_t p, uint64_t v);
AXI_HIDDEN uint64_t axi_leak_get(uintptr_t p);
AXI_HIDDEN void axi_leak_print_stack(const char *title, uint32_t id);
/* The scan at exit reads the heap while other threads run: a free, a huge block's realloc or
 * an unmap holds leak.c's gate while it changes what the scan may read, and waits while a
 * scan runs, p (a block going, or NULL) then counted as gone. Nested holds pass. os.c calls
 * them from below (an exception named in tests/layers/t_layers.py). pre: axi_leaks. */
AXI_HIDDEN void axi_leak_hold(const void *p);
AXI_HIDDEN void axi_leak_release(void);

#endif
