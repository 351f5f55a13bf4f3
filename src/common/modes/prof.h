/* SPDX-License-Identifier: MIT */
/* The heap profiler's shared state: prof.c samples and keeps the stacks, prof_dump.c writes
 * them out (gperftools' heap-profile text format, which google-pprof reads). */
#ifndef AX_PROF_H
#define AX_PROF_H

#include <unwind.h> /* (the stack walk: libgcc) */

#include "modes/prof_grant.h"
#include "page.h"
#include "state.h"

/* ---- stacks, and the slow path's decision to sample ------------------------------------ */

#define AX_PROF_OURS 32  /* our frames come first: looked for among this many */
#define AX_PROF_DEPTH 64 /* frames kept per stack, the caller of malloc first */
typedef struct ax_prof_stack {
  unsigned n;
  bool memo;             /* from the heap's memo of its last walks (prof_unwind.c) */
  unsigned first, depth; /* the program's frames: pc[first .. first + depth) */
  uint64_t hash;         /* ... hashed (axi_prof_stack_key: every walk sets these) */
  uintptr_t pc[AX_PROF_OURS + AX_PROF_DEPTH]; /* return addresses, ours first */
} ax_prof_stack_t;
/* prof_unwind.c: the return addresses from the caller's frame outwards, by the unwind tables'
 * rules kept per return address, or from the heap's memo of its last walks; st->n = 0 when
 * libgcc must walk this stack */
AXI_HIDDEN void axi_prof_unwind(ax_heap_t *heap, ax_prof_stack_t *st);
AXI_HIDDEN void axi_prof_unwind_fork_child(void);
/* prof_unwind.c: the bounds of libgcc's registry of unwind tables, which a walk does not
 * enter; called once from a constructor before any walk (axi_prof_ready) */
AXI_HIDDEN void axi_prof_unwind_ready(void);
/* prof.c: libgcc's walk, where axi_prof_unwind could not (st->n == 0), or beside it (check) */
AXI_HIDDEN void axi_prof_walk_libgcc(ax_prof_stack_t *st);
/* prof_unwind.c: is ret a return address into the allocator's entry points (section
 * axmalloc_api)? */
AXI_HIDDEN bool axi_prof_in_api(uintptr_t ret);
/* prof_unwind.c: the index of st's first program frame (after our own); *depth of them */
AXI_HIDDEN unsigned axi_prof_program_frames(const ax_prof_stack_t *st, unsigned *depth);
/* prof_unwind.c: sets st's program frames and their hash */
AXI_HIDDEN void axi_prof_stack_key(ax_prof_stack_t *st);
/* The stack of a sampled allocation, from the unwind tables every Debian binary has (-O2
 * code keeps no frame pointers). Inline, so that the walk starts in the frame of the malloc
 * path that decided to sample, not in frames of the profiler's own. pre: heap is the
 * thread's own (not the empty one). */
static inline __attribute__((always_inline)) void axi_prof_capture(ax_heap_t *heap,
                                                                   ax_prof_stack_t *st) {
  heap->prof.busy = true; /* a first lookup in libgcc's tables may allocate */
  st->n = 0;
  st->memo = false;
  if (axi_prof_unwind_mode != AX_UNWIND_LIBGCC)
    axi_prof_unwind(heap, st);
  if (ax_unlikely(st->n == 0 || axi_prof_unwind_mode == AX_UNWIND_CHECK))
    axi_prof_walk_libgcc(st);
  heap->prof.busy = false;
}
AXI_HIDDEN bool axi_prof_take_slow(ax_heap_t *heap, unsigned c);
/* malloc's slow path, for a block of class c: settles what the fast path handed out of the
 * class since the slow path last came by, counts this allocation, and tells whether it is
 * the sampled one. pre: c's size <= AX_LARGE_MAX; heap is the thread's own, not busy.
 * post: true: sample it (axi_prof_sampled); false: allocate as usual, then (a direct class)
 * axi_prof_grant. */
static inline bool axi_prof_take(ax_heap_t *heap, unsigned c) {
  ax_prof_heap_t *ph = &heap->prof;
  if (ax_unlikely(!ph->started))
    return axi_prof_take_slow(heap, c);
  axi_prof_settle(heap, c);
  if (ax_likely(ph->left[c] != 0)) {
    ph->left[c]--;
    return false;
  }
  return axi_prof_take_slow(heap, c);
}

/* A stack and a block size, with the samples taken there. Never freed (a profile of a long
 * run names each stack once); allocs and frees only grow. */
typedef struct ax_prof_bucket {
  struct ax_prof_bucket *next; /* hash chain */
  uint64_t hash;
  size_t size; /* the block size the sampling used (its class size; huge: the request) */
  ax_atomic_word allocs, frees;
  uint32_t depth;
  uintptr_t pc[]; /* return addresses */
} ax_prof_bucket_t;

#define AX_PROF_TABLE 4096 /* hash heads */

typedef struct ax_prof_state {
  ax_lock_t lock; /* the table; held while a dump walks it */
  uint64_t rate;  /* mean bytes between samples */
  const char *prefix;
  int leaks;                   /* AXMALLOC_PROF_LEAKS=1: the leak report at exit */
  int signal;                  /* AXMALLOC_PROF_SIGNAL: dump on it (0: none) */
  ax_atomic_word dump_pending; /* the signal came while the table was locked */
  ax_atomic_word seq;          /* numbers the dumps of this process */
  ax_prof_bucket_t *table[AX_PROF_TABLE];
} ax_prof_state_t;

AXI_HIDDEN extern ax_prof_state_t axi_prof;

/* prof.c: the sampled allocation, its stack taken (axi_prof_capture) */
AXI_HIDDEN void *axi_prof_sampled(ax_heap_t *heap, size_t size, bool zero,
                                  const ax_prof_stack_t *st);

/* prof_dump.c */
AXI_HIDDEN void axi_prof_dump_init(void);
/* Unlock the profile's lock, then write the dump the signal asked for meanwhile, if any. */
AXI_HIDDEN void axi_prof_unlock(void);
AXI_HIDDEN double axi_prof_exp(double x);

/* prof.c, prof_dump.c: the sampling heap profiler (contracts there) */
AXI_HIDDEN void axi_prof_init(void);
AXI_HIDDEN void axi_prof_ready(void);
AXI_HIDDEN uint64_t axi_prof_rate(void);
AXI_HIDDEN void axi_prof_set_active(bool on); /* ax_ctl's prof.active (sampling paused) */
AXI_HIDDEN bool axi_prof_active(void);
AXI_HIDDEN const char *axi_prof_prefix(void);
AXI_HIDDEN void *axi_prof_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void axi_prof_huge(void *p, size_t size);
AXI_HIDDEN void axi_prof_release(ax_segment_t *seg);
AXI_HIDDEN void axi_prof_slot_free(const char *fn, ax_segment_t *seg, void *p);
AXI_HIDDEN size_t axi_prof_slot_size(const char *fn, ax_segment_t *seg, const void *p);
AXI_HIDDEN void axi_prof_fork_child(void);
AXI_HIDDEN void axi_prof_trim(void);

#endif
