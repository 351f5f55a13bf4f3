/* SPDX-License-Identifier: MIT */
/* The sampling heap profiler: which allocations are sampled, the sampled blocks, their stacks.
 *
 *   AXMALLOC_PROF=1  AXMALLOC_PROF_SAMPLE=<bytes, mean interval; 524288>
 * AXMALLOC_PROF_FILE=<prefix>
 *
 * Sampling is a Poisson process over the bytes allocated (as in tcmalloc and jemalloc): an
 * allocation of s bytes is sampled with probability 1 - exp(-s / rate), independently of
 * every other, which is what google-pprof assumes when it scales a heap_v2 profile back up.
 * Each size class (and the huge blocks) runs its own process: the number of allocations of a
 * class before its next sampled one is floor(X / class size) with X exponential of mean rate
 * (memoryless, so after a sample a new X is drawn). The superposition is the same process as
 * one counter over all bytes, and needs no counter on the fast path: the slow path decides
 * (axi_prof_take), and page.c keeps the fast path from handing out a sampled allocation.
 *
 * A sampled block has a place of its own (as gperftools gives each sampled object a span of
 * its own): a slot of a slot segment up to 64 KiB, a huge block above (seg->prof names its
 * stack). free() of it leaves the fast path by construction: no page map entry names a slot,
 * and a huge block's fast_cap is 0. Off, the profiler costs the fast paths nothing: every
 * call here is behind axi_prof_on on a slow path.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "modes/prof.h"

#include "bulk.h"
#include "cache.h"
#include "heap.h"
#include "hooks.h"
#include "huge.h"
#include "lock.h"
#include "modes/prof_dump.h"
#include "options.h"
#include "os.h"
#include "page.h"
#include "pagemap.h"
#include "print.h"
#include "remote.h"
#include "sample.h"
#include "segment.h"
#include "state.h"
#include "thp.h"

/* Constructors run, and the unwinder was warmed up (stacks/unwind.c, axi_stack_ready): stacks
 * can be walked. A static program's libc allocates while it starts up, before the unwinder can
 * find a frame's tables (it aborts there): nothing is sampled before this, and those few
 * allocations are not in the profile. */
static bool ready;

/* pre: process init done; called once, from a constructor (alloc.c), after axi_stack_ready. */
void axi_prof_ready(void) { ready = true; }

/* ---- random intervals ----------------------------------------------------------------- */

/* Bytes to the next sample: exponential with mean rate (sample.c). */
static double interval(ax_prof_heap_t *ph) { return axi_exp_draw(&ph->rng, (double)axi_prof.rate); }

/* Allocations of size bytes before the next sampled one: floor(X / size). */
static uint64_t skip_count(ax_prof_heap_t *ph, size_t size) {
  return axi_skip_draw(&ph->rng, (double)axi_prof.rate, size, UINT64_MAX);
}

static void start(ax_heap_t *heap) {
  ax_prof_heap_t *ph = &heap->prof;
  ph->rng = (axi_random() ^ (uintptr_t)heap) | 1;
  for (unsigned c = 1; c < AX_CLASSES; c++)
    ph->left[c] = skip_count(ph, axi_class_size(c));
  double h = interval(ph);
  ph->huge_left = h >= 1.8e19 ? UINT64_MAX : (uint64_t)h;
  /* The blocks cached so far are counted now, as if they had entered the cache counted
   * (cache.c; giving them back to their pages instead, mallinfo2's in-use bytes fell by the
   * cache's between two of the program's calls: glibc's tst-mallinfo2, -static) */
  for (unsigned i = 0; i < AX_CACHE_N; i++) {
    unsigned c = AX_CACHE_FIRST + i;
    uint64_t n = heap->cache.n[i] + (heap->cache.last_cls == c);
    ph->left[c] = ph->left[c] > n ? ph->left[c] - n : 0;
  }
  ph->started = true;
  axi_prof_grant_all(heap); /* the current pages set up so far: counted from now on */
}

/* ---- which allocations are sampled ----------------------------------------------------- */

/* ax_ctl's prof.active: sampling paused and resumed while the program runs. The mode itself
 * (the sampled blocks' own places, free's routing) stays on, so the samples taken before
 * keep their stacks and the profile's scaling stays right for the time it was active. */
static bool paused;

/* axi_prof_take's rarer part (prof.h): a heap's first count (nothing is sampled before
 * the constructors ran, see ready), or class c's turn to be sampled (a new interval drawn).
 * post: true: sample this allocation. */
bool axi_prof_take_slow(ax_heap_t *heap, unsigned c) {
  ax_prof_heap_t *ph = &heap->prof;
  if (!ph->started) {
    if (!ready)
      return false;
    start(heap);
    return axi_prof_take(heap, c);
  }
  ph->left[c] = skip_count(ph, axi_class_size(c));
  if (heap->cache.aside)
    axi_prof_unaside(heap, c);
  return !ax_peek(&paused); /* while paused, the turn passes and the next is drawn */
}

void axi_prof_set_active(bool on) { ax_poke(&paused, !on); }
bool axi_prof_active(void) { return axi_prof_on && !ax_peek(&paused); }

/* ---- malloc's slow path while sampling -------------------------------------------------- */

/* A block as malloc's slow path gets one (alloc.c's, less what the profiler never meets: the
 * thread's start, done by the caller, and checked mode). */
static AX_API void *malloc_as_usual(ax_heap_t *heap, size_t size, bool zero) {
  void *p;
  if (ax_peek(&heap->rb.open)) /* as malloc's slow path does (alloc.c) */
    axi_remote_age(heap);
  if (ax_likely(size <= AX_LARGE_MAX) && (p = axi_page_malloc_current(heap, size, zero)))
    return p;
  return axi_heap_malloc(heap, size, zero);
}

/* The sampled allocation: its stack, from this frame, and a block of its own; NULL when there
 * is none (it then goes unsampled: the profile must not fail an allocation). A frame of its
 * own, so that the stack of return addresses (800 bytes) is not on every profiled slow path's
 * stack: 1,271 bytes there, 450 without (t_stack). */
static AX_NOINLINE AX_API void *malloc_sampled(ax_heap_t *heap, size_t size, bool zero) {
  ax_stack_t st;
  axi_stack_capture(heap, &st);
  return axi_prof_sampled(heap, size, zero, &st);
}

/* malloc's slow path while the heap profiler samples, but for alloc.c's common case
 * (axi_prof_malloc_granted): the sampled allocation gets a block of its own; any other gets its
 * block as usual, and the fast path a new grant of its class's blocks (page.c), which no grant
 * made on the way (current_update) may cut before this block is taken (serving; saved, as
 * malloc may nest: pthread_setspecific in a new heap's init callocs). A malloc from the stack
 * walk (busy) or before constructors is not profiled. pre: heap is the thread's own (started);
 * never with checked mode or tagging. post: as malloc's. */
AX_NOINLINE AX_API void *axi_prof_malloc(ax_heap_t *heap, size_t size, bool zero) {
  void *p;
  if (heap->prof.busy)
    return malloc_as_usual(heap, size, zero);
  if (size > AX_LARGE_MAX) {
    p = malloc_as_usual(heap, size, zero);
    if (p)
      axi_prof_huge(p, size);
    return p;
  }
  unsigned c = axi_class_of(size);
  if (axi_prof_take(heap, c) && (p = malloc_sampled(heap, size, zero)))
    return p;
  unsigned g = axi_class_direct(c) ? c : 0; /* the class whose grant waits for its block */
  uint8_t was = heap->prof.serving;
  heap->prof.serving = (uint8_t)g;
  p = malloc_as_usual(heap, size, zero);
  heap->prof.serving = was;
  if (g)
    axi_prof_grant(heap, g);
  return p;
}

/* A slot of the sampled blocks (below). */
typedef struct ax_slot {
  struct ax_prof_bucket *bucket; /* NULL: a sample whose bucket could not be made */
  uint32_t size;                 /* 0: free */
} ax_slot_t;

/* ---- buckets ------------------------------------------------------------------------------ */

static char *arena_at, *arena_end; /* bucket memory, under the lock */

static void *arena_take(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!arena_at || (size_t)(arena_end - arena_at) < n) {
    size_t chunk = (size_t)64 << 10;
    char *m = axi_os_map(chunk);
    if (!m)
      return NULL;
    arena_at = m;
    arena_end = m + chunk;
  }
  void *p = arena_at;
  arena_at += n;
  return p;
}

/* The hash of a bucket: its stack's (axi_stack_key) with the size. */
static uint64_t bucket_hash(uint64_t stack, size_t size) {
  uint64_t h = (stack ^ size) * 0x9e3779b97f4a7c15ull;
  return h ^ h >> 32;
}

static bool same(const uintptr_t *a, const uintptr_t *b, unsigned n) {
  for (unsigned i = 0; i < n; i++) /* (memcmp's call costs more for the few words of a stack) */
    if (a[i] != b[i])
      return false;
  return true;
}

/* The bucket of (pc[0..depth), size) with hash h, or NULL. Without the lock: a chain's
 * buckets are published whole, each by the release store of the pointer to it, and none
 * changes but its counts or goes away. */
static ax_prof_bucket_t *bucket_find(uint64_t h, const uintptr_t *pc, unsigned depth, size_t size) {
  for (ax_prof_bucket_t *b = ax_peek_acquire(&axi_prof.table[h % AX_PROF_TABLE]); b;
       b = ax_peek_acquire(&b->next))
    if (b->hash == h && b->size == size && b->depth == depth && same(b->pc, pc, depth))
      return b;
  return NULL;
}

/* post: the bucket of (pc[0..depth), size) with hash h, made if need be; NULL when no
 * memory for it. pre: the lock is held. */
static ax_prof_bucket_t *bucket_make(uint64_t h, const uintptr_t *pc, unsigned depth, size_t size) {
  ax_prof_bucket_t *b = bucket_find(h, pc, depth, size); /* (made while we waited?) */
  if (b)
    return b;
  ax_prof_bucket_t **head = &axi_prof.table[h % AX_PROF_TABLE];
  if (!(b = arena_take(sizeof *b + depth * sizeof *pc)))
    return NULL;
  b->hash = h;
  b->size = size;
  b->depth = depth;
  memcpy(b->pc, pc, depth * sizeof *pc);
  b->next = *head;
  ax_poke_release(head, b);
  return b;
}

/* A sample of size bytes, taken at st: the huge block of seg, or the block of slot. Its
 * stack goes to the profile, and the block names its bucket (no other thread sees the block
 * yet). The lock only to make a bucket: a stack sampled before finds its own without it. */
static void record(const ax_stack_t *st, ax_segment_t *seg, ax_slot_t *slot, size_t size) {
  uint64_t h = bucket_hash(st->hash, size);
  const uintptr_t *pc = st->pc + st->first;
  ax_prof_bucket_t *b = bucket_find(h, pc, st->depth, size);
  if (!b) {
    axi_lock(&axi_prof.lock);
    b = bucket_make(h, pc, st->depth, size);
    axi_prof_unlock();
  }
  if (b)
    ax_atomic_fetch_add_relaxed(&b->allocs, 1);
  if (seg)
    seg->prof = b;
  else
    slot->bucket = b;
  if (axi_prof.interval || axi_prof.gdump) /* (the block is the program's already) */
    axi_prof_dump_due(size);
}

/* ---- sampled blocks ---------------------------------------------------------------------- */

/* Sampled blocks of up to 64 KiB live in slots: 64 KiB each, aligned to that (as much as any
 * such class's blocks are), 63 to a segment of the huge kind whose first slot holds the slot
 * table. free() and realloc() find them there through prof_slots; no page map entry names
 * them, so the fast paths never do. Each sample would otherwise map a huge block of its
 * own: a system call, a page fault and a mapping of its own for every live one (t_prof at a
 * 32 KiB interval spent 40% of its time mapping them), and the mappings of a large heap's
 * samples could pass the kernel's limit. Segments stay for good, their free slots on a
 * list; all under the profile's lock (a sample is rare). */
#define AX_SLOT_SHIFT 16
#define AX_SLOTS ((unsigned)(AX_SEGMENT_SIZE >> AX_SLOT_SHIFT))
#define AX_SLOT_MAX ((size_t)1 << AX_SLOT_SHIFT)

typedef struct ax_slot_table {
  uint64_t free_mask;   /* slots 1.. that are free */
  uint64_t dirty_mask;  /* free slots whose memory was written since it was last purged */
  uint64_t purged_mask; /* slots purged since they were last used (os_committed) */
  ax_segment_t *next_with_free;
  ax_segment_t *all_next; /* every slot segment (they stay for good): a fork child's rebuild */
  ax_slot_t slot[AX_SLOTS];
} ax_slot_table_t;
_Static_assert(AX_HUGE_OFFSET + sizeof(ax_slot_table_t) <= AX_SLOT_MAX, "slot 0 holds the table");

static ax_segment_t *slots_with_free; /* segments with a free slot, under the lock */
static ax_segment_t *slots_all;       /* every slot segment, under the lock */
/* Freed slots keep their memory until a purge: every trim purges them all, and a free that
 * leaves more than AX_SLOTS_DIRTY_MAX of them dirty purges them then (the lock held: a run of
 * adjacent slots is one madvise). Never purged, the samples' memory stayed resident for good
 * (t_trim and t_pagesize with AXMALLOC_PROF_SAMPLE=4096: RSS did not fall). */
#define AX_SLOTS_DIRTY_MAX 512u /* 32 MiB of slots */
static unsigned slots_dirty;

static ax_slot_table_t *slot_table(ax_segment_t *seg) {
  return (ax_slot_table_t *)((char *)seg + AX_HUGE_OFFSET);
}

/* A new slot segment: a huge-kind header whose block (at AX_HUGE_OFFSET, never handed out)
 * is the slot table. pre: the lock is held. */
static ax_segment_t *slots_map(void) {
  ax_segment_t *seg = axi_segment_map(AX_KIND_HUGE, AX_SEGMENT_SIZE, AX_SEGMENT_SIZE, 0);
  if (!seg)
    return NULL;
  /* never huge pages, whatever AXMALLOC_THP: its 64 KiB slots are purged one by one, and slot
   * 0 (the table) would keep the first huge page resident for good (t_trim, sampling every
   * 4 KiB under AXMALLOC_THP=always: only half of 200 MiB went back) */
  axi_thp_decline(seg, AX_SEGMENT_SIZE);
  seg->page_shift = AX_HUGE_PAGE_SHIFT;
  seg->npages = 1;
  seg->used_pages = 1;
  seg->prof_slots = 1;
  seg->pages[0].in_use = 1;
  seg->pages[0].area = (uintptr_t)slot_table(seg);
  ax_slot_table_t *t = slot_table(seg);
  t->free_mask = ~(uint64_t)1 >> (64 - AX_SLOTS); /* slots 1 .. AX_SLOTS - 1 */
  t->next_with_free = slots_with_free;
  t->all_next = slots_all;
  slots_with_free = slots_all = seg;
  return seg;
}

/* post: a free slot (marked in use, size bytes), or NULL. pre: the lock is held. */
static void *slot_take(size_t size) {
  ax_segment_t *seg = slots_with_free ? slots_with_free : slots_map();
  if (!seg)
    return NULL;
  ax_slot_table_t *t = slot_table(seg);
  unsigned i = (unsigned)__builtin_ctzll(t->free_mask);
  uint64_t bit = (uint64_t)1 << i;
  if (t->dirty_mask & bit) {
    t->dirty_mask &= ~bit;
    slots_dirty--;
  }
  if (t->purged_mask & bit) {
    t->purged_mask &= ~bit;
    axi_stat_add(&axi_stats.os_committed, &axi_stats.os_committed_peak, (intptr_t)AX_SLOT_MAX);
  }
  t->free_mask &= t->free_mask - 1;
  if (!t->free_mask) {
    AX_HOOK(AX_HOOK_SLOT_TAKE, seg);
    slots_with_free = t->next_with_free;
  }
  t->slot[i].size = (uint32_t)size;
  t->slot[i].bucket = NULL;
  return (char *)seg + ((size_t)i << AX_SLOT_SHIFT);
}

/* p's slot in seg, which must be a sampled block in use: anything else is reported. */
static ax_slot_t *slot_of(const char *fn, ax_segment_t *seg, const void *p) {
  uintptr_t off = (uintptr_t)p - (uintptr_t)seg;
  unsigned i = (unsigned)(off >> AX_SLOT_SHIFT);
  ax_slot_t *slot = &slot_table(seg)->slot[i];
  if ((off & (AX_SLOT_MAX - 1)) || i == 0 || i >= AX_SLOTS)
    axi_invalid_free(fn, p);
  if (slot->size == 0)
    axi_double_free(fn, p);
  return slot;
}

/* Purge every free slot written since its last purge, a madvise per run of adjacent ones.
 * pre: the lock is held. */
static void slots_purge(void) {
  for (ax_segment_t *seg = slots_all; seg && slots_dirty; seg = slot_table(seg)->all_next) {
    ax_slot_table_t *t = slot_table(seg);
    uint64_t m = t->dirty_mask & t->free_mask;
    while (m) {
      unsigned i = (unsigned)__builtin_ctzll(m), j = i;
      while (j + 1 < AX_SLOTS && ((m >> (j + 1)) & 1))
        j++;
      uint64_t run = (~(uint64_t)0 >> (63 - j)) & (~(uint64_t)0 << i); /* bits i .. j */
      axi_os_purge((char *)seg + ((size_t)i << AX_SLOT_SHIFT), (size_t)(j + 1 - i)
                                                                   << AX_SLOT_SHIFT);
      t->dirty_mask &= ~run;
      t->purged_mask |= run;
      slots_dirty -= (unsigned)__builtin_popcountll(run);
      m &= ~run;
    }
  }
}

/* malloc_trim: the freed slots' memory goes back. */
void axi_prof_trim(void) {
  axi_lock(&axi_prof.lock);
  slots_purge();
  axi_prof_unlock();
}

/* free() of a block in a slot segment: it leaves the profile, its slot is free again. */
void axi_prof_slot_free(const char *fn, ax_segment_t *seg, void *p) {
  axi_lock(&axi_prof.lock);
  ax_slot_t *slot = slot_of(fn, seg, p);
  AX_TRACK_FREE(p);
  if (slot->bucket)
    ax_atomic_fetch_add_relaxed(&slot->bucket->frees, 1);
  axi_stat_add(&axi_stats.in_use, NULL, -(intptr_t)slot->size);
  slot->size = 0;
  ax_slot_table_t *t = slot_table(seg);
  if (!t->free_mask) {
    t->next_with_free = slots_with_free;
    slots_with_free = seg;
  }
  uint64_t bit = (uint64_t)1 << (((uintptr_t)p - (uintptr_t)seg) >> AX_SLOT_SHIFT);
  t->free_mask |= bit;
  t->dirty_mask |= bit;
  if (++slots_dirty > AX_SLOTS_DIRTY_MAX)
    slots_purge();
  axi_prof_unlock();
}

/* malloc_usable_size and realloc of a block in a slot segment: its class size. No lock: only
 * the block's owner writes its slot, when it allocates and frees it. */
size_t axi_prof_slot_size(const char *fn, ax_segment_t *seg, const void *p) {
  return slot_of(fn, seg, p)->size;
}

/* The sampled allocation of size bytes (axi_prof_take said so): a block of its class's size
 * in a slot, or above 64 KiB a huge block, aligned as the class's blocks are (aligned_alloc
 * picks classes by their alignment; the pages of classes past 8 KiB give up to 64 KiB).
 * post: the block, or NULL (ENOMEM). */
void *axi_prof_sampled(ax_heap_t *heap, size_t size, bool zero, const ax_stack_t *st) {
  size_t bsize = axi_class_size(axi_class_of(size));
  if (bsize > AX_SLOT_MAX) {
    size_t align = bsize & -bsize;
    void *p = axi_heap_huge_alloc(heap, bsize, align < AX_OTHER_META ? align : AX_OTHER_META, zero);
    if (p)
      record(st, axi_huge_segment_of(p), NULL, bsize);
    return p;
  }
  axi_lock(&axi_prof.lock);
  void *p = slot_take(bsize);
  axi_prof_unlock();
  if (!p)
    return NULL;
  heap->stats.class_mallocs[axi_class_of(size)]++; /* (ax_stats: a malloc like any other) */
  axi_stat_add(&axi_stats.in_use, &axi_stats.in_use_peak, (intptr_t)bsize);
  AX_TRACK_MALLOC(p, bsize, 0);
  if (zero)
    axi_bulk_zero(p, bsize);
  ax_segment_t *seg = axi_segment_of(p);
  record(st, NULL, &slot_table(seg)->slot[((uintptr_t)p - (uintptr_t)seg) >> AX_SLOT_SHIFT], bsize);
  return p;
}

/* A huge block of size bytes was just allocated, or resized by realloc (a new allocation, as
 * tcmalloc counts it): it leaves the profile if it was in it, and the huge blocks' own
 * interval decides whether it is sampled. pre: p is a huge block's start. post: true: take
 * the stack and record it. */
static bool huge_due(ax_heap_t *heap, void *p, size_t size) {
  ax_segment_t *seg = axi_huge_segment_of(p);
  if (seg->prof)
    axi_prof_release(seg);
  ax_prof_heap_t *ph = &heap->prof;
  if (heap == &axi_heap_empty || ph->busy || !ready)
    return false;
  if (!ph->started)
    start(heap);
  if (size < ph->huge_left) {
    ph->huge_left -= size;
    return false;
  }
  double h = interval(ph);
  ph->huge_left = h >= 1.8e19 ? UINT64_MAX : (uint64_t)h;
  return true;
}

/* The profile's part of a huge block's malloc, realloc or aligned_alloc (its stack taken
 * from here, a frame of the allocator's own, which the profile leaves out). */
AX_API AX_NOINLINE void axi_prof_huge(void *p, size_t size) {
  ax_heap_t *heap = axi_tls_heap;
  if (huge_due(heap, p, size)) {
    ax_stack_t st;
    axi_stack_capture(heap, &st);
    record(&st, axi_huge_segment_of(p), NULL, size);
  }
}

/* free() (or realloc) of a sampled block: it leaves the in-use profile. Any thread. */
void axi_prof_release(ax_segment_t *seg) {
  ax_prof_bucket_t *b = seg->prof;
  seg->prof = NULL;
  ax_atomic_fetch_add_relaxed(&b->frees, 1);
}

/* ---- init and fork ---------------------------------------------------------------------- */

/* pre: called once by process init (lifecycle.c), after checked mode and tagging are decided. */
void axi_prof_init(void) {
  axi_prof.leaks = axi_option_num(AXI_OPTION_PROF_LEAKS) != 0;
  if (!axi_option_num(AXI_OPTION_PROF) && !axi_prof.leaks)
    return;
  axi_prof_unwind_mode = (uint8_t)axi_option_num(AXI_OPTION_PROF_UNWIND); /* (in enum order) */
  if (axi_check_stacks) {                                                 /* (check.c) */
    axi_write("axmalloc: heap profiling is not available with checked mode: no profile is "
              "written; its reports name the stacks that allocated and freed each block\n");
    return;
  }
  if (axi_checked || axi_mte) { /* their blocks are checked or tagged where they are */
    axi_write("axmalloc: heap profiling is not available with checked mode or memory "
              "tagging: off\n");
    return;
  }
  axi_prof.rate = axi_option_num(AXI_OPTION_PROF_SAMPLE); /* (at least 1: options.c) */
  axi_prof.prefix = axi_option_str(AXI_OPTION_PROF_FILE); /* made absolute by axi_prof_dump_init */
  axi_prof.interval = axi_option_num(AXI_OPTION_PROF_INTERVAL);
  axi_prof.gdump = axi_option_num(AXI_OPTION_PROF_GDUMP) != 0;
  axi_prof_dump_init();
  axi_prof_on = true;
  axi_prof_grant_init(); /* (the pages, cache and heaps layers: the seams) */
}

uint64_t axi_prof_rate(void) { return axi_prof.rate; }
const char *axi_prof_prefix(void) { return axi_prof.prefix; }

/* The slots' free masks and list made again from the slots themselves (a fork child): a
 * slot is free when its size is 0. A thread that stopped anywhere in slot_take or
 * axi_prof_slot_free leaves them right: a slot taken whose size was not yet written is free
 * again (that allocation never returned), a segment whose last slot went and which was not yet
 * off the list is off it (listed still, a free there listed it a second time, after itself:
 * the next slot_take to use it up went round forever). pre: the lock is held or free. */
static void slots_rebuild(void) {
  slots_with_free = NULL;
  slots_dirty = 0;
  for (ax_segment_t *seg = slots_all; seg; seg = slot_table(seg)->all_next) {
    ax_slot_table_t *t = slot_table(seg);
    t->free_mask = 0;
    for (unsigned i = 1; i < AX_SLOTS; i++)
      if (t->slot[i].size == 0)
        t->free_mask |= (uint64_t)1 << i;
    t->dirty_mask &= t->free_mask;
    slots_dirty += (unsigned)__builtin_popcountll(t->dirty_mask);
    if (t->free_mask) {
      t->next_with_free = slots_with_free;
      slots_with_free = seg;
    }
  }
}

/* fork's prepare handler does not take the profile's lock, unlike the allocator's other
 * locks: malloc and free wait for this one (a sample, a sampled block's free), and they may
 * do so inside a FILE lock, which glibc's fork takes after the prepare handlers, and which
 * fflush(NULL) holds while it waits for _IO_list_lock: a thread that forked while another
 * sampled, with a third flushing, deadlocked (glibc's tst-malloc-fork-deadlock with
 * AXMALLOC_PROF_SAMPLE=4096). So the child, alone, frees the lock whoever held it and makes
 * what it guards consistent again: the slots are rebuilt, a bucket is published by its last
 * store, a bucket chunk half-taken is dropped, a dump half-written is the dead thread's file.
 * Unless this very thread holds it: a signal handler forked inside its critical section, which
 * goes on after the handler returns, in the child too. */
void axi_prof_fork_child(void) {
  axi_stack_fork_child();
  if (ax_atomic_load_relaxed(&axi_prof.lock.word) == axi_lock_holder())
    return;
  ax_atomic_store_relaxed(&axi_prof.lock.word, 0);
  ax_atomic_store_relaxed(&axi_prof.dump_pending, 0);
  arena_at = arena_end = NULL;
  slots_rebuild();
}
