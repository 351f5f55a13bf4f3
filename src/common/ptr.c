/* SPDX-License-Identifier: MIT */
/* Pointers the fast paths did not take: what each one is, decided in one place for free,
 * realloc and malloc_usable_size alike.
 *
 *   a zero-size block             zero.c's (malloc(0): an address nothing may touch)
 *   in guarded sampling's pool    guard.c's (a sampled block, live or freed, or inside one)
 *   tagged (memory tagging on)    its tag checked against its block's (mte.c): a tagged
 *                                 block, or checked mode's
 *   not in the segment map        a huge block aligned to a segment or more (its header
 *                                 is in the slot before), or not ours: reported
 *   in checked mode               check.c's, every block
 *   leak checking, a carved block leak.c's record cleared, then freed as usual
 *   a profiler slot               prof.c's sampled block
 *   a huge block's start          huge.c's
 *   anything else                 a bad pointer: reported, naming what the header says
 *
 * Each entry point then sends the block to the mode that owns it, in one switch (alloc.c,
 * free.c): a new mode is a new kind here and a case there.
 */
#include "ptr.h"

#include "huge.h"
#include "modes/guard_report.h"
#include "modes/mte.h"
#include "pagemap.h"
#include "print.h"
#include "segment.h"
#include "state.h"
#include "zero.h"

/* A pointer into a live segment that is not a block we can free: report what it is.
 * The header and the page descriptor are validated first (segment.c), so a stray write
 * over them is reported as such instead of being taken for the program's bad pointer. */
static __attribute__((noreturn)) void bad_pointer(const char *fn, ax_segment_t *seg,
                                                  const void *p) {
  ax_page_t *page = axi_page_of(seg, p);
  axi_page_validate(seg, page);
  if (seg->kind == AX_KIND_HUGE && !page->in_use && (uintptr_t)p == page->area)
    axi_double_free(fn, p); /* still cached, not yet reused */
  axi_invalid_free(fn, p);
}

/* The header of p, whose own segment-map slot is empty: a huge block aligned to a segment
 * or more has its header in the slot before (huge.c). Aborts when p is not ours. */
static ax_segment_t *header_off_map(const char *fn, const void *p) {
  ax_segment_t *seg = axi_huge_aligned_header(p);
  if (!seg)
    axi_invalid_free(fn, p);
  return seg;
}

/* pre: p != NULL, and not a block the caller's fast test took. keep: a tagged block keeps
 * its granules' tags (realloc, malloc_usable_size; free drops them). post: *x says what p
 * is, or the process aborted naming p (not ours, a double free, corrupted metadata). */
void axi_ptr_classify(const char *fn, void *p, bool keep, ax_ptr_t *x) {
  x->tagged = ax_arch_ptr_tag(p) != 0 && axi_mte; /* (a constant false on x86-64) */
  if (axi_zero_has(p)) {
    *x = (ax_ptr_t){.kind = AX_PTR_ZERO, .b = p};
    return;
  }
  if (axi_guard_has(p)) { /* (guard.c judges it: a block, a freed one, an address inside) */
    *x = (ax_ptr_t){.kind = AX_PTR_GUARD, .b = p};
    return;
  }
  if (x->tagged) {
    x->b = axi_mte_release(fn, p, keep);
    x->seg = axi_segment_of(x->b);
    x->page = axi_page_of(x->seg, x->b);
    x->kind = AX_PTR_TAGGED; /* (no tagging in checked mode: lifecycle.c) */
    return;
  }
  x->b = p;
  ax_segment_t *seg = axi_segment_of(p);
  if (!axi_segmap_has((uintptr_t)seg))
    seg = header_off_map(fn, p);
  axi_segment_validate(seg);
  ax_page_t *page = axi_page_of(seg, p);
  x->seg = seg;
  x->page = page;
  if (axi_checked)
    x->kind = AX_PTR_CHECKED;
  else if (axi_leaks && seg->kind != AX_KIND_HUGE && page->in_use &&
           axi_block_index(page, p) < page->capacity)
    x->kind = AX_PTR_LEAK; /* a carved block: fast_cap is 0 in leak mode */
  else if (ax_unlikely(seg->prof_slots))
    x->kind = AX_PTR_SLOT;
  else if (seg->kind == AX_KIND_HUGE && page->in_use && (uintptr_t)p == page->area)
    x->kind = AX_PTR_HUGE;
  else
    bad_pointer(fn, seg, p);
}
