/* SPDX-License-Identifier: MIT */
/* Transparent huge pages: where axmalloc asks the kernel for them, and where it asks for none.
 *
 * The rule (AXMALLOC_THP=auto, the default; measured in docs/design/02-segments.md, "Huge pages
 * (`thp.c`)"): huge mappings (blocks > 1 MiB) get MADV_HUGEPAGE where huge pages have been
 * measured to fault in for less than OS pages per byte (the probes below), because a large
 * block is written in long runs and never purged piecewise (its mapping is unmapped, resized or
 * moved whole); segments of small and medium blocks get none, because their 64 and 512 KiB
 * pages are purged one by one, which would split a huge page and make the kernel fill the rest
 * of it for nothing. Where the kernel gives huge pages to every mapping (`always`), those
 * segments say MADV_NOHUGEPAGE, and so do huge blocks while huge pages cost more.
 * AXMALLOC_THP=large advises every huge block, measured or not (auto's rule before issue 44);
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
#include "print.h"
#include "state.h"

static enum ax_thp_kernel kernel = AX_THP_KERNEL_ABSENT;
static enum ax_thp_defrag defrag = AX_THP_DEFRAG_ABSENT;
static size_t huge_page; /* the kernel's huge page size; 0: none to be had */

static const char *const kernel_names[] = {"absent", "never", "madvise", "always"};
static const char *const defrag_names[] = {"absent",        "always",  "defer",
                                           "defer+madvise", "madvise", "never"};

/* ---- auto: what a huge page costs here, learned ------------------------------------------ */
/* Where guest memory is backed lazily by its host (a virtual machine whose free memory the
 * host takes back: free page reporting, DAMON reclaim), a huge page is often made of memory
 * the host no longer backs, and its fault zeroes 2 MiB at 0.7-1 GB/s, while OS pages reuse
 * memory that is still warm: a round of 2 x 512 MiB touched was 3x faster or 3x slower than
 * with no advice, by luck (issue 44). Elsewhere a huge page zeroes at 10 GB/s and more and
 * saves 511 faults. So it is measured, where the process runs, while it runs. A probe times,
 * in the thread's CPU time (kernel time included, another process's turn on the CPU not), the
 * faults of the first two huge pages' bytes of a fresh huge block advised for huge pages: the
 * first as OS pages (its header page was written before the advice, so the kernel has a page
 * table there and faults the rest of it in OS pages), the second as one huge page. Those are
 * bytes the program has faulted in anyway when it writes its block whole, in the pages it
 * would have got: a probe adds no fault, and holds no lock. The probes' running means decide
 * whether huge blocks are advised: huge pages must come at least an eighth cheaper per byte.
 * Every fresh block of 2 huge pages or more is probed while nothing is known (two threads'
 * first blocks at once: the second would otherwise take OS pages for all of its own), then at
 * most once a PROBE_EVERY_MS; a smaller first block has a probe in a mapping of its own (2
 * huge pages, unmapped at once), again every RESCRATCH_MS while no block is big enough. Only
 * where the kernel's mode is `madvise` and a huge page is no bigger than a segment: under
 * `always` the header's fault takes a whole huge page (the kernel's choice stands: huge blocks
 * get no advice, so huge pages); AArch64's 32 and 512 MiB huge pages are not probed (a probe would
 * fault in 64 MiB or 1 GiB) and not advised under auto. */
#define PROBE_EVERY_MS 1000
#define RESCRATCH_MS 30000
#define TOUCH_STRIDE 4096 /* the smallest OS page: every page faults in, whatever its size */

enum verdict { V_UNKNOWN, V_HUGE, V_SMALL };
static const char *const verdict_names[] = {"unknown", "huge", "small"};

static ax_atomic_word cost_huge, cost_small; /* ns per MiB faulted in: running means, 0: none */
static ax_atomic_word probes, probe_ms, verdict;
static uint64_t forced_huge, forced_small; /* AXMALLOC_THP_PROBE: what every probe reports */

/* The decimal number at *s, which moves past it. */
static uint64_t number(const char **s) {
  uint64_t n = 0;
  for (; **s >= '0' && **s <= '9'; (*s)++)
    n = n * 10 + (uint64_t)(**s - '0');
  return n;
}

/* pre: process init, alone, after axi_options_read (the OS page is final). */
void axi_thp_init(void) {
  /* (options.c's words for AXMALLOC_THP are in enum ax_thp_option's order) */
  axi_options.thp = (enum ax_thp_option)axi_option_num(AXI_OPTION_THP);
  const char *dir = getenv("AXMALLOC_THP_SYSFS"); /* a test hook, not an option */
  dir = dir && *dir ? dir : "/sys/kernel/mm/transparent_hugepage";
  kernel = axi_os_thp_read(dir, &huge_page);
  defrag = axi_os_thp_defrag(dir);
  /* a test hook, not an option: "<huge ns per MiB>,<small ns per MiB>" for every probe */
  const char *forced = getenv("AXMALLOC_THP_PROBE");
  if (forced && *forced) {
    forced_huge = number(&forced);
    forced_small = *forced == ',' ? (forced++, number(&forced)) : 0;
  }
}

size_t axi_thp_size(void) { return huge_page; }
const char *axi_thp_option_name(void) { return axi_option_str(AXI_OPTION_THP); }
const char *axi_thp_kernel_name(void) { return kernel_names[kernel]; }
const char *axi_thp_defrag_name(void) { return defrag_names[defrag]; }

/* The advice for a mapping of kind (the policy above). */
static enum ax_thp_advice advice_for(enum ax_kind kind) {
  if (!huge_page)
    return AX_THP_ADV_NONE;
  switch (ax_peek(&axi_options.thp)) { /* (ax_ctl may write it meanwhile: opt.thp) */
  case AX_THP_ALWAYS:
    return AX_THP_ADV_HUGE;
  case AX_THP_NEVER:
    return kernel == AX_THP_KERNEL_ALWAYS ? AX_THP_ADV_NOHUGE : AX_THP_ADV_NONE;
  case AX_THP_LARGE:
    if (kind == AX_KIND_HUGE)
      return AX_THP_ADV_HUGE;
    return kernel == AX_THP_KERNEL_ALWAYS ? AX_THP_ADV_NOHUGE : AX_THP_ADV_NONE;
  default: /* auto: huge blocks as measured (the probes); unknown: as OS pages, no advice */
    if (kind == AX_KIND_HUGE && ax_atomic_load_relaxed(&verdict) == V_HUGE)
      return AX_THP_ADV_HUGE;
    if (kind == AX_KIND_HUGE && ax_atomic_load_relaxed(&verdict) == V_UNKNOWN)
      return AX_THP_ADV_NONE;
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

/* ---- the probes (auto) ---------------------------------------------------------------- */

static void touch(char *p, size_t n) {
  for (size_t i = 0; i < n; i += TOUCH_STRIDE)
    *(volatile char *)(p + i) = 0; /* (a fresh page reads as zero: calloc's blocks stay so) */
}

static uint64_t mean(ax_atomic_word *m, uint64_t sample) {
  uint64_t old = ax_atomic_load_relaxed(m), v = old ? (3 * old + sample) / 4 : sample;
  ax_atomic_store_relaxed(m, v ? v : 1); /* (a lost update between threads is one sample) */
  return v ? v : 1;
}

/* One probe's times (ns for one huge page's bytes each way) into the means; the verdict. */
static void learn(uint64_t huge_ns, uint64_t small_ns) {
  uint64_t per = huge_page >> 20 ? huge_page >> 20 : 1; /* MiB in a huge page */
  if (forced_huge)
    huge_ns = forced_huge * per, small_ns = forced_small * per;
  uint64_t h = mean(&cost_huge, huge_ns / per), s = mean(&cost_small, small_ns / per);
  enum verdict v = h * 8 < s * 7 ? V_HUGE : V_SMALL;
  uintptr_t n = ax_atomic_fetch_add_relaxed(&probes, 1) + 1;
  enum verdict was = (enum verdict)ax_atomic_xchg_acq_rel(&verdict, v);
  if (axi_options.verbose && v != was)
    axi_write("axmalloc: transparent huge pages: huge blocks %s: a huge page faulted in for "
              "%llu us/MiB, OS pages for %llu (probe %llu; kernel defrag %s)\n",
              v == V_HUGE ? "advised" : "not advised", (unsigned long long)h / 1000,
              (unsigned long long)s / 1000, (unsigned long long)n, defrag_names[defrag]);
}

/* Time the faults of [m, m + 2 huge pages) but its first OS page, written already: the first
 * huge page's bytes in OS pages, the second as a huge page. pre: m aligned to the huge page,
 * fresh but for that first page, advised for huge pages. */
static void measure(char *m) {
  /* (pages already there would time nothing: seen once, OS pages at 26 us/MiB against 260-540,
   * which made a 2 x 512 MiB round take OS pages: 547k faults. Such a probe teaches nothing) */
  if (axi_os_resident(m + huge_page / 2) || axi_os_resident(m + huge_page))
    return;
  uint64_t t0 = axi_os_cpu_ns();
  touch(m + axi_os_page, huge_page - axi_os_page);
  uint64_t t1 = axi_os_cpu_ns();
  touch(m + huge_page, huge_page);
  uint64_t t2 = axi_os_cpu_ns();
  learn(t2 - t1, (t1 - t0) * huge_page / (huge_page - axi_os_page));
}

/* A probe is due: none yet, or the last is older than every_ms (claimed by this thread: a
 * lost race only makes two probes). */
static bool due(uint64_t every_ms) {
  uint64_t now = axi_now_ms(), last = ax_atomic_load_relaxed(&probe_ms);
  if (last && now - last < every_ms)
    return false;
  ax_atomic_store_relaxed(&probe_ms, now ? now : 1);
  return true;
}

static bool probing(void) {
  return huge_page && huge_page <= AX_SEGMENT_SIZE && kernel == AX_THP_KERNEL_MADVISE &&
         ax_peek(&axi_options.thp) == AX_THP_AUTO;
}

/* A probe in a mapping of its own: for a first block too small to hold one. */
static void probe_scratch(void) {
  char *m = axi_os_map_aligned(2 * huge_page, AX_SEGMENT_SIZE, 0);
  if (!m)
    return;
  touch(m, 1); /* (as a block's header is written before its advice) */
  if (axi_os_thp_advise(m, 2 * huge_page, true))
    measure(m);
  axi_os_unmap(m, 2 * huge_page);
}

/* A fresh mapping of size bytes at seg becomes a huge block: its advice. Under auto, measured
 * first when a probe is due: inside the block when it holds 2 huge pages, else in a mapping of
 * its own while none was made for RESCRATCH_MS. pre: seg's header is written (its first OS
 * page faulted in). */
void axi_thp_fresh(ax_segment_t *seg, size_t size) {
  if (probing()) {
    bool inside = size >= 2 * huge_page; /* (seg is aligned to the segment, so to the page) */
    bool known = ax_atomic_load_relaxed(&verdict) != V_UNKNOWN;
    if (inside && due(known ? PROBE_EVERY_MS : 0)) {
      advise(seg, size, AX_THP_ADV_HUGE);
      if (seg->thp == AX_THP_ADV_HUGE) {
        measure((char *)seg);
        advise(seg, size,
               advice_for(AX_KIND_HUGE) == AX_THP_ADV_HUGE ? AX_THP_ADV_HUGE : AX_THP_ADV_NOHUGE);
        return;
      }
    } else if (!inside && due(RESCRATCH_MS)) {
      probe_scratch();
    }
  }
  advise(seg, size, advice_for(AX_KIND_HUGE));
}

/* A mapping of size bytes at seg becomes (or is again, from a cache) a segment of kind: give
 * it kind's advice unless it has it already. A mapping keeps its advice when it comes back as
 * another kind that wants none (NONE means: whatever the kernel does by default). */
void axi_thp_apply(ax_segment_t *seg, size_t size, enum ax_kind kind) {
  advise(seg, size, advice_for(kind));
}

/* What auto found (ctl.c: thp.choice, thp.cost_huge, thp.cost_small, thp.probes). */
const char *axi_thp_choice(void) { return verdict_names[ax_atomic_load_relaxed(&verdict)]; }
uint64_t axi_thp_cost_huge(void) { return ax_atomic_load_relaxed(&cost_huge); }
uint64_t axi_thp_cost_small(void) { return ax_atomic_load_relaxed(&cost_small); }
uint64_t axi_thp_probes(void) { return ax_atomic_load_relaxed(&probes); }

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
  /* (under auto before the first probe, a block that will be probed is rounded as an advised
   * one: it likely is, and the first block's size decides how later ones fit the mapping cache:
   * wl_largebuf's peak RSS 516 -> 547 MB when it was not) */
  bool unknown =
      probing() && ax_atomic_load_relaxed(&verdict) == V_UNKNOWN && need >= 2 * huge_page;
  if ((advice_for(AX_KIND_HUGE) != AX_THP_ADV_HUGE && !unknown) || huge_page > AX_SEGMENT_SIZE)
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
