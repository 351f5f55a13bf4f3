/* axmalloc internals: the data structures and the inline helpers shared by src/common.
 *
 * Memory comes from the OS in 4 MiB segments aligned to their size, so the segment of any
 * block is `p & ~AX_SEGMENT_MASK`. A segment is cut into pages of one kind (small 64 KiB,
 * medium 512 KiB, large = the whole segment); every block of a page has one size class.
 * Each thread owns a heap (one TLS slot) and the segments it allocated; the owner frees
 * into page->local_free without atomics, other threads push onto page->thread_free with
 * one CAS. Blocks larger than AX_LARGE_MAX get a mapping of their own ("huge"), which
 * still starts with a segment header.
 */
#ifndef AX_INTERNAL_H
#define AX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unwind.h> /* (the heap profiler's stack walk: libgcc) */

#include "arch.h"
#include "atomic.h"
#include "axmalloc.h"
#include "hooks.h"
#include "track.h"

#define AXI_HIDDEN __attribute__((visibility("hidden")))
#define ax_likely(x) __builtin_expect(!!(x), 1)
#define ax_unlikely(x) __builtin_expect(!!(x), 0)
#define AX_NOINLINE __attribute__((noinline))
/* The functions a sampled malloc passes through, from the program's call to the stack walk,
 * live in one section: the profiler drops the frames up to the last one in it (prof.c). */
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
} ax_page_t;

/* xowner's low bit: the page sits in its heap's full list (free() must bring it back). */
#define AX_OWNER_FULL ((uintptr_t)1)
/* xowner's second bit: the page's class goes through its heap's cache of freed blocks
 * (cache.c), so free()'s one compare fails for it and free_other takes the block there. */
#define AX_OWNER_CACHED ((uintptr_t)2)
/* xowner's third bit, in place of AX_OWNER_CACHED while the heap profiler samples: the block
 * goes to the cache too, counted as it enters (axi_cache_free_prof), after the default build's
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
  uint32_t used_pages;
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

/* Per-thread statistics, merged into the global ones at thread exit. */
typedef struct ax_heap_stats {
  uint64_t class_mallocs[AX_CLASSES];
  uint64_t huge_allocs;
  uint64_t remote_frees, remote_publishes; /* blocks freed into other threads' pages; CASes */
} ax_heap_stats_t;

/* The heap's cache of freed mid-size blocks (cache.c): a stack per class of AX_CACHE_FIRST
 * (1,280 B) .. AX_CACHE_LAST (256 KiB), of at most AX_CACHE_SLOTS blocks and about
 * AX_CACHE_BYTES (at least one block). t_cache checks the bounds against axi_class_of. */
#define AX_CACHE_FIRST 21u /* axi_class_of(AX_DIRECT_MAX + 1) */
#define AX_CACHE_LAST 52u  /* axi_class_of(AX_CACHE_MAX) */
#define AX_CACHE_MAX ((size_t)256 << 10)
#define AX_CACHE_N (AX_CACHE_LAST - AX_CACHE_FIRST + 1)
#define AX_CACHE_SLOTS 16u
#define AX_CACHE_BYTES ((size_t)64 << 10)
typedef struct ax_cache {
  /* One freed block, of class last_cls, apart from the stacks (a free fills it when it is
   * empty): its address is the heap's, not its class's, so the next malloc's load of it
   * need not wait for the page lookup that found the class (a malloc/free loop of 4 KiB:
   * 19 ns per pair with the stacks alone, 10-14 with this; before the cache 14) */
  ax_block_t *last;  /* valid while last_cls != 0 */
  uint32_t last_cls; /* 0: no last block */
  uint32_t n[AX_CACHE_N];
  ax_block_t *slot[AX_CACHE_N][AX_CACHE_SLOTS]; /* rows of 16: an index is a shift */
} ax_cache_t;

static inline bool axi_class_cached(unsigned c) { return c - AX_CACHE_FIRST < AX_CACHE_N; }
/* axi_class_of(n) for AX_DIRECT_MAX < n <= AX_CACHE_MAX, as one load: classes there are
 * 256 B apart or more, so (n - 1) >> 8 names one (cache.c; t_cache checks every size). */
AXI_HIDDEN extern const uint8_t axi_cache_class[AX_CACHE_MAX >> 8];

/* A thread's chains of blocks it freed into other threads' pages, one per slot, each
 * published with one CAS (remote.c). */
#define AX_RB_SLOTS_LOG2 6
#define AX_RB_SLOTS (1u << AX_RB_SLOTS_LOG2) /* at most 64: one bit each in a word */
#define AX_RB_CHAIN 64u                      /* blocks in a chain at most */
#define AX_RB_BYTES ((size_t)16 << 10)       /* and bytes: 1 MiB held at most */
#define AX_RB_HEAPLESS 64u /* remote frees before a thread without heap gets one */
typedef struct ax_remote_slot {
  ax_page_t *page;         /* the page of the chain, or of the last free here (compared) */
  ax_block_t *head, *tail; /* the chain, linked with page's key; valid while n > 0 */
  uint32_t n, limit;       /* blocks in it; published when n reaches limit */
} ax_remote_slot_t;
typedef struct ax_remote_batch {
  uint64_t open;  /* bit i: slot i has a chain (n > 0) */
  uint64_t older; /* open chains that waited through a malloc refill already */
  uint32_t last;  /* the slot a remote free used last */
  ax_remote_slot_t slot[AX_RB_SLOTS];
} ax_remote_batch_t;

/* A heap's share of the sampling heap profiler (prof.c). Each class samples on its own: the
 * allocations before its next sampled one are floor(X / block size), X exponential with the
 * mean sampling interval, so every byte has the same chance. Sizes served by the direct
 * table are handed out by the fast path, which counts nothing: the slow path gives it a
 * current page whose free list holds no more blocks than may go before the sampled one
 * (page.c, "profiling grants"), so the sampled allocation is a slow-path one. */
typedef struct ax_prof_heap {
  uint64_t left[AX_CLASSES];         /* allocations of the class before its sampled one */
  ax_page_t *grant_page[AX_CLASSES]; /* direct classes: the page the fast path was given */
  uint32_t granted[AX_CLASSES];      /* ... and the length of its free list then */
  uint64_t huge_left;                /* bytes of huge blocks before the next sampled one */
  uint64_t rng;
  bool started;      /* left and huge_left drawn, rng seeded */
  uint8_t serving;   /* the class malloc's slow path serves: its grant waits for the block */
  bool busy;         /* taking a sample: a malloc from the stack walk is not sampled */
  ax_block_t *aside; /* a cached class's block freed when its sample was due (cache.c) */
} ax_prof_heap_t;

typedef struct ax_heap {
  ax_page_t *direct[AX_DIRECT_N]; /* size n -> page of its class (or the empty page) */
  ax_pageq_t queue[AX_CLASSES];   /* pages with (probably) free blocks, per class */
  ax_page_t *pinned[AX_CLASSES];  /* the pinned current page of each class (page.c) */
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
  struct ax_heap *pool_next;
  ax_heap_stats_t stats;
  ax_cache_t cache;     /* freed blocks of mid-size classes (cache.c) */
  ax_remote_batch_t rb; /* blocks freed into other threads' pages, not yet published */
  ax_prof_heap_t prof;  /* heap profiling (prof.c): untouched while it is off */
  /* Read and written by other threads, at any time: heaps are type-stable, and a remote free
   * may add to a heap that its owner left and a new thread is taking over (init does not
   * memset these). */
  ax_atomic_word full_pending; /* remote frees into full pages since the last revisit */
  int active;                  /* axi_heap_foreach skips heaps not in use */
  struct ax_heap *all_next;    /* every heap ever made, newest first (heap.c) */
  /* The heap profiler's last walks (prof_unwind.c), mapped at the heap's first; kept when a
   * new thread takes the heap over, whose walks check them as any. */
  struct ax_prof_memo *prof_memo;
} ax_heap_t;

/* ---- globals --------------------------------------------------------------------- */

typedef struct ax_options {
  int stats, verbose;
  uint64_t purge_delay_ms;
} ax_options_t;

/* Checked mode (check.c): AXMALLOC_CHECK=1 at run time, or always on when built with
 * -DAX_CHECKED=ON. Set once by axi_init_process, before the first page exists. */
AXI_HIDDEN extern bool axi_checked;
/* Memory tagging on (mte.c): AXMALLOC_MTE=1 or checked mode, on a CPU with MTE. Set once by
 * axi_init_process, before the first page exists. */
AXI_HIDDEN extern bool axi_mte;
AXI_HIDDEN extern const char *axi_mte_state; /* "on", "off", "unavailable" */
/* Sampling heap profiler on (prof.c): AXMALLOC_PROF=1, not with checked mode or tagging.
 * Set once by axi_init_process, before the first page exists; read on slow paths only. */
AXI_HIDDEN extern bool axi_prof_on;
/* Every malloc and free takes the slow paths (checked mode, tagging): the direct tables
 * hold only the empty page and every fast_cap is 0. */
static inline bool axi_slow_only(void) { return axi_checked || axi_mte; }

AXI_HIDDEN extern ax_options_t axi_options;
AXI_HIDDEN extern size_t axi_os_page; /* the OS page size, read at run time */
AXI_HIDDEN extern ax_page_t axi_page_empty;
AXI_HIDDEN extern ax_heap_t axi_heap_empty;
AXI_HIDDEN extern __thread ax_heap_t *axi_tls_heap;

/* The segment map: one bit per 4 MiB of the 48-bit address space (8 MiB of zero pages
 * until used), set for the start of every live segment. free() consults it before
 * touching a segment header, so a foreign pointer is reported, never followed. */
#define AX_MAP_BITS (1u << (48 - AX_SEGMENT_SHIFT))
AXI_HIDDEN extern ax_atomic_word axi_segmap[AX_MAP_BITS / (8 * sizeof(uintptr_t))];

static inline bool axi_segmap_has(uintptr_t seg) {
  uintptr_t i = seg >> AX_SEGMENT_SHIFT;
  if (ax_unlikely(i >= AX_MAP_BITS))
    return false;
  const unsigned w = 8 * sizeof(uintptr_t);
  return (ax_atomic_load_relaxed(&axi_segmap[i / w]) >> (i % w)) & 1;
}

/* The page map (pagemap.c): the page descriptor of any pointer in two loads, for free()'s
 * fast path. One entry per 64 KiB slice of the 48-bit address space, in second-level
 * tables of 2^20 entries (8 MiB each, mapped when the first segment of their 64 GiB region
 * is), under a first level whose unused entries point at one shared table of zeros. An
 * entry names the page covering the slice (every slice of a medium or large page names
 * it; a huge mapping's first segment and its block's slice name its page 0), or is NULL:
 * not ours. A pointer above 2^48 aliases a lower slice: the block-start test, which
 * compares the whole pointer with the page's area, rejects it.
 * A first-level entry holds its table's address less the offset of its region's first slice
 * (i << (AX_PM_L2_BITS + 3)), so that the slice number itself indexes it: no mask for the
 * second level (integers, not pointers: a biased base points into no object). Shifting the
 * pointer left by 16 first drops the bits above 2^48. */
#define AX_SLICE_SHIFT 16
#define AX_PM_L2_BITS 20
#define AX_PM_L1_BITS (48 - AX_SLICE_SHIFT - AX_PM_L2_BITS)
AXI_HIDDEN extern uintptr_t axi_pagemap[(size_t)1 << AX_PM_L1_BITS];

static inline ax_page_t *axi_pagemap_get(const void *p) {
  uintptr_t q = (uintptr_t)p << 16;
  uintptr_t i = q >> (64 - AX_PM_L1_BITS), s = q >> (16 + AX_SLICE_SHIFT);
  return (ax_page_t *)ax_atomic_load_relaxed(
      (const ax_atomic_word *)(axi_pagemap[i] + s * sizeof(ax_page_t *)));
}

static inline ax_segment_t *axi_segment_of(const void *p) {
  return (ax_segment_t *)((uintptr_t)p & ~AX_SEGMENT_MASK);
}

static inline ax_page_t *axi_page_of(ax_segment_t *seg, const void *p) {
  return &seg->pages[((uintptr_t)p - (uintptr_t)seg) >> seg->page_shift];
}

static inline ax_block_t *axi_decode(const ax_page_t *page, uintptr_t enc) {
  return (ax_block_t *)(enc ^ page->key);
}
/* The link of a block on a free list. Under AX_VALGRIND a free block is no-access to
 * memcheck, so the allocator's own reads and writes of its link open that word briefly
 * (track.h); otherwise these are plain loads and stores. */
static inline ax_block_t *axi_link(const ax_page_t *page, const ax_block_t *b) {
  AX_TRACK_DEFINED(b, sizeof *b);
  uintptr_t enc = b->next_enc;
  AX_TRACK_NOACCESS(b, sizeof *b);
  return axi_decode(page, enc);
}
static inline uintptr_t axi_encode(const ax_page_t *page, const ax_block_t *b) {
  return (uintptr_t)b ^ page->key;
}
static inline void axi_set_link(const ax_page_t *page, ax_block_t *b, const ax_block_t *next) {
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = axi_encode(page, next);
  AX_TRACK_NOACCESS(b, sizeof *b);
}
/* The same with a key already loaded: the owner's copy (okey), which malloc's fast path
 * loads together with page->free. */
static inline ax_block_t *axi_link_key(uintptr_t key, const ax_block_t *b) {
  AX_TRACK_DEFINED(b, sizeof *b);
  uintptr_t enc = b->next_enc;
  AX_TRACK_NOACCESS(b, sizeof *b);
  return (ax_block_t *)(enc ^ key);
}
static inline void axi_set_link_own(const ax_page_t *page, ax_block_t *b, const ax_block_t *next) {
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = (uintptr_t)next ^ page->okey;
  AX_TRACK_NOACCESS(b, sizeof *b);
}

/* A free block's link, decoded, is NULL or a block of the heap: an address below 2^48, so
 * an encoded link's top 16 bits are the key's. A page's key has bit 63 set and not all of
 * bits 48..63 (axi_page_key), so the first words a program leaves in its blocks (pointers,
 * small or negative integers, text: two bytes of a string, below 0x8000) have other top
 * bits. A block that passes may be free already, and the caller looks
 * (axi_check_double_free). The test reads bytes 6 and 7 of each word (both architectures
 * are little-endian) as 2-byte loads: a narrower store the program just made at offsets 0..5
 * (a byte at p[0]) does not overlap them, so the load need not wait for that store to reach
 * the cache, as an 8-byte load of the word must (30 M malloc(32), p[0] = i, free: 333 ms
 * with the 8-byte load, 211 with this, tcmalloc 230). */
static inline bool axi_looks_free(const ax_page_t *page, const ax_block_t *b) {
  uint16_t top, key_top; /* the key's top too as a 2-byte load: no shift */
  __builtin_memcpy(&key_top, (const char *)&page->key + 6, sizeof key_top);
  AX_TRACK_DEFINED(b, sizeof *b);
  __builtin_memcpy(&top, (const char *)b + 6, sizeof top);
  AX_TRACK_NOACCESS(b, sizeof *b);
  return top == key_top;
}
/* A page's key from a random word: bit 63 set, and not all of bits 48..63 (axi_looks_free). */
static inline uintptr_t axi_page_key(uint64_t r) {
  return (uintptr_t)((r | (uint64_t)1 << 63) & ~((uint64_t)1 << 48));
}

/* post: a block of size's class taken off heap's cache (the one in `last`, else its stack's
 * top); NULL when there is none. pre: AX_DIRECT_MAX < size <= AX_CACHE_MAX. (cache.c has
 * the rest.) */
static inline ax_block_t *axi_cache_pop(ax_heap_t *heap, size_t size) {
  unsigned c = axi_cache_class[(size - 1) >> 8], i = c - AX_CACHE_FIRST;
  ax_block_t *b;
  if (heap->cache.last_cls == c) { /* one compare: last_cls is 0 when there is no last */
    b = heap->cache.last;
    heap->cache.last_cls = 0;
  } else {
    uint32_t n = heap->cache.n[i];
    if (!n)
      return NULL;
    b = heap->cache.slot[i][--n];
    heap->cache.n[i] = n;
  }
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = 0; /* a live block must not look free to free()'s double-free check */
  heap->stats.class_mallocs[c]++;
  AX_TRACK_MALLOC(b, axi_class_size(c), 0);
  return b;
}

/* ---- cross-file internal functions (contracts at their definitions) -------------- */

/* init.c */
AXI_HIDDEN void axi_init_process(void);

/* os.c */
AXI_HIDDEN void *axi_os_map(size_t size);
AXI_HIDDEN bool axi_os_protect(void *p, size_t size, int extra_prot);
AXI_HIDDEN void *axi_os_map_aligned(size_t size, size_t align, size_t off);
AXI_HIDDEN void axi_os_unmap(void *p, size_t size);
AXI_HIDDEN void axi_os_purge(void *p, size_t size);
AXI_HIDDEN bool axi_os_zero_pages(void *p, size_t size);
AXI_HIDDEN bool axi_os_resident(const void *p);
AXI_HIDDEN bool axi_os_remap(void *p, size_t old_size, size_t new_size);
AXI_HIDDEN bool axi_os_move(void *p, size_t old_size, size_t new_size, void *target);
AXI_HIDDEN int axi_os_open(const char *path, int flags, unsigned mode);
AXI_HIDDEN long axi_os_read(int fd, void *buf, size_t n);
AXI_HIDDEN long axi_os_write(int fd, const void *buf, size_t n);
AXI_HIDDEN int axi_os_close(int fd);
AXI_HIDDEN int axi_os_fcntl(int fd, int cmd, int arg);
AXI_HIDDEN uint64_t axi_now_ms(void);
AXI_HIDDEN uint64_t axi_random(void);

/* print.c: a printf subset (%s %d %zu %llu %p %x) to stderr, without stdio or allocation,
 * not a cancellation point */
AXI_HIDDEN void axi_write(const char *fmt, ...);
AXI_HIDDEN void axi_write_keep_stderr(void);
AXI_HIDDEN void axi_write_to_saved_stderr(void);
AXI_HIDDEN __attribute__((noreturn)) void axi_fatal(const char *fmt, ...);

/* A spin lock for the rare global lists: never slept on, only try-locked or held briefly.
 * The word holds its holder's thread id | 1, so that fork's prepare handler can tell a lock
 * this very thread holds: a signal handler that forks may have interrupted it inside the
 * locked section, which goes on after the handler returns (in parent and child alike). */
typedef struct ax_lock {
  ax_atomic_word word; /* 0: free; holder's thread id | 1; | 2 more: held for a fork */
} ax_lock_t;
static inline uintptr_t axi_lock_holder(void) { return ax_arch_thread_id() | 1; }
static inline bool axi_trylock(ax_lock_t *l) {
  uintptr_t expect = 0;
  bool ok = ax_atomic_load_relaxed(&l->word) == 0 &&
            ax_atomic_cas_acq_rel(&l->word, &expect, axi_lock_holder());
  if (ok)
    AX_HOOK(AX_HOOK_LOCKED, l);
  return ok;
}
static inline void axi_lock(ax_lock_t *l) {
  while (!axi_trylock(l))
    ax_arch_pause();
}
static inline void axi_unlock(ax_lock_t *l) { ax_atomic_store_release(&l->word, 0); }
/* fork's prepare handler: take l, marked as held for the fork, unless this thread holds it
 * already (see above: then it stays with the interrupted section). glibc's own fork skips
 * its malloc locks in a single-threaded process for the same reason (tst-mallocfork2). */
static inline void axi_lock_for_fork(ax_lock_t *l) {
  if (ax_atomic_load_relaxed(&l->word) == axi_lock_holder())
    return;
  axi_lock(l);
  ax_atomic_store_relaxed(&l->word, axi_lock_holder() | 2);
}
/* fork's parent and child handlers: release what axi_lock_for_fork took, nothing else. */
static inline void axi_unlock_after_fork(ax_lock_t *l) {
  if (ax_atomic_load_relaxed(&l->word) == (axi_lock_holder() | 2))
    axi_unlock(l);
}

/* segment.c */
AXI_HIDDEN extern uintptr_t axi_cookie_key;
AXI_HIDDEN void axi_segment_validate(const ax_segment_t *seg);
AXI_HIDDEN __attribute__((noreturn)) void axi_corrupted(const void *at);
/* The cheap part of axi_segment_validate, for paths that read the header often. */
static inline void axi_segment_check_cookie(const ax_segment_t *seg) {
  if (ax_unlikely(seg->cookie != ((uintptr_t)seg ^ axi_cookie_key)))
    axi_corrupted(seg);
}
AXI_HIDDEN void axi_page_validate(const ax_segment_t *seg, const ax_page_t *page);
AXI_HIDDEN uintptr_t axi_page_start(const ax_segment_t *seg, unsigned i);
AXI_HIDDEN uintptr_t axi_page_end(const ax_page_t *page);
AXI_HIDDEN ax_page_t *axi_segment_page_alloc(ax_heap_t *heap, enum ax_kind kind);
AXI_HIDDEN void axi_segment_page_retire(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_segmap_set(ax_segment_t *seg, bool on);
/* pagemap.c. pre: start and len multiples of 64 KiB. post: the slices of [start, start+len)
 * name page (NULL: clear them); false when a second-level table could not be mapped. */
AXI_HIDDEN bool axi_pagemap_set(uintptr_t start, size_t len, ax_page_t *page);
/* pagemap.c: whether region i of the first level (64 GiB) has a table of its own */
AXI_HIDDEN bool axi_pagemap_region_used(unsigned i);
/* Calls fn on every small, medium and large segment in the segment map, in address order.
 * pre: no other thread maps or unmaps one meanwhile (a fork child's handler, a test). */
AXI_HIDDEN void axi_segment_foreach(void (*fn)(ax_segment_t *, void *), void *arg);
AXI_HIDDEN ax_segment_t *axi_segment_map(enum ax_kind kind, size_t map_size, size_t align,
                                         size_t off);
AXI_HIDDEN void axi_segment_unmap(ax_segment_t *seg);
AXI_HIDDEN void axi_segment_split_off(ax_segment_t *seg, size_t map_size);
AXI_HIDDEN void axi_segment_join(ax_segment_t *seg);
AXI_HIDDEN void axi_segment_hide_meta(ax_segment_t *seg, bool hide);
AXI_HIDDEN void axi_segment_abandon_all(ax_heap_t *heap);
AXI_HIDDEN void axi_segment_orphan(ax_segment_t *seg);
AXI_HIDDEN ax_segment_t *axi_segment_adopt(ax_heap_t *heap);
AXI_HIDDEN void axi_segment_purge(ax_heap_t *heap, bool force);
/* A cache of unused segments (or huge mappings): a list under a spin lock. */
typedef struct ax_segcache {
  ax_lock_t lock;
  ax_segment_t *first; /* linked through next; most recent first */
  unsigned count;
  size_t bytes;
} ax_segcache_t;
/* What a cache trim drops: entries past the purge delay (try-lock), all entries but only if
 * the lock is free (malloc's paths: fork's prepare handler may hold it), or all entries. */
enum ax_trim { AX_TRIM_DUE, AX_TRIM_ALL_NOWAIT, AX_TRIM_ALL };
AXI_HIDDEN void axi_segcache_trim(ax_segcache_t *cache, enum ax_trim mode);
/* A link that may be cache->first, which is read without the lock: written atomically. */
static inline void axi_segcache_link(ax_segment_t **at, ax_segment_t *seg) {
  ax_atomic_store_relaxed((ax_atomic_word *)at, (uintptr_t)seg);
}
AXI_HIDDEN void axi_segment_cache_trim(enum ax_trim mode);
AXI_HIDDEN void axi_segment_fork_prepare(void);
AXI_HIDDEN void axi_segment_fork_release(void);

/* page.c */
AXI_HIDDEN void *axi_page_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void *axi_page_malloc_current(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN bool axi_page_reclaim(ax_heap_t *heap);
AXI_HIDDEN void axi_pages_retire_empty(ax_heap_t *heap, bool all);
AXI_HIDDEN void axi_page_purge_tick(ax_heap_t *heap);
AXI_HIDDEN void axi_free_slow(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_page_give_back(ax_heap_t *heap, ax_page_t *page, ax_block_t *b);
AXI_HIDDEN void axi_page_collect(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_page_count_mallocs(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_page_queue_push(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_pages_collect_all(ax_heap_t *heap);
AXI_HIDDEN void axi_page_return(ax_block_t *b);
AXI_HIDDEN void axi_page_orphan(ax_page_t *page);

AXI_HIDDEN ax_page_t *axi_page_with_free(ax_heap_t *heap, unsigned c);
AXI_HIDDEN ax_block_t *axi_page_pop(ax_page_t *page);
AXI_HIDDEN __attribute__((noreturn)) void axi_corrupted_list(const ax_page_t *page,
                                                             const ax_block_t *b);
/* cache.c */
AXI_HIDDEN void axi_cache_free(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_cache_free_prof(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_cache_flush(ax_heap_t *heap);
AXI_HIDDEN bool axi_cache_has(const ax_heap_t *heap, unsigned c, const ax_block_t *b);
AXI_HIDDEN void axi_cache_unaside(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void axi_cache_orphan(ax_heap_t *heap);

/* free.c */
AXI_HIDDEN __attribute__((noreturn)) void axi_invalid_free(const char *fn, const void *p);
AXI_HIDDEN __attribute__((noreturn)) void axi_bad_pointer(const char *fn, ax_segment_t *seg,
                                                          const void *p);
AXI_HIDDEN ax_segment_t *axi_header_off_map(const char *fn, const void *p);
AXI_HIDDEN void axi_check_double_free(ax_page_t *page, ax_block_t *b);
AXI_HIDDEN bool axi_list_has(const ax_page_t *page, const ax_block_t *list, const ax_block_t *b);
/* mte.c */
AXI_HIDDEN void axi_mte_init(bool want);
AXI_HIDDEN void *axi_mte_tag(void *b);
AXI_HIDDEN void *axi_mte_release(const char *fn, void *p, bool keep);
AXI_HIDDEN bool axi_mte_map(void *seg, size_t size);
/* prof.c and prof_dump.c: the sampling heap profiler (contracts there) */
#define AX_PROF_OURS 32  /* our frames come first: looked for among this many */
#define AX_PROF_DEPTH 64 /* frames kept per stack, the caller of malloc first */
typedef struct ax_prof_stack {
  unsigned n;
  bool memo;             /* from the heap's memo of its last walks (prof_unwind.c) */
  unsigned first, depth; /* the program's frames: pc[first .. first + depth) */
  uint64_t hash;         /* ... hashed (axi_prof_stack_key: every walk sets these) */
  uintptr_t pc[AX_PROF_OURS + AX_PROF_DEPTH]; /* return addresses, ours first */
} ax_prof_stack_t;
/* How stacks are walked: AXMALLOC_PROF_UNWIND=libgcc|check (default: the table) */
enum { AX_UNWIND_TABLE, AX_UNWIND_LIBGCC, AX_UNWIND_CHECK };
AXI_HIDDEN extern uint8_t axi_prof_unwind_mode;
/* prof_unwind.c: the return addresses from the caller's frame outwards, by the unwind tables'
 * rules kept per return address, or from the heap's memo of its last walks; st->n = 0 when
 * libgcc must walk this stack */
AXI_HIDDEN void axi_prof_unwind(ax_heap_t *heap, ax_prof_stack_t *st);
AXI_HIDDEN void axi_prof_unwind_fork_child(void);
/* prof.c: libgcc's walk, where axi_prof_unwind could not (st->n == 0), or beside it (check) */
AXI_HIDDEN void axi_prof_walk_libgcc(ax_prof_stack_t *st);
/* prof.c: is ret a return address into the allocator's entry points (section axmalloc_api)? */
AXI_HIDDEN bool axi_prof_in_api(uintptr_t ret);
/* prof.c: sets st's program frames and their hash */
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
AXI_HIDDEN void axi_prof_init(void);
AXI_HIDDEN uint64_t axi_prof_rate(void);
AXI_HIDDEN const char *axi_prof_prefix(void);
AXI_HIDDEN void *axi_prof_sampled(ax_heap_t *heap, size_t size, bool zero,
                                  const ax_prof_stack_t *st);
AXI_HIDDEN void axi_prof_huge(void *p, size_t size);
AXI_HIDDEN void axi_prof_release(ax_segment_t *seg);
AXI_HIDDEN void axi_prof_slot_free(const char *fn, ax_segment_t *seg, void *p);
AXI_HIDDEN size_t axi_prof_slot_size(const char *fn, ax_segment_t *seg, const void *p);
AXI_HIDDEN void axi_prof_fork_child(void);
AXI_HIDDEN void axi_prof_trim(void);
/* page.c's profiling grants: the fast path's lists cut to what may go before a sample. The
 * classes the direct table serves (sizes up to AX_DIRECT_MAX) have grants. */
static inline bool axi_class_direct(unsigned c) { return c <= axi_class_of(AX_DIRECT_MAX); }
AXI_HIDDEN void axi_page_prof_settle_walk(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void axi_page_prof_grant(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void *axi_page_prof_malloc(ax_heap_t *heap, size_t size, bool zero);
/* Close class c's grant: the blocks the fast path took from it count against left. With the
 * list used up (the usual way back to the slow path), it took them all: no walk. */
static inline void axi_page_prof_settle(ax_heap_t *heap, unsigned c) {
  ax_page_t *page = heap->prof.grant_page[c];
  if (!page)
    return;
  if (page->free)
    return axi_page_prof_settle_walk(heap, c);
  uint64_t left = heap->prof.left[c], taken = heap->prof.granted[c];
  heap->prof.left[c] = left > taken ? left - taken : 0;
  heap->prof.grant_page[c] = NULL;
}
AXI_HIDDEN bool axi_prof_take_slow(ax_heap_t *heap, unsigned c);
/* malloc's slow path, for a block of class c: settles what the fast path handed out of the
 * class since the slow path last came by, counts this allocation, and tells whether it is
 * the sampled one. pre: c's size <= AX_LARGE_MAX; heap is the thread's own, not busy.
 * post: true: sample it (axi_prof_sampled); false: allocate as usual, then (a direct class)
 * axi_page_prof_grant. */
static inline bool axi_prof_take(ax_heap_t *heap, unsigned c) {
  ax_prof_heap_t *ph = &heap->prof;
  if (ax_unlikely(!ph->started))
    return axi_prof_take_slow(heap, c);
  axi_page_prof_settle(heap, c);
  if (ax_likely(ph->left[c] != 0)) {
    ph->left[c]--;
    return false;
  }
  return axi_prof_take_slow(heap, c);
}
AXI_HIDDEN void axi_page_prof_settle_all(ax_heap_t *heap);
AXI_HIDDEN void axi_page_prof_grant_all(ax_heap_t *heap);
/* init.c: a decimal environment variable (dflt when unset or empty), without allocating */
AXI_HIDDEN uint64_t axi_env_u64(const char *name, uint64_t dflt);
/* remote.c */
AXI_HIDDEN void axi_remote_free(ax_block_t *b, ax_page_t *page, ax_segment_t *seg);
AXI_HIDDEN void axi_remote_push(ax_page_t *page, ax_segment_t *seg, uint32_t n, ax_block_t *head,
                                ax_block_t *tail);
AXI_HIDDEN void axi_remote_flush(ax_heap_t *heap, bool forget);
AXI_HIDDEN void axi_remote_age(ax_heap_t *heap);
AXI_HIDDEN void axi_remote_orphan(ax_heap_t *heap);

/* heap.c */
AXI_HIDDEN ax_heap_t *axi_heap_init_thread(void);
AXI_HIDDEN bool axi_heap_thread_exited(void);
AXI_HIDDEN bool axi_heap_release(ax_heap_t *heap);
AXI_HIDDEN void axi_heap_trim(ax_heap_t *heap);
AXI_HIDDEN void *axi_heap_page_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN ax_page_t *axi_heap_page_with_free(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void *axi_heap_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_heap_foreach(void (*fn)(ax_heap_t *, void *), void *arg);

/* huge.c */
AXI_HIDDEN bool axi_huge_possible(size_t size, size_t align);
AXI_HIDDEN void axi_huge_pack_tight(void);
AXI_HIDDEN void *axi_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_huge_free(ax_segment_t *seg);
AXI_HIDDEN ax_segment_t *axi_huge_aligned_header(const void *p);
/* The header of a huge block that axi_huge_alloc or axi_huge_realloc returned: the segment
 * it is in, or the one before when it starts a segment (aligned to a segment or more). */
static inline ax_segment_t *axi_huge_segment_of(const void *p) {
  uintptr_t seg = (uintptr_t)axi_segment_of(p);
  return (ax_segment_t *)(seg == (uintptr_t)p ? seg - AX_SEGMENT_SIZE : seg);
}
AXI_HIDDEN void *axi_huge_realloc(ax_segment_t *seg, void *p, size_t size);
AXI_HIDDEN void axi_huge_cache_trim(enum ax_trim mode);
AXI_HIDDEN void axi_huge_fork_prepare(void);
AXI_HIDDEN void axi_huge_fork_release(void);

/* check.c: checked mode (contracts there) */
AXI_HIDDEN void *axi_check_malloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_check_free(const char *fn, ax_segment_t *seg, ax_page_t *page, void *p);
AXI_HIDDEN void *axi_check_realloc(ax_segment_t *seg, ax_page_t *page, void *p, size_t size);
AXI_HIDDEN size_t axi_check_usable(ax_segment_t *seg, ax_page_t *page, const void *p);
AXI_HIDDEN void axi_check_carve(ax_page_t *page, ax_block_t *first, uint32_t n);

/* A page's fast_cap for `capacity` carved blocks (see ax_page_t): checked mode stores 0,
 * which fails every block-start test of the fast paths, so that every free and realloc
 * leaves them for check.c: the default mode pays nothing for the switch. */
static inline void axi_page_set_capacity(ax_page_t *page, uint32_t capacity) {
  page->capacity = capacity;
  ax_atomic_store_relaxed(&page->fast_cap, axi_slow_only() ? 0 : capacity);
}
/* pre: block_size > 0. Sets div_inv and div_shift for axi_is_block. */
static inline void axi_page_set_divisor(ax_page_t *page, uint32_t block_size) {
  unsigned s = (unsigned)__builtin_ctz(block_size);
  uint64_t odd = block_size >> s, inv = odd; /* Newton: each step doubles the good bits */
  for (int i = 0; i < 5; i++)
    inv *= 2 - odd * inv;
  page->div_inv = inv;
  page->div_shift = (uint8_t)s;
}

/* stats.c: process-wide counters, touched only on slow paths */
typedef struct ax_global_stats {
  ax_atomic_word in_use, in_use_peak;
  ax_atomic_word os_reserved, os_reserved_peak, os_committed, os_committed_peak, os_purged;
  ax_atomic_word mmap_calls, munmap_calls, madvise_calls, mremap_calls;
  ax_atomic_word segments_live, segments_abandoned, segments_reclaimed;
  ax_atomic_word huge_cache_hits, heaps_live;
  ax_atomic_word huge_allocs;
  ax_atomic_word remote_frees, remote_publishes;
  ax_atomic_word class_mallocs[AX_CLASSES];
} ax_global_stats_t;
AXI_HIDDEN extern ax_global_stats_t axi_stats;
/* counter += delta, and peak follows it up (if given). Any thread, any time. */
static inline void axi_stat_add(ax_atomic_word *counter, ax_atomic_word *peak, intptr_t delta) {
  uintptr_t now = ax_atomic_fetch_add_relaxed(counter, (uintptr_t)delta) + (uintptr_t)delta;
  if (!peak)
    return;
  uintptr_t seen = ax_atomic_load_relaxed(peak);
  while ((intptr_t)now > (intptr_t)seen && !ax_atomic_cas_acq_rel(peak, &seen, now))
    ;
}
AXI_HIDDEN void axi_stats_merge_heap(ax_heap_t *heap);

/* A static link takes all of axmalloc or none of it: every object refers to alloc.o (which
 * defines malloc) and free.o, so a program linked with libc before libaxmalloc.a fails with a
 * duplicate malloc instead of mixing glibc's malloc with axmalloc's other objects (t_linkorder). */
__attribute__((used)) static void *(*const axi_pull_alloc)(size_t) = ax_malloc;
__attribute__((used)) static void (*const axi_pull_free)(void *) = ax_free; /* and free.o */

#endif
