/* SPDX-License-Identifier: MIT */
/* Memory tagging (AArch64 MTE): AXMALLOC_MTE=1, and checked mode on a CPU that has it.
 *
 * Every block handed out gets a random 4-bit tag, in the pointer (bits 56..59) and on each
 * of its 16-byte granules; a free block's granules carry tag 0. With synchronous tag checks
 * on, the hardware then catches what software checks cannot see:
 *   - use after free: the old pointer's tag is not 0;
 *   - a linear overflow into the next block, or out of the one before: neighbours never
 *     share a tag (IRG excludes theirs), and a free neighbour has tag 0;
 *   - a forged or stale tag: it matches no live block's.
 * Each ends in SIGSEGV with si_code SEGV_MTESERR at the faulting access. Where the allocator
 * sees the pointer first (free, realloc, malloc_usable_size) it compares the pointer's tag
 * with the block's and reports a double free (tag 0: the block is free) or an invalid
 * pointer, naming it.
 *
 * How it stays off the fast paths: as in checked mode (check.c), every page's fast_cap is 0
 * and the direct tables hold only the empty page (axi_slow_only), so every malloc reaches
 * malloc_slow, which tags the block last (after any zeroing, which writes through the
 * untagged pointer while the granules still carry 0), and every free of a tagged pointer
 * fails the block-start test and reaches free_irregular, whose classification (ptr.c) comes here
 * first. The allocator keeps untagged pointers internally (lists, chains, the page map) and only
 * ever touches free blocks, whose tag is 0. Tagging costs a pass of ST2G over the block on malloc
 * and on free (32 bytes per instruction), never a scan of the page. Segments get PROT_MTE
 * when they are mapped (os.c); huge blocks (their own mapping) carry no tags.
 */
#include "modes/mte.h"

#include "pagemap.h"
#include "print.h"
#include "segment.h"
#include "state.h"

/* pre: init, single-threaded, before any segment is mapped. */
void axi_mte_init(bool want) {
  if (!want)
    return;
  axi_mte = ax_arch_mte_enable();
  axi_mte_state = axi_mte ? "on" : "unavailable";
}

/* post: the page block at b (untagged, its granules at tag 0), or NULL. */
static ax_page_t *page_block(void *b) {
  ax_segment_t *seg = axi_segment_of(b);
  if (!b || !axi_segmap_has((uintptr_t)seg) || seg->kind == AX_KIND_HUGE)
    return NULL; /* huge blocks: no tags */
  return axi_page_of(seg, b);
}

/* b just handed out (untagged): its pointer with a fresh tag, given to its granules; huge
 * blocks and NULL as they are. The tags of the granules on either side are excluded wherever
 * they are in the segment (all of it carries tags): the last block of a page touches the first
 * block of the next when the class size divides the page, and looking inside the page only,
 * one such pair in 14 shared a tag (a one-byte overflow went unseen there: t_mte
 * neighbours). A block at a segment's edge, or at the end of its open memory (segment.c's
 * guards), has metadata, nothing readable or another mapping beyond it, whose granules are
 * tag 0 or never get one, and 0 is excluded anyway. pre: axi_mte. */
void *axi_mte_tag(void *b) {
  ax_page_t *page = page_block(b);
  if (!page)
    return b;
  size_t size = page->block_size;
  uintptr_t seg = (uintptr_t)axi_segment_of(b);
  uint64_t exclude = 1;
  if ((uintptr_t)b > seg) /* the granule before: the block before's last, or metadata */
    exclude |= (uint64_t)1 << ax_arch_mte_get((char *)b - 16);
  if ((uintptr_t)b + size < seg + axi_segment_of(b)->open_end) /* the granule after, if open */
    exclude |= (uint64_t)1 << ax_arch_mte_get((char *)b + size);
  void *t = ax_arch_mte_random(b, exclude);
  ax_arch_mte_set(t, size);
  return t;
}

/* p from the program, with a tag: the block it names, untagged, once its granules carry
 * p's tag (aborts otherwise: tag 0 there is a double free, another tag an invalid pointer,
 * forged or stale). Unless keep, the block's granules go back to tag 0: free, an access
 * through p now traps. pre: axi_mte, ax_arch_ptr_tag(p) != 0. */
void *axi_mte_release(const char *fn, void *p, bool keep) {
  void *b = ax_arch_untag(p);
  ax_segment_t *seg = axi_segment_of(b);
  if (!axi_segmap_has((uintptr_t)seg))
    axi_invalid_free(fn, p);
  axi_segment_validate(seg);
  ax_page_t *page = axi_page_of(seg, b);
  if (seg->kind == AX_KIND_HUGE || !page->in_use || page->block_size == 0 ||
      axi_block_index(page, b) >= page->capacity)
    axi_invalid_free(fn, p);
  unsigned have = ax_arch_mte_get(b);
  if (have == 0)
    axi_double_free(fn, p);
  if (have != ax_arch_ptr_tag(p))
    axi_fatal("axmalloc: %s(): invalid pointer %p (the block's tag is %d)\n", fn, p, (int)have);
  if (!keep)
    ax_arch_mte_set(b, page->block_size);
  return b;
}
