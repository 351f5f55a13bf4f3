/* SPDX-License-Identifier: MIT */
/* The leak checker's gate: the scan at exit (leak_scan.c) closes it while it reads the heap,
 * every free, huge realloc and unmap of leak mode passes it, and malloc's record (leak.c)
 * marks its block by it. Below both the recording and the scan, which share it.
 *
 * The scan at exit reads the heap while other threads may still run (leak_scan.c): what it
 * reads must stay where it is until it has counted. Every free (free.c), realloc of a huge
 * block (alloc.c) and unmap (os.c) of leak mode is a section of the gate (axi_leak_hold ..
 * axi_leak_release). The scan closes it, then waits until no thread is inside one; a section
 * that starts while it is closed marks its block gone (followed still, never counted), steps
 * out and waits until the scan opens it again: a brief spin, then a futex sleep of 10 ms at a
 * time. A thread waiting is stopped: its stack is a root (leak_gate.h, axi_leak_parked). A section
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
#define _GNU_SOURCE
#include <unistd.h>

#include "modes/leak_gate.h"

#include "hooks.h"
#include "modes/stacks/stacks.h"
#include "os.h"
#include "state.h"

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
  ax_atomic_word *w = axi_side_word((uintptr_t)p);
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

/* pre: process init, leak mode. */
void axi_leak_gate_init(void) {
  slots = axi_os_map(GATE_SLOTS * sizeof *slots);
  asymmetric = axi_os_barrier_available();
}

/* The ring: see above. (malloc does not wait at the gate.) */
void axi_leak_gate_made(void *p, ax_atomic_word *w, uintptr_t v) {
  if (ax_unlikely(ax_atomic_load_relaxed(&gate))) {
    ax_atomic_store_relaxed(w, v | AX_LEAK_NEW);
    return;
  }
  ax_atomic_store_relaxed(w, v);
  ax_atomic_word *in = ax_likely(mine != NULL) ? mine : slot_take();
  if (ax_likely(in != &crowd)) {
    gate_slot_t *slot = (gate_slot_t *)((char *)in - offsetof(gate_slot_t, inside));
    uintptr_t n = ax_atomic_load_relaxed(&slot->made);
    ax_atomic_store_relaxed(&slot->heap, (uintptr_t)axi_tls_heap);
    ax_atomic_store_relaxed(&slot->last[n % GATE_RING], (uintptr_t)p);
    ax_atomic_store_relaxed(&slot->made, n + 1);
  }
}
