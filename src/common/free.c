/* free: the fast path, and what it leaves for others: remote frees, pages in the full list,
 * huge blocks, and pointers that are not ours (reported, never followed).
 *
 *   free(p): page = page map(p); p a carved block of it? the page's owner word our thread
 *            id? p not free already? Then push p on page->local_free, used--.
 * No lock and no atomic read-modify-write on the fast path. Checked mode (check.c) leaves
 * it as it is: every page's fast_cap is 0 there, so every free fails over to check.c.
 */
#include "internal.h"

/* A pointer into a live segment that is not a block we can free: report what it is.
 * The header and the page descriptor are validated first (segment.c), so a stray write
 * over them is reported as such instead of being taken for the program's bad pointer. */
void axi_bad_pointer(const char *fn, ax_segment_t *seg, const void *p) {
  axi_segment_validate(seg);
  ax_page_t *page = axi_page_of(seg, p);
  axi_page_validate(seg, page);
  if (seg->kind == AX_KIND_HUGE && !page->in_use && (uintptr_t)p == page->area)
    axi_fatal("axmalloc: %s(): double free %p\n", fn, p); /* still cached, not yet reused */
  axi_invalid_free(fn, p);
}

/* The header of p, whose own segment-map slot is empty: a huge block aligned to a segment
 * or more has its header in the slot before (huge.c). Aborts when p is not ours. */
ax_segment_t *axi_header_off_map(const char *fn, const void *p) {
  ax_segment_t *seg = axi_huge_aligned_header(p);
  if (!seg)
    axi_invalid_free(fn, p);
  return seg;
}

static AX_NOINLINE void free_tagged(void *p, const char *fn);

/* free() of a pointer that is not the start of a carved block in a small/medium/large page:
 * a huge block, a bad pointer, or any block in checked mode (its pages' fast_cap is 0). */
static AX_NOINLINE void free_irregular(void *p, const char *fn) {
  if (p == NULL)
    return;
  if (ax_arch_ptr_tag(p) != 0 && axi_mte) /* (a constant 0 on x86-64) */
    return free_tagged(p, fn);
  ax_segment_t *seg = axi_segment_of(p);
  if (!axi_segmap_has((uintptr_t)seg))
    seg = axi_header_off_map(fn, p);
  axi_segment_validate(seg);
  ax_page_t *page = axi_page_of(seg, p);
  if (axi_checked)
    return axi_check_free(fn, seg, page, p);
  if (ax_unlikely(seg->prof_slots)) /* a sampled block (prof.c) */
    return axi_prof_slot_free(fn, seg, p);
  if (seg->kind == AX_KIND_HUGE && page->in_use && (uintptr_t)p == page->area) {
    if (ax_unlikely(seg->prof != NULL)) /* a sampled block (prof.c) */
      axi_prof_release(seg);
    axi_huge_free(seg);
    return;
  }
  axi_bad_pointer(fn, seg, p);
}

/* Push b on the owner's local_free (b passed the checks). */
static inline void push_local(ax_page_t *page, ax_block_t *b) {
  axi_set_link_own(page, b, page->local_free);
  page->local_free = b;
}

/* The block's first word decodes to a link into its segment (or NULL): it may be free
 * already. Look, then free it as usual. pre: the caller owns the page. */
static AX_NOINLINE void free_local_suspect(ax_block_t *b, ax_page_t *page) {
  axi_check_double_free(page, b);
  push_local(page, b);
  if (--page->used == 0 || (ax_atomic_load_relaxed(&page->xowner) & AX_OWNER_FULL))
    axi_free_slow(b, page);
}

/* The same for a block of a cached class: look (the class's stack too), then cache it. */
static AX_NOINLINE void free_cached_suspect(ax_block_t *b, ax_page_t *page) {
  axi_check_double_free(page, b);
  axi_cache_free(b, page);
}

/* A block of our own page of a cached class goes to the cache, after a look when it may be
 * free already. */
static inline void free_cached(ax_block_t *b, ax_page_t *page) {
  return axi_looks_free(page, b) ? free_cached_suspect(b, page) : axi_cache_free(b, page);
}

/* The page's owner word is not our thread id: another thread's page (remote free), our own
 * of a cached class (cache.c), or our own in the full list (a local free that brings it back: the
 * same double-free filter as the fast path first, so that a random free among full pages does not
 * walk their lists, 35 instructions per free in bm_pairs/random). */
static AX_NOINLINE void free_other(ax_block_t *b, ax_page_t *page) {
  uintptr_t owner = ax_atomic_load_relaxed(&page->xowner), x = owner ^ ax_arch_thread_id();
  if (x == AX_OWNER_CACHED) /* the common case here first: ours, cached, not full */
    return free_cached(b, page);
  if (x & ~AX_OWNER_FLAGS)
    return axi_remote_free(b, page, axi_segment_of(page));
  if (owner & AX_OWNER_CACHED) /* ours, cached, and in the full list */
    return free_cached(b, page);
  if (owner & AX_OWNER_PROF) /* ours, cached, the heap profiler sampling (cache.c) */
    return axi_cache_free_prof(b, page);
  if (axi_looks_free(page, b)) /* a tail call: a call would make the remote path save registers */
    return free_local_suspect(b, page);
  push_local(page, b);
  page->used--;
  axi_free_slow(b, page); /* the page is in the full list */
}

/* free() of a tagged pointer (mte.c): its tag checked and its block's granules back to tag
 * 0, the block goes where the fast path would send it (a free while tagging always comes
 * here: fast_cap is 0); in checked mode to check.c. */
static AX_NOINLINE void free_tagged(void *p, const char *fn) {
  ax_block_t *b = axi_mte_release(fn, p, false);
  ax_segment_t *seg = axi_segment_of(b);
  ax_page_t *page = axi_page_of(seg, b);
  if (axi_checked) /* (it names p in its messages) */
    return axi_check_free(fn, seg, page, p);
  AX_TRACK_FREE(b);
  if (ax_atomic_load_relaxed(&page->xowner) != ax_arch_thread_id())
    return free_other(b, page);
  push_local(page, b);
  if (--page->used == 0)
    axi_free_slow(b, page);
}

/* The page map names p's page in two loads (NULL: not ours); the block-start test proves
 * p is a carved block of it; one compare with the owner word proves the page is ours and
 * not in the full list. Every call below is a tail call, so the fast path saves no
 * register; each takes the block first, so p stays in the register it came in (page first
 * cost a move: 32 instructions, 31 this way). */
static inline void free_block(const char *fn, void *p) {
  ax_page_t *page = axi_pagemap_get(p);
  if (ax_unlikely(page == NULL))
    return free_irregular(p, fn);
  if (ax_unlikely(!axi_is_block(page, p)))
    return free_irregular(p, fn);
  ax_block_t *b = p;
  AX_TRACK_FREE(b);
  if (ax_unlikely(ax_atomic_load_relaxed(&page->xowner) != ax_arch_thread_id()))
    return free_other(b, page);
  if (ax_unlikely(axi_looks_free(page, b)))
    return free_local_suspect(b, page);
  push_local(page, b);
  if (ax_unlikely(--page->used == 0))
    return axi_free_slow(b, page);
}

void ax_free(void *p) { free_block("free", p); }

/* free_sized, sized operator delete: the page map finds the page without the size, so the
 * size buys nothing; a wrong one is harmless. */
void ax_free_sized(void *p, size_t size) { free_block("free_sized", p); }

/* ---- bad frees ---------------------------------------------------------------------- */

void axi_invalid_free(const char *fn, const void *p) {
  axi_fatal("axmalloc: %s(): invalid pointer %p\n", fn, p);
}

/* Is b on list, one of page's free lists? Stops at a link out of the page: a list another
 * thread may take meanwhile (thread_free) is read safely, if not exactly. */
bool axi_list_has(const ax_page_t *page, const ax_block_t *list, const ax_block_t *b) {
  for (uint32_t n = 0; list && n <= page->reserved; n++) {
    if (list == b)
      return true;
    if ((uintptr_t)list - page->area >= axi_page_carved(page))
      return false; /* corrupted: not ours to follow */
    list = axi_link(page, list);
  }
  return false;
}

/* b's first word decodes to a link of this page's lists: b may already be free. Look, in
 * the heap's cache too. pre: the caller owns the page. Returns when b is not free. */
void axi_check_double_free(ax_page_t *page, ax_block_t *b) {
  const ax_block_t *remote = axi_tf_list(ax_atomic_load_acquire(&page->thread_free));
  if (axi_list_has(page, page->free, b) || axi_list_has(page, page->local_free, b) ||
      axi_list_has(page, remote, b) || axi_cache_has(axi_tls_heap, page->cls, b))
    axi_fatal("axmalloc: free(): double free %p\n", (void *)b);
}

#define AX_ALIAS(target) __attribute__((alias(#target), visibility("default"), used))
void free(void *p) AX_ALIAS(ax_free);
void cfree(void *p) AX_ALIAS(ax_free);
