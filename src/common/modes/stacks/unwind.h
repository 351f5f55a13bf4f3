/* SPDX-License-Identifier: MIT */
/* The stack walk (unwind.c): the return addresses of the calling thread's stack, by the unwind
 * tables' rules kept per return address, from the heap's memo of its last walks, or by libgcc.
 * The profiler's samples, the leak checker's and checked mode's stacks are all walked here.
 * Layer: stacks, the floor of the modes (docs/design/09-modes.md). */
#ifndef AX_STACKS_UNWIND_H
#define AX_STACKS_UNWIND_H

#include "state.h"
#include "types.h"

#define AX_STACK_OURS 32  /* our frames come first: looked for among this many */
#define AX_STACK_DEPTH 64 /* frames kept per stack, the caller of malloc first */
typedef struct ax_stack {
  unsigned n;
  bool memo;             /* from the heap's memo of its last walks */
  unsigned first, depth; /* the program's frames: pc[first .. first + depth) */
  uint64_t hash;         /* ... hashed (axi_stack_key: every walk sets these) */
  uintptr_t pc[AX_STACK_OURS + AX_STACK_DEPTH]; /* return addresses, ours first */
} ax_stack_t;

/* The return addresses from the caller's frame outwards, by the unwind tables' rules kept per
 * return address, or from the heap's memo of its last walks; st->n = 0 when libgcc must walk
 * this stack; heap NULL: no memo */
AXI_HIDDEN void axi_stack_unwind(ax_heap_t *heap, ax_stack_t *st);
/* libgcc's walk, where axi_stack_unwind could not (st->n == 0), or beside it (check) */
AXI_HIDDEN void axi_stack_walk_libgcc(ax_stack_t *st);
/* Constructors ran: libgcc's first walk, and the bounds of its registry of unwind tables,
 * which a walk does not enter. pre: once, from a constructor, before any walk, when a mode
 * walks stacks (the profiler, the leak checker, checked mode's stacks). */
AXI_HIDDEN void axi_stack_ready(void);
/* axi_stack_ready ran: stacks can be walked (before it, a static program's libc allocates
 * before the unwinder can find a frame's tables). */
AXI_HIDDEN extern bool axi_stack_walkable;
AXI_HIDDEN void axi_stack_fork_child(void);
/* Is ret a return address into libgcc's registry of unwind tables, which may hold the lock a
 * frame's lookup takes (a free from __deregister_frame_info at a static program's exit)? */
AXI_HIDDEN bool axi_stack_in_registry(uintptr_t ret);
/* Is ret a return address into the allocator's entry points (section axmalloc_api)? */
AXI_HIDDEN bool axi_stack_in_api(uintptr_t ret);
/* The index of st's first program frame (after our own); *depth of them */
AXI_HIDDEN unsigned axi_stack_program_frames(const ax_stack_t *st, unsigned *depth);
/* Sets st's program frames and their hash */
AXI_HIDDEN void axi_stack_key(ax_stack_t *st);

/* The stack of the caller, from the unwind tables every Debian binary has (-O2 code keeps no
 * frame pointers). Inline, so that the walk starts in the frame of the malloc path that decided
 * to sample (or to record), not in frames of the walk's own. memo: heap, whose memo of its last
 * walks serves walks that repeat (the profiler's, the stacks of every block), or NULL for walks
 * that come rarely (guarded sampling's: one in 64 MiB by default), for which a memo would cost a
 * thread that sampled once 12 KiB mapped and save nothing. pre: heap is the thread's own (not
 * the empty one). */
static inline __attribute__((always_inline)) void
axi_stack_capture_memo(ax_heap_t *heap, ax_heap_t *memo, ax_stack_t *st) {
  heap->prof.busy = true; /* a first lookup in libgcc's tables may allocate */
  st->n = 0;
  st->memo = false;
  if (axi_prof_unwind_mode != AX_UNWIND_LIBGCC)
    axi_stack_unwind(memo, st);
  if (ax_unlikely(st->n == 0 || axi_prof_unwind_mode == AX_UNWIND_CHECK))
    axi_stack_walk_libgcc(st);
  heap->prof.busy = false;
}
static inline __attribute__((always_inline)) void axi_stack_capture(ax_heap_t *heap,
                                                                    ax_stack_t *st) {
  axi_stack_capture_memo(heap, heap, st);
}
#endif
