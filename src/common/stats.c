/* SPDX-License-Identifier: MIT */
/* Statistics: process-wide counters updated on slow paths only, per-heap counters merged
 * in when a thread exits, and a report that needs no stdio: as text with human units
 * (AXMALLOC_STATS=1 at exit, ax_stats_print) or as JSON (ax_stats_write's "J", as jemalloc's
 * malloc_stats_print), through a callback. */
#include <string.h>
#include <unistd.h>

#include "bulk.h"
#include "lifecycle.h"
#include "modes/check.h"
#include "modes/prof.h"
#include "options.h"
#include "page.h"
#include "pool.h"
#include "print.h"
#include "state.h"
#include "thp.h"
#include "zero.h"

#define AX_STR_(x) #x
#define AX_STR(x) AX_STR_(x)

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

/* ---- the report: text or JSON, through a callback -------------------------------------- */

/* The report is built in a buffer on the stack and handed to the callback a piece at a time
 * (NUL-terminated, at most 511 bytes), so that it allocates nothing while it walks the heaps;
 * its figures are all taken before the first piece goes out (take_figures), so a callback
 * that allocates (a FILE *'s buffer) changes nothing the report says. */
typedef struct out {
  void (*write)(void *arg, const char *text);
  void *arg;
  bool human; /* byte figures in KiB, MiB, ... (the text report, unless "b") */
  bool comma; /* JSON: a value came before in this object or array */
  unsigned n; /* bytes in buf */
  char buf[512];
} out_t;

static void flush(out_t *o) {
  if (!o->n)
    return;
  o->buf[o->n] = 0;
  o->write(o->arg, o->buf);
  o->n = 0;
}

static void put(out_t *o, const char *s) {
  for (; *s; s++) {
    if (o->n == sizeof o->buf - 1)
      flush(o);
    o->buf[o->n++] = *s;
  }
}

static void put_u(out_t *o, uint64_t v) {
  char tmp[24], *t = tmp + sizeof tmp;
  *--t = 0;
  do
    *--t = (char)('0' + v % 10);
  while (v /= 10);
  put(o, t);
}

/* v right-aligned in width columns (the class table's). */
static void put_col(out_t *o, uint64_t v, unsigned width) {
  unsigned digits = 1;
  for (uint64_t x = v; x >= 10; x /= 10)
    digits++;
  for (; width > digits; width--)
    put(o, " ");
  put_u(o, v);
}

/* Bytes, in the text report: "512 B", "1.5 KiB", "12.0 MiB" (tenths, rounded), or "123456 B"
 * with "b" (exact figures for scripts). */
static void put_bytes(out_t *o, uint64_t v) {
  static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (!o->human || v < 1024) {
    put_u(o, v);
    put(o, " B");
    return;
  }
  unsigned k = 0;
  uint64_t d = 1024;
  while (k < 5 && v / d >= 1024)
    d <<= 10, k++;
  uint64_t whole = v / d, tenth = ((v % d) / (d / 1024) * 10 + 512) / 1024;
  if (tenth == 10)
    whole++, tenth = 0;
  put_u(o, whole);
  char frac[] = {'.', (char)('0' + tenth), ' ', 0};
  put(o, frac);
  put(o, unit[k]);
}

/* JSON: a string, escaped (a path may hold anything). */
static void put_json_str(out_t *o, const char *s) {
  put(o, "\"");
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    char esc[8] = {'\\', (char)c, 0};
    if (c == '"' || c == '\\') {
      put(o, esc);
    } else if (c < 0x20) {
      char hex[] = {'\\', 'u', '0', '0', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15], 0};
      put(o, hex);
    } else {
      esc[0] = (char)c, esc[1] = 0;
      put(o, esc);
    }
  }
  put(o, "\"");
}

static void key(out_t *o, const char *k) {
  if (o->comma)
    put(o, ",");
  o->comma = true;
  if (k) {
    put_json_str(o, k);
    put(o, ":");
  }
}

static void j_num(out_t *o, const char *k, uint64_t v) {
  key(o, k);
  put_u(o, v);
}

static void j_str(out_t *o, const char *k, const char *v) {
  key(o, k);
  put_json_str(o, v);
}

static void j_open(out_t *o, const char *k, const char *brace) {
  key(o, k);
  put(o, brace);
  o->comma = false;
}

static void j_close(out_t *o, const char *brace) {
  put(o, brace);
  o->comma = true;
}

/* Every figure of a report, taken before its first piece is written: the callback may
 * allocate (a FILE *'s buffer) without changing what the report says. What only ax_ctl
 * computes (the walk of every page, the calling thread's bytes, the steals) is read through
 * it, so that the report and the names say the same. */
typedef struct figures {
  ax_stats_t s;
  ax_thp_info_t t;
  uint64_t allocated, retained, sleeps, steals, sweeps, thread_allocated, thread_deallocated;
} figures_t;

static uint64_t ctl_u64(const char *name) {
  uint64_t v = 0;
  size_t len = sizeof v;
  return ax_ctl(name, &v, &len, NULL, 0) == 0 ? v : 0;
}

static uint64_t ctl_size(const char *name) {
  size_t v = 0, len = sizeof v;
  return ax_ctl(name, &v, &len, NULL, 0) == 0 ? v : 0;
}

static void take_figures(figures_t *f) {
  ax_stats_get(&f->s);
  ax_thp_info(&f->t);
  f->allocated = ctl_size("stats.allocated");
  f->retained = ctl_size("stats.retained");
  f->sleeps = ctl_u64("stats.sleeps");
  f->steals = ctl_u64("stats.remote_steals");
  f->sweeps = ctl_u64("stats.remote_sweeps");
  f->thread_allocated = ctl_u64("thread.allocated");
  f->thread_deallocated = ctl_u64("thread.deallocated");
}

static void write_json(out_t *o, const figures_t *f) {
  const ax_stats_t *s = &f->s;
  const ax_thp_info_t *t = &f->t;
  j_open(o, NULL, "{");
  j_open(o, "axmalloc", "{");
  j_str(o, "version", AX_STR(AX_VERSION_MAJOR) "." AX_STR(AX_VERSION_MINOR));
  j_num(o, "pid", (uint64_t)getpid());
  j_open(o, "stats", "{");
  j_num(o, "allocated", f->allocated);
  j_num(o, "active", s->in_use);
  j_num(o, "active_peak", s->in_use_peak);
  j_num(o, "resident", s->os_committed);
  j_num(o, "resident_peak", s->os_committed_peak);
  j_num(o, "mapped", s->os_reserved);
  j_num(o, "mapped_peak", s->os_reserved_peak);
  j_num(o, "retained", f->retained);
  j_num(o, "purged", s->os_purged);
  j_num(o, "mallocs", s->mallocs);
  j_num(o, "huge_allocs", s->huge_allocs);
  j_num(o, "huge_cache_hits", s->huge_cache_hits);
  j_num(o, "zero_live", s->zero_live);
  j_num(o, "heaps_live", s->heaps_live);
  j_num(o, "sleeps", f->sleeps);
  j_open(o, "syscalls", "{");
  j_num(o, "mmap", s->os_mmap_calls);
  j_num(o, "munmap", s->os_munmap_calls);
  j_num(o, "madvise", s->os_madvise_calls);
  j_num(o, "mremap", s->os_mremap_calls);
  j_num(o, "mprotect", s->os_mprotect_calls);
  j_close(o, "}");
  j_open(o, "segments", "{");
  j_num(o, "live", s->segments_live);
  j_num(o, "abandoned", s->segments_abandoned);
  j_num(o, "reclaimed", s->segments_reclaimed);
  j_close(o, "}");
  j_open(o, "remote", "{");
  j_num(o, "frees", s->remote_frees);
  j_num(o, "publishes", s->remote_publishes);
  j_num(o, "drains", s->remote_drains);
  j_num(o, "steals", f->steals);
  j_num(o, "sweeps", f->sweeps);
  j_close(o, "}");
  j_open(o, "thp", "{");
  j_str(o, "option", t->option);
  j_str(o, "kernel", t->kernel);
  j_num(o, "page_size", t->page_size);
  j_num(o, "advised", t->advised);
  j_num(o, "advised_peak", t->advised_peak);
  j_num(o, "advised_total", t->advised_total);
  j_num(o, "declined", t->declined);
  j_close(o, "}");
  j_close(o, "}");
  j_open(o, "thread", "{"); /* the calling thread's */
  j_num(o, "allocated", f->thread_allocated);
  j_num(o, "deallocated", f->thread_deallocated);
  j_close(o, "}");
  /* every class, so that classes[c - 1] is class c whatever the program did */
  j_open(o, "classes", "[");
  for (unsigned c = 1; c < AX_CLASSES; c++) {
    j_open(o, NULL, "{");
    j_num(o, "class", c);
    j_num(o, "size", axi_class_size(c));
    j_num(o, "mallocs", s->class_mallocs[c]);
    j_num(o, "live_thread", s->class_live[c]);
    j_close(o, "}");
  }
  j_close(o, "]");
  j_open(o, "options", "{"); /* as opt.<name> reads them */
  ax_option_view_t v;
  for (size_t i = 0; axi_option_at(i, &v); i++) {
    if (v.kind == AXI_OPT_WORD) {
      j_str(o, v.name, v.str);
    } else if (v.kind == AXI_OPT_BOOL) {
      key(o, v.name);
      put(o, v.num ? "true" : "false");
    } else {
      j_num(o, v.name, v.num);
    }
  }
  j_close(o, "}");
  j_close(o, "}");
  j_close(o, "}\n");
}

static void write_text(out_t *o, const figures_t *f) {
  const ax_stats_t *s = &f->s;
  const ax_thp_info_t *t = &f->t;
  put(o, "axmalloc stats (pid ");
  put_u(o, (uint64_t)getpid());
  put(o, "):\n  mallocs            ");
  put_u(o, s->mallocs);
  put(o, "\n  huge allocs        ");
  put_u(o, s->huge_allocs);
  put(o, " (cache hits ");
  put_u(o, s->huge_cache_hits);
  put(o, ")\n  allocated          ");
  put_bytes(o, f->allocated);
  put(o, " (live blocks)\n  in use (pages)     ");
  put_bytes(o, s->in_use);
  put(o, " (peak ");
  put_bytes(o, s->in_use_peak);
  put(o, ")\n  os reserved        ");
  put_bytes(o, s->os_reserved);
  put(o, " (peak ");
  put_bytes(o, s->os_reserved_peak);
  put(o, ")\n  os committed       ");
  put_bytes(o, s->os_committed);
  put(o, " (peak ");
  put_bytes(o, s->os_committed_peak);
  put(o, ")\n  os purged          ");
  put_bytes(o, s->os_purged);
  put(o, "\n  syscalls           mmap ");
  put_u(o, s->os_mmap_calls);
  put(o, ", munmap ");
  put_u(o, s->os_munmap_calls);
  put(o, ", madvise ");
  put_u(o, s->os_madvise_calls);
  put(o, ", mremap ");
  put_u(o, s->os_mremap_calls);
  put(o, ", mprotect ");
  put_u(o, s->os_mprotect_calls);
  put(o, "\n  segments           live ");
  put_u(o, s->segments_live);
  put(o, ", abandoned ");
  put_u(o, s->segments_abandoned);
  put(o, ", reclaimed ");
  put_u(o, s->segments_reclaimed);
  put(o, "\n  thread heaps live  ");
  put_u(o, s->heaps_live);
  put(o, "\n  remote frees       ");
  put_u(o, s->remote_frees);
  put(o, " (CASes ");
  put_u(o, s->remote_publishes);
  put(o, ", inboxes taken ");
  put_u(o, s->remote_drains);
  put(o, ")\n  huge pages         ");
  put(o, t->option);
  put(o, " (kernel ");
  put(o, t->kernel);
  put(o, ", ");
  put_bytes(o, t->page_size);
  put(o, "): advised ");
  put_bytes(o, t->advised);
  put(o, " (peak ");
  put_bytes(o, t->advised_peak);
  put(o, ", total ");
  put_bytes(o, t->advised_total);
  put(o, "), declined ");
  put_bytes(o, t->declined);
  /* the columns' widths are the header's: each number right-aligned under its title (the
   * block size in bytes: a column of figures to compare, t_options and t_launcher read it) */
  put(o, "\n  class  block size       mallocs  live (this thread)\n");
  for (unsigned c = 1; c < AX_CLASSES; c++)
    if (s->class_mallocs[c] || s->class_live[c]) {
      put(o, "  ");
      put_col(o, c, 5);
      put(o, "  ");
      put_col(o, axi_class_size(c), 10);
      put(o, "  ");
      put_col(o, s->class_mallocs[c], 12);
      put(o, "  ");
      put_col(o, s->class_live[c], 18);
      put(o, "\n");
    }
}

static void to_stderr(void *arg, const char *text) {
  (void)arg;
  axi_write("%s", text);
}

void ax_stats_write(void (*write)(void *arg, const char *text), void *arg, const char *opts) {
  out_t o = {write ? write : to_stderr, write ? arg : NULL, true, false, 0, {0}};
  bool json = opts && strchr(opts, 'J');
  o.human = !(opts && strchr(opts, 'b'));
  figures_t f;
  take_figures(&f);
  if (json)
    write_json(&o, &f);
  else
    write_text(&o, &f);
  flush(&o);
}

void ax_stats_print(void) { ax_stats_write(NULL, NULL, NULL); }

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
