/* SPDX-License-Identifier: MIT */
/* Statistics: process-wide counters updated on slow paths only, per-heap counters merged
 * in when a thread exits, and a report that needs no stdio (AXMALLOC_STATS=1 at exit). */
#include <string.h>
#include <unistd.h>

#include "bulk.h"
#include "lifecycle.h"
#include "modes/check.h"
#include "modes/prof.h"
#include "page.h"
#include "pool.h"
#include "print.h"
#include "state.h"
#include "thp.h"
#include "zero.h"

static void add_heap(ax_heap_t *heap, void *arg) {
  ax_stats_t *out = arg;
  for (unsigned c = 0; c < AX_CLASSES; c++)
    out->class_mallocs[c] += ax_peek(&heap->stats.class_mallocs[c]);
  out->huge_allocs += ax_peek(&heap->stats.huge_allocs);
  out->remote_frees += ax_peek(&heap->stats.remote_frees);
  out->remote_publishes += ax_peek(&heap->stats.remote_publishes);
  out->remote_drains += ax_peek(&heap->stats.remote_drains);
}

static void add_own(ax_heap_t *heap, ax_page_t *page) {
  for (; page; page = page->next)
    axi_page_count_mallocs(heap, page);
}

static void add_live(ax_page_t *page, ax_stats_t *out) {
  for (; page; page = page->next)
    out->class_live[page->cls] += axi_page_live(page);
}

void ax_stats_get(ax_stats_t *out) {
  memset(out, 0, sizeof *out);
  ax_heap_t *self = axi_tls_heap;
  if (self != &axi_heap_empty) { /* the calling thread's counts are exact */
    for (unsigned c = 1; c < AX_CLASSES; c++)
      add_own(self, self->queue[c].first);
    add_own(self, self->full.first);
  }
#define G(x) ax_atomic_load_relaxed(&axi_stats.x)
  out->in_use = G(in_use);
  out->in_use_peak = G(in_use_peak);
  out->os_reserved = G(os_reserved);
  out->os_reserved_peak = G(os_reserved_peak);
  out->os_committed = G(os_committed);
  out->os_committed_peak = G(os_committed_peak);
  out->os_purged = G(os_purged);
  out->os_mmap_calls = G(mmap_calls);
  out->os_munmap_calls = G(munmap_calls);
  out->os_madvise_calls = G(madvise_calls);
  out->os_mprotect_calls = G(mprotect_calls);
  out->zero_live = axi_zero_live();
  out->os_mremap_calls = G(mremap_calls);
  out->segments_live = G(segments_live);
  out->segments_abandoned = G(segments_abandoned);
  out->segments_reclaimed = G(segments_reclaimed);
  out->huge_cache_hits = G(huge_cache_hits);
  out->heaps_live = G(heaps_live);
  out->huge_allocs = G(huge_allocs);
  out->remote_frees = G(remote_frees);
  out->remote_publishes = G(remote_publishes);
  out->remote_drains = G(remote_drains);
  for (unsigned c = 0; c < AX_CLASSES; c++)
    out->class_mallocs[c] = G(class_mallocs[c]);
#undef G
  axi_heap_foreach(add_heap, out);
  if (self != &axi_heap_empty) {
    for (unsigned c = 1; c < AX_CLASSES; c++)
      add_live(self->queue[c].first, out);
    add_live(self->full.first, out);
    for (unsigned i = 0; i < AX_CACHE_N; i++) /* cached blocks count as used in their pages */
      out->class_live[AX_CACHE_FIRST + i] -= self->cache.n[i];
    if (self->cache.last_cls)
      out->class_live[self->cache.last_cls]--;
    if (axi_checked) /* ... and so do the blocks checked mode holds back */
      axi_check_uncount(self, out->class_live);
  }
  out->mallocs = out->huge_allocs;
  for (unsigned c = 0; c < AX_CLASSES; c++)
    out->mallocs += out->class_mallocs[c];
}

void ax_stats_print(void) {
  ax_stats_t s;
  ax_stats_get(&s);
  axi_write(
      "axmalloc stats (pid %d):\n"
      "  mallocs            %llu\n"
      "  huge allocs        %llu (cache hits %llu)\n"
      "  in use (pages)     %llu B (peak %llu B)\n"
      "  os reserved        %llu B (peak %llu B)\n"
      "  os committed       %llu B (peak %llu B)\n"
      "  os purged          %llu B\n"
      "  syscalls           mmap %llu, munmap %llu, madvise %llu, mremap %llu, mprotect %llu\n"
      "  segments           live %llu, abandoned %llu, reclaimed %llu\n"
      "  thread heaps live  %llu\n",
      (int)getpid(), (unsigned long long)s.mallocs, (unsigned long long)s.huge_allocs,
      (unsigned long long)s.huge_cache_hits, (unsigned long long)s.in_use,
      (unsigned long long)s.in_use_peak, (unsigned long long)s.os_reserved,
      (unsigned long long)s.os_reserved_peak, (unsigned long long)s.os_committed,
      (unsigned long long)s.os_committed_peak, (unsigned long long)s.os_purged,
      (unsigned long long)s.os_mmap_calls, (unsigned long long)s.os_munmap_calls,
      (unsigned long long)s.os_madvise_calls, (unsigned long long)s.os_mremap_calls,
      (unsigned long long)s.os_mprotect_calls, (unsigned long long)s.segments_live,
      (unsigned long long)s.segments_abandoned, (unsigned long long)s.segments_reclaimed,
      (unsigned long long)s.heaps_live);
  axi_write("  remote frees       %llu (CASes %llu, inboxes taken %llu)\n",
            (unsigned long long)s.remote_frees, (unsigned long long)s.remote_publishes,
            (unsigned long long)s.remote_drains);
  ax_thp_info_t t;
  ax_thp_info(&t);
  axi_write("  huge pages         %s (kernel %s, %llu KiB): advised %llu B (peak %llu B, total "
            "%llu B), declined %llu B\n",
            t.option, t.kernel, (unsigned long long)t.page_size >> 10,
            (unsigned long long)t.advised, (unsigned long long)t.advised_peak,
            (unsigned long long)t.advised_total, (unsigned long long)t.declined);
  /* the columns' widths are the header's: each number right-aligned under its title */
  axi_write("  class  block size       mallocs  live (this thread)\n");
  for (unsigned c = 1; c < AX_CLASSES; c++)
    if (s.class_mallocs[c] || s.class_live[c])
      axi_write("  %5d  %10llu  %12llu  %18llu\n", (int)c, (unsigned long long)axi_class_size(c),
                (unsigned long long)s.class_mallocs[c], (unsigned long long)s.class_live[c]);
}

const char axi_link_stats_o; /* (linkage.h: every object refers to it) */

__attribute__((destructor)) static void stats_at_exit(void) {
  if (axi_options.stats) {
    axi_write_to_saved_stderr();
    ax_stats_print();
  }
}

void ax_info(ax_info_t *out) {
  if (axi_tls_heap == &axi_heap_empty)
    axi_heap_get(); /* the choices are made at the first malloc: make them now */
  out->arch = AX_ARCH_NAME;
  out->atomics = ax_arch_atomics_name();
  out->bulk_zero = axi_bulk_zero_name();
  out->bulk_copy = axi_bulk_copy_name();
  out->cpu_features = ax_arch_cpu_features();
  out->single_threaded = axi_single_threaded();
  out->remote_frees_possible = !axi_remote_frees_impossible();
  out->mte = axi_mte_state;
  out->prof_sample = axi_prof_on ? (size_t)axi_prof_rate() : 0;
  out->page_size = axi_os_page;
}

void ax_thp_info(ax_thp_info_t *out) {
  if (axi_tls_heap == &axi_heap_empty)
    axi_heap_get(); /* (as ax_info) */
  out->option = axi_thp_option_name();
  out->kernel = axi_thp_kernel_name();
  out->page_size = axi_thp_size();
  out->advised = ax_atomic_load_relaxed(&axi_stats.thp_advised);
  out->advised_peak = ax_atomic_load_relaxed(&axi_stats.thp_advised_peak);
  out->advised_total = ax_atomic_load_relaxed(&axi_stats.thp_advised_total);
  out->declined = ax_atomic_load_relaxed(&axi_stats.thp_declined);
}
