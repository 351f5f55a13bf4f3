/* SPDX-License-Identifier: MIT */
/* Checked mode: AXMALLOC_CHECK=1 at run time, or always with -DAX_CHECKED=ON.
 *
 * How it costs the default mode nothing: the fast paths are not touched. In checked mode
 * the heaps' direct tables only ever hold the empty page (page.c, direct_update), so
 * every malloc and calloc falls to axi_malloc_slow, which comes here; and every page's
 * fast_cap is 0 (axi_page_set_capacity), so the block-start test of free, free_sized, realloc
 * and malloc_usable_size fails for every pointer and they take their irregular branch,
 * which comes here too. Both branches exist anyway; the default mode runs exactly the
 * instructions it ran before (tests/t_budget), and the switch is read only on slow paths.
 *
 * A block of class size bs handed out for n bytes:
 *
 *   [0, n)        the program's bytes
 *   [n, bs - 8)   canary: CANARY_BYTE (at least 1 byte, checked over CANARY_MAX bytes)
 *   [bs - 8, bs)  trailer: n ^ tag(block), where tag mixes the page's random key and the
 *                 block's address, so a stray or stale value is unlikely to decode
 *
 * A free block:
 *
 *   [0, 8)        the free-list link (encoded with the page's key, as in the default mode)
 *   [8, bs - 8)   FREE_BYTE (filled and checked over FILL_MAX bytes)
 *   [bs - 8, bs)  FREED ^ tag(block)
 *
 * So malloc needs n + 9 bytes and takes the class of that (aligned requests: the first
 * class that is a multiple of the alignment, as in the default mode); malloc_usable_size
 * is n. On malloc the link is validated (it must lead to a block of the same page) and the
 * free pattern and trailer are checked: a write after free is reported with its offset.
 * Freshly carved blocks get the free pattern too (axi_check_carve), so every block on a
 * free list looks the same. On free and realloc the trailer says whether the block is
 * already free (every double free is caught while the block's page is in use, not only
 * while the block is on a list) and how long it is, and the canary is checked.
 *
 * Huge blocks (a mapping each) keep n in their segment header (huge_size) and a 16-byte
 * canary after it; a double free is caught while the mapping is cached (afterwards the
 * pointer is not ours any more: "invalid pointer"). Their memory is not pattern-filled
 * on free (it may be 256 MiB; cached mappings are handed back to the kernel anyway).
 *
 * Frees from other threads run the same checks and then go through axi_remote_free.
 * Under AX_VALGRIND the registered size is n; the canary, trailer and patterns are opened
 * to memcheck only while this file reads or writes them.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define TRAILER ((size_t)8)
#define EXTRA (TRAILER + 1) /* trailer and at least one canary byte */
#define CANARY_BYTE 0xcb
#define CANARY_MAX ((size_t)64) /* canary bytes written and checked after n */
#define FREE_BYTE 0xdf
#define FILL_MAX ((size_t)4096) /* free-pattern bytes written and checked per block */
#define FREED (~(uint64_t)0)    /* trailer value of a free block (before the tag) */
#define HUGE_CANARY ((size_t)16)

static uint64_t tag(const ax_page_t *page, const void *b) {
  return page->key ^ ((uintptr_t)b * 0x9e3779b97f4a7c15u);
}

static uint64_t *trailer(const ax_page_t *page, void *b) {
  return (uint64_t *)((char *)b + page->block_size - TRAILER);
}

/* The free pattern of a block: [8, end). */
static size_t fill_end(const ax_page_t *page) {
  size_t end = page->block_size - TRAILER;
  return end > 8 + FILL_MAX ? 8 + FILL_MAX : end;
}

/* post: offset of the first byte in [from, to) of p that is not `byte`; `to` if none. */
static size_t find_not(const unsigned char *p, size_t from, size_t to, unsigned char byte) {
  uint64_t word = 0x0101010101010101u * byte;
  size_t i = from;
  for (; i < to && (i & 7); i++)
    if (p[i] != byte)
      return i;
  for (; i + 8 <= to; i += 8) {
    uint64_t v;
    memcpy(&v, p + i, 8);
    if (v != word)
      break;
  }
  for (; i < to; i++)
    if (p[i] != byte)
      return i;
  return to;
}

/* Set [from, to) of p to byte. Short fills are plain stores: memset's `rep stosb` start-up
 * dominated checked free (73% of axi_check_free's samples on wl_binarytrees). */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void
fill(unsigned char *p, size_t from, size_t to, unsigned char byte) {
  if (to - from > 256) {
    memset(p + from, byte, to - from);
    return;
  }
  uint64_t word = 0x0101010101010101u * byte;
  size_t i = from;
  for (; i < to && (i & 7); i++)
    p[i] = byte;
  for (; i + 8 <= to; i += 8)
    memcpy(p + i, &word, 8);
  for (; i < to; i++)
    p[i] = byte;
}

/* ---- free blocks ---------------------------------------------------------------------- */

static void make_free(const ax_page_t *page, ax_block_t *b) {
  AX_TRACK_UNDEFINED((char *)b + 8, page->block_size - 8);
  fill((unsigned char *)b, 8, fill_end(page), FREE_BYTE);
  *trailer(page, b) = FREED ^ tag(page, b);
  AX_TRACK_NOACCESS((char *)b + 8, page->block_size - 8);
}

/* Blocks just carved onto page->free: make them look freed. pre: checked mode. */
void axi_check_carve(ax_page_t *page, ax_block_t *first, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    make_free(page, (ax_block_t *)((char *)first + (size_t)i * page->block_size));
}

/* A block just popped from a free list must be exactly as free() left it. */
static void check_unused(const ax_page_t *page, ax_block_t *b) {
  const unsigned char *c = (const unsigned char *)b;
  size_t end = fill_end(page), at = find_not(c, 8, end, FREE_BYTE);
  if (at == end && *trailer(page, b) == (FREED ^ tag(page, b))) {
    return;
  } else if (at == end) {
    uint64_t want = FREED ^ tag(page, b);
    const unsigned char *w = (const unsigned char *)&want;
    size_t t = page->block_size - TRAILER;
    at = SIZE_MAX;
    for (size_t i = 0; i < TRAILER && at == SIZE_MAX; i++)
      if (c[t + i] != w[i])
        at = t + i;
  }
  if (at != SIZE_MAX)
    axi_fatal("axmalloc: use after free: block %p was written after free (at offset %zu)\n",
              (void *)b, at);
}

/* ---- live blocks ---------------------------------------------------------------------- */

/* Mark b live for n bytes: canary after it, trailer at the end. */
static void make_live(const ax_page_t *page, void *b, size_t n) {
  size_t t = page->block_size - TRAILER, cend = n + CANARY_MAX < t ? n + CANARY_MAX : t;
  fill((unsigned char *)b, n, cend, CANARY_BYTE);
  *trailer(page, b) = n ^ tag(page, b);
}

/* post: the size the program asked for; aborts on a double free or an overflow, naming p
 * (the program's pointer: b with its memory tag, when tagging). */
static size_t live_size(const char *fn, const ax_page_t *page, void *b, const void *p) {
  AX_TRACK_DEFINED(trailer(page, b), TRAILER);
  uint64_t n = *trailer(page, b) ^ tag(page, b);
  size_t t = page->block_size - TRAILER;
  if (n == FREED)
    axi_double_free(fn, p);
  if (n > page->block_size - EXTRA)
    axi_fatal("axmalloc: heap buffer overflow after block %p (size unknown: its trailer at "
              "offset %zu was overwritten)\n",
              p, t);
  size_t cend = n + CANARY_MAX < t ? n + CANARY_MAX : t;
  AX_TRACK_DEFINED((char *)b + n, t - n);
  if (find_not((const unsigned char *)b, n, cend, CANARY_BYTE) != cend)
    axi_fatal("axmalloc: heap buffer overflow after block %p (size %zu)\n", p, (size_t)n);
  return n;
}

/* pre: seg validated, page = the descriptor of p. post: p is a live block of page and its
 * size is returned; aborts otherwise. Memcheck sees the block's tail opened afterwards.
 * p may carry a memory tag (mte.c: its block's granules are at tag 0 meanwhile): the block
 * is read untagged, and messages name p. */
static size_t small_block(const char *fn, ax_segment_t *seg, ax_page_t *page, void *p) {
  void *b = ax_arch_untag(p);
  axi_page_validate(seg, page);
  if (!page->in_use || page->block_size == 0 || axi_block_index(page, b) >= page->capacity)
    axi_invalid_free(fn, p);
  return live_size(fn, page, b, p);
}

/* Close what small_block opened to memcheck: the block's tail after its n bytes. */
static void track_live(const ax_page_t *page, void *p, size_t n) {
  AX_TRACK_NOACCESS((char *)p + n, page->block_size - n);
}

/* ---- huge blocks ---------------------------------------------------------------------- */

static inline size_t huge_usable(const ax_segment_t *seg, const void *p) {
  return seg->map_size - ((uintptr_t)p - (uintptr_t)seg);
}

static void huge_live(ax_segment_t *seg, void *p, size_t n) {
  seg->huge_size = n;
  AX_TRACK_UNDEFINED((char *)p + n, HUGE_CANARY);
  memset((char *)p + n, CANARY_BYTE, HUGE_CANARY);
  AX_TRACK_RESIZE(p, huge_usable(seg, p),
                  n); /* the canary and the rest of the mapping: no-access */
}

/* post: the size of the live huge block p; aborts on a bad pointer, double free, overflow. */
static size_t huge_block(const char *fn, ax_segment_t *seg, void *p) {
  ax_page_t *page = &seg->pages[0];
  if ((uintptr_t)p != page->area)
    axi_invalid_free(fn, p);
  if (!page->in_use)
    axi_double_free(fn, p);
  size_t n = seg->huge_size;
  AX_TRACK_DEFINED((char *)p + n, HUGE_CANARY);
  if (find_not((const unsigned char *)p, n, n + HUGE_CANARY, CANARY_BYTE) != n + HUGE_CANARY)
    axi_fatal("axmalloc: heap buffer overflow after block %p (size %zu)\n", p, n);
  AX_TRACK_NOACCESS((char *)p + n, HUGE_CANARY);
  return n;
}

static void *huge_malloc(ax_heap_t *heap, size_t n, size_t align, bool zero) {
  void *p = axi_heap_huge_alloc(heap, n + HUGE_CANARY, align, zero);
  if (p)
    huge_live(axi_huge_segment_of(p), p, n);
  return p;
}

/* ---- malloc, free, realloc, usable size ---------------------------------------------- */

/* The class for `need` bytes aligned to align (a power of two), or 0: take a huge block. */
static unsigned class_for(size_t need, size_t align) {
  if (need > AX_LARGE_MAX)
    return 0;
  if (align <= 16)
    return axi_class_of(need); /* every class is a multiple of 16 */
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

/* pre: heap is the calling thread's (initialised); align a power of two.
 * post: a checked block of n bytes (zeroed if zero), or NULL with errno = ENOMEM. */
void *axi_check_malloc(ax_heap_t *heap, size_t n, size_t align, bool zero) {
  if (n > PTRDIFF_MAX - AX_SEGMENT_SIZE) {
    errno = ENOMEM;
    return NULL;
  }
  unsigned c = class_for(n + EXTRA, align);
  if (c == 0)
    return huge_malloc(heap, n, align, zero);
  ax_page_t *page = axi_heap_page_with_free(heap, c);
  if (!page) {
    errno = ENOMEM;
    return NULL;
  }
  ax_block_t *b = page->free, *next = axi_link(page, b);
  if (next && axi_block_index(page, next) >= page->capacity)
    axi_corrupted_list(page, b); /* reported, never followed */
  axi_page_pop(page);
  AX_TRACK_DEFINED(b, page->block_size);
  check_unused(page, b);
  make_live(page, b, n);
  AX_TRACK_NOACCESS(b, page->block_size);
  AX_TRACK_MALLOC(b, n, zero);
  if (zero)
    memset(b, 0, n);
  return b;
}

/* A sized free (how) of a block of n bytes asked for: the very size (sized delete), or one
 * that fits (free_sized). */
static void check_size(const char *fn, const void *p, size_t n, size_t size, enum ax_sized how) {
  if (how == AX_SIZED_EXACT ? size != n : how == AX_SIZED_FITS && size > n)
    axi_bad_size(fn, p, size, n);
}

/* pre: seg validated; page = the descriptor p falls in; size and how a sized free's (enum
 * ax_sized). Frees p or aborts. */
void axi_check_free(const char *fn, ax_segment_t *seg, ax_page_t *page, void *p, size_t size,
                    enum ax_sized how) {
  if (seg->kind == AX_KIND_HUGE) {
    check_size(fn, p, huge_block(fn, seg, p), size, how);
    axi_huge_free(seg);
    return;
  }
  check_size(fn, p, small_block(fn, seg, page, p), size, how);
  ax_block_t *b = ax_arch_untag(p);
  AX_TRACK_FREE(b);
  make_free(page, b);
  uintptr_t owner = ax_atomic_load_relaxed(&page->xowner);
  if ((owner & ~AX_OWNER_FLAGS) == ax_arch_thread_id()) {
    axi_set_link(page, b, page->local_free);
    page->local_free = b;
    if (--page->used == 0 || (owner & AX_OWNER_FULL))
      axi_free_slow(b, page);
    return;
  }
  axi_remote_push(page, seg, 1, b, b); /* one by one: no chain to hide a block in */
}

/* pre: seg validated; page = the descriptor p falls in; heap the caller's.
 * post: the block resized (maybe moved), or NULL with errno = ENOMEM and p untouched. */
static void *check_realloc(ax_heap_t *heap, ax_segment_t *seg, ax_page_t *page, void *p, size_t n) {
  bool huge = seg->kind == AX_KIND_HUGE;
  size_t old = huge ? huge_block("realloc", seg, p) : small_block("realloc", seg, page, p);
  void *b = ax_arch_untag(p); /* (p may carry a memory tag, see small_block) */
  if (!huge)
    track_live(page, b, old);
  if (n > PTRDIFF_MAX - AX_SEGMENT_SIZE) {
    errno = ENOMEM;
    return NULL;
  }
  if (huge && n > AX_LARGE_MAX) {
    void *q = axi_huge_realloc(seg, p, n + HUGE_CANARY);
    if (q) {
      huge_live(axi_huge_segment_of(q), q, n); /* memcheck: registered for the mapping, now n */
      return q;
    }
  } else if (!huge && n + EXTRA <= page->block_size && n + EXTRA >= page->block_size / 2) {
    AX_TRACK_RESIZE(b, old, n);
    AX_TRACK_UNDEFINED((char *)b + n, page->block_size - n);
    make_live(page, b, n);
    AX_TRACK_NOACCESS((char *)b + n, page->block_size - n);
    return p;
  }
  if (heap->rb.open) /* as malloc's slow path does first (alloc.c) */
    axi_remote_age(heap);
  void *q = axi_check_malloc(heap, n, 16, false);
  if (!q)
    return NULL;
  memcpy(q, b, old < n ? old : n);
  axi_check_free("free", seg, page, b, 0, AX_SIZED_NONE);
  return axi_mte ? axi_mte_tag(q) : q;
}

/* realloc of x, p as the program passed it. A tagged block is read untagged: its granules go
 * to tag 0 meanwhile, back to p's if p stays valid. */
void *axi_check_realloc(ax_heap_t *heap, const ax_ptr_t *x, void *p, size_t n) {
  if (!x->tagged)
    return check_realloc(heap, x->seg, x->page, p, n);
  ax_arch_mte_set(x->b, x->page->block_size);
  void *q = check_realloc(heap, x->seg, x->page, p, n);
  if (q == p || q == NULL) /* p stays valid */
    ax_arch_mte_set(p, x->page->block_size);
  return q;
}

/* pre: seg validated; page = the descriptor p falls in. post: the requested size of p. */
static size_t check_usable(ax_segment_t *seg, ax_page_t *page, const void *p) {
  if (seg->kind == AX_KIND_HUGE)
    return huge_block("malloc_usable_size", seg, (void *)p);
  size_t n = small_block("malloc_usable_size", seg, page, (void *)p);
  track_live(page, ax_arch_untag(p), n);
  return n;
}

/* malloc_usable_size of x, p as the program passed it: the size it asked for. A tagged block
 * is read untagged (as in axi_check_realloc). */
size_t axi_check_usable(const ax_ptr_t *x, const void *p) {
  if (!x->tagged)
    return check_usable(x->seg, x->page, p);
  ax_arch_mte_set(x->b, x->page->block_size);
  size_t n = check_usable(x->seg, x->page, p);
  ax_arch_mte_set((void *)p, x->page->block_size);
  return n;
}
