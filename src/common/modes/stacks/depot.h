/* SPDX-License-Identifier: MIT */
/* The stack depot (depot.c): each stack kept once, named by a 32-bit id, which a block's side
 * word holds (side.h); the caller's stack recorded (axi_stack_here) and printed by name.
 * The leak checker's and checked mode's stacks.
 * Layer: stacks, the floor of the modes (docs/design/09-modes.md). */
#ifndef AX_STACKS_DEPOT_H
#define AX_STACKS_DEPOT_H

#include "atomic.h"
#include "types.h"

/* A stack of the allocations, kept once (append-only, mmapped, never freed): id 1 is the
 * stack not known (before constructors, inside the unwinder). At exit the leak check counts
 * its blocks there: [0] lost directly (no root and no lost block points at them), [1] still
 * reachable, [2] lost indirectly (only lost blocks point at them), as LeakSanitizer's. */
#define AX_STACK_KEEP 30 /* frames kept, as LeakSanitizer's default */
#define AX_STACK_UNKNOWN 1u
/* room for 400,000 stacks of 30 frames or more */
#define AX_STACK_DEPOT_BYTES ((size_t)128 << 20)
typedef struct ax_depot_stack {
  uint64_t hash;
  uint32_t depth;
  uint32_t suppressed; /* (the leak check at exit) the pattern that matched + 1; 0: none */
  uint64_t n[3], bytes[3];
  uintptr_t pc[];
} ax_depot_stack_t;
AXI_HIDDEN extern char *axi_stack_depot;              /* the stacks, back to back */
AXI_HIDDEN extern ax_atomic_word axi_stack_depot_top; /* bytes used */
static inline ax_depot_stack_t *axi_stack_of(uint32_t id) {
  return (ax_depot_stack_t *)(axi_stack_depot + (size_t)(id - 1) * 8);
}
static inline size_t axi_stack_bytes(const ax_depot_stack_t *s) {
  return sizeof *s + s->depth * sizeof s->pc[0];
}
/* The id of the stack at byte at of the depot; the depot's bytes in use (its stacks lie in
 * [0, used), one after the other: at += axi_stack_bytes). */
static inline uint32_t axi_stack_id_at(size_t at) { return (uint32_t)(at / 8 + 1); }
static inline size_t axi_stack_depot_used(void) {
  size_t top = ax_atomic_load_relaxed(&axi_stack_depot_top);
  return top < AX_STACK_DEPOT_BYTES ? top : AX_STACK_DEPOT_BYTES;
}

/* The depot mapped; false when no memory. pre: process init, by the mode that keeps stacks. */
AXI_HIDDEN bool axi_stack_depot_map(void);
/* The depot id of the caller's stack (the allocator's frames dropped: AX_API). */
AXI_HIDDEN uint32_t axi_stack_here(void);
/* The stack id names, its frames symbolised, under a line of its own (checked mode's reports);
 * and the frames of s alone (the leak report's). */
AXI_HIDDEN void axi_stack_print(const char *title, uint32_t id);
AXI_HIDDEN void axi_stack_print_frames(const ax_depot_stack_t *s);

#endif
