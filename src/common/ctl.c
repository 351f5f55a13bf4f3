/* SPDX-License-Identifier: MIT */
/* ax_ctl: the statistics and controls by name, called as jemalloc's mallctl is
 * (ax_ctl("stats.allocated", &v, &len, NULL, 0)), so that programs that read jemalloc's
 * figures (Redis, RocksDB...) read ours the same way. The names, their types and what each
 * figure counts are listed in include/axmalloc.h and axmalloc(3).
 *
 * A read copies the value to *oldp when *oldlenp is its size; a write takes *newp when
 * newlen is its size. Returns 0, ENOENT (no such name), EINVAL (a length that is not the
 * value's, or a value out of range), EPERM (a write to a read-only name, or a read of a
 * write-only one), or what the action returned (prof.dump). errno is left as it was.
 */
#include <errno.h>
#include <string.h>

#include "lifecycle.h"
#include "modes/prof.h"
#include "options.h"
#include "page.h"
#include "pagemap.h"
#include "pool.h"
#include "remote.h"
#include "segment.h"
#include "state.h"

#define AX_STR_(x) #x
#define AX_STR(x) AX_STR_(x)

typedef enum { T_VOID, T_BOOL, T_U64, T_SIZE, T_STR } ctl_type_t;

/* One name: what it holds, how it is read (NULL: write-only) and written (NULL: read-only). */
typedef struct ctl_entry {
  const char *name;
  ctl_type_t type;
  void (*get)(void *out);
  int (*set)(const void *in);
} ctl_entry_t;

static size_t size_of(ctl_type_t t) {
  return t == T_BOOL   ? sizeof(bool)
         : t == T_U64  ? sizeof(uint64_t)
         : t == T_SIZE ? sizeof(size_t)
         : t == T_STR  ? sizeof(const char *)
                       : 0;
}

/* ---- the process's bytes --------------------------------------------------------------- */

/* Blocks in a heap's cache: freed, yet live in their pages' counts (cache.c). */
static void add_cached(ax_heap_t *heap, void *arg) {
  uint64_t *bytes = arg;
  for (unsigned i = 0; i < AX_CACHE_N; i++)
    *bytes += (uint64_t)ax_peek(&heap->cache.n[i]) * axi_class_size(AX_CACHE_FIRST + i);
  unsigned last = ax_peek(&heap->cache.last_cls);
  if (last)
    *bytes += axi_class_size(last);
  ax_block_t *aside = ax_peek(&heap->cache.aside);
  if (aside)
    *bytes += axi_page_of(axi_segment_of(aside), aside)->block_size;
}

/* Bytes of live blocks: every page's live blocks, less the heaps' caches, and the huge
 * blocks. Exact while no other thread allocates or frees; otherwise each page as it was when
 * the walk read it. */
static void get_allocated(void *out) {
  uint64_t cached = 0;
  axi_heap_foreach(add_cached, &cached);
  uint64_t live = axi_segment_live_bytes();
  live = live > cached ? live - cached : 0;
  *(size_t *)out = (size_t)(live + ax_atomic_load_relaxed(&axi_stats.huge_live));
}

static void get_active(void *out) { *(size_t *)out = ax_atomic_load_relaxed(&axi_stats.in_use); }

static void get_resident(void *out) {
  *(size_t *)out = ax_atomic_load_relaxed(&axi_stats.os_committed);
}

static void get_mapped(void *out) {
  *(size_t *)out = ax_atomic_load_relaxed(&axi_stats.os_reserved);
}

static void get_retained(void *out) {
  uintptr_t mapped = ax_atomic_load_relaxed(&axi_stats.os_reserved),
            resident = ax_atomic_load_relaxed(&axi_stats.os_committed);
  *(size_t *)out = mapped > resident ? mapped - resident : 0;
}

/* ---- the calling thread's bytes ---------------------------------------------------------- */

typedef struct thread_bytes {
  uint64_t made, live; /* bytes handed out by its pages; live in them now */
} thread_bytes_t;

static void add_pages(ax_heap_t *heap, ax_page_t *page, thread_bytes_t *t) {
  for (; page; page = page->next) {
    axi_page_count_mallocs(heap, page);
    t->live += (uint64_t)axi_page_live(page) * page->block_size;
  }
}

/* The blocks the heap handed out (each class's count, which page refills and cache hits
 * keep), and the live bytes of its pages less its cache's. pre: heap is the calling
 * thread's. */
static thread_bytes_t thread_bytes(ax_heap_t *heap) {
  thread_bytes_t t = {0, 0};
  for (unsigned c = 1; c < AX_CLASSES; c++)
    add_pages(heap, heap->queue[c].first, &t);
  add_pages(heap, heap->full.first, &t);
  for (unsigned c = 1; c < AX_CLASSES; c++) /* (a block its cache hands out is counted) */
    t.made += heap->stats.class_mallocs[c] * axi_class_size(c);
  uint64_t cached = 0;
  add_cached(heap, &cached);
  t.live = t.live > cached ? t.live - cached : 0;
  return t;
}

static void get_thread_allocated(void *out) {
  ax_heap_t *heap = axi_tls_heap;
  uint64_t v = 0;
  if (heap != &axi_heap_empty)
    v = thread_bytes(heap).made + heap->stats.huge_bytes;
  *(uint64_t *)out = v;
}

/* The bytes of its blocks no longer live: freed by it or, once it collected them, by other
 * threads (a reclaimed segment's live blocks count as its own); huge blocks where freed. */
static void get_thread_deallocated(void *out) {
  ax_heap_t *heap = axi_tls_heap;
  uint64_t v = 0;
  if (heap != &axi_heap_empty) {
    thread_bytes_t t = thread_bytes(heap);
    uint64_t had = t.made + heap->stats.adopted_bytes;
    v = (had > t.live ? had - t.live : 0) + heap->stats.huge_freed_bytes;
  }
  *(uint64_t *)out = v;
}

/* ---- controls ------------------------------------------------------------------------- */

static uint64_t epoch = 1;

static void get_epoch(void *out) { *(uint64_t *)out = ax_peek(&epoch); }

/* Figures are taken when read: a new epoch refreshes nothing, and is counted for callers
 * that wait for it to change (jemalloc's idiom: write epoch, then read). */
static int set_epoch(const void *in) {
  (void)in;
  __atomic_fetch_add(&epoch, 1, __ATOMIC_RELAXED);
  return 0;
}

static void get_version(void *out) {
  *(const char **)out = AX_STR(AX_VERSION_MAJOR) "." AX_STR(AX_VERSION_MINOR);
}

static void get_purge_delay(void *out) { *(uint64_t *)out = ax_peek(&axi_options.purge_delay_ms); }

/* Read by every heap's next purge tick: empty pages retired from then on wait this long. */
static int set_purge_delay(const void *in) {
  uint64_t ms = *(const uint64_t *)in;
  if (ms > AX_PURGE_DELAY_MAX_MS)
    return EINVAL;
  ax_poke(&axi_options.purge_delay_ms, ms);
  return 0;
}

static int set_purge(const void *in) {
  (void)in;
  ax_trim(0);
  return 0;
}

static void get_prof_active(void *out) { *(bool *)out = axi_prof_active(); }

/* Sampling is switched on and off while the profiler runs: it is started (AXMALLOC_PROF=1)
 * before the first allocation or not at all. */
static int set_prof_active(const void *in) {
  if (!axi_prof_on)
    return EPERM;
  axi_prof_set_active(*(const bool *)in);
  return 0;
}

static int set_prof_dump(const void *in) { return ax_prof_dump(*(const char *const *)in); }

/* Idle threads' batches of remote frees, sent by others (remote.c): how, and how often. */
static void get_remote_steal(void *out) { *(const char **)out = axi_remote_steal_mode(); }
static void get_remote_steals(void *out) {
  *(uint64_t *)out = ax_atomic_load_relaxed(&axi_stats.remote_steals);
}
static void get_remote_sweeps(void *out) { *(uint64_t *)out = axi_remote_sweeps(); }

/* Bounded waits whose spin ran out, so that the thread slept in the kernel (lock.c, os.c). */
static void get_sleeps(void *out) { *(uint64_t *)out = ax_atomic_load_relaxed(&axi_stats.sleeps); }

static const ctl_entry_t entries[] = {
    {"version", T_STR, get_version, NULL},
    {"epoch", T_U64, get_epoch, set_epoch},
    {"stats.allocated", T_SIZE, get_allocated, NULL},
    {"stats.active", T_SIZE, get_active, NULL},
    {"stats.resident", T_SIZE, get_resident, NULL},
    {"stats.mapped", T_SIZE, get_mapped, NULL},
    {"stats.retained", T_SIZE, get_retained, NULL},
    {"thread.allocated", T_U64, get_thread_allocated, NULL},
    {"thread.deallocated", T_U64, get_thread_deallocated, NULL},
    {"purge.delay_ms", T_U64, get_purge_delay, set_purge_delay},
    {"purge", T_VOID, NULL, set_purge},
    {"prof.active", T_BOOL, get_prof_active, set_prof_active},
    {"prof.dump", T_STR, NULL, set_prof_dump},
    {"remote.steal", T_STR, get_remote_steal, NULL},
    {"stats.remote_steals", T_U64, get_remote_steals, NULL},
    {"stats.remote_sweeps", T_U64, get_remote_sweeps, NULL},
    {"stats.sleeps", T_U64, get_sleeps, NULL},
};

/* ---- opt.<name>: the options as read at start-up ------------------------------------- */

/* "opt.prof_sample" names AXMALLOC_PROF_SAMPLE: the part after AXMALLOC_, in lower case. */
static bool opt_named(const char *name, const char *env) {
  const char *e = env + sizeof "AXMALLOC_" - 1;
  for (; *name && *e; name++, e++)
    if (*name != (*e >= 'A' && *e <= 'Z' ? *e - 'A' + 'a' : *e))
      return false;
  return *name == *e;
}

/* Options are read-only: bools as bool, sizes as size_t, numbers as uint64_t, words (a
 * choice, a path, a signal as given) as const char *. */
static int run_opt(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  ax_option_view_t v;
  size_t i = 0;
  while (axi_option_at(i++, &v) && !opt_named(name, v.env))
    ;
  if (!opt_named(name, v.env))
    return ENOENT;
  if (newp || newlen)
    return EPERM;
  ctl_type_t t = v.kind == AXI_OPT_BOOL   ? T_BOOL
                 : v.kind == AXI_OPT_SIZE ? T_SIZE
                 : v.kind == AXI_OPT_UINT ? T_U64
                                          : T_STR;
  if (!oldp || !oldlenp || *oldlenp != size_of(t))
    return EINVAL;
  if (t == T_BOOL)
    *(bool *)oldp = v.num != 0;
  else if (t == T_SIZE)
    *(size_t *)oldp = (size_t)v.num;
  else if (t == T_U64)
    *(uint64_t *)oldp = v.num;
  else
    *(const char **)oldp = v.str;
  return 0;
}

/* ---- the call ------------------------------------------------------------------------- */

static int run(const ctl_entry_t *e, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  bool read = oldp != NULL || oldlenp != NULL, write = newp != NULL || newlen != 0;
  if (e->type == T_VOID) /* an action: called with nothing to read or write */
    return read ? EPERM : write ? EINVAL : e->set(NULL);
  size_t n = size_of(e->type);
  if ((read && !e->get) || (write && !e->set))
    return EPERM;
  if ((read && (!oldp || !oldlenp || *oldlenp != n)) || (write && (!newp || newlen != n)))
    return EINVAL;
  if (read)
    e->get(oldp);
  return write ? e->set(newp) : 0;
}

int ax_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  if (!name)
    return EINVAL;
  int saved = errno;
  if (axi_tls_heap == &axi_heap_empty)
    axi_heap_get(); /* process init, so that options and figures exist (as ax_info) */
  int rc = ENOENT;
  if (strncmp(name, "opt.", 4) == 0)
    rc = run_opt(name + 4, oldp, oldlenp, newp, newlen);
  else
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
      if (strcmp(name, entries[i].name) == 0) {
        rc = run(&entries[i], oldp, oldlenp, newp, newlen);
        break;
      }
  errno = saved;
  return rc;
}
