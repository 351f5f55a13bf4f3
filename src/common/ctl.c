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
 *
 * Beside the fixed names: opt.<option> from the options' table, stats.classes.<c>.* and
 * thread.classes.<c>.* for every size class, and "names" (ax_ctl_name) listing them all, built
 * once into static memory, so that a program can find every figure without allocating.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "lifecycle.h"
#include "lock.h"
#include "modes/guard.h"
#include "modes/prof.h"
#include "options.h"
#include "os.h"
#include "page.h"
#include "pagemap.h"
#include "pool.h"
#include "print.h"
#include "remote.h"
#include "segment.h"
#include "state.h"
#include "thp.h"

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

/* Guarded sampling's counts (modes/guard.c), taken together. */
static ax_guard_counts_t guard_counts(void) {
  ax_guard_counts_t c;
  axi_guard_counts(&c);
  return c;
}

/* Bytes of live blocks: every page's live blocks, less the heaps' caches, and the huge
 * blocks. Exact while no other thread allocates or frees; otherwise each page as it was when
 * the walk read it. */
static void get_allocated(void *out) {
  uint64_t cached = 0;
  axi_heap_foreach(add_cached, &cached);
  uint64_t live = axi_segment_live_bytes();
  live = live > cached ? live - cached : 0;
  /* (guarded blocks: the bytes asked for, which they hold) */
  *(size_t *)out =
      (size_t)(live + ax_atomic_load_relaxed(&axi_stats.huge_live) + guard_counts().live_bytes);
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
  axi_option_set(AXI_OPTION_PURGE_DELAY_MS, ms); /* (opt.purge_delay_ms reads it back) */
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

/* Statistics as JSON into a file (ax_stats_write's "J"): a figure a program asks for at a
 * moment of its choosing, as prof.dump writes a profile. */
static void to_fd(void *arg, const char *text) {
  int fd = *(int *)arg;
  for (size_t n = strlen(text); n > 0 && fd >= 0;) {
    long w = axi_os_write(fd, text, n);
    if (w <= 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      *(int *)arg = -errno - 1; /* (the first error is kept, the rest is not written) */
      return;
    }
    text += w;
    n -= (size_t)w;
  }
}

static int set_stats_dump(const void *in) {
  const char *path = *(const char *const *)in;
  if (!path || !*path)
    return EINVAL;
  int fd = axi_os_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return errno;
  int st = fd;
  ax_stats_write(to_fd, &st, "J");
  axi_os_close(fd);
  return st >= 0 ? 0 : -(st + 1);
}

/* Guarded sampling (modes/guard.c): blocks handed out, live now, samples that found every slot
 * live, the pool's slots: one field of its counts each (guard_counts, above). */
static void get_guard_samples(void *out) { *(uint64_t *)out = guard_counts().samples; }
static void get_guard_live(void *out) { *(uint64_t *)out = guard_counts().live; }
static void get_guard_skipped(void *out) { *(uint64_t *)out = guard_counts().skipped; }
static void get_guard_slots(void *out) { *(uint64_t *)out = guard_counts().slots; }

/* Transparent huge pages under auto: what the probes found (thp.c). */
static void get_thp_choice(void *out) { *(const char **)out = axi_thp_choice(); }
static void get_thp_cost_huge(void *out) { *(uint64_t *)out = axi_thp_cost_huge(); }
static void get_thp_cost_small(void *out) { *(uint64_t *)out = axi_thp_cost_small(); }
static void get_thp_probes(void *out) { *(uint64_t *)out = axi_thp_probes(); }
static void get_thp_defrag(void *out) { *(const char **)out = axi_thp_defrag_name(); }

static const char *names_list(void);

static void get_names(void *out) { *(const char **)out = names_list(); }

static const ctl_entry_t entries[] = {
    {"names", T_STR, get_names, NULL},
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
    {"stats.dump", T_STR, NULL, set_stats_dump},
    {"guard.samples", T_U64, get_guard_samples, NULL},
    {"guard.live", T_U64, get_guard_live, NULL},
    {"guard.skipped", T_U64, get_guard_skipped, NULL},
    {"guard.slots", T_U64, get_guard_slots, NULL},
    {"thp.choice", T_STR, get_thp_choice, NULL},
    {"thp.cost_huge", T_U64, get_thp_cost_huge, NULL},
    {"thp.cost_small", T_U64, get_thp_cost_small, NULL},
    {"thp.probes", T_U64, get_thp_probes, NULL},
    {"thp.defrag", T_STR, get_thp_defrag, NULL},
};

/* ---- opt.<name>: the options as read at start-up ------------------------------------- */

/* The options a program may change at run time, each read where it acts after a write:
 *   stats           the report at exit (stats.c's destructor), read at exit
 *   purge_delay_ms  as purge.delay_ms: empty pages retired from now on wait this long
 *   thp             the advice of mappings made from now on (thp.c reads it per mapping);
 *                   mappings made, and those cached, keep theirs
 *   guard           guarded sampling's mean interval: each class's next countdown is drawn
 *                   with it (a class counting down at 0 looks again within 2^20 blocks);
 *                   not in checked mode or with tagging, where sampling is off (EPERM)
 * The others are fixed at start-up, because what they chose is built into memory that exists:
 * checked mode, tagging, the leak checker, the profiler and its stacks lay out every block
 * and page from the first malloc; the page size is every segment's geometry; force_isa and
 * force_mt choose kernels and atomics once; the profile's sample interval is in every
 * profile's header (heap_v2/<rate>: pprof scales every sample by it, so samples taken at two
 * rates cannot be one profile); its signal handler and its file prefix are set up once;
 * verbose says only what start-up chose; the leak checker's exit code and suppressions are
 * read by it at init. */
static bool opt_writable(enum axi_option o) {
  return o == AXI_OPTION_STATS || o == AXI_OPTION_PURGE_DELAY_MS || o == AXI_OPTION_THP ||
         o == AXI_OPTION_GUARD;
}

/* A copy of stderr for the report at exit (print.c): 1 taken (by process init, when
 * AXMALLOC_STATS was on there, or by a write), 2 not taken; 0 until the first write of
 * opt.stats, which sees the option as process init did. Taken once: a copy is a descriptor. */
static ax_atomic_word stderr_kept;

static int opt_write(enum axi_option o, const void *in) {
  switch (o) {
  case AXI_OPTION_STATS: {
    bool on = *(const bool *)in;
    uintptr_t seen = 0;
    ax_atomic_cas_acq_rel(&stderr_kept, &seen, axi_option_num(AXI_OPTION_STATS) ? 1 : 2);
    seen = 2;
    if (on && ax_atomic_cas_acq_rel(&stderr_kept, &seen, 1))
      axi_write_keep_stderr(); /* (programs that close stderr at exit: print.c) */
    axi_option_set(o, on);
    ax_poke(&axi_options.stats, (int)on);
    return 0;
  }
  case AXI_OPTION_PURGE_DELAY_MS:
    return set_purge_delay(in);
  case AXI_OPTION_THP: {
    const char *word = *(const char *const *)in;
    int k = word ? axi_option_word(o, word) : -1;
    if (k < 0)
      return EINVAL;
    axi_option_set(o, (uint64_t)k);
    ax_poke(&axi_options.thp, (enum ax_thp_option)k);
    return 0;
  }
  case AXI_OPTION_GUARD: {
    size_t mean = *(const size_t *)in;
    if (mean > ((uint64_t)1 << 40))
      return EINVAL;
    if (!axi_guard_set_rate(mean))
      return EPERM;
    axi_option_set(o, mean);
    return 0;
  }
  default:
    return EPERM;
  }
}

static ctl_type_t opt_type(const ax_option_view_t *v) {
  return v->kind == AXI_OPT_BOOL   ? T_BOOL
         : v->kind == AXI_OPT_SIZE ? T_SIZE
         : v->kind == AXI_OPT_UINT ? T_U64
                                   : T_STR;
}

/* Options are read as bools, sizes as size_t, numbers as uint64_t, words (a choice, a path, a
 * signal as given) as const char *; opt_write says which can be written. */
static int run_opt(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  ax_option_view_t v;
  size_t i = 0;
  while (axi_option_at(i++, &v) && strcmp(name, v.name) != 0) /* ("opt.prof_sample") */
    ;
  if (strcmp(name, v.name) != 0) /* (the loop ran past the last) */
    return ENOENT;
  enum axi_option o = (enum axi_option)(i - 1);
  ctl_type_t t = opt_type(&v);
  bool read = oldp || oldlenp, write = newp || newlen;
  if (write && !opt_writable(o))
    return EPERM;
  if ((read && (!oldp || !oldlenp || *oldlenp != size_of(t))) ||
      (write && (!newp || newlen != size_of(t))) || (!read && !write))
    return EINVAL;
  if (t == T_BOOL && read)
    *(bool *)oldp = v.num != 0;
  else if (t == T_SIZE && read)
    *(size_t *)oldp = (size_t)v.num;
  else if (t == T_U64 && read)
    *(uint64_t *)oldp = v.num;
  else if (read)
    *(const char **)oldp = v.str;
  return write ? opt_write(o, newp) : 0;
}

/* ---- stats.classes.<c>.* and thread.classes.<c>.*: per size class ------------------------ */

/* The per-class names, each for every class c from 1 (the names list, and the call). */
static const struct class_name {
  const char *prefix, *field;
  ctl_type_t type;
} class_names[] = {
    {"stats.classes.", "size", T_SIZE},    /* the class's block size */
    {"stats.classes.", "mallocs", T_U64},  /* blocks handed out, every thread's */
    {"thread.classes.", "mallocs", T_U64}, /* ... the calling thread's */
    {"thread.classes.", "live", T_U64},    /* live blocks in the calling thread's pages */
};
#define CLASS_NAMES (sizeof class_names / sizeof class_names[0])

/* The calling thread's count of class c's blocks handed out: its pages' refills counted up to
 * now, as thread.allocated counts them. */
static uint64_t thread_class_mallocs(unsigned c) {
  ax_heap_t *heap = axi_tls_heap;
  if (heap == &axi_heap_empty)
    return 0;
  for (ax_page_t *page = heap->queue[c].first; page; page = page->next)
    axi_page_count_mallocs(heap, page);
  for (ax_page_t *page = heap->full.first; page; page = page->next)
    if (page->cls == c)
      axi_page_count_mallocs(heap, page);
  return heap->stats.class_mallocs[c];
}

/* "stats.classes.17.mallocs": the class (1 to AX_CLASSES - 1, in decimal without a leading 0)
 * and the field; read-only. */
static int run_class(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
  for (size_t k = 0; k < CLASS_NAMES; k++) {
    const struct class_name *cn = &class_names[k];
    size_t n = strlen(cn->prefix);
    if (strncmp(name, cn->prefix, n) != 0)
      continue;
    const char *d = name + n;
    unsigned c = 0;
    for (; *d >= '0' && *d <= '9' && c < AX_CLASSES; d++)
      c = c * 10 + (unsigned)(*d - '0');
    if (c == 0 || c >= AX_CLASSES || name[n] == '0' || *d != '.' || strcmp(d + 1, cn->field))
      continue;
    if (newp || newlen)
      return EPERM;
    if (!oldp || !oldlenp || *oldlenp != size_of(cn->type))
      return EINVAL;
    if (cn->type == T_SIZE) {
      *(size_t *)oldp = axi_class_size(c);
    } else if (cn->prefix[0] == 's') {
      ax_stats_t s;
      ax_stats_get(&s);
      *(uint64_t *)oldp = s.class_mallocs[c];
    } else if (strcmp(cn->field, "mallocs") == 0) {
      *(uint64_t *)oldp = thread_class_mallocs(c);
    } else {
      ax_stats_t s; /* (its class_live is the calling thread's, less its cache) */
      ax_stats_get(&s);
      *(uint64_t *)oldp = s.class_live[c];
    }
    return 0;
  }
  return ENOENT;
}

/* ---- the names, listed ------------------------------------------------------------------ */

/* Every name once, NUL-separated, an empty name last: built at the first ask into static
 * memory (no allocation), since opt.* and the per-class names are made from tables. About 7
 * KiB now; a table that outgrows NAMES_MAX or NAMES_N is fatal at the first ask (every test
 * that lists names sees it). */
#define NAMES_MAX 16384
#define NAMES_N 512
static char names_buf[NAMES_MAX];
static uint16_t names_at[NAMES_N];
static uint8_t names_type[NAMES_N], names_access[NAMES_N]; /* access: 1 read | 2 write */
static size_t names_n, names_used;
static ax_atomic_word names_once;

static void name_add(const char *a, const char *b, ctl_type_t t, unsigned access) {
  size_t la = strlen(a), lb = b ? strlen(b) : 0;
  if (names_n == NAMES_N || names_used + la + lb + 2 > NAMES_MAX)
    axi_fatal("axmalloc: ctl.c: more names than NAMES_N or NAMES_MAX hold\n");
  names_at[names_n] = (uint16_t)names_used;
  names_type[names_n] = (uint8_t)t;
  names_access[names_n++] = (uint8_t)access;
  memcpy(names_buf + names_used, a, la);
  if (b) /* (memcpy from NULL is undefined, even of 0 bytes: the ubsan stage) */
    memcpy(names_buf + names_used + la, b, lb);
  names_used += la + lb;
  names_buf[names_used++] = 0;
  names_buf[names_used] = 0; /* (the empty name that ends the list) */
}

static void names_build(void) {
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    name_add(entries[i].name, NULL, entries[i].type,
             (entries[i].get ? 1u : 0u) | (entries[i].set ? 2u : 0u));
  ax_option_view_t v;
  for (size_t i = 0; axi_option_at(i, &v); i++) {
    name_add("opt.", v.name, opt_type(&v), 1u | (opt_writable((enum axi_option)i) ? 2u : 0u));
  }
  for (size_t k = 0; k < CLASS_NAMES; k++)
    for (unsigned c = 1; c < AX_CLASSES; c++) {
      char rest[48], digits[8], *d = digits + sizeof digits;
      *--d = 0;
      for (unsigned x = c; x; x /= 10)
        *--d = (char)('0' + x % 10);
      strcpy(stpcpy(stpcpy(rest, d), "."), class_names[k].field);
      name_add(class_names[k].prefix, rest, class_names[k].type, 1);
    }
}

static const char *names_list(void) {
  if (!axi_once_is_done(&names_once) && axi_once_enter(&names_once)) {
    names_build();
    axi_once_done(&names_once);
  }
  return names_buf;
}

const char *ax_ctl_name(size_t i, const char **type, const char **access) {
  static const char *const types[] = {[T_VOID] = "void",
                                      [T_BOOL] = "bool",
                                      [T_U64] = "uint64_t",
                                      [T_SIZE] = "size_t",
                                      [T_STR] = "const char *"};
  static const char *const accesses[] = {"", "r", "w", "rw"};
  if (axi_tls_heap == &axi_heap_empty)
    axi_heap_get(); /* (as ax_ctl) */
  names_list();
  if (i >= names_n)
    return NULL;
  if (type)
    *type = types[names_type[i]];
  if (access)
    *access = accesses[names_access[i]];
  return names_buf + names_at[i];
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
  else if (strstr(name, ".classes."))
    rc = run_class(name, oldp, oldlenp, newp, newlen);
  else
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
      if (strcmp(name, entries[i].name) == 0) {
        rc = run(&entries[i], oldp, oldlenp, newp, newlen);
        break;
      }
  errno = saved;
  return rc;
}
