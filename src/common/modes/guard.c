/* SPDX-License-Identifier: MIT */
/* Guarded sampling: a random sample of the allocations, each alone in a page between guard
 * pages, its page closed when it is freed (GWP-ASan's idea, tcmalloc's and Android's).
 *
 *   which:  each class runs a Poisson process over its bytes (mean AXMALLOC_GUARD, 64 MiB by
 *           default), counted down where blocks are handed to the fast paths, a list at a time
 *           (page.c, cache.h: types.h's ax_guard_heap_t); the fast paths count nothing
 *   where:  a pool of slots (guard_report.h), one mapping: guard, slot, guard, slot, ..., guard;
 *           a block up to a page at its slot page's end (or start), the bytes between checked
 *           at free
 *   free:   the page closed (PROT_NONE) and given back (MADV_DONTNEED), its record kept; the
 *           slots freed longest ago are reused first, never-used ones before any, so a freed
 *           block stays closed for as long as the pool allows
 *   faults: guard_fault.c; misuse seen here (double and invalid frees, bytes around a block
 *           written): guard_report.c, then abort
 *
 * A sample costs two mprotect calls, a madvise, a page fault and a stack walk: about 2,700
 * instructions and 2 to 4 us (a malloc/free loop of 4 KiB blocks at AXMALLOC_GUARD=1), the first
 * in a process about 22,500 instructions more (the pool, the handler, the unwinder's first
 * lookups). At the default interval a program allocating 4 GB/s of such blocks spends 0.02% of
 * its time on them, and the pool's pages hold at most 256 KiB. */
#include "modes/guard.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "modes/guard_fault.h"
#include "modes/guard_report.h"
#include "modes/stacks/unwind.h"
#include "options.h"
#include "os.h"
#include "page.h"
#include "print.h"
#include "sample.h"
#include "state.h"

#define NONE UINT32_MAX
#define PATTERN 0xa5 /* the bytes around a block in its page */

static bool available;      /* not in checked mode or with tagging */
static bool pool_failed;    /* no memory for the pool: off for good */
static uint8_t place;       /* enum ax_guard_place */
static bool reinstall;      /* AXMALLOC_GUARD_HANDLER=reinstall */
static uint32_t slots_want; /* the pool's size, once mapped */

static ax_atomic_word pool_once;
static ax_lock_t lock;       /* the queue of freed slots, the never-used count */
static uint32_t unused_next; /* slots [unused_next, slots) were never handed out */
static uint32_t fifo_head = NONE, fifo_tail = NONE; /* freed slots, the longest ago first */
static ax_atomic_word live, live_bytes, skipped;

/* ---- settings ------------------------------------------------------------------------------- */

static void *take_due(ax_heap_t *heap, size_t size, bool zero); /* (below: the seam) */

/* (the flag before the mean: a heap started meanwhile is hooked for a short one) */
static void set_mean(uint64_t mean) {
  ax_poke(&axi_guard_every, mean != 0 && mean < AX_GUARD_EVERY_BELOW);
  ax_poke(&axi_guard_mean, mean);
}

void axi_guard_init(void) {
  available = !axi_checked && !axi_mte; /* (their blocks are checked or tagged where they are) */
  if (available)
    axi_seams.guard_take = take_due;
  set_mean(available ? axi_option_num(AXI_OPTION_GUARD) : 0);
  place = (uint8_t)axi_option_num(AXI_OPTION_GUARD_PLACE);
  reinstall = axi_option_num(AXI_OPTION_GUARD_HANDLER) == 1;
  uint64_t n = axi_option_num(AXI_OPTION_GUARD_SLOTS);
  if (n == 0) { /* 256 KiB of pages: 64 of 4 KiB, 16 of 16 KiB, 8 of 64 KiB */
    n = ((size_t)256 << 10) / axi_os_page;
    n = n < 8 ? 8 : n > 64 ? 64 : n;
  }
  slots_want = (uint32_t)n;
  if (axi_option_from_env(AXI_OPTION_GUARD) && axi_option_num(AXI_OPTION_GUARD) && !available)
    axi_write("axmalloc: AXMALLOC_GUARD=%s does nothing with %s (its own checks cover it)\n",
              axi_option_str(AXI_OPTION_GUARD), axi_checked ? "checked mode" : "memory tagging");
}

/* AXMALLOC_VERBOSE's line: what was chosen, and why not when it is off. */
void axi_guard_say(void) {
  static const char *const where[] = {"at its page's end (16-byte aligned)", "at its page's start",
                                      "at its page's end and start in turn",
                                      "at its page's very end"};
  if (!available)
    axi_write("axmalloc: guarded sampling off (%s)\n", axi_checked ? "checked mode" : "tagging");
  else if (!axi_guard_mean)
    axi_write("axmalloc: guarded sampling off (AXMALLOC_GUARD=0)\n");
  else
    axi_write("axmalloc: guarded sampling: one block per %llu B on average, up to %d live in %zu "
              "KiB pages, each %s\n",
              (unsigned long long)axi_guard_mean, (int)slots_want, axi_os_page >> 10, where[place]);
}

uint64_t axi_guard_rate(void) { return ax_peek(&axi_guard_mean); }

bool axi_guard_set_rate(uint64_t r) {
  if (!available || pool_failed)
    return false;
  set_mean(r);
  return true;
}

/* ---- the pool ------------------------------------------------------------------------------- */

/* The pool, mapped at the first sample, and the fault handler installed with it. false: no
 * memory for it (sampling stays off, said once). */
static bool pool_ready(void) {
  if (axi_once_is_done(&pool_once))
    return ax_peek(&axi_guard_pool.base) != 0;
  if (!axi_once_enter(&pool_once))
    return ax_peek(&axi_guard_pool.base) != 0;
  size_t page = axi_os_page, span = (2 * (size_t)slots_want + 1) * page;
  size_t rec = (slots_want * sizeof(ax_guard_slot_t) + page - 1) & ~(page - 1);
  void *records = axi_os_map(rec);
  /* (and 2 MiB of address space nothing may touch on either side: an overflow or underflow
   * of a MiB from a guarded block faults too, whatever would be mapped beside the pool:
   * mimalloc-bench's one_mbyte probes, caught in 55-65% of runs without it) */
  size_t margin = (size_t)2 << 20;
  char *base = records ? axi_os_reserve(span + 2 * margin) : NULL;
  if (base)
    base += margin;
  if (base) {
    axi_guard_pool.page = page;
    axi_guard_pool.slots = slots_want;
    axi_guard_pool.slot = records;
    ax_poke(&axi_guard_pool.span, span);
    /* (stats.mapped: the reservation and the records; a live block's page is resident) */
    axi_stat_add(&axi_stats.os_reserved, &axi_stats.os_reserved_peak,
                 (intptr_t)(span + 2 * margin + rec));
    ax_poke_release(&axi_guard_pool.base, (uintptr_t)base); /* axi_guard_has from here on */
    axi_guard_fault_install();
  } else {
    if (records)
      axi_os_unmap(records, rec);
    set_mean(0);
    pool_failed = true;
    axi_write("axmalloc: no memory for guarded sampling's pool: off\n");
  }
  axi_once_done(&pool_once);
  return base != NULL;
}

/* A slot to hand out: a never-used one, else the one freed longest ago; NONE when every slot
 * is live. */
static uint32_t slot_take(void) {
  uint32_t i = NONE;
  axi_lock(&lock);
  if (unused_next < axi_guard_pool.slots) {
    i = unused_next++;
  } else if (fifo_head != NONE) {
    i = fifo_head;
    fifo_head = axi_guard_pool.slot[i].fifo_next;
    if (fifo_head == NONE)
      fifo_tail = NONE;
  }
  axi_unlock(&lock);
  return i;
}

static void slot_put(uint32_t i) {
  axi_guard_pool.slot[i].fifo_next = NONE;
  axi_lock(&lock);
  if (fifo_tail == NONE)
    fifo_head = i;
  else
    axi_guard_pool.slot[fifo_tail].fifo_next = i;
  fifo_tail = i;
  axi_unlock(&lock);
}

/* The caller's stack into *out, the allocator's frames left out. A thread without a heap (a
 * free from a thread that never allocated) walks with libgcc: the walk's memo is a heap's. */
static void stack_take(ax_heap_t *heap, ax_guard_stack_t *out) {
  out->tid = axi_os_gettid();
  out->depth = 0;
  if (!axi_stack_walkable || (heap != &axi_heap_empty && heap->prof.busy))
    return;
  ax_stack_t st;
  if (heap == &axi_heap_empty) {
    st.n = 0;
    axi_stack_walk_libgcc(&st);
  } else {
    axi_stack_capture_memo(heap, NULL, &st); /* (no memo: unwind.h) */
  }
  unsigned depth, first = axi_stack_program_frames(&st, &depth);
  if (depth > AX_GUARD_FRAMES)
    depth = AX_GUARD_FRAMES;
  memcpy(out->pc, st.pc + first, depth * sizeof out->pc[0]);
  out->depth = depth;
}

/* Where a block of size bytes sits in its slot's page (see enum ax_guard_place). */
static uintptr_t block_at(uintptr_t page, size_t size, uint64_t serial) {
  unsigned how = place == AX_GUARD_ALTERNATE ? (serial & 1 ? AX_GUARD_END : AX_GUARD_START) : place;
  uintptr_t end = page + axi_guard_pool.page;
  if (how == AX_GUARD_START)
    return page;
  if (how == AX_GUARD_EXACT)
    return end - size;
  return (end - size) & ~(uintptr_t)15; /* malloc's alignment, as glibc's: 16 */
}

static uint32_t slot_index(const ax_guard_slot_t *s) { return (uint32_t)(s - axi_guard_pool.slot); }

/* The first byte around s's block in its page that is not the pattern, or 0. */
static uintptr_t around_written(const ax_guard_slot_t *s) {
  uintptr_t page = axi_guard_slot_page(slot_index(s)); /* (the pool is aligned to OS pages only) */
  uintptr_t end = page + axi_guard_pool.page;
  for (const uint8_t *q = (const uint8_t *)(s->block + s->size); (uintptr_t)q < end; q++)
    if (*q != PATTERN)
      return (uintptr_t)q;
  for (const uint8_t *q = (const uint8_t *)page; (uintptr_t)q < s->block; q++)
    if (*q != PATTERN)
      return (uintptr_t)q;
  return 0;
}

static AX_NOINLINE void *take(ax_heap_t *heap, size_t size) {
  if (!pool_ready())
    return NULL;
  uint32_t i = slot_take();
  if (i == NONE) {
    ax_atomic_fetch_add_relaxed(&skipped, 1);
    return NULL;
  }
  ax_guard_slot_t *s = &axi_guard_pool.slot[i];
  /* its stack straight into the record (a copy on this frame cost 264 bytes of stack: t_stack);
   * a malloc inside the walk (libgcc's first lookup of a frame) is not sampled: prof.busy */
  stack_take(heap, &s->alloc);
  uintptr_t page = axi_guard_slot_page(i);
  if (!axi_os_protect((void *)page, axi_guard_pool.page, true)) { /* no memory to commit */
    slot_put(i);
    ax_atomic_fetch_add_relaxed(&skipped, 1);
    return NULL;
  }
  uint64_t serial = ax_atomic_fetch_add_relaxed(&axi_guard_pool.samples, 1) + 1;
  uintptr_t b = block_at(page, size, serial);
  /* The page reads as zero (never used, or given back at its free): the block needs no
   * zeroing for calloc; the bytes around it get the pattern free() checks. */
  memset((void *)page, PATTERN, b - page);
  memset((void *)(b + size), PATTERN, page + axi_guard_pool.page - (b + size));
  s->block = b;
  s->size = size;
  s->serial = serial;
  s->free.depth = 0;
  s->free.tid = 0;
  ax_atomic_fetch_add_relaxed(&live, 1);
  ax_atomic_fetch_add_relaxed(&live_bytes, size);
  /* (mallinfo2's and stats.active's: a page holding a block, as a page of blocks counts) */
  axi_stat_add(&axi_stats.in_use, &axi_stats.in_use_peak, (intptr_t)axi_guard_pool.page);
  axi_stat_add(&axi_stats.os_committed, &axi_stats.os_committed_peak,
               (intptr_t)axi_guard_pool.page);
  heap->stats.class_mallocs[axi_class_of(size)]++; /* (ax_stats: a malloc like any other) */
  ax_atomic_store_release(&s->state, AX_GUARD_LIVE);
  if (reinstall)
    axi_guard_fault_recheck();
  return (void *)b;
}

/* The seam page.c calls where a class's countdown ran out at this malloc (state.h): its
 * guarded block, or NULL; the class's next interval drawn either way (a skip for want of a slot
 * at an interval so short that it draws 0 tries again at the class's next refill or cache pop). */
static void *take_due(ax_heap_t *heap, size_t size, bool zero) {
  (void)zero; /* (the page reads as zero: take) */
  void *p = size && size <= axi_os_page && ax_peek(&axi_guard_mean) && !heap->prof.busy
                ? take(heap, size)
                : NULL;
  axi_guard_draw(heap, axi_class_of(size));
  return p;
}

/* malloc's slow path with a short interval (axi_guard_every: every heap's is hooked): a class's
 * first malloc in the heap draws its countdown, and is the sample when that is 0 (the refills
 * count only what goes to the fast paths after it). */
void *axi_guard_malloc(ax_heap_t *heap, size_t size, bool zero) {
  if (size == 0 || size > AX_LARGE_MAX)
    return NULL;
  unsigned c = axi_class_of(size);
  if (!(heap->guard.drawn >> c & 1))
    axi_guard_draw(heap, c);
  if (heap->guard.left[c] > 0)
    return NULL;
  void *p = take_due(heap, size, zero);
  ax_page_t *page = heap->current[c]; /* (the class's list, if any, counts against the next) */
  if (p && page->free)
    axi_guard_after(heap, page, axi_page_free_count(page, UINT32_MAX));
  return p;
}

/* ---- free ----------------------------------------------------------------------------------- */

/* The slot whose page holds a, or NULL (a guard page). */
static ax_guard_slot_t *slot_at(uintptr_t a) {
  uintptr_t k = axi_guard_page_index(a);
  return k & 1 ? &axi_guard_pool.slot[(k - 1) / 2] : NULL;
}

static __attribute__((noreturn)) void misuse(enum ax_guard_kind kind, const ax_guard_slot_t *s,
                                             uintptr_t a, const char *fn) {
  axi_guard_report(kind, s, a, fn, false);
  abort();
}

void axi_guard_free(const char *fn, void *p, uintptr_t caller) {
  uintptr_t a = (uintptr_t)p;
  ax_guard_slot_t *s = slot_at(a);
  if (!s)
    misuse(AX_GUARD_INVALID_FREE, NULL, a, fn);
  uintptr_t expect = AX_GUARD_LIVE;
  if (s->block != a || !ax_atomic_cas_acq_rel(&s->state, &expect, AX_GUARD_FREEING)) {
    uintptr_t st = ax_atomic_load_acquire(&s->state);
    bool freed = st == AX_GUARD_FREED || st == AX_GUARD_FREEING;
    misuse(freed && s->block == a ? AX_GUARD_DOUBLE_FREE : AX_GUARD_INVALID_FREE,
           st == AX_GUARD_UNUSED ? NULL : s, a, fn);
  }
  uintptr_t w = around_written(s);
  if (w)
    misuse(w > s->block ? AX_GUARD_OVERFLOW_FREE : AX_GUARD_UNDERFLOW_FREE, s, w, fn);
  /* A free from libgcc's registry (a static program's exit deregisters its tables and frees
   * their sorted array, which may have been sampled, holding the lock a lookup of one of our
   * frames not walked before would take: it hung, t_sampling_leak_static at 64 KiB pages): its
   * caller alone, no walk. */
  if (axi_stack_in_registry(caller)) {
    s->free.tid = axi_os_gettid();
    s->free.pc[0] = caller;
    s->free.depth = 1;
  } else {
    stack_take(axi_tls_heap, &s->free);
  }
  void *page = (void *)axi_guard_slot_page(slot_index(s));
  axi_os_protect(page, axi_guard_pool.page, false);
  axi_os_zero_pages(page, axi_guard_pool.page); /* (its memory back; zero when reused) */
  ax_atomic_fetch_add_relaxed(&live, (uintptr_t)-1);
  ax_atomic_fetch_add_relaxed(&live_bytes, -(uintptr_t)s->size);
  axi_stat_add(&axi_stats.in_use, NULL, -(intptr_t)axi_guard_pool.page);
  axi_stat_add(&axi_stats.os_committed, NULL, -(intptr_t)axi_guard_pool.page);
  ax_atomic_store_release(&s->state, AX_GUARD_FREED);
  slot_put(slot_index(s));
}

size_t axi_guard_usable(const char *fn, const void *p) {
  uintptr_t a = (uintptr_t)p;
  ax_guard_slot_t *s = slot_at(a);
  if (s && s->block == a && ax_atomic_load_acquire(&s->state) == AX_GUARD_LIVE)
    return s->size;
  if (s && s->block == a)
    misuse(AX_GUARD_USE_AFTER_FREE, s, a, fn);
  misuse(AX_GUARD_INVALID_FREE, s && ax_peek(&s->state) != AX_GUARD_UNUSED ? s : NULL, a, fn);
}

/* ---- counts, fork --------------------------------------------------------------------------- */

void axi_guard_counts(ax_guard_counts_t *out) {
  out->samples = ax_atomic_load_relaxed(&axi_guard_pool.samples);
  out->live = ax_atomic_load_relaxed(&live);
  out->live_bytes = ax_atomic_load_relaxed(&live_bytes);
  out->skipped = ax_atomic_load_relaxed(&skipped);
  out->slots = ax_peek(&axi_guard_pool.base) ? axi_guard_pool.slots : slots_want;
}

void axi_guard_fork_child(void) { ax_atomic_store_relaxed(&lock.word, 0); }
