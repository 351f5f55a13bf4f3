/* SPDX-License-Identifier: MIT */
/* free: the fast path, and what it leaves for others: remote frees, pages in the full list,
 * huge blocks, and pointers that are not ours (reported, never followed).
 *
 *   free(p): page = page map(p); p a carved block of it? the page's owner word our thread
 *            id? p not free already? Then push p on page->local_free, used--.
 * No lock and no atomic read-modify-write on the fast path. Checked mode (check.c) leaves
 * it as it is: every page's fast_cap is 0 there, so every free fails over to check.c.
 */
#include <errno.h>

#include "cache.h"
#include "cxx_ops.h"
#include "huge.h"
#include "lifecycle.h"
#include "list.h"
#include "modes/check.h"
#include "modes/guard.h"
#include "modes/leak.h"
#include "modes/leak_gate.h"
#include "modes/prof.h"
#include "page.h"
#include "pagemap.h"
#include "print.h"
#include "ptr.h"
#include "remote.h"
#include "segment.h"
#include "state.h"
#include "zero.h"

/* Push b on the owner's local_free (b passed the checks). */
static inline void push_local(ax_page_t *page, ax_block_t *b) {
  axi_set_link_own(page, b, page->local_free);
  page->local_free = b;
}

/* The block's first word decodes to a link into its segment (or NULL): it may be free
 * already. Look, then free it as usual. pre: the caller owns the page. */
static AX_NOINLINE void free_local_suspect(ax_block_t *b, ax_page_t *page) {
  axi_double_free_check(page, b);
  push_local(page, b);
  if (--page->used == 0 || (ax_atomic_load_relaxed(&page->xowner) & AX_OWNER_FULL))
    axi_free_slow(b, page);
}

/* The same for a block of a cached class: look (the class's stack too), then cache it. */
static AX_NOINLINE void free_cached_suspect(ax_block_t *b, ax_page_t *page) {
  axi_double_free_check(page, b);
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
  if (owner & AX_OWNER_PROF) /* ours, cached, the heap profiler sampling (prof_grant.c) */
    return axi_prof_cache_free(b, page);
  if (axi_looks_free(page, b)) /* a tail call: a call would make the remote path save registers */
    return free_local_suspect(b, page);
  push_local(page, b);
  page->used--;
  axi_free_slow(b, page); /* the page is in the full list */
}

/* A tagged block (mte.c), its tag checked and its granules back to tag 0, or a block the leak
 * checker has let go (leak.c): it goes where the fast path would send it (a free while
 * tagging or checking for leaks always comes here: fast_cap is 0). */
static AX_NOINLINE void free_tagged(ax_block_t *b, ax_page_t *page) {
  AX_TRACK_FREE(b);
  if (ax_atomic_load_relaxed(&page->xowner) != ax_arch_thread_id())
    return free_other(b, page);
  push_local(page, b);
  if (--page->used == 0)
    axi_free_slow(b, page);
}

/* A sized free of x: does size fit the block (how: see enum ax_sized)? Aborts naming it when
 * not. */
static void check_size(const char *fn, const void *p, const ax_ptr_t *x, size_t size,
                       enum ax_sized how) {
  size_t usable = 0;
  switch (x->kind) {
  case AX_PTR_TAGGED:
  case AX_PTR_LEAK:
    if (how == AX_SIZED_EXACT ? axi_class_of(size) != x->page->cls : size > x->page->block_size)
      axi_bad_size(fn, p, size, x->page->block_size);
    return;
  case AX_PTR_SLOT: /* a sampled block: a slot of its class's size (prof.c) */
    usable = axi_prof_slot_size(fn, x->seg, x->b);
    if (how == AX_SIZED_EXACT && axi_class_of(size) != axi_class_of(usable))
      axi_bad_size(fn, p, size, usable);
    break;
  case AX_PTR_ZERO:
    break;
  case AX_PTR_GUARD: /* the bytes asked for (modes/guard.c) */
    usable = axi_guard_usable(fn, p);
    if (how == AX_SIZED_EXACT && axi_class_of(size) != axi_class_of(usable))
      axi_bad_size(fn, p, size, usable);
    break;
  case AX_PTR_HUGE: /* (the profiler samples blocks above 64 KiB into huge ones: no class) */
    usable = x->seg->map_size - ((uintptr_t)x->b - (uintptr_t)x->seg);
    break;
  case AX_PTR_CHECKED: /* check.c compares with the size asked for */
    return;
  }
  if (size > usable)
    axi_bad_size(fn, p, size, usable);
}

/* The heap whose quarantine takes a block freed in checked mode (check.c): the thread's,
 * started if need be; NULL in its last destructors, or when no heap can be had. errno kept. */
static ax_heap_t *checked_heap(void) {
  if (axi_tls_heap != &axi_heap_empty || axi_thread_exited)
    return axi_thread_exited ? NULL : axi_tls_heap;
  int saved = errno;
  ax_heap_t *heap = axi_heap_get();
  errno = saved;
  return heap;
}

/* free() of a pointer that is not the start of a carved block in a small/medium/large page:
 * what it is (ptr.c) says which mode frees it. A sized free (how) checks size first; checked
 * mode also checks which call frees it (by). An entry point (AX_API): the stacks checked
 * mode keeps (check.c) start at its caller. */
static AX_NOINLINE AX_API void free_irregular(void *p, const char *fn, size_t size,
                                              enum ax_sized how, enum ax_dealloc by) {
  if (p == NULL)
    return;
  if (ax_unlikely(axi_checked)) { /* a page's block: straight to check.c */
    ax_page_t *page = axi_pagemap_get(p);
    ax_segment_t *seg = axi_segment_of(page);
    if (page && seg->kind != AX_KIND_HUGE) {
      axi_segment_validate(seg); /* (check.c validates the page: a stray write shows) */
      return axi_check_free(checked_heap(), fn, seg, page, p, size, how, by);
    }
  }
  ax_ptr_t x;
  axi_ptr_classify(fn, p, false, &x);
  if (how != AX_SIZED_NONE)
    check_size(fn, p, &x, size, how);
  switch (x.kind) {
  case AX_PTR_TAGGED:
    return free_tagged(x.b, x.page);
  case AX_PTR_LEAK: /* no longer live, then freed as the fast path would (leak_gate.c: while
                       the scan at exit runs, it waits) */
    axi_leak_hold(x.b);
    axi_leak_forget(x.page, x.b);
    free_tagged(x.b, x.page);
    return axi_leak_release();
  case AX_PTR_CHECKED: /* (it names p in its messages) */
    return axi_check_free(checked_heap(), fn, x.seg, x.page, p, size, how, by);
  case AX_PTR_SLOT:
    if (ax_unlikely(axi_leaks)) { /* (as AX_PTR_LEAK) */
      axi_leak_hold(p);
      axi_leak_forget(NULL, p);
      axi_prof_slot_free(fn, x.seg, p);
      return axi_leak_release();
    }
    return axi_prof_slot_free(fn, x.seg, p);
  case AX_PTR_ZERO:
    return axi_zero_free(fn, p);
  case AX_PTR_GUARD: {
    fn = axi_freeing_for ? axi_freeing_for : fn;               /* (realloc's free names realloc) */
    uintptr_t caller = (uintptr_t)__builtin_return_address(0); /* (free's: a tail call here) */
    if (ax_unlikely(axi_leaks)) {                              /* (as AX_PTR_LEAK) */
      axi_leak_hold(p);
      axi_leak_forget(NULL, p);
      axi_guard_free(fn, p, caller);
      return axi_leak_release();
    }
    return axi_guard_free(fn, p, caller);
  }
  case AX_PTR_HUGE:
    if (ax_unlikely(x.seg->prof != NULL)) /* a sampled block (prof.c) */
      axi_prof_release(x.seg);
    if (ax_unlikely(axi_leaks)) { /* (as AX_PTR_LEAK) */
      axi_leak_hold(p);
      axi_leak_forget(NULL, p);
      axi_huge_free(x.seg);
      return axi_leak_release();
    }
    return axi_huge_free(x.seg);
  }
}

static inline void free_block(const char *fn, void *p, size_t size, enum ax_sized how,
                              enum ax_dealloc by);

/* A sized delete whose size is outside its block's class span: size 0 of the first class
 * (operator new(0)'s class), else a size of another class, reported. */
static AX_NOINLINE void sized_other(const char *fn, void *p, size_t size, const ax_page_t *page,
                                    enum ax_dealloc by) {
  if (axi_class_of(size) != page->cls)
    return axi_bad_size(fn, p, size, page->block_size);
  free_block(fn, p, 0, AX_SIZED_NONE, by);
}

/* The page map names p's page in two loads (NULL: not ours); the block-start test proves
 * p is a carved block of it; one compare with the owner word proves the page is ours and
 * not in the full list. Every call below is a tail call, so the fast path saves no
 * register; each takes the block first, so p stays in the register it came in (page first
 * cost a move: 32 instructions, 31 this way). A sized free (how, a constant: free() has
 * none) also proves the size fits the block; by (a constant too) matters to checked mode. */
static inline void free_block(const char *fn, void *p, size_t size, enum ax_sized how,
                              enum ax_dealloc by) {
  ax_page_t *page = axi_pagemap_get(p);
  if (ax_unlikely(page == NULL))
    return free_irregular(p, fn, size, how, by);
  if (ax_unlikely(!axi_is_block(page, p)))
    return free_irregular(p, fn, size, how, by);
  if (how == AX_SIZED_EXACT && ax_unlikely((page->block_size - size) >> page->span_shift))
    return sized_other(fn, p, size, page, by); /* (not in the class's span: types.h) */
  if (how == AX_SIZED_FITS && ax_unlikely(size > page->block_size))
    return axi_bad_size(fn, p, size, page->block_size);
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

void ax_free(void *p) { free_block("free", p, 0, AX_SIZED_NONE, AX_DEALLOC_FREE); }

/* free_sized (C23), free_aligned_sized, aligned sized delete: the size must fit the block (a
 * block that realloc grew or an alignment placed may be of a bigger class than the size). */
void ax_free_sized(void *p, size_t size) {
  free_block("free_sized", p, size, AX_SIZED_FITS, AX_DEALLOC_FREE);
}

/* operator delete and delete[] (new_delete.cc): sized, the size must be of the block's class,
 * as operator new(size) chose it (a delete through a pointer of the wrong type, or `delete`
 * of a `new T[n]`); checked mode also knows delete[] from delete. */
void axi_delete(void *p) { free_block("operator delete", p, 0, AX_SIZED_NONE, AX_DEALLOC_DELETE); }
void axi_delete_sized(void *p, size_t size) {
  free_block("operator delete", p, size, AX_SIZED_EXACT, AX_DEALLOC_DELETE);
}
void axi_delete_array(void *p) {
  free_block("operator delete[]", p, 0, AX_SIZED_NONE, AX_DEALLOC_DELETE_ARRAY);
}
void axi_delete_array_sized(void *p, size_t size) {
  free_block("operator delete[]", p, size, AX_SIZED_EXACT, AX_DEALLOC_DELETE_ARRAY);
}

const char axi_link_free_o; /* (linkage.h: every object refers to it) */

#define AX_ALIAS(target) __attribute__((alias(#target), visibility("default"), used))
void free(void *p) AX_ALIAS(ax_free);
void cfree(void *p) AX_ALIAS(ax_free);
