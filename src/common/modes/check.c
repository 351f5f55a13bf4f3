/* SPDX-License-Identifier: MIT */
/* Checked mode: AXMALLOC_CHECK=1 at run time, or always with -DAX_CHECKED=ON.
 *
 * How it costs the default mode nothing: the fast paths are not touched. In checked mode
 * the heaps' direct tables only ever hold the empty page (page.c, direct_update), so every
 * malloc and calloc falls to malloc's slow path, which comes here first; and every page's
 * fast_cap is 0 (axi_page_set_capacity), so the block-start test of free, realloc and
 * malloc_usable_size fails for every pointer and they take their irregular branch, which
 * comes here too. Both branches exist anyway; the default mode runs exactly the instructions
 * it ran before (tests/t_budget).
 *
 * A block of class size bs handed out for n bytes (front = 32, or the alignment asked for):
 *
 *   [0, 8)              header: n, front and kind (malloc or new[]), xor a tag that mixes
 *                       the page's random key and the block's address
 *   [8, front)          front canary (its last 24 bytes, 32 after an alignment)
 *   [front, front + n)  the program's bytes: the pointer it gets is b + front
 *   [front + n, bs)     back canary, at least BACK bytes (its first 32 written and
 *                       checked): so an overflow or underflow of up to 32 bytes lands
 *                       in a canary of its own block, and is reported when it is freed
 *
 * A freed block goes to its thread's quarantine (a ring of recently freed blocks, bounded in
 * count and bytes) before its page may hand it out again, so a stale pointer does not reach
 * the next block of its size at once. On the way in its header becomes HELD and its bytes
 * are zeroed up to ZERO_MAX (freed memory reads as zero: nothing of it leaks into the next
 * block, and a calloc'ed block is mostly zero already); a block of a large class (over
 * 128 KiB) keeps only its first OS page, the rest is given back and made inaccessible until
 * it leaves (a write or read through the stale pointer faults there). On the way out (the
 * oldest leaves when the ring is full) the zeroes are checked: a write after free is
 * reported naming the block and the offset. Blocks on the free lists keep the zeroes, and
 * malloc checks the first WATCH_MALLOC bytes again when it hands one out.
 *
 * free checks, in this order: the header (a double free: HELD, or the link of a free list;
 * overwritten: an underflow), the front canary (an underflow), the back canary (an
 * overflow), the size a sized free names (free_sized, sized delete), and that delete[] frees
 * what new[] allocated and delete what it did not. Every message names the program's pointer.
 *
 * Huge blocks (a mapping each) keep n and the front in their segment header (huge_size),
 * a canary before the pointer and HUGE_CANARY bytes after it; a double free is caught while
 * the mapping is cached (afterwards the pointer is not ours any more: "invalid pointer").
 *
 * Frees from other threads are checked alike, wait in the freeing thread's quarantine, and
 * then go back in batches to their owners as in the default mode (remote.c).
 *
 * With AXMALLOC_PROF=1 (axi_check_stacks) every block keeps the stack that allocated it and,
 * while it is held, the one that freed it, in its side word (stacks/side.h, at the block's start:
 * the allocation's id in the low half, the free's in the high half); a report prints them
 * after the stack that found the error. Every function here on the way from an entry point
 * to a walk is in the entry points' section (AX_API), so that the stacks start at the
 * program's frames whichever calls the compiler made tail calls. Memory tagging is off
 * in checked mode (the pointer is not the block's start). Under AX_VALGRIND the registered block is
 * the program's n bytes; header, canaries and zeroes are opened to memcheck only while this file
 * reads or writes them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "modes/check.h"

#include "heap.h"
#include "huge.h"
#include "list.h"
#include "modes/stacks/stacks.h"
#include "options.h"
#include "os.h"
#include "page.h"
#include "pagemap.h"
#include "print.h"
#include "remote.h"
#include "segment.h"
#include "state.h"

#define FRONT ((size_t)32)        /* header and front canary before the program's bytes */
#define BACK ((size_t)32)         /* back canary, at least */
#define CANARY_FRONT ((size_t)24) /* canary bytes before the pointer (32 after an alignment) */
#define CANARY_BACK ((size_t)32)  /* canary bytes after the program's n */
#define CANARY_BYTE 0xcb
#define CANARY_WORD (0x0101010101010101u * CANARY_BYTE)
#define ZERO_ALL ((size_t)8192)   /* blocks up to this size are zeroed whole when freed, */
#define ZERO_MAX ((size_t)256)    /* larger ones this many bytes after the header */
#define WATCH_MALLOC ((size_t)40) /* bytes after the header checked zero when handed out */
#define WATCH_EVICT ((size_t)256) /* ... when it leaves the quarantine */
#define HELD (~(uint64_t)0)       /* the header of a block in a quarantine (xor its tag) */
#define HUGE_CANARY ((size_t)16)
#define KIND_ARRAY 1u         /* allocated by operator new[] */
#define QUARANTINE_SLOTS 128u /* blocks a thread holds back (a 1 KiB ring) */
#define QUARANTINE_BYTES ((size_t)1 << 20)

/* ---- bytes ------------------------------------------------------------------------------ */
/* Canaries and zeroes are written and checked on every malloc and free: 8-byte loads and
 * stores at any alignment, the checks or'ed together with one branch at the end; the byte
 * loops only find the offset for a report. */

static inline uint64_t ld(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static inline void st(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* The canaries of the block at c whose n bytes start at front: CANARY_FRONT bytes before the
 * pointer (the header precedes them), CANARY_BACK after its n bytes (every class chosen has
 * room for them). */
static inline void put_canaries(unsigned char *c, size_t front, size_t n) {
  unsigned char *p = c + front, *e = p + n;
  st(p - 24, CANARY_WORD);
  st(p - 16, CANARY_WORD);
  st(p - 8, CANARY_WORD);
  if (front > FRONT)
    st(p - 32, CANARY_WORD);
  st(e, CANARY_WORD);
  st(e + 8, CANARY_WORD);
  st(e + 16, CANARY_WORD);
  st(e + 24, CANARY_WORD);
}
static inline bool canaries_ok(const unsigned char *c, size_t front, size_t n) {
  const unsigned char *p = c + front, *e = p + n;
  uint64_t x = (ld(p - 24) ^ CANARY_WORD) | (ld(p - 16) ^ CANARY_WORD) | (ld(p - 8) ^ CANARY_WORD) |
               (front > FRONT ? ld(p - 32) ^ CANARY_WORD : 0);
  x |= (ld(e) ^ CANARY_WORD) | (ld(e + 8) ^ CANARY_WORD) | (ld(e + 16) ^ CANARY_WORD) |
       (ld(e + 24) ^ CANARY_WORD);
  return x == 0;
}

/* [8, to) of c zeroed (to - 8 a multiple of 8): word stores, memset for long runs. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static inline void
zero_from_8(unsigned char *c, size_t to) {
  if (to > 8 + 256) {
    memset(c + 8, 0, to - 8);
    return;
  }
  for (size_t i = 8; i < to; i += 8)
    st(c + i, 0);
}
/* Whether [8, to) of c is zero (to - 8 a multiple of 8). */
static inline bool zero_from_8_ok(const unsigned char *c, size_t to) {
  uint64_t x = 0;
  for (size_t i = 8; i < to; i += 8)
    x |= ld(c + i);
  return x == 0;
}

/* post: offset of the first byte in [from, to) of p that is not `byte`; `to` if none. */
static size_t find_not(const unsigned char *p, size_t from, size_t to, unsigned char byte) {
  size_t i = from;
  while (i < to && p[i] == byte)
    i++;
  return i;
}

/* Set [from, to) of p to byte (huge blocks' canaries). */
static void fill(unsigned char *p, size_t from, size_t to, unsigned char byte) {
  memset(p + from, byte, to - from);
}

static inline size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Where the zeroes a freed block of bs bytes gets end (ZERO_ALL, ZERO_MAX). */
static inline size_t zeroed_end(size_t bs) { return bs <= ZERO_ALL ? bs : 8 + ZERO_MAX; }

/* ---- stacks, and the end of every report ------------------------------------------------ */

static inline void stacks_alloc(uintptr_t b) {
  if (ax_unlikely(axi_check_stacks))
    axi_side_set(b, axi_stack_here());
}
/* (A free inside libgcc's registry of unwind tables, which holds the lock a lookup takes, is
 * walked up to its frame there only: stacks/unwind.c, in_registry. A static program's exit
 * frees its sorted tables that way, in __do_global_dtors_aux.) */
static inline void stacks_free(uintptr_t b) {
  if (ax_unlikely(axi_check_stacks))
    axi_side_set(b, (uint64_t)axi_stack_here() << 32 | (uint32_t)axi_side_get(b));
}
static inline void stacks_clear(uintptr_t b) {
  if (ax_unlikely(axi_check_stacks))
    axi_side_set(b, 0);
}

/* A report's end, its first line written: where the error was found and, for the block at b
 * (0: none), the stacks that allocated and freed it, when kept; then abort. */
static AX_API __attribute__((noreturn, noinline)) void die(uintptr_t b) {
  if (axi_check_stacks) {
    uint64_t v = b ? axi_side_get(b) : 0;
    axi_stack_print("found at", axi_stack_here());
    if ((uint32_t)v)
      axi_stack_print("allocated at", (uint32_t)v);
    if (v >> 32)
      axi_stack_print("freed at", (uint32_t)(v >> 32));
  }
  abort();
}
static AX_API __attribute__((noreturn, noinline)) void invalid(const char *fn, const void *p) {
  axi_say_invalid_free(fn, p);
  die(0);
}

/* ---- headers ----------------------------------------------------------------------------- */

static uint64_t tag(const ax_page_t *page, const void *b) {
  return page->key ^ ((uintptr_t)b * 0x9e3779b97f4a7c15u);
}

static uint64_t header(const ax_page_t *page, const void *b, size_t n, size_t front,
                       unsigned kind) {
  return tag(page, b) ^ ((uint64_t)n << 12 | (uint64_t)__builtin_ctzl(front) << 4 | kind);
}

typedef struct live {
  size_t n, front;
  unsigned kind;
} live_t;

/* The header of b decoded, for a block of bs bytes; false when it is no live block's (every
 * live block has front + n + BACK <= bs). */
static bool decode(const ax_page_t *page, const ax_block_t *b, size_t bs, live_t *out) {
  uint64_t v = b->next_enc ^ tag(page, b);
  unsigned lg = (unsigned)(v >> 4) & 63;
  if ((v & 0xc) || lg < 5 || lg > 30)
    return false;
  out->kind = (unsigned)v & 3;
  out->front = (size_t)1 << lg;
  out->n = (size_t)(v >> 12);
  return out->front + BACK <= bs && out->n <= bs - out->front - BACK;
}

/* The header of a block in a quarantine. */
static bool is_held(const ax_page_t *page, const ax_block_t *b) {
  return b->next_enc == (HELD ^ tag(page, b));
}

/* ---- live blocks of pages ------------------------------------------------------------------ */

/* The block p falls in, found by its front: b = p - 32, else (an aligned block) the block
 * containing p. NULL: no carved block there. */
static ax_block_t *block_of(const ax_page_t *page, const void *p) {
  uintptr_t b = (uintptr_t)p - FRONT;
  if (axi_block_index(page, (void *)b) < page->capacity)
    return (ax_block_t *)b;
  if ((uintptr_t)p < page->area)
    return NULL;
  uintptr_t i = ((uintptr_t)p - page->area) / page->block_size;
  return i < page->capacity ? (ax_block_t *)(page->area + i * page->block_size) : NULL;
}

/* Mark b live for n bytes at b + front: header, canaries on either side. */
static inline void make_live(const ax_page_t *page, ax_block_t *b, size_t n, size_t front,
                             unsigned kind) {
  b->next_enc = header(page, b, n, front, kind);
  put_canaries((unsigned char *)b, front, n);
}

/* A block whose header decodes to nothing: freed already (HELD: in a quarantine; a link: on
 * its page's lists or in a batch of remote frees), its header overwritten by an underflow, or
 * p is no block's pointer. */
static AX_API __attribute__((noreturn)) void bad_header(const char *fn, ax_page_t *page,
                                                        ax_block_t *b, const void *p) {
  if (is_held(page, b) || axi_looks_free(page, b)) { /* (a link: on a list, or in transit) */
    axi_say_double_free(fn, p);
    die((uintptr_t)b);
  }
  size_t front = (uintptr_t)p - (uintptr_t)b;
  if (front >= FRONT && !(front & (front - 1))) {
    axi_write("axmalloc: heap buffer underflow before block %p (its header at offset %d was "
              "overwritten)\n",
              p, -(int)front);
    die((uintptr_t)b);
  }
  invalid(fn, p);
}

/* A canary of the block at c (n bytes at front) was written: which one, where. */
static AX_API __attribute__((noreturn, noinline)) void
bad_canary(const unsigned char *c, size_t front, size_t n, const void *p) {
  size_t from = front - (front > FRONT ? 32 : CANARY_FRONT);
  if (find_not(c, from, front, CANARY_BYTE) != front)
    axi_write("axmalloc: heap buffer underflow before block %p (size %zu, written at offset %d)\n",
              p, n, (int)find_not(c, from, front, CANARY_BYTE) - (int)front);
  else
    axi_write("axmalloc: heap buffer overflow after block %p (size %zu)\n", p, n);
  die((uintptr_t)c);
}

/* pre: page in use, p inside it. post: the live block p names, checked (header, canaries),
 * described in *out; aborts naming p otherwise. Memcheck sees all of it opened but the
 * program's bytes. */
static AX_API ax_block_t *live_block(const char *fn, ax_page_t *page, const void *p, live_t *out) {
  ax_block_t *b = block_of(page, p);
  if (!b)
    invalid(fn, p);
  size_t bs = page->block_size;
  AX_TRACK_DEFINED(b, sizeof *b);
  if (!decode(page, b, bs, out) || (uintptr_t)b + out->front != (uintptr_t)p)
    bad_header(fn, page, b, p);
  const unsigned char *c = (const unsigned char *)b;
  AX_TRACK_DEFINED(b, out->front);
  AX_TRACK_DEFINED(c + out->front + out->n, bs - out->front - out->n);
  if (ax_unlikely(!canaries_ok(c, out->front, out->n)))
    bad_canary(c, out->front, out->n, p);
  return b;
}

static AX_API __attribute__((noreturn, noinline)) void written_after_free(const unsigned char *c,
                                                                          size_t to, size_t front) {
  size_t at = find_not(c, 8, to, 0);
  axi_write("axmalloc: use after free: block %p was written after free (at offset %d)\n",
            (void *)(c + front), at == to ? -(int)front : (int)at - (int)front);
  die((uintptr_t)c);
}

/* A write after free shows as a byte that is not zero in [8, to) of a free block b, or, when
 * it is held, a header that is not HELD. The message names the block as the program knew it
 * (b + front; on a free list the front is not known any more: b + 32). */
static inline void watch(const ax_page_t *page, const ax_block_t *b, size_t to, bool held,
                         size_t front) {
  const unsigned char *c = (const unsigned char *)b;
  if (ax_likely(zero_from_8_ok(c, to) && (!held || is_held(page, b))))
    return;
  written_after_free(c, to, front);
}

/* ---- the quarantine ---------------------------------------------------------------------- */

/* Bytes of a large block that stay open while it is held: the OS page of its header. */
static uintptr_t held_open_end(const ax_block_t *b) {
  return ((uintptr_t)b + axi_os_page) & ~(axi_os_page - 1);
}
static bool large(const ax_page_t *page) { return page->block_size > AX_MEDIUM_MAX; }

/* The block goes back to its page, as the default mode's free would put it. */
static AX_API void release(ax_page_t *page, ax_block_t *b) {
  stacks_clear((uintptr_t)b);
  uintptr_t owner = ax_atomic_load_relaxed(&page->xowner);
  if ((owner & ~AX_OWNER_FLAGS) == ax_arch_thread_id()) {
    axi_set_link(page, b, page->local_free);
    page->local_free = b;
    if (--page->used == 0 || (owner & AX_OWNER_FULL))
      axi_free_slow(b, page);
    return;
  }
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = 0; /* (as a live block's first word: the batch's double-free filter) */
  AX_TRACK_NOACCESS(b, sizeof *b);
  axi_remote_free(b, page, axi_segment_of(page)); /* batched to its owner, as by default */
}

/* A ring slot: the block, and its front's log2 less 5 in the low bits (blocks are 16-byte
 * aligned, fronts 32 B .. 64 KiB). */
static uintptr_t slot_of(const ax_block_t *b, size_t front) {
  return (uintptr_t)b | (uintptr_t)(__builtin_ctzl(front) - 5);
}
static ax_block_t *slot_block(uintptr_t s) { return (ax_block_t *)(s & ~(uintptr_t)15); }
static size_t slot_front(uintptr_t s) { return (size_t)FRONT << (s & 15); }

/* The oldest block of heap's quarantine leaves it: checked, then back to its page. */
static AX_API void evict(ax_heap_t *heap) {
  uintptr_t s = (uintptr_t)heap->quarantine[heap->q_head];
  ax_block_t *b = slot_block(s);
  heap->q_head = (heap->q_head + 1) % QUARANTINE_SLOTS;
  heap->q_count--;
  ax_page_t *page = axi_pagemap_get(b);
  size_t bs = page->block_size;
  heap->q_bytes -= bs;
  AX_TRACK_DEFINED(b, bs);
  if (large(page)) {
    uintptr_t lo = held_open_end(b), hi = ((uintptr_t)b + bs) & ~(axi_os_page - 1);
    if (hi > lo && !axi_os_protect((void *)lo, hi - lo, true))
      axi_fatal("axmalloc: checked mode: mprotect failed on a block leaving the quarantine\n");
    watch(page, b, lo - (uintptr_t)b, true, slot_front(s));
  } else {
    watch(page, b, min_size(bs, 8 + WATCH_EVICT), true, slot_front(s));
  }
  AX_TRACK_NOACCESS(b, bs);
  release(page, b);
}

/* Whether heap (NULL: none) can hold a block: its ring is mapped at its first. */
static bool can_hold(ax_heap_t *heap) {
  return heap && (heap->quarantine ||
                  (heap->quarantine = axi_os_map(QUARANTINE_SLOTS * sizeof *heap->quarantine)));
}

/* b (freed, zeroed, HELD) waits in heap's quarantine; the oldest leave for room.
 * pre: can_hold(heap). */
static AX_API void hold(ax_heap_t *heap, ax_page_t *page, ax_block_t *b, size_t front) {
  size_t bs = page->block_size;
  while (heap->q_count &&
         (heap->q_count == QUARANTINE_SLOTS || heap->q_bytes + bs > QUARANTINE_BYTES))
    evict(heap);
  heap->quarantine[(heap->q_head + heap->q_count) % QUARANTINE_SLOTS] =
      (ax_block_t *)slot_of(b, front);
  heap->q_count++;
  heap->q_bytes += bs;
}

/* Every block of heap's quarantine back to its page (thread exit, trim, a refused mapping).
 * pre: heap is the calling thread's. */
AX_API void axi_check_flush(ax_heap_t *heap) {
  while (heap->q_count)
    evict(heap);
}

/* The blocks heap's quarantine holds of its own pages leave class_live (ax_stats_get): the
 * program freed them. pre: heap is the calling thread's. */
void axi_check_uncount(const ax_heap_t *heap, uint64_t *class_live) {
  for (uint32_t k = 0; k < heap->q_count; k++) {
    ax_block_t *b = slot_block((uintptr_t)heap->quarantine[(heap->q_head + k) % QUARANTINE_SLOTS]);
    ax_page_t *page = axi_pagemap_get(b);
    if ((ax_atomic_load_relaxed(&page->xowner) & ~AX_OWNER_FLAGS) == heap->tid)
      class_live[page->cls]--;
  }
}

/* A fork child's handler, for a heap whose thread does not exist in the child: its held
 * blocks back on their pages' local_free, without the queue bookkeeping (as its cache's,
 * cache.c), before its segments are abandoned. */
void axi_check_orphan(ax_heap_t *heap) {
  for (; heap->q_count; heap->q_count--) {
    ax_block_t *b = slot_block((uintptr_t)heap->quarantine[heap->q_head]);
    heap->q_head = (heap->q_head + 1) % QUARANTINE_SLOTS;
    ax_page_t *page = axi_pagemap_get(b);
    if (large(page)) {
      uintptr_t lo = held_open_end(b), hi = ((uintptr_t)b + page->block_size) & ~(axi_os_page - 1);
      if (hi > lo)
        axi_os_protect((void *)lo, hi - lo, true);
    }
    stacks_clear((uintptr_t)b);
    axi_page_return(b);
  }
  heap->q_bytes = 0;
}

/* b, just checked and no longer live (its front given): zeroed, HELD, into heap's quarantine
 * (the calling thread's; NULL in its last destructors, or no ring to be had: back to its page
 * at once). */
static AX_API void retire(ax_heap_t *heap, ax_page_t *page, ax_block_t *b, size_t front) {
  if (!can_hold(heap))
    heap = NULL;
  if (heap) /* (not held: no stack kept) */
    stacks_free((uintptr_t)b);
  size_t bs = page->block_size;
  unsigned char *c = (unsigned char *)b;
  AX_TRACK_UNDEFINED(b, bs);
  if (large(page)) {
    uintptr_t lo = held_open_end(b), hi = ((uintptr_t)b + bs) & ~(axi_os_page - 1);
    memset(c + 8, 0, lo - (uintptr_t)b - 8);
    if (hi > lo && heap) {               /* (not held: back to its page as it is) */
      axi_os_purge((void *)lo, hi - lo); /* reads as zero when it comes back */
      axi_os_protect((void *)lo, hi - lo, false);
    }
  } else {
    zero_from_8(c, zeroed_end(bs));
  }
  b->next_enc = HELD ^ tag(page, b);
  AX_TRACK_NOACCESS(b, bs);
  if (!heap)
    return release(page, b);
  hold(heap, page, b, front);
}

/* Blocks just carved onto page->free: zeroed but for their links where the memory was used
 * before (a free block of checked mode reads as zero, see above). pre: checked mode. */
void axi_check_carve(ax_page_t *page, ax_block_t *first, uint32_t n) {
  if (page->is_zero)
    return;
  size_t bs = page->block_size, z = zeroed_end(bs);
  for (uint32_t i = 0; i < n; i++) {
    unsigned char *c = (unsigned char *)first + (size_t)i * bs;
    AX_TRACK_UNDEFINED(c + 8, z - 8);
    memset(c + 8, 0, z - 8);
    AX_TRACK_NOACCESS(c + 8, z - 8);
  }
}

/* ---- huge blocks ------------------------------------------------------------------------ */
/* huge_size holds n and, in its top byte, 1 + log2 of the front (0: none); the pointer is
 * area + front. An alignment of half a segment or more gets no front: the pointer must stay
 * in the segment whose slot names the header (huge.c). */

static size_t huge_front_for(size_t align) {
  return align <= FRONT ? FRONT : align < AX_SEGMENT_SIZE / 2 ? align : 0;
}
static size_t huge_front(const ax_segment_t *seg) {
  unsigned lg = (unsigned)(seg->huge_size >> 56);
  return lg ? (size_t)1 << (lg - 1) : 0;
}
static size_t huge_n(const ax_segment_t *seg) {
  return (size_t)(seg->huge_size & (((uint64_t)1 << 56) - 1));
}

/* pre: the block's first `defined` bytes are the program's (zeroed by calloc, kept by realloc):
 * memcheck is told so. */
static void *huge_live(ax_segment_t *seg, size_t n, size_t front, size_t defined) {
  unsigned char *q = (unsigned char *)seg->pages[0].area, *p = q + front;
  seg->huge_size = (uint64_t)n | (uint64_t)(front ? __builtin_ctzl(front) + 1 : 0) << 56;
  AX_TRACK_FREE(q); /* (memcheck: the program's n bytes at p are the block) */
  AX_TRACK_UNDEFINED(q, front + n + HUGE_CANARY);
  fill(q, front > 32 ? front - 32 : 0, front, CANARY_BYTE);
  fill(p, n, n + HUGE_CANARY, CANARY_BYTE);
  AX_TRACK_NOACCESS(q, front);
  AX_TRACK_NOACCESS(p + n, HUGE_CANARY);
  AX_TRACK_MALLOC(p, n, 0);
  AX_TRACK_DEFINED(p, defined < n ? defined : n);
  (void)defined;
  return p;
}

/* post: the size of the live huge block p; aborts on a bad pointer, double free, overflow. */
static AX_API size_t huge_block(const char *fn, ax_segment_t *seg, const void *p) {
  ax_page_t *page = &seg->pages[0];
  const unsigned char *q = (const unsigned char *)page->area;
  if ((uintptr_t)p - page->area != huge_front(seg))
    invalid(fn, p);
  if (!page->in_use) {
    axi_say_double_free(fn, p);
    die(0);
  }
  size_t n = huge_n(seg), front = huge_front(seg);
  AX_TRACK_DEFINED(q, front);
  AX_TRACK_DEFINED(q + front + n, HUGE_CANARY);
  size_t from = front > 32 ? front - 32 : 0;
  if (find_not(q, from, front, CANARY_BYTE) != front) {
    axi_write("axmalloc: heap buffer underflow before block %p (size %zu, written at offset %d)\n",
              p, n, (int)find_not(q, from, front, CANARY_BYTE) - (int)front);
    die((uintptr_t)q);
  }
  if (find_not(q, front + n, front + n + HUGE_CANARY, CANARY_BYTE) != front + n + HUGE_CANARY) {
    axi_write("axmalloc: heap buffer overflow after block %p (size %zu)\n", p, n);
    die((uintptr_t)q);
  }
  AX_TRACK_NOACCESS(q, front);
  AX_TRACK_NOACCESS(q + front + n, HUGE_CANARY);
  return n;
}

static void huge_free(ax_segment_t *seg, void *p) {
  stacks_clear(seg->pages[0].area);
  AX_TRACK_FREE(p);
  AX_TRACK_MALLOC((void *)seg->pages[0].area, 0, 0); /* (huge.c frees the area's) */
  axi_huge_free(seg);
}

/* ---- malloc, free, realloc, usable size ------------------------------------------------ */

/* The class for `need` bytes aligned to align (a power of two), or 0: take a huge block. */
static inline unsigned class_for(size_t need, size_t align) {
  if (need > AX_LARGE_MAX)
    return 0;
  if (align <= 16)
    return axi_class_of(need);
  size_t want = align <= 16 ? need : (need + align - 1) & ~(align - 1);
  for (unsigned c = axi_class_of(want); want <= AX_LARGE_MAX && c < AX_CLASSES; c++) {
    size_t sz = axi_class_size(c), page_align = sz <= AX_SMALL_MAX ? AX_SMALL_META : AX_OTHER_META;
    if (align > page_align || sz >= 2 * want)
      return 0;
    if (sz % align == 0)
      return c;
  }
  return 0;
}

/* pre: heap is the calling thread's (initialised); align a power of two; kind 0, or
 * KIND_ARRAY (operator new[]). post: a checked block of n bytes (zeroed if zero), or NULL
 * with errno = ENOMEM. */
static AX_API void *check_malloc(ax_heap_t *heap, size_t n, size_t align, bool zero,
                                 unsigned kind) {
  if (n > PTRDIFF_MAX - AX_SEGMENT_SIZE) {
    errno = ENOMEM;
    return NULL;
  }
  size_t front = align <= FRONT ? FRONT : align;
  unsigned c = class_for(front + n + BACK, align);
  if (c == 0) {
    front = huge_front_for(align);
    void *q = axi_heap_huge_alloc(heap, front + n + HUGE_CANARY, align, zero);
    if (!q) {
      axi_check_flush(heap);
      q = axi_heap_huge_alloc(heap, front + n + HUGE_CANARY, align, zero);
    }
    if (!q)
      return NULL;
    stacks_alloc((uintptr_t)q);
    return huge_live(axi_huge_segment_of(q), n, front, zero ? n : 0);
  }
  ax_page_t *page = heap->queue[c].first;
  if (!page || !page->free)
    page = axi_heap_page_with_free(heap, c);
  if (!page && heap->q_count) { /* what the quarantine holds may make room */
    axi_check_flush(heap);
    page = axi_heap_page_with_free(heap, c);
  }
  if (!page) {
    errno = ENOMEM;
    return NULL;
  }
  ax_block_t *b = page->free, *next = axi_link(page, b);
  if (next && axi_block_index(page, next) >= page->capacity)
    axi_corrupted_list(page, b); /* reported, never followed */
  axi_page_pop(page);
  size_t bs = page->block_size;
  AX_TRACK_DEFINED(b, bs);
  watch(page, b, min_size(bs, 8 + WATCH_MALLOC), false, FRONT);
  make_live(page, b, n, front, kind);
  stacks_alloc((uintptr_t)b);
  AX_TRACK_NOACCESS(b, bs);
  void *p = (char *)b + front;
  AX_TRACK_MALLOC(p, n, zero);
  if (zero)
    memset(p, 0, n);
  return p;
}

AX_API void *axi_check_malloc(ax_heap_t *heap, size_t n, size_t align, bool zero) {
  return check_malloc(heap, n, align, zero, 0);
}

/* operator new[]'s block: delete[] must free it, delete must not. pre: as axi_check_malloc. */
AX_API void *axi_check_new_array(ax_heap_t *heap, size_t n) {
  return check_malloc(heap, n, 16, false, KIND_ARRAY);
}

/* A sized free (how) of a block of n bytes asked for: the very size (sized delete), or one
 * that fits (free_sized); delete[] of new[]'s blocks only, delete of none of them. */
static AX_API void check_dealloc(const char *fn, uintptr_t b, const void *p, size_t n,
                                 unsigned kind, size_t size, enum ax_sized how,
                                 enum ax_dealloc by) {
  if (how == AX_SIZED_EXACT ? size != n : how == AX_SIZED_FITS && size > n) {
    axi_say_bad_size(fn, p, size, n);
    die(b);
  }
  if ((by == AX_DEALLOC_DELETE_ARRAY && kind != KIND_ARRAY) ||
      (by == AX_DEALLOC_DELETE && kind == KIND_ARRAY)) {
    axi_write("axmalloc: %s(): mismatched deallocation of %p (allocated by %s)\n", fn, p,
              kind == KIND_ARRAY ? "operator new[]" : "malloc or operator new");
    die(b);
  }
}

/* pre: seg validated; page = the descriptor p falls in; size, how and by the free's (enum
 * ax_sized, enum ax_dealloc); heap the calling thread's (NULL: none, the block is not held).
 * Frees p or aborts. */
AX_API void axi_check_free(ax_heap_t *heap, const char *fn, ax_segment_t *seg, ax_page_t *page,
                           void *p, size_t size, enum ax_sized how, enum ax_dealloc by) {
  if (seg->kind == AX_KIND_HUGE) {
    check_dealloc(fn, seg->pages[0].area, p, huge_block(fn, seg, p), 0, size, how, AX_DEALLOC_FREE);
    huge_free(seg, p);
    return;
  }
  axi_page_validate(seg, page);
  if (!page->in_use || page->block_size == 0)
    invalid(fn, p);
  live_t lv;
  ax_block_t *b = live_block(fn, page, p, &lv);
  check_dealloc(fn, (uintptr_t)b, p, lv.n, lv.kind, size, how, by);
  AX_TRACK_FREE(p);
  retire(heap, page, b, lv.front);
}

/* pre: seg validated; page = the descriptor p falls in; heap the caller's.
 * post: the block resized (maybe moved), or NULL with errno = ENOMEM and p untouched. */
AX_API void *axi_check_realloc(ax_heap_t *heap, const ax_ptr_t *x, void *p, size_t n) {
  ax_segment_t *seg = x->seg;
  ax_page_t *page = x->page;
  bool huge = seg->kind == AX_KIND_HUGE;
  live_t lv = {0, FRONT, 0};
  ax_block_t *b = NULL;
  if (huge) {
    lv.n = huge_block("realloc", seg, p);
    lv.front = huge_front(seg);
  } else {
    axi_page_validate(seg, page);
    if (!page->in_use || page->block_size == 0)
      invalid("realloc", p);
    b = live_block("realloc", page, p, &lv);
    AX_TRACK_NOACCESS(b, lv.front);
    AX_TRACK_NOACCESS((char *)p + lv.n, page->block_size - lv.front - lv.n);
  }
  if (n > PTRDIFF_MAX - AX_SEGMENT_SIZE) {
    errno = ENOMEM;
    return NULL;
  }
  if (huge && lv.front + n + HUGE_CANARY > AX_LARGE_MAX) {
    void *area = (void *)seg->pages[0].area;
    AX_TRACK_FREE(p);
    AX_TRACK_MALLOC(area, seg->map_size - ((uintptr_t)area - (uintptr_t)seg), 0);
    void *q = axi_huge_realloc(seg, area, lv.front + n + HUGE_CANARY);
    if (q) {
      uint64_t v = axi_check_stacks ? axi_side_get((uintptr_t)area) : 0;
      stacks_clear((uintptr_t)area);
      if (v)
        axi_side_set((uintptr_t)q, v); /* (the block moved: its stacks follow) */
      return huge_live(axi_huge_segment_of(q), n, lv.front, lv.n);
    }
    AX_TRACK_FREE(area);
    AX_TRACK_MALLOC(p, lv.n, 0);
    AX_TRACK_DEFINED(p, lv.n);
  } else if (!huge && lv.front + n + BACK <= page->block_size &&
             lv.front + n + BACK >= page->block_size / 2) {
    AX_TRACK_RESIZE(p, lv.n, n);
    AX_TRACK_DEFINED(b, lv.front);
    AX_TRACK_UNDEFINED((char *)p + n, page->block_size - lv.front - n);
    make_live(page, b, n, lv.front, lv.kind);
    AX_TRACK_NOACCESS(b, lv.front);
    AX_TRACK_NOACCESS((char *)p + n, page->block_size - lv.front - n);
    return p;
  }
  if (ax_peek(&heap->rb.open)) /* as malloc's slow path does first (alloc.c) */
    axi_remote_age(heap);
  void *q = check_malloc(heap, n, 16, false, lv.kind);
  if (!q)
    return NULL;
  memcpy(q, p, min_size(lv.n, n));
  if (huge) {
    huge_free(seg, p);
  } else {
    AX_TRACK_FREE(p);
    retire(heap, page, b, lv.front);
  }
  return q;
}

/* malloc_usable_size of x, p as the program passed it: the size it asked for. */
AX_API size_t axi_check_usable(const ax_ptr_t *x, const void *p) {
  if (x->seg->kind == AX_KIND_HUGE)
    return huge_block("malloc_usable_size", x->seg, p);
  axi_page_validate(x->seg, x->page);
  if (!x->page->in_use || x->page->block_size == 0)
    invalid("malloc_usable_size", p);
  live_t lv;
  live_block("malloc_usable_size", x->page, p, &lv);
  AX_TRACK_NOACCESS((const char *)p - lv.front, lv.front);
  AX_TRACK_NOACCESS((char *)p + lv.n, x->page->block_size - lv.front - lv.n);
  return lv.n;
}

/* ---- init ---------------------------------------------------------------------------------- */

/* Checked mode's seam (page.c's carve) and, with AXMALLOC_PROF=1, its blocks' stacks
 * (axi_check_stacks): the stack depot and the side words, without the leak check at exit.
 * pre: process init, after checked mode and tagging are decided, before the leak checker's and
 * the profiler's (which checked mode rules out, or whose unwinder it uses). */
void axi_check_init(void) {
  if (!axi_checked)
    return;
  axi_seams.carve = axi_check_carve; /* (page.c) */
  if (!axi_option_num(AXI_OPTION_PROF))
    return;
  if (axi_stack_depot_map())
    axi_check_stacks = true;
  else
    axi_write("axmalloc: no memory for checked mode's allocation stacks: none kept\n");
}
