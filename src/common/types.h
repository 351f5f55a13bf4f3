/* SPDX-License-Identifier: MIT */
/* axmalloc's data structures: geometry, size classes, blocks, pages, segments, heaps, and the
 * settings' and counters' types. Types and the arithmetic on them only: no function of any
 * file is declared here (each file's own header declares its functions: docs/design).
 *
 * Memory comes from the OS in 4 MiB segments aligned to their size, so the segment of any
 * block is `p & ~AX_SEGMENT_MASK`. A segment is cut into pages of one kind (small 64 KiB,
 * medium 512 KiB, large = the whole segment); every block of a page has one size class.
 * Each thread owns a heap (one TLS slot) and the segments it allocated; the owner frees
 * into page->local_free without atomics, other threads push onto page->thread_free with
 * one CAS. Blocks larger than AX_LARGE_MAX get a mapping of their own ("huge"), which
 * still starts with a segment header.
 */
#ifndef AX_TYPES_H
#define AX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "atomic.h"
#include "axmalloc.h"
#include "linkage.h"

#define AXI_HIDDEN __attribute__((visibility("hidden")))
#define ax_likely(x) __builtin_expect(!!(x), 1)
#define ax_unlikely(x) __builtin_expect(!!(x), 0)
#define AX_NOINLINE __attribute__((noinline))
/* The functions a sampled malloc passes through, from the program's call to the stack walk,
 * live in one section: the stack walk drops the frames up to the last one in it
 * (modes/stacks/unwind.c). */
#define AX_API __attribute__((section("axmalloc_api")))

/* ---- geometry ------------------------------------------------------------------- */

#define AX_SEGMENT_SHIFT 22
#define AX_SEGMENT_SIZE ((uintptr_t)1 << AX_SEGMENT_SHIFT)
#define AX_SEGMENT_MASK (AX_SEGMENT_SIZE - 1)

enum ax_kind { AX_KIND_SMALL, AX_KIND_MEDIUM, AX_KIND_LARGE, AX_KIND_HUGE, AX_KINDS };

#define AX_SMALL_PAGE_SHIFT 16  /* 64 KiB pages, blocks up to AX_SMALL_MAX */
#define AX_MEDIUM_PAGE_SHIFT 19 /* 512 KiB pages, blocks up to AX_MEDIUM_MAX */
#define AX_LARGE_PAGE_SHIFT 22  /* one page per segment, blocks up to AX_LARGE_MAX */
#define AX_SMALL_MAX ((size_t)8 << 10)
#define AX_MEDIUM_MAX ((size_t)128 << 10)
#define AX_LARGE_MAX ((size_t)1 << 20)
#define AX_MAX_PAGES 64 /* small pages per segment */
/* A huge block's pointers all name page 0 of its header: (p - seg) >> 63 is 0. */
#define AX_HUGE_PAGE_SHIFT 63
/* The segment map covers the lowest 2^48 bytes, which is all a process gets from mmap
 * without asking for more (x86-64: 2^47, AArch64: 2^48): nothing larger can be mapped. */
#define AX_ADDRESS_LIMIT ((uintptr_t)1 << 48)

/* Where page 0's blocks start: after the segment header. Small segments keep 16 KiB so
 * small blocks keep their natural alignment (up to 8 KiB); the others keep 64 KiB so
 * medium/large blocks can serve alignments up to 64 KiB without a mapping of their own. */
#define AX_SMALL_META ((uintptr_t)16 << 10)
#define AX_OTHER_META ((uintptr_t)64 << 10)

/* ---- size classes ---------------------------------------------------------------- */
/* 16-byte steps up to 128 B (classes 1..8), then 4 classes per power of two up to 1 MiB
 * (classes 9..60): at most 25% internal waste, 12.5% from 256 B on. */
#define AX_CLASSES AX_NUM_CLASSES
_Static_assert(AX_CLASSES <= 64, "class masks (heap->empty_classes) are 64-bit");
#define AX_CLASS_MAX (AX_CLASSES - 1)
#define AX_DIRECT_MAX 1024 /* sizes served by heap->direct[n]: one load, no shift */
#define AX_DIRECT_N (AX_DIRECT_MAX + 1)

static inline unsigned axi_class_of(size_t n) {
  if (n <= 128)
    return n <= 16 ? 1 : (unsigned)((n + 15) >> 4);
  unsigned b = 63u - (unsigned)__builtin_clzl(n - 1); /* floor(log2(n-1)), >= 7 */
  return 4 * b - 19 + (unsigned)(((n - 1) >> (b - 2)) & 3);
}

static inline size_t axi_class_size(unsigned c) {
  if (c <= 8)
    return (size_t)c << 4;
  unsigned b = (c - 9) / 4 + 7, top = (c - 9) % 4;
  return ((size_t)1 << b) + ((size_t)(top + 1) << (b - 2));
}

/* log2 of the span of class c's sizes: class c holds the sizes (axi_class_size(c) - 2^s,
 * axi_class_size(c)] (class 1 holds 0 too: the test with s sends 0 to axi_class_of). The
 * classes are 16 B apart up to 128 B, then four per power of two, 2^(b-2) apart: 2^s is less
 * than the class size, so (size(c) - n) >> s is 0 for exactly those n, with no wrap. */
static inline unsigned axi_class_span_shift(unsigned c) { return c <= 8 ? 4 : (c - 9) / 4 + 5; }

static inline enum ax_kind axi_class_kind(unsigned c) {
  size_t s = axi_class_size(c);
  return s <= AX_SMALL_MAX ? AX_KIND_SMALL : s <= AX_MEDIUM_MAX ? AX_KIND_MEDIUM : AX_KIND_LARGE;
}

/* ---- blocks, pages, segments, heaps ------------------------------------------------ */

/* A free block's first word: the next free block, xor'ed with the page's key. The key
 * makes a stray write into a free block visible and lets free() recognise a block that
 * is already free (its first word decodes to a pointer into the page, or to NULL). */
typedef struct ax_block {
  uintptr_t next_enc;
} ax_block_t;

/* thread_free is one word: the list's first block (an address below 2^48, see
 * axi_looks_free), its length in bits 48..63 (a page holds at most 4,096 blocks), and in
 * bit 0 AX_TF_FULL: the page sits in its heap's full list. A remote free that clears it
 * tells the owner (heap->full_pending) that the page has room again. The length bounds the owner's
 * walk of the list (page.c) and counts the list for ax_stats without walking it. */
#define AX_TF_FULL ((uintptr_t)1)
#define AX_TF_LEN_SHIFT 48
static inline ax_block_t *axi_tf_list(uintptr_t tf) {
  return (ax_block_t *)(tf & ((((uintptr_t)1 << AX_TF_LEN_SHIFT) - 1) & ~AX_TF_FULL));
}
static inline uint32_t axi_tf_len(uintptr_t tf) { return (uint32_t)(tf >> AX_TF_LEN_SHIFT); }

typedef struct ax_page {
  /* first cache line: what the owner writes on its fast paths, and thread_free, which
   * other threads write once per chain of remote frees (remote.c) */
  ax_block_t *free; /* blocks ready to hand out (encoded list) */
  /* the owner's copy of key (line 2), between free and local_free: malloc loads it with free
   * and free with local_free, in one ldp each on AArch64 (2 instructions a pair) */
  uintptr_t okey;
  ax_block_t *local_free;     /* blocks the owner freed */
  ax_atomic_word thread_free; /* blocks other threads freed (encoded list) | AX_TF_FULL */
  /* blocks handed out and not freed back to this page's own lists, + 1 while the page is
   * its class's current page (pinned): so a free that empties the current page finds
   * used != 0 and stays on the fast path; axi_page_live() is the count itself */
  uint32_t used;
  uint8_t is_zero;             /* every block on `free` is zero but for its first word */
  uint8_t pinned;              /* 1 while the page is heap->direct's page of its class (see used) */
  struct ax_page *next, *prev; /* the heap's queue for the class, or its full list */
  uint32_t capacity;           /* blocks carved so far */
  uint32_t reserved;           /* blocks that fit */
  /* second cache line: what every free reads, the remote ones too, and the owner writes
   * only on its slow paths, so that a thread freeing into another's page does not make the
   * owner's next malloc miss (nor the reverse) */
  uintptr_t key; /* xor key of this page's lists */
  /* the owner's thread id | AX_OWNER_FULL; 0 while abandoned or not in use. free()'s one
   * compare with the thread id answers "local, and nothing to do but push" */
  ax_atomic_word xowner;
  uintptr_t area; /* first block */
  /* the block-start test (axi_is_block): block_size = odd << div_shift, div_inv = the
   * inverse of odd modulo 2^64, and fast_cap the blocks free() accepts: capacity (a
   * block-aligned pointer never handed out is an invalid pointer); 0 when the page is not
   * in use, huge, or in checked mode (every free then leaves the fast path for check.c) */
  uint64_t div_inv;
  ax_atomic_word fast_cap;
  uint64_t retired_ms; /* when the page became free (delayed purge) */
  /* statistics: blocks handed out since the last refill = refill - length of free */
  uint32_t refill;
  uint32_t touched; /* blocks ever carved: their memory is committed and dirty */
  uint32_t block_size;
  uint8_t div_shift;
  uint8_t cls;
  uint8_t in_use;
  /* the class's sizes are (block_size - 2^span_shift, block_size] (axi_class_span_shift): a
   * sized delete's size is of the block's class when (block_size - size) >> span_shift is 0 */
  uint8_t span_shift;
} ax_page_t;

/* xowner's low bit: the page sits in its heap's full list (free() must bring it back). */
#define AX_OWNER_FULL ((uintptr_t)1)
/* xowner's second bit: the page's class goes through its heap's cache of freed blocks
 * (cache.c), so free()'s one compare fails for it and free_other takes the block there. */
#define AX_OWNER_CACHED ((uintptr_t)2)
/* xowner's third bit, in place of AX_OWNER_CACHED while the heap profiler samples: the block
 * goes to the cache too, counted as it enters (axi_prof_cache_free), after the default build's
 * tests for the cache, which stay as they are. */
#define AX_OWNER_PROF ((uintptr_t)4)
#define AX_OWNER_FLAGS (AX_OWNER_FULL | AX_OWNER_CACHED | AX_OWNER_PROF)

static inline uint32_t axi_page_live(const ax_page_t *page) { return page->used - page->pinned; }

/* p is a block page has carved: (p - area) = k * block_size with k < fast_cap. With
 * block_size = odd << s and inv the inverse of odd, ror((p - area) * inv, s) is k when
 * block_size divides the offset and more than 2^64 / block_size (above any capacity)
 * otherwise (Granlund & Montgomery), so one compare tests divisibility and bound together;
 * a pointer below area wraps to a huge offset and fails the same way. A multiply, a
 * rotate and a compare: two instructions fewer than a divisibility magic and a bound. */
static inline uint64_t axi_block_index(const ax_page_t *page, const void *p) {
  uint64_t q = ((uintptr_t)p - page->area) * page->div_inv;
  unsigned s = page->div_shift;
  return (q >> s) | (q << ((64 - s) & 63));
}
/* fast_cap is written by the owner as it carves and read by any thread that frees a block
 * of the page (which holds a block below it, so either value is right): relaxed atomics,
 * plain loads and stores on every architecture we support. */
static inline bool axi_is_block(const ax_page_t *page, const void *p) {
  return axi_block_index(page, p) < ax_atomic_load_relaxed(&page->fast_cap);
}
/* Bytes of blocks carved so far: link and list bounds of the slow paths. */
static inline uintptr_t axi_page_carved(const ax_page_t *page) {
  return (uintptr_t)page->capacity * page->block_size;
}

struct ax_heap;

typedef struct ax_segment {
  /* address ^ axi_cookie_key, first: a linear overflow from the block before the segment
   * (segments are often mapped back to back) cannot reach the fields below without it */
  uintptr_t cookie;
  ax_atomic_word owner; /* thread id of the owning thread, 0 while abandoned */
  ax_atomic_word heap;  /* struct ax_heap * of the owner, 0 while abandoned */
  /* while abandoned: the blocks other threads sent it (remote.c), taken by the thread that
   * reclaims it (page.c); AX_INBOX_CLOSED while a heap owns it (they go to the heap's) */
  ax_atomic_word inbox;
  uint32_t used_pages;
  /* small, medium and large segments: the bytes from its start that may be read and written;
   * the rest of the mapping is inaccessible until blocks are carved there (segment.c) */
  uint32_t open_end;
  uint64_t free_mask;             /* pages not in use */
  uint64_t dirty_mask;            /* pages not in use whose memory was written and not purged */
  uint64_t purged_mask;           /* pages not in use purged since they were last used */
  size_t map_size;                /* bytes mapped (huge segments: more than AX_SEGMENT_SIZE) */
  struct ax_segment *next, *prev; /* the owner's list; the cache's list */
  struct ax_segment *abandoned_next;
  uint64_t cached_ms;          /* when it entered a cache */
  uint64_t huge_size;          /* checked mode, huge blocks: the size the program asked for */
  struct ax_prof_bucket *prof; /* huge blocks: the profile's stack of a sampled block (prof.c) */
  /* last: free()'s fast path trusts page_shift to index pages[], so an overflow must pass
   * the cookie, owner and heap (which the remote path checks, see axi_remote_free) and
   * 96 bytes more before it can change it */
  uint8_t kind;
  uint8_t page_shift;
  uint16_t npages;
  uint8_t prof_slots; /* a huge-kind segment of the profiler's sampled blocks (prof.c) */
  uint8_t thp;        /* enum ax_thp_advice: what its mapping was advised (thp.c) */
  /* huge blocks grown by realloc: the end, in segments from the header, of the inaccessible
   * address space reserved right after the mapping for its growth; 0: none (huge.c). The
   * last 2 bytes before pages[]: the header stays 128 bytes (AX_HUGE_OFFSET) */
  uint16_t reserve_end;
  ax_page_t pages[] __attribute__((aligned(128)));
} ax_segment_t;

/* A huge block starts right after its header and one page descriptor, in the header's OS
 * page (as glibc's mmapped chunks do: one page fault less, and a program that remaps the
 * pages around a block keeps its header with it; glibc's tst-free-errno). */
#define AX_HUGE_OFFSET ((uintptr_t)256)

typedef struct ax_pageq {
  ax_page_t *first, *last;
} ax_pageq_t;

typedef struct ax_segq {
  ax_segment_t *first;
} ax_segq_t;

/* The heap's cache of freed mid-size blocks (cache.c): a stack per class of AX_CACHE_FIRST
 * (1,280 B) .. AX_CACHE_LAST (256 KiB), of at most AX_CACHE_SLOTS blocks and about
 * AX_CACHE_BYTES (at least one block). t_cache checks the bounds against axi_class_of. */
#define AX_CACHE_FIRST 21u /* axi_class_of(AX_DIRECT_MAX + 1) */
#define AX_CACHE_LAST 52u  /* axi_class_of(AX_CACHE_MAX) */
#define AX_CACHE_MAX ((size_t)256 << 10)
#define AX_CACHE_N (AX_CACHE_LAST - AX_CACHE_FIRST + 1)
#define AX_CACHE_SLOTS 16u
#define AX_CACHE_BYTES ((size_t)64 << 10)

/* Per-thread statistics, merged into the global ones at thread exit. */
typedef struct ax_heap_stats {
  uint64_t class_mallocs[AX_CLASSES];
  uint64_t huge_allocs;
  uint64_t remote_frees, remote_publishes; /* blocks freed into other threads' pages; CASes */
  uint64_t remote_drains;                  /* exchanges that took this heap's inbox */
  /* for ax_ctl's thread.allocated and thread.deallocated (ctl.c): huge bytes this thread
   * allocated and freed, the live bytes of the segments it reclaimed */
  uint64_t huge_bytes, huge_freed_bytes, adopted_bytes;
} ax_heap_stats_t;

typedef struct ax_cache {
  /* One freed block, of class last_cls, apart from the stacks (a free fills it when it is
   * empty): its address is the heap's, not its class's, so the next malloc's load of it
   * need not wait for the page lookup that found the class (a malloc/free loop of 4 KiB:
   * 19 ns per pair with the stacks alone, 10-14 with this; before the cache 14) */
  ax_block_t *last;  /* valid while last_cls != 0 */
  uint32_t last_cls; /* 0: no last block */
  uint32_t n[AX_CACHE_N];
  ax_block_t *slot[AX_CACHE_N][AX_CACHE_SLOTS]; /* rows of 16: an index is a shift */
  /* One block held apart, which malloc does not take: a mode's (the heap profiler's block of a
   * class whose sample was due, prof_grant.c). Given back with the rest (axi_cache_flush). */
  ax_block_t *aside;
} ax_cache_t;

static inline bool axi_class_cached(unsigned c) { return c - AX_CACHE_FIRST < AX_CACHE_N; }

/* A thread's batches of blocks it freed into other threads' pages, one per owning heap, each
 * sent to its owner's inbox with one CAS (remote.c). A batch costs its blocks' bytes and
 * AX_RB_BLOCK_COST more per block, and is sent when that reaches AX_RB_COST: 228 blocks of
 * 16 B, 171 of 64 B, 51 of 16..1024 B, 29 of 1 KiB, one of 32 KiB or more (256 per block cost
 * 42 on the scattered Larson pattern, where exits and ageing cut some short: 30-33 per CAS). A
 * thread holds at most AX_RB_SLOTS * AX_RB_COST (1 MiB) of blocks freed and not yet sent, and a
 * block more per slot. */
#define AX_RB_SLOTS_LOG2 5
#define AX_RB_SLOTS (1u << AX_RB_SLOTS_LOG2) /* at most 64: one bit each in a word */
#define AX_RB_COST ((uint32_t)32 << 10)
#define AX_RB_BLOCK_COST 128u
#define AX_RB_BATCH (AX_RB_COST / AX_RB_BLOCK_COST + 1) /* blocks in a batch at most */
#define AX_RB_ONE                                                                                  \
  (((uint64_t)1 << 32) + AX_RB_BLOCK_COST) /* what a block adds to nb, and its size */
#define AX_RB_HEAPLESS 64u                 /* remote frees before a thread without heap gets one */
#define AX_RB_AGE_TICKS 64u                /* malloc slow paths between two ageings (remote.c) */
typedef struct ax_remote_slot {
  uintptr_t to; /* the owning heap of the batch, or page | 1 (remote.c); or of the last free */
  uint64_t nb;  /* its blocks << 32 | its cost: one add and one compare a block */
  ax_block_t *head, *tail; /* the batch, in transit (axi_set_transit); valid while nb != 0 */
} ax_remote_slot_t;
static inline uint32_t axi_rb_n(uint64_t nb) { return (uint32_t)(nb >> 32); }
typedef struct ax_remote_batch {
  uint64_t open;  /* bit i: slot i has a batch (n > 0) */
  uint64_t older; /* open batches that waited through an ageing already (remote.c) */
  uint32_t ticks; /* malloc slow paths since the last ageing (remote.c) */
  /* the slots, and one more that never holds a batch: the one AX_RB_STOLEN names */
  ax_remote_slot_t slot[AX_RB_SLOTS + 1];
} ax_remote_batch_t;
#define AX_RB_STOLEN AX_RB_SLOTS
enum { AX_STEAL_FREE, AX_STEAL_ON, AX_STEAL_EXITING }; /* ax_heap_t's steal */

/* A heap's inbox (heap->inbox): the blocks other threads sent it, a list in transit, or
 * AX_INBOX_CLOSED while no thread can take them (exited, a ghost: pool.c), when senders give
 * each block to its page's thread_free instead. */
#define AX_INBOX_CLOSED ((uintptr_t)1)

/* A heap's share of the sampling heap profiler (prof.c). Each class samples on its own: the
 * allocations before its next sampled one are floor(X / block size), X exponential with the
 * mean sampling interval, so every byte has the same chance. Sizes served by the direct
 * table are handed out by the fast path, which counts nothing: the slow path gives it a
 * current page whose free list holds no more blocks than may go before the sampled one
 * (prof_grant.c), so the sampled allocation is a slow-path one. */
typedef struct ax_prof_heap {
  uint64_t left[AX_CLASSES];         /* allocations of the class before its sampled one */
  ax_page_t *grant_page[AX_CLASSES]; /* direct classes: the page the fast path was given */
  uint32_t granted[AX_CLASSES];      /* ... and the length of its free list then */
  uint64_t huge_left;                /* bytes of huge blocks before the next sampled one */
  uint64_t rng;
  bool started;    /* left and huge_left drawn, rng seeded */
  uint8_t serving; /* the class malloc's slow path serves: its grant waits for the block */
  bool busy;       /* taking a sample: a malloc from the stack walk is not sampled */
} ax_prof_heap_t;

/* Guarded sampling's share of a heap (modes/guard.c draws it; page.c and cache.h count it
 * down). Each class samples on its own, as the profiler's: left[c] blocks of class c go to
 * the fast paths before its guarded one, floor(X / class size) with X exponential of mean
 * AXMALLOC_GUARD. Counted where blocks are handed to the fast paths, a free list at a time (a
 * refill, a carve, blocks collected), and one at a time from the cache; when the guarded one
 * is among them, a direct class's list is cut before it, and the slow path that finds the
 * class due takes the sample there (page.c). */
typedef struct ax_guard_heap {
  int64_t left[AX_CLASSES]; /* <= 0: due (page.c: guard_mark) */
  uint64_t drawn;           /* classes whose left was drawn (a heap starts at 0: undrawn) */
  uint64_t rng;             /* (sample.h), seeded at the first draw */
} ax_guard_heap_t;
/* heap->hooked: malloc's slow path goes to alloc.c's malloc_hooked (one test per refill) */
#define AX_HOOKED_MODES 1u /* the profiler or the leak checker is on (axi_malloc_hooked) */
#define AX_HOOKED_GUARD 2u /* a short guarded interval: a class's first malloc may be sampled */

typedef struct ax_heap {
  ax_page_t *direct[AX_DIRECT_N]; /* size n -> page of its class (or the empty page): first */
  /* The batches' slot a remote free used last (remote.c), AX_RB_STOLEN while another thread
   * sends the batches; and 1 while the thread is in its batches. Both 32-bit words right
   * after direct, where an AArch64 word load or store reaches them with its offset (a byte
   * store reaches 4 KiB; rb is 15 KiB in). */
  uint32_t rb_last;
  uint32_t rb_busy;
  uint32_t hooked; /* AX_HOOKED_*: 0 but while a mode hooks malloc or a guarded sample is due */
  ax_pageq_t queue[AX_CLASSES];  /* pages with (probably) free blocks, per class */
  ax_page_t *pinned[AX_CLASSES]; /* the pinned current page of each class (page.c) */
  /* class -> its current page, or the empty page (none yet, checked mode): malloc's path
   * for sizes above the direct table's */
  ax_page_t *current[AX_CLASSES];
  ax_pageq_t full; /* pages found full; revisited when remote frees land */
  size_t full_count;
  uintptr_t tid;
  ax_segq_t segs[AX_KINDS]; /* segments with free pages, per kind (huge: unused) */
  ax_segq_t segs_full;      /* segments without free pages */
  uint64_t next_purge_ms;   /* 0: nothing waits for a purge */
  uint64_t empty_classes;   /* classes whose queue holds empty pages waiting to retire */
  uint64_t next_retire_ms;  /* 0: no empty page waits */
  uint32_t sweep_ticks;     /* slow paths since this thread last looked at the sweep's clock */
  bool keep_empty; /* the thread exits: its last empty segment of a kind is abandoned, not freed */
  /* Read and written by other threads, at any time: heaps are type-stable, and a remote free
   * may add to a heap that its owner left and a new thread is taking over (init does not
   * memset these). */
  ax_atomic_word full_pending; /* remote frees into full pages since the last revisit */
  /* Another thread sends this heap's batches (remote.c, "steals"): AX_STEAL_FREE, ON while
   * one does, EXITING from the thread's exit on (none may start then) until a thread takes
   * the heap again. */
  ax_atomic_word steal;
  uint64_t swept;            /* what the last sweep saw of its batches (remote.c), the sweeper's */
  uintptr_t swept_in;        /* ... and of its inbox: its head */
  struct ax_heap *pool_next; /* the next free heap (pool.c): read by poppers at any time */
  /* blocks other threads sent (remote.c), taken with one exchange (page.c): on a line of its
   * own, which senders write and the owner reads on its slow paths */
  ax_atomic_word inbox __attribute__((aligned(64)));
  char inbox_pad[64 - sizeof(ax_atomic_word)];
  int active;               /* axi_heap_foreach skips heaps not in use */
  struct ax_heap *all_next; /* every heap ever made, newest first (pool.c) */
  /* The heap profiler's last walks (modes/stacks/unwind.c), mapped at the heap's first; kept when a
   * new thread takes the heap over, whose walks check them as any. */
  struct ax_prof_memo *prof_memo;
  /* checked mode's quarantine ring, mapped at its first free; kept with the heap (empty) */
  ax_block_t **quarantine;
  bool reused; /* a thread had it before: the fields around this part need clearing (pool.c) */
  /* What only its thread touches, and only as it uses it (a thread that mallocs once leaves
   * these pages untouched: pool.c) */
  ax_heap_stats_t stats;
  ax_guard_heap_t guard; /* guarded sampling's countdown, beside the counts a refill adds to */
  ax_cache_t cache;      /* freed blocks of mid-size classes (cache.c) */
  ax_remote_batch_t rb;  /* blocks freed into other threads' pages, not yet published */
  ax_prof_heap_t prof;   /* heap profiling (prof.c): untouched while it is off */
  /* checked mode's quarantine (check.c): q_count blocks from quarantine[q_head] on, of
   * q_bytes in all */
  uint32_t q_head, q_count;
  size_t q_bytes;
} ax_heap_t;

/* Is b, of class c, in heap's cache? A read of the structure, for the double-free checks of
 * the cache (cache.c) and of remote frees (remote.c, other threads' caches): at most 17
 * compares. */
static inline bool axi_cache_has(const ax_heap_t *heap, unsigned c, const ax_block_t *b) {
  if (!axi_class_cached(c))
    return false;
  if ((heap->cache.last_cls && heap->cache.last == b) || heap->cache.aside == b)
    return true;
  unsigned i = c - AX_CACHE_FIRST;
  for (uint32_t k = 0; k < heap->cache.n[i]; k++)
    if (heap->cache.slot[i][k] == b)
      return true;
  return false;
}

/* ---- settings, counters, locks, caches of segments ------------------------------------ */

/* Transparent huge pages: what AXMALLOC_THP asks for, what the kernel offers, and the advice
 * a mapping carries (ax_segment_t.thp): thp.c. */
enum ax_thp_option { AX_THP_AUTO, AX_THP_NEVER, AX_THP_ALWAYS, AX_THP_LARGE };
enum ax_thp_kernel {
  AX_THP_KERNEL_ABSENT,
  AX_THP_KERNEL_NEVER,
  AX_THP_KERNEL_MADVISE,
  AX_THP_KERNEL_ALWAYS
};
enum ax_thp_advice { AX_THP_ADV_NONE, AX_THP_ADV_HUGE, AX_THP_ADV_NOHUGE };
/* The kernel's defrag setting: what a fault in an advised mapping does when no huge page is
 * free (always, madvise: compacts or reclaims at once; defer...: asks kswapd; never: takes
 * OS pages). */
enum ax_thp_defrag {
  AX_THP_DEFRAG_ABSENT,
  AX_THP_DEFRAG_ALWAYS,
  AX_THP_DEFRAG_DEFER,
  AX_THP_DEFRAG_DEFER_MADVISE,
  AX_THP_DEFRAG_MADVISE,
  AX_THP_DEFRAG_NEVER
};

typedef struct ax_options {
  int stats, verbose;
  uint64_t purge_delay_ms;
  enum ax_thp_option thp;
} ax_options_t;

typedef struct ax_global_stats {
  ax_atomic_word in_use, in_use_peak;
  ax_atomic_word os_reserved, os_reserved_peak, os_committed, os_committed_peak, os_purged;
  ax_atomic_word mmap_calls, munmap_calls, madvise_calls, mremap_calls, mprotect_calls;
  ax_atomic_word segments_live, segments_abandoned, segments_reclaimed;
  ax_atomic_word huge_cache_hits, heaps_live;
  ax_atomic_word huge_allocs;
  ax_atomic_word remote_frees, remote_publishes, remote_drains;
  ax_atomic_word remote_steals; /* batches that other threads sent for an idle one (remote.c) */
  ax_atomic_word sleeps;        /* a bounded wait's spin ran out: a futex wait (lock.c, os.c) */
  ax_atomic_word thp_advised, thp_advised_peak, thp_advised_total, thp_declined;
  ax_atomic_word huge_live; /* bytes of the live huge blocks (their usable sizes) */
  ax_atomic_word class_mallocs[AX_CLASSES];
} ax_global_stats_t;

/* A lock for the rare global lists (the profiler's table, the caches' trims), never on a
 * malloc or free fast path: a waiter spins briefly, then sleeps on a futex (lock.c). The word
 * holds its holder's thread id | AX_LOCK_HELD, so that fork's prepare handler can tell a lock
 * this very thread holds: a signal handler that forks may have interrupted it inside the
 * locked section, which goes on after the handler returns (in parent and child alike).
 * Thread ids are 64-byte aligned: the low bits are free. */
#define AX_LOCK_HELD ((uintptr_t)1)
#define AX_LOCK_FORK ((uintptr_t)2)    /* held for a fork (axi_lock_for_fork) */
#define AX_LOCK_WAITERS ((uintptr_t)4) /* a thread may sleep on it: its unlock wakes one */
typedef struct ax_lock {
  ax_atomic_word word; /* 0: free; holder's thread id | AX_LOCK_HELD [| FORK] [| WAITERS] */
} ax_lock_t;

/* A cache of unused segments (or huge mappings): a list under a lock. */
typedef struct ax_segcache {
  ax_lock_t lock;
  ax_segment_t *first; /* linked through next; most recent first */
  unsigned count;
  size_t bytes;
} ax_segcache_t;
/* What a cache trim drops: entries past the purge delay (try-lock), all entries but only if
 * the lock is free (malloc's paths: fork's prepare handler may hold it), or all entries. */
enum ax_trim { AX_TRIM_DUE, AX_TRIM_ALL_NOWAIT, AX_TRIM_ALL };

/* What a sized free knows of its block (free.c): nothing (free), that the size fits in it
 * (free_sized: realloc may have grown it to a bigger class; aligned ones), or that the size
 * is the one operator new was asked for, so of the block's class (sized operator delete). */
enum ax_sized { AX_SIZED_NONE, AX_SIZED_FITS, AX_SIZED_EXACT };
/* Which call frees a block (free.c): checked mode wants delete[] for new[]'s blocks and
 * delete for none of them (check.c); free() and the aligned forms take any. */
enum ax_dealloc { AX_DEALLOC_FREE, AX_DEALLOC_DELETE, AX_DEALLOC_DELETE_ARRAY };

/* What a pointer that the fast paths did not take is (ptr.c). */
typedef enum ax_ptr_kind {
  AX_PTR_TAGGED,  /* a block of a page, its memory tag checked (mte.c); b is untagged */
  AX_PTR_CHECKED, /* checked mode's (check.c), tagged or not */
  AX_PTR_SLOT,    /* a sampled block in a profiler slot (prof.c) */
  AX_PTR_HUGE,    /* a huge block (huge.c) */
  AX_PTR_LEAK,    /* a carved block of a page while the leak checker runs (leak.c) */
  AX_PTR_ZERO,    /* a zero-size block (zero.c): seg and page are NULL */
  AX_PTR_GUARD,   /* a block of guarded sampling's pool (modes/guard.c): seg and page NULL */
} ax_ptr_kind_t;
typedef struct ax_ptr {
  ax_ptr_kind_t kind;
  bool tagged;       /* the program's pointer carried a memory tag */
  void *b;           /* the pointer, untagged */
  ax_segment_t *seg; /* its header, validated (but for tagged blocks: mte.c looked) */
  ax_page_t *page;   /* the page descriptor b falls in */
} ax_ptr_t;

/* The classes the direct table serves (sizes up to AX_DIRECT_MAX): the profiler's grants. */
static inline bool axi_class_direct(unsigned c) { return c <= axi_class_of(AX_DIRECT_MAX); }

#endif
