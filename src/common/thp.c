/* SPDX-License-Identifier: MIT */
/* Transparent huge pages: where axmalloc asks the kernel for them, and where it asks for none.
 *
 * The rule (AXMALLOC_THP=auto, the default; measured in docs/design/02-segments.md, "Huge pages
 * (`thp.c`)"): huge mappings (blocks > 1 MiB) get MADV_HUGEPAGE, because a large block is written
 * in long runs and never purged piecewise (its mapping is unmapped, resized or moved whole);
 * segments of small and medium blocks get none, because their 64 and 512 KiB pages are purged one
 * by one, which would split a huge page and make the kernel fill the rest of it for nothing. Where
 * the kernel gives huge pages to every mapping (`always`), those segments say MADV_NOHUGEPAGE.
 * AXMALLOC_THP=always advises every mapping, and purges inside segments then give back whole
 * huge pages only; AXMALLOC_THP=never advises none (and says MADV_NOHUGEPAGE where the
 * kernel's mode is `always`). Where the kernel has no huge pages (mode `never`, or no
 * transparent_hugepage directory), nothing is ever advised, whatever the option. The
 * profiler's slot segments never take huge pages (axi_thp_decline).
 */
#include <stdlib.h>

#include "thp.h"

#include "options.h"
#include "os.h"
#include "state.h"

static enum ax_thp_kernel kernel = AX_THP_KERNEL_ABSENT;
static size_t huge_page; /* the kernel's huge page size; 0: none to be had */

static const char *const kernel_names[] = {"absent", "never", "madvise", "always"};

/* pre: process init, alone, after axi_options_read (the OS page is final). */
void axi_thp_init(void) {
  /* (options.c's words for AXMALLOC_THP are in enum ax_thp_option's order) */
  axi_options.thp = (enum ax_thp_option)axi_option_num(AXI_OPTION_THP);
  const char *dir = getenv("AXMALLOC_THP_SYSFS"); /* a test hook, not an option */
  kernel = axi_os_thp_read(dir && *dir ? dir : "/sys/kernel/mm/transparent_hugepage", &huge_page);
}

size_t axi_thp_size(void) { return huge_page; }
const char *axi_thp_option_name(void) { return axi_option_str(AXI_OPTION_THP); }
const char *axi_thp_kernel_name(void) { return kernel_names[kernel]; }

/* The advice for a mapping of kind (the policy above). */
static enum ax_thp_advice advice_for(enum ax_kind kind) {
  if (!huge_page)
    return AX_THP_ADV_NONE;
  switch (ax_peek(&axi_options.thp)) { /* (ax_ctl may write it meanwhile: opt.thp) */
  case AX_THP_ALWAYS:
    return AX_THP_ADV_HUGE;
  case AX_THP_NEVER:
    return kernel == AX_THP_KERNEL_ALWAYS ? AX_THP_ADV_NOHUGE : AX_THP_ADV_NONE;
  default:
    if (kind == AX_KIND_HUGE)
      return AX_THP_ADV_HUGE;
    return kernel == AX_THP_KERNEL_ALWAYS ? AX_THP_ADV_NOHUGE : AX_THP_ADV_NONE;
  }
}

/* Bytes of seg's mapping now advised for huge pages go up or down by delta. */
static void count(intptr_t delta) {
  axi_stat_add(&axi_stats.thp_advised, &axi_stats.thp_advised_peak, delta);
  if (delta > 0)
    ax_atomic_fetch_add_relaxed(&axi_stats.thp_advised_total, (uintptr_t)delta);
}

/* seg's mapping (size bytes) takes advice want, unless it has it already or want is NONE. */
static void advise(ax_segment_t *seg, size_t size, enum ax_thp_advice want) {
  if (want == AX_THP_ADV_NONE || want == seg->thp)
    return;
  if (!axi_os_thp_advise(seg, size, want == AX_THP_ADV_HUGE))
    return; /* (a kernel that refuses leaves the mapping as it was) */
  if (seg->thp == AX_THP_ADV_HUGE)
    count(-(intptr_t)size);
  if (want == AX_THP_ADV_HUGE)
    count((intptr_t)size);
  else
    ax_atomic_fetch_add_relaxed(&axi_stats.thp_declined, size);
  seg->thp = (uint8_t)want;
}

/* A mapping of size bytes at seg becomes (or is again, from a cache) a segment of kind: give
 * it kind's advice unless it has it already. A mapping keeps its advice when it comes back as
 * another kind that wants none (NONE means: whatever the kernel does by default). */
void axi_thp_apply(ax_segment_t *seg, size_t size, enum ax_kind kind) {
  advise(seg, size, advice_for(kind));
}

/* A mapping that must have no huge page whatever the option (the profiler's slot segments):
 * MADV_NOHUGEPAGE where the kernel would give it one, or where it was advised before. */
void axi_thp_decline(ax_segment_t *seg, size_t size) {
  bool would = huge_page && (kernel == AX_THP_KERNEL_ALWAYS || seg->thp == AX_THP_ADV_HUGE);
  advise(seg, size, would ? AX_THP_ADV_NOHUGE : AX_THP_ADV_NONE);
}

/* seg's mapping grew or shrank by delta bytes (its advice goes with it), or went (-size). */
void axi_thp_resized(const ax_segment_t *seg, intptr_t delta) {
  if (seg->thp == AX_THP_ADV_HUGE)
    count(delta);
}

/* The alignment a fresh huge mapping of need bytes takes beyond the segment's: the huge page
 * size when the kernel's huge pages are bigger than a segment (AArch64's 16 and 64 KiB
 * kernels: 32 and 512 MiB) and the block fills at least one; 0 otherwise. */
size_t axi_thp_align(size_t need) {
  bool advised = advice_for(AX_KIND_HUGE) == AX_THP_ADV_HUGE;
  return advised && huge_page > AX_SEGMENT_SIZE && need >= huge_page ? huge_page : 0;
}

/* The bytes a huge mapping of need bytes takes: where huge blocks are advised, up to the next
 * huge page boundary when that wastes at most an eighth, so that its last huge page lies whole
 * inside the mapping and faults in as one (the kernel gives a huge page only to an aligned
 * range the mapping covers whole: wl_vecgrow's growing tails, faulted in 4 KiB pages while the
 * mapping ended short of a boundary, were most of its page faults). Not more: the rest of that
 * last huge page is resident once the block's end is touched (wl_bitset's blocks of a power of
 * two and a header, rounded up always: peak RSS +15%). Only where mappings are aligned to the
 * huge page (it is no bigger than a segment). */
size_t axi_thp_round(size_t need) {
  if (advice_for(AX_KIND_HUGE) != AX_THP_ADV_HUGE || huge_page > AX_SEGMENT_SIZE)
    return need;
  size_t up = (need + huge_page - 1) & ~(huge_page - 1);
  return up >= need && up - need <= need / 8 ? up : need;
}

/* A purge of [*lo, *hi) in seg: where seg is advised for huge pages, only the whole huge pages
 * inside it go (a part would split one). post: false when nothing is left to purge. */
bool axi_thp_purge_clip(const ax_segment_t *seg, uintptr_t *lo, uintptr_t *hi) {
  if (seg->thp == AX_THP_ADV_HUGE) {
    *lo = (*lo + huge_page - 1) & ~(uintptr_t)(huge_page - 1);
    *hi &= ~(uintptr_t)(huge_page - 1);
  }
  return *hi > *lo;
}
