/* SPDX-License-Identifier: MIT */
/* The exact leak checker: every live block and the stack that allocated it, and at exit the
 * blocks no root reaches, reported by stack.
 *
 *   AXMALLOC_LEAKS=1|all  AXMALLOC_LEAKS_EXITCODE=<0-255, 23>  AXMALLOC_LEAKS_SUPPRESSIONS=<file>
 *
 * While it runs every malloc and free takes the slow paths (axi_slow_only, as in checked
 * mode): malloc's records the block's size and stack in the block's side word (leak.h), free's
 * clears it, so the live set at exit is exact, not a sample. Stacks are walked by the heap
 * profiler's unwinder (its rules per return address and its memo of the thread's last walks:
 * a walk from the same place re-reads a few words) and kept once each in a depot. At exit
 * (leak_at_exit) leak_scan.c marks what the roots reach; the rest is reported, biggest stack
 * first, its frames named by symbolize.c; then the process exits with the exit code when any
 * leak is not suppressed. Other threads may still run then: the scan closes a gate that every
 * free and unmap of leak mode passes (below). Off, nothing here runs: every entry is behind
 * axi_leaks, on a slow path.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modes/leak.h"

#include "cache.h"
#include "hooks.h"
#include "list.h"
#include "modes/prof.h"
#include "options.h"
#include "os.h"
#include "print.h"
#include "state.h"

ax_atomic_word axi_leak_dir[AX_LEAK_L1];
char *axi_leak_depot;
ax_atomic_word axi_leak_depot_top;
/* lo and hi complemented (a static program's data is a root: they must name no block); none
 * yet: lo ~0, hi 0 */
ax_atomic_word axi_leak_lo, axi_leak_hi = ~(uintptr_t)0, axi_leak_max;

static unsigned exit_code = 23;
static const char *suppressions; /* the file's path, NULL: none */
static bool ready;               /* constructors ran: stacks can be walked (prof.c's reason) */
static pid_t leak_pid;           /* the process the check runs in: not a fork child */

/* ---- options --------------------------------------------------------------------------- */

/* The checker's three options (options.c's table: AXMALLOC_LEAKS a bool or all, the exit code
 * 0-255, the suppression file's path). */
static void leak_options(void) {
  axi_leaks = (uint8_t)axi_option_num(AXI_OPTION_LEAKS); /* off, on, all: 0, 1, 2 */
  exit_code = (unsigned)axi_option_num(AXI_OPTION_LEAKS_EXITCODE);
  if (axi_option_from_env(AXI_OPTION_LEAKS_SUPPRESSIONS))
    suppressions = axi_option_str(AXI_OPTION_LEAKS_SUPPRESSIONS);
}

/* ---- the depot --------------------------------------------------------------------------- */

#define DEPOT_SLOTS ((size_t)1 << 20)   /* stack ids by hash: open addressing */
#define DEPOT_BYTES ((size_t)128 << 20) /* room for 400,000 stacks of 30 frames or more */
static ax_atomic_word *depot_slot;

static bool same_stack(const ax_leak_stack_t *s, uint64_t h, const uintptr_t *pc, unsigned depth) {
  if (s->hash != h || s->depth != depth)
    return false;
  for (unsigned i = 0; i < depth; i++)
    if (s->pc[i] != pc[i])
      return false;
  return true;
}

/* A new stack at the depot's end; 0 when it is full. */
static uint32_t depot_add(uint64_t h, const uintptr_t *pc, unsigned depth) {
  size_t need = sizeof(ax_leak_stack_t) + depth * sizeof *pc;
  size_t at = ax_atomic_fetch_add_relaxed(&axi_leak_depot_top, need);
  if (at + need > DEPOT_BYTES)
    return 0;
  ax_leak_stack_t *s = (ax_leak_stack_t *)(axi_leak_depot + at);
  s->hash = h;
  s->depth = depth;
  memcpy(s->pc, pc, depth * sizeof *pc);
  return (uint32_t)(at / 8 + 1);
}

/* The id of the stack pc[0..depth) with hash h, added if need be. Lock-free: a slot goes from
 * 0 to (the hash's top half, the id) once (CAS), the stack written before it is published;
 * the top half tells most other stacks' slots apart without reading their stacks (a probe
 * that read each stack cost a cache miss a probe: wl_binarytrees, whose recursion makes a
 * stack of every path into its trees, ran 29 times as long). Two threads adding the same
 * stack at once both write it, one wins the slot, the loser's copy stays unused. Once the
 * depot is full, a new stack is the unknown one. */
static bool depot_full;
static uint32_t depot_id(uint64_t h, const uintptr_t *pc, unsigned depth) {
  uintptr_t tag = (uintptr_t)(h >> 32) << 32;
  for (size_t i = h, probes = 0; probes < 16; i++, probes++) {
    ax_atomic_word *slot = &depot_slot[i & (DEPOT_SLOTS - 1)];
    uintptr_t v = ax_atomic_load_acquire(slot);
    if (!v) {
      uint32_t mine = depot_full ? 0 : depot_add(h, pc, depth);
      if (!mine) {
        depot_full = true;
        return AX_LEAK_NO_STACK;
      }
      if (ax_atomic_cas_acq_rel(slot, &v, tag | mine))
        return mine;
    }
    if ((v & ~(uintptr_t)0xffffffffu) == tag &&
        same_stack(axi_leak_stack((uint32_t)v), h, pc, depth))
      return (uint32_t)v;
  }
  return AX_LEAK_NO_STACK;
}

static uint64_t frames_hash(const uintptr_t *pc, unsigned depth) {
  uint64_t h = 0x84222325cbf29ce4ull;
  for (unsigned i = 0; i < depth; i++)
    h = (h ^ pc[i]) * 0x100000001b3ull;
  return h ^ h >> 31;
}

/* The depot id of the stack the capture took: the program's frames, the first
 * AX_LEAK_DEPTH of them (the walk hashed them already when there are no more). */
static uint32_t stack_id(const ax_prof_stack_t *st) {
  if (st->n == 0)
    return AX_LEAK_NO_STACK;
  const uintptr_t *pc = st->pc + st->first;
  unsigned depth = st->depth < AX_LEAK_DEPTH ? st->depth : AX_LEAK_DEPTH;
  uint64_t h = st->depth <= AX_LEAK_DEPTH ? st->hash : frames_hash(pc, depth);
  return depot_id(h, pc, depth);
}

/* ---- the scan's gate ------------------------------------------------------------------------ */

/* The scan at exit reads the heap while other threads may still run (leak_scan.c): what it
 * reads must stay where it is until it has counted. Every free (free.c), realloc of a huge
 * block (alloc.c) and unmap (os.c) of leak mode is a section of the gate (axi_leak_hold ..
 * axi_leak_release). The scan closes it, then waits until no thread is inside one; a section
 * that starts while it is closed marks its block gone (followed still, never counted), steps
 * out and waits until the scan opens it again: a brief spin, then a futex sleep of 10 ms at a
 * time. A thread waiting is stopped: its stack is a root (leak.h, axi_leak_parked). A section
 * inside another (the free inside a realloc, an unmap inside a free) passes, as does the
 * scan's own thread, and a fork child's (the scan is its parent's). malloc does not wait: a
 * block it records while the gate is closed is new (axi_leak_new), followed but never
 * counted.
 *
 * Dekker's: a section counts itself in, then reads the gate; the scan closes the gate, then
 * reads the counts; one of the two sees the other. Each thread counts in a slot of its own,
 * which only it writes (a handler that interrupts it leaves the count as it found it), so the
 * section's side is a store and a load: the scan's membarrier(2) is the full fence of both
 * sides (a locked add and a fence on each free and malloc cost wl_oneblock a third of its
 * time). Without membarrier, or without a slot (more than GATE_SLOTS threads ids), a section
 * fences. A slot is taken by thread id and kept: a later thread with that id takes it again.
 *
 * A thread that runs on while the scan reads may hold a block it made before the gate closed
 * in its registers only, between malloc's return and its store (a churn of huge blocks lost
 * one, 1 run in 300 under load): its slot keeps the last GATE_RING of them, and the scan takes
 * those of every thread still alive (its heap in use, with its id) as roots. */
#define GATE_SLOTS 4096u
#define GATE_RING 4
#define GATE_SETTLE_MS 10000 /* (no section waits for the gate: leaving is quick) */
typedef struct gate_slot {
  ax_atomic_word thread, inside; /* a thread id; its sections entered */
  ax_atomic_word heap, made;     /* its heap; its blocks made (the ring's next) */
  ax_atomic_word last[GATE_RING];
} gate_slot_t;
_Static_assert(sizeof(gate_slot_t) == 64, "a slot is a line of its own");
static gate_slot_t *slots;   /* GATE_SLOTS of them, mapped at init */
static ax_atomic_word crowd; /* the sections of threads without a slot (a locked add) */
static bool asymmetric;      /* membarrier registered: sections need no fence */
ax_atomic_word axi_leak_parked;
static ax_atomic_word gate;        /* 1 while closed (its low half is the futex) */
static ax_atomic_word gate_thread; /* the scan's */
static pid_t gate_pid;             /* the scan's process */
/* the thread's count of sections entered: its slot's, or (&crowd) its own depth */
static __thread ax_atomic_word *mine __attribute__((tls_model("initial-exec")));
static __thread unsigned crowd_depth __attribute__((tls_model("initial-exec")));

/* The calling thread's slot, taken or found by its id; &crowd when none is left. */
static AX_NOINLINE ax_atomic_word *slot_take(void) {
  uintptr_t id = ax_arch_thread_id();
  for (uint32_t i = (uint32_t)((id * 0x9e3779b97f4a7c15u) >> 52), n = 0; slots && n < GATE_SLOTS;
       i++, n++) {
    gate_slot_t *s = &slots[i % GATE_SLOTS];
    uintptr_t t = ax_atomic_load_relaxed(&s->thread);
    if (t == id || (!t && ax_atomic_cas_acq_rel(&s->thread, &t, id)))
      return mine = &s->inside;
  }
  return mine = &crowd;
}

static void fence_for_gate(void) {
  if (ax_likely(asymmetric))
    ax_compiler_fence();
  else
    ax_fence_full();
}

/* Until the gate opens. A fork child of the scan's process opens its own copy: nothing scans
 * there. */
static void gate_wait(void) {
  for (unsigned spins = 0; ax_atomic_load_acquire(&gate); spins++) {
    if (spins < 256) {
      ax_arch_pause();
    } else if (getpid() != gate_pid) {
      ax_atomic_store_relaxed(&gate, 0);
    } else {
      axi_os_wait(&gate, 1, 10);
    }
  }
}

/* Waits at the closed gate, on the list of the threads whose stacks the scan reads: from this
 * frame up, the callee-saved registers spilled below the caller's frames (park). */
static AX_NOINLINE void park_here(void) {
  ax_leak_parked_t me = {NULL, (uintptr_t)__builtin_frame_address(0)};
  uintptr_t head = ax_atomic_load_relaxed(&axi_leak_parked);
  do
    me.next = (ax_leak_parked_t *)head;
  while (!ax_atomic_cas_release(&axi_leak_parked, &head, (uintptr_t)&me));
  AX_HOOK(AX_HOOK_LEAK_WAIT, NULL);
  gate_wait();
}

static AX_NOINLINE void park(void) {
  __builtin_unwind_init(); /* every callee-saved register to this frame: what the thread holds */
  park_here();
  __asm__ volatile("" ::: "memory"); /* (not a tail call: this frame stays) */
}

/* The word of the block at p, if live, gets bit (the scan may set AX_LEAK_REACHED meanwhile). */
static void word_or(const void *p, uintptr_t bit) {
  ax_atomic_word *w = axi_leak_word((uintptr_t)p);
  uintptr_t v = w ? ax_atomic_load_relaxed(w) : 0;
  while (v && !(v & bit) && !ax_atomic_cas_acq_rel(w, &v, v | bit))
    ;
}

/* The gate is closed, unless to the scan's own thread: the thread steps out (*in back to 0),
 * p is gone, and it waits until the gate opens, then comes in again. */
static AX_NOINLINE void hold_closed(const void *p, ax_atomic_word *in) {
  ax_fence_acquire();
  if (ax_atomic_load_relaxed(&gate_thread) == ax_arch_thread_id())
    return;
  do {
    ax_poke_release(in, 0);
    if (p)
      word_or(p, AX_LEAK_GONE);
    park();
    ax_atomic_store_relaxed(in, 1);
    fence_for_gate();
  } while (ax_atomic_load_relaxed(&gate));
}

/* A thread without a slot: a locked add in the crowd's count, and its own depth. */
static AX_NOINLINE void crowd_hold(const void *p) {
  if (crowd_depth++)
    return;
  for (;;) {
    ax_atomic_fetch_add_relaxed(&crowd, 1);
    ax_fence_full();
    if (!ax_atomic_load_relaxed(&gate)) /* (its threads fence: asymmetric or not) */
      return;
    ax_fence_acquire();
    if (ax_atomic_load_relaxed(&gate_thread) == ax_arch_thread_id())
      return;
    ax_fence_release();
    ax_atomic_fetch_add_relaxed(&crowd, (uintptr_t)-1);
    if (p)
      word_or(p, AX_LEAK_GONE);
    park();
  }
}

static AX_NOINLINE void crowd_release(void) {
  if (--crowd_depth == 0) {
    ax_fence_release();
    ax_atomic_fetch_add_relaxed(&crowd, (uintptr_t)-1);
  }
}

/* The count is the thread's own (a signal handler that interrupts it leaves it as it found
 * it): a section inside another passes, and one that starts while the gate is closed waits
 * (a handler's too, while its thread waits). */
void axi_leak_hold(const void *p) {
  ax_atomic_word *in = ax_likely(mine != NULL) ? mine : slot_take();
  if (ax_unlikely(in == &crowd))
    return crowd_hold(p);
  uintptr_t n = ax_atomic_load_relaxed(in);
  ax_atomic_store_relaxed(in, n + 1);
  if (n)
    return;
  fence_for_gate();
  if (ax_unlikely(ax_atomic_load_relaxed(&gate)))
    hold_closed(p, in);
}

/* (release: what the section did, before a scan that waits for it reads) */
void axi_leak_release(void) {
  ax_atomic_word *in = mine;
  if (ax_unlikely(in == &crowd))
    return crowd_release();
  ax_poke_release(in, ax_atomic_load_relaxed(in) - 1);
}

/* Whether any thread is inside a section. */
static bool anyone_inside(void) {
  if (ax_atomic_load_acquire(&crowd))
    return true;
  for (uint32_t i = 0; slots && i < GATE_SLOTS; i++)
    if (ax_atomic_load_acquire(&slots[i].inside))
      return true;
  return false;
}

bool axi_leak_gate_close(void) {
  ax_atomic_store_relaxed(&gate_thread, ax_arch_thread_id());
  gate_pid = getpid();
  ax_atomic_store_release(&gate, 1);
  ax_fence_full();
  if (asymmetric && !axi_os_barrier()) { /* (it worked at init: refused now) */
    axi_leak_gate_open();
    return false;
  }
  uint64_t until = axi_now_ms() + GATE_SETTLE_MS;
  ax_atomic_word nap = 0;
  for (unsigned spins = 0; anyone_inside(); spins++) {
    if (spins < 64) {
      ax_arch_pause();
    } else if (axi_now_ms() < until) {
      axi_os_wait(&nap, 0, 1);
    } else {
      axi_leak_gate_open();
      return false;
    }
  }
  return true;
}

void axi_leak_gate_open(void) {
  ax_atomic_store_relaxed(&axi_leak_parked, 0); /* (its records end as their threads go on) */
  ax_atomic_store_release(&gate, 0);
  axi_os_wake(&gate, UINT32_MAX);
}

/* fn on the last blocks each thread made before the gate closed, but the scan's own thread's
 * (its registers are on its stack), for the threads still alive. pre: the gate is closed. */
void axi_leak_held(void (*fn)(uintptr_t p)) {
  uintptr_t self = ax_arch_thread_id();
  for (uint32_t i = 0; slots && i < GATE_SLOTS; i++) {
    uintptr_t t = ax_atomic_load_relaxed(&slots[i].thread);
    ax_heap_t *heap = (ax_heap_t *)ax_atomic_load_relaxed(&slots[i].heap);
    if (!t || t == self || !heap || !ax_peek(&heap->active) || ax_peek(&heap->tid) != t)
      continue;
    for (unsigned k = 0; k < GATE_RING; k++)
      fn(ax_atomic_load_relaxed(&slots[i].last[k]));
  }
}

/* The slots and the barrier. pre: process init, leak mode. */
static void gate_init(void) {
  slots = axi_os_map(GATE_SLOTS * sizeof *slots);
  asymmetric = axi_os_barrier_available();
}

/* ---- recording ----------------------------------------------------------------------------- */

/* [p, p + size) is in the span of recorded blocks, and size counts in its maximum: for each
 * region that gets a side array, and each huge block (the rest of them are in their regions,
 * and found through the page map). */
static AX_NOINLINE void span_add(uintptr_t p, size_t size) {
  uintptr_t end = p + (size ? size : 1), v = ax_atomic_load_relaxed(&axi_leak_lo);
  while (~p > v && !ax_atomic_cas_acq_rel(&axi_leak_lo, &v, ~p))
    ;
  v = ax_atomic_load_relaxed(&axi_leak_hi);
  while (~end < v && !ax_atomic_cas_acq_rel(&axi_leak_hi, &v, ~end))
    ;
  v = ax_atomic_load_relaxed(&axi_leak_max);
  while (size > v && !ax_atomic_cas_acq_rel(&axi_leak_max, &v, size))
    ;
}

/* A zeroed table of n words, published at *at unless another thread published one first. */
static ax_atomic_word *table_at(ax_atomic_word *at, size_t n) {
  uintptr_t t = ax_atomic_load_acquire(at);
  if (t)
    return (ax_atomic_word *)t;
  void *mine = axi_os_map(n * sizeof(ax_atomic_word));
  if (!mine)
    return NULL;
  axi_os_thp_advise(mine, n * sizeof(ax_atomic_word), false); /* a touched word: 4 KiB, not 2 MiB */
  if (ax_atomic_cas_acq_rel(at, &t, (uintptr_t)mine))
    return mine;
  axi_os_unmap(mine, n * sizeof(ax_atomic_word));
  return (ax_atomic_word *)t;
}

/* The side word of the block at p, its region's tables mapped if need be; NULL when there is
 * no memory for them (the block then goes unrecorded: never reported). */
static ax_atomic_word *word_made(uintptr_t p) {
  ax_atomic_word *w = axi_leak_word(p);
  if (ax_likely(w != NULL))
    return w;
  span_add(p & ~AX_SEGMENT_MASK, AX_SEGMENT_SIZE); /* (before any block of it is recorded) */
  ax_atomic_word *l2 = table_at(&axi_leak_dir[(p >> 36) & (AX_LEAK_L1 - 1)], AX_LEAK_L2);
  ax_atomic_word *side =
      l2 ? table_at(&l2[(p >> AX_SEGMENT_SHIFT) & (AX_LEAK_L2 - 1)], AX_LEAK_SIDE) : NULL;
  return side ? side + ((p & AX_SEGMENT_MASK) >> 4) : NULL;
}

/* A block the program now holds, of size bytes (its request), allocated from the caller's
 * stack (this frame and the entry points' are dropped: AX_API). A malloc before constructors
 * ran, or from inside a walk (libgcc's first lookup allocates), gets the unknown stack. While
 * the scan's gate is closed the block is new: never counted (the program may store it where
 * the scan has read already); before, it goes in the thread's ring (see the gate). pre:
 * axi_leaks; p is a block no other thread can free yet. */
AX_NOINLINE AX_API void axi_leak_new(void *p, size_t size) {
  uint32_t id = axi_leak_stack_here();
  ax_atomic_word *w = word_made((uintptr_t)p);
  if (!w)
    return;
  if (size > AX_LARGE_MAX) /* (a huge block: past its region) */
    span_add((uintptr_t)p, size);
  uintptr_t v = (uintptr_t)(size < AX_LEAK_BIG ? size : AX_LEAK_BIG) << 32 | id;
  if (ax_unlikely(ax_atomic_load_relaxed(&gate))) {
    ax_atomic_store_relaxed(w, v | AX_LEAK_NEW);
    return;
  }
  ax_atomic_store_relaxed(w, v);
  ax_atomic_word *in = ax_likely(mine != NULL) ? mine : slot_take();
  if (ax_likely(in != &crowd)) { /* (the ring: see the gate) */
    gate_slot_t *slot = (gate_slot_t *)((char *)in - offsetof(gate_slot_t, inside));
    uintptr_t n = ax_atomic_load_relaxed(&slot->made);
    ax_atomic_store_relaxed(&slot->heap, (uintptr_t)axi_tls_heap);
    ax_atomic_store_relaxed(&slot->last[n % GATE_RING], (uintptr_t)p);
    ax_atomic_store_relaxed(&slot->made, n + 1);
  }
}

/* The depot id of the caller's stack (the allocator's frames dropped: AX_API): the unknown
 * stack before constructors ran, on a thread without a heap, or from inside a walk. pre: the
 * depot is mapped (axi_leaks or axi_check_stacks). */
AX_NOINLINE AX_API uint32_t axi_leak_stack_here(void) {
  ax_heap_t *heap = axi_tls_heap;
  if (!ready || heap == &axi_heap_empty || heap->prof.busy)
    return AX_LEAK_NO_STACK;
  ax_prof_stack_t st;
  axi_prof_capture(heap, &st);
  return stack_id(&st);
}

/* The side word of the block at p set to v (0: cleared), its tables mapped if need be. */
void axi_leak_set(uintptr_t p, uint64_t v) {
  ax_atomic_word *w = v ? word_made(p) : axi_leak_word(p);
  if (w)
    ax_atomic_store_relaxed(w, v);
}
uint64_t axi_leak_get(uintptr_t p) {
  ax_atomic_word *w = axi_leak_word(p);
  return w ? ax_atomic_load_relaxed(w) : 0;
}

/* free (or realloc) of the block at p, any thread: it is no longer live. A block whose word is
 * already clear was not live: when it also looks free (its link), it is looked for on its
 * page's lists, and reported as a double free if there (free's own owner path does not look).
 * page: NULL for a huge block. */
void axi_leak_forget(ax_page_t *page, void *p) {
  ax_atomic_word *w = axi_leak_word((uintptr_t)p);
  if (w && ax_atomic_load_relaxed(w)) {
    ax_atomic_store_relaxed(w, 0);
    return;
  }
  if (page && axi_looks_free(page, p))
    axi_double_free_check(page, p);
}

/* realloc kept the block at p for size bytes: its stack stays, its size follows (a CAS: the
 * scan may mark it meanwhile; the bytes past the new size stay the block's). */
void axi_leak_resize(void *p, size_t size) {
  ax_atomic_word *w = axi_leak_word((uintptr_t)p);
  uintptr_t v = w ? ax_atomic_load_relaxed(w) : 0;
  uintptr_t s = (uintptr_t)(size < AX_LEAK_BIG ? size : AX_LEAK_BIG) << 32;
  while (v && !ax_atomic_cas_acq_rel(w, &v, s | (v & 0xffffffffu)))
    ;
  if (v && size > AX_LARGE_MAX)
    span_add((uintptr_t)p, size);
}

/* ---- init ---------------------------------------------------------------------------------- */

/* pre: process init, after checked mode and tagging are decided, before the profiler's. */
static bool depot_map(void) {
  depot_slot = axi_os_map(DEPOT_SLOTS * sizeof *depot_slot);
  axi_leak_depot = axi_os_map(DEPOT_BYTES);
  axi_leak_depot_top = sizeof(ax_leak_stack_t); /* id 1: the stack not known, no frames */
  return depot_slot && axi_leak_depot;
}

/* pre: process init, after checked mode and tagging are decided, before the profiler's.
 * Checked mode with AXMALLOC_PROF=1 keeps its blocks' stacks here (axi_check_stacks): the
 * depot and the side words, without the check at exit. */
void axi_leak_init(void) {
  leak_options();
  if (axi_checked && axi_option_num(AXI_OPTION_PROF)) {
    if (depot_map())
      axi_check_stacks = true;
    else
      axi_write("axmalloc: no memory for checked mode's allocation stacks: none kept\n");
  }
  if (!axi_leaks)
    return;
  if (axi_checked || axi_mte) {
    axi_write("axmalloc: the leak checker is not available with checked mode or memory "
              "tagging: off\n");
    axi_leaks = 0;
    return;
  }
  if (!depot_map()) {
    axi_write("axmalloc: no memory for the leak checker: off\n");
    axi_leaks = 0;
    return;
  }
  gate_init();
  axi_seams.unmap_hold = axi_leak_hold; /* (os.c) */
  axi_seams.unmap_release = axi_leak_release;
  axi_write_keep_stderr(); /* the report at exit must find stderr (print.c) */
}

/* Constructors run: from now on stacks are walked (prof.c warmed the unwinder up). pre:
 * axi_leaks or axi_check_stacks. */
void axi_leak_ready(void) {
  ready = true;
  leak_pid = getpid();
}

/* ---- suppressions ---------------------------------------------------------------------------- */

/* LeakSanitizer's patterns: '*' any characters; matched anywhere in the name unless it starts
 * with '^' (at the start) or ends with '$' (at the end). */
static bool glob(const char *p, const char *pend, const char *s, bool anchored_end) {
  while (p < pend && *p != '*') {
    if (!*s || *s != *p)
      return false;
    p++, s++;
  }
  if (p == pend)
    return !anchored_end || !*s;
  for (; *s; s++)
    if (glob(p + 1, pend, s, anchored_end))
      return true;
  return glob(p + 1, pend, s, anchored_end);
}

static bool pattern_match(const char *pat, const char *s) {
  size_t n = strlen(pat);
  bool start = n && pat[0] == '^', end = n > 1 && pat[n - 1] == '$';
  const char *p = pat + start, *pend = pat + n - end;
  if (start)
    return glob(p, pend, s, end);
  for (; *s; s++)
    if (glob(p, pend, s, end))
      return true;
  return glob(p, pend, s, end);
}

#define MAX_PATTERNS 256
static const char *pattern[MAX_PATTERNS];
static unsigned npatterns;
static uint64_t pattern_hits[MAX_PATTERNS][2]; /* blocks, bytes */

/* The suppression file, read into memory of its own: lines "leak:<pattern>", '#' comments. */
static void read_suppressions(void) {
  int fd = axi_os_open(suppressions, 0, 0);
  long size = fd >= 0 ? axi_os_file_size(fd) : -1;
  char *buf = size >= 0 ? axi_os_map((size_t)size + 1) : NULL;
  long got = 0, r;
  while (buf && got < size && (r = axi_os_read(fd, buf + got, (size_t)(size - got))) > 0)
    got += r;
  if (fd >= 0)
    axi_os_close(fd);
  if (!buf) {
    axi_write("axmalloc: AXMALLOC_LEAKS_SUPPRESSIONS=%s: cannot be read\n", suppressions);
    return;
  }
  for (char *line = buf, *next; line < buf + got; line = next) {
    next = line;
    while (next < buf + got && *next != '\n')
      next++;
    *next++ = 0;
    while (*line == ' ' || *line == '\t')
      line++;
    for (char *e = line + strlen(line);
         e > line && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r');)
      *--e = 0;
    if (!*line || *line == '#')
      continue;
    if (strncmp(line, "leak:", 5) != 0 || !line[5])
      axi_write("axmalloc: %s: not a suppression (leak:<pattern>): %s\n", suppressions, line);
    else if (npatterns < MAX_PATTERNS)
      pattern[npatterns++] = line + 5;
  }
}

/* The pattern (+ 1) that matches a frame of s (its function's name or its file), 0: none. */
static uint32_t suppressed_by(const ax_leak_stack_t *s) {
  for (unsigned f = 0; f < s->depth; f++) {
    ax_sym_t sym;
    axi_symbolize(s->pc[f], &sym);
    for (unsigned i = 0; i < npatterns; i++)
      if ((sym.name && pattern_match(pattern[i], sym.name)) ||
          pattern_match(pattern[i], sym.module))
        return i + 1;
  }
  return 0;
}

/* Blocks the dynamic linker allocated (a thread's TLS, its DTV) are held through structures
 * the scan does not read (the TLS of threads gone, kept with their cached stacks): counted
 * as still reachable, as LeakSanitizer ignores the linker's allocations. */
static bool by_linker(const ax_leak_stack_t *s) {
  for (unsigned f = 0; f < s->depth; f++) {
    ax_sym_t sym;
    axi_symbolize(s->pc[f], &sym);
    const char *base = strrchr(sym.module, '/');
    base = base ? base + 1 : sym.module;
    if (!strncmp(base, "ld-linux", 8) || (sym.name && !strncmp(sym.name, "_dl_allocate_tls", 16)))
      return true;
  }
  return false;
}

static void linker_blocks(ax_leak_tally_t *sum) {
  size_t top = ax_atomic_load_relaxed(&axi_leak_depot_top);
  top = top < DEPOT_BYTES ? top : DEPOT_BYTES;
  for (size_t at = 0; at < top;) {
    ax_leak_stack_t *s = (ax_leak_stack_t *)(axi_leak_depot + at);
    if (s->n[0] && by_linker(s)) {
      sum->n[0] -= s->n[0];
      sum->bytes[0] -= s->bytes[0];
      sum->n[1] += s->n[0];
      sum->bytes[1] += s->bytes[0];
      s->n[1] += s->n[0];
      s->bytes[1] += s->bytes[0];
      s->n[0] = s->bytes[0] = 0;
    }
    at += axi_leak_stack_bytes(s);
  }
}

/* ---- the report ------------------------------------------------------------------------------ */

/* The stacks with blocks of kind k (0 lost, 1 still reachable), biggest first: a heap sort
 * of their ids (no allocation, no recursion). */
static bool bigger(uint32_t a, uint32_t b, unsigned k) {
  return axi_leak_stack(a)->bytes[k] > axi_leak_stack(b)->bytes[k];
}
static void sift(uint32_t *v, size_t i, size_t n, unsigned k) {
  for (size_t c; (c = 2 * i + 1) < n; i = c) {
    if (c + 1 < n && bigger(v[c], v[c + 1], k))
      c++;
    if (!bigger(v[i], v[c], k))
      return;
    uint32_t t = v[i];
    v[i] = v[c];
    v[c] = t;
  }
}
static void sort_smallest_last(uint32_t *v, size_t n, unsigned k) { /* a min-heap, popped */
  for (size_t i = n / 2; i-- > 0;)
    sift(v, i, n, k);
  for (size_t end = n; end-- > 1;) {
    uint32_t t = v[0];
    v[0] = v[end];
    v[end] = t;
    sift(v, 0, end, k);
  }
}

static void print_frames(const ax_leak_stack_t *s) {
  for (unsigned f = 0; f < s->depth; f++) {
    ax_sym_t sym;
    axi_symbolize(s->pc[f], &sym);
    if (sym.name)
      axi_write("    #%d %p %s+0x%llx (%s+0x%llx)\n", (int)f, (void *)s->pc[f], sym.name,
                (unsigned long long)sym.off, sym.module, (unsigned long long)sym.module_off);
    else
      axi_write("    #%d %p (%s+0x%llx)\n", (int)f, (void *)s->pc[f], sym.module,
                (unsigned long long)sym.module_off);
  }
}

static void print_stack(const ax_leak_stack_t *s) {
  if (s->depth == 0)
    axi_write("    (no stack: allocated before constructors ran, or by the unwinder)\n");
  print_frames(s);
  axi_write("\n");
}

/* The stack id names, its frames symbolised, under a line of its own (checked mode's reports). */
void axi_leak_print_stack(const char *title, uint32_t id) {
  const ax_leak_stack_t *s = axi_leak_stack(id);
  axi_write("  %s:\n", title);
  if (s->depth == 0)
    axi_write("    (not known: before constructors ran, or inside the unwinder)\n");
  print_frames(s);
}

/* The ids of the stacks with blocks of kind k and not suppressed, in memory of their own. */
static size_t groups_of(unsigned k, uint32_t **out) {
  size_t top = ax_atomic_load_relaxed(&axi_leak_depot_top), n = 0;
  top = top < DEPOT_BYTES ? top : DEPOT_BYTES;
  for (size_t at = 0; at < top;
       at += axi_leak_stack_bytes((ax_leak_stack_t *)(axi_leak_depot + at)))
    n += ((ax_leak_stack_t *)(axi_leak_depot + at))->n[k] != 0;
  uint32_t *v = n ? axi_os_map(n * sizeof *v) : NULL;
  n = 0;
  for (size_t at = 0; v && at < top;) {
    ax_leak_stack_t *s = (ax_leak_stack_t *)(axi_leak_depot + at);
    if (s->n[k] && !(k == 0 && s->suppressed))
      v[n++] = (uint32_t)(at / 8 + 1);
    at += axi_leak_stack_bytes(s);
  }
  *out = v;
  return v ? n : 0;
}

static void print_groups(unsigned k) {
  uint32_t *v;
  size_t n = groups_of(k, &v);
  sort_smallest_last(v, n, k);
  for (size_t i = 0; i < n; i++) {
    ax_leak_stack_t *s = axi_leak_stack(v[i]);
    axi_write("%llu bytes in %llu blocks %s from:\n", (unsigned long long)s->bytes[k],
              (unsigned long long)s->n[k], k ? "still reachable, allocated" : "allocated");
    print_stack(s);
  }
}

/* Suppressed stacks: their blocks move out of the lost count, into their pattern's. */
static void suppress(ax_leak_tally_t *sum) {
  read_suppressions();
  size_t top = ax_atomic_load_relaxed(&axi_leak_depot_top);
  top = top < DEPOT_BYTES ? top : DEPOT_BYTES;
  for (size_t at = 0; npatterns && at < top;) {
    ax_leak_stack_t *s = (ax_leak_stack_t *)(axi_leak_depot + at);
    if (s->n[0] && (s->suppressed = suppressed_by(s))) {
      pattern_hits[s->suppressed - 1][0] += s->n[0];
      pattern_hits[s->suppressed - 1][1] += s->bytes[0];
      sum->n[0] -= s->n[0];
      sum->bytes[0] -= s->bytes[0];
    }
    at += axi_leak_stack_bytes(s);
  }
}

static void report(const ax_leak_tally_t *sum) {
  if (sum->n[0] || axi_leaks == 2)
    axi_write("axmalloc: leak check: %llu bytes in %llu blocks lost (definitely), %llu blocks "
              "(%llu bytes) still reachable\n",
              (unsigned long long)sum->bytes[0], (unsigned long long)sum->n[0],
              (unsigned long long)sum->n[1], (unsigned long long)sum->bytes[1]);
  if (sum->n[0]) {
    axi_write("\n");
    print_groups(0);
  }
  if (axi_leaks == 2 && sum->n[1]) {
    axi_write("axmalloc: still reachable:\n\n");
    print_groups(1);
  }
  for (unsigned i = 0; i < npatterns; i++)
    if (pattern_hits[i][0])
      axi_write("axmalloc: suppressed: %llu bytes in %llu blocks (leak:%s)\n",
                (unsigned long long)pattern_hits[i][1], (unsigned long long)pattern_hits[i][0],
                pattern[i]);
  if (sum->n[0])
    axi_write("SUMMARY: axmalloc: %llu bytes leaked in %llu allocations.\n",
              (unsigned long long)sum->bytes[0], (unsigned long long)sum->n[0]);
}

/* The check, after the program's own exit work: its atexit handlers and static destructors
 * run first (they were registered after this library's destructors list was, or belong to a
 * file finalized before us: a preloaded library is finalized after the program), and the
 * lowest priority runs this after the other destructors of its own file (a static link).
 * Not in a fork child (getpid: its parent's blocks are no leaks of its own), and not when
 * the process ends by _exit (no destructor runs). With leaks, the program's buffered output
 * is flushed (cancellation off: the process is ending), then _exit with the code. */
__attribute__((destructor(101))) static void leak_at_exit(void) {
  if (!axi_leaks || !ready || getpid() != leak_pid)
    return;
  axi_write_to_saved_stderr();
  ax_leak_tally_t sum = {0};
  const char *why = axi_leak_scan(&sum);
  if (why) {
    axi_write("axmalloc: leak check: %s: not checked\n", why);
    return;
  }
  if (sum.n[0])
    linker_blocks(&sum);
  if (suppressions && sum.n[0])
    suppress(&sum);
  report(&sum);
  if (!sum.n[0] || !exit_code)
    return;
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  fflush(NULL);
  _exit((int)exit_code);
}
