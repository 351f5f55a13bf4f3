/* SPDX-License-Identifier: MIT */
/* axmalloc internals: every function one file of src/common offers another, declared layer
 * by layer from the bottom up, with the inline helpers of each layer. A file calls only into
 * its own layer and those below (tests/t_layers checks the built objects; docs/design.md
 * describes each layer; contracts are at the definitions). The data structures are in
 * types.h, the heap profiler's own in prof.h.
 *
 *   base       state.c options.c print.c os.c lock.c bulk.c (+ atomic.h, arch.h)
 *   maps       pagemap.c (the segment map is segment.c's)
 *   segments   thp.c segment.c
 *   blocks     list.c huge.c zero.c
 *   heap pool  pool.c
 *   remote     remote.c
 *   pages      page.c
 *   cache      cache.c
 *   heaps      heap.c
 *   modes      mte.c check.c, the profiler: prof_unwind.c prof_dump.c prof.c,
 *              the leak checker: symbolize.c leak_scan.c leak.c
 *   lifecycle  lifecycle.c
 *   entry      ptr.c alloc.c free.c override.c stats.c new_delete.cc cxx_replaced.c
 */
#ifndef AX_INTERNAL_H
#define AX_INTERNAL_H

#include "hooks.h"
#include "track.h"
#include "types.h"

/* ==== base: state.c ================================================================= */
/* The process's settings and flags, each set once by process init (lifecycle.c) before the
 * first page exists; the thread's heap slot. */

/* Checked mode (check.c): AXMALLOC_CHECK=1 at run time, or always on when built with
 * -DAX_CHECKED=ON. Set once by process init, before the first page exists. */
AXI_HIDDEN extern bool axi_checked;
/* Memory tagging on (mte.c): AXMALLOC_MTE=1 or checked mode, on a CPU with MTE. Set once by
 * process init, before the first page exists. */
AXI_HIDDEN extern bool axi_mte;
AXI_HIDDEN extern const char *axi_mte_state; /* "on", "off", "unavailable" */
/* Sampling heap profiler on (prof.c): AXMALLOC_PROF=1, not with checked mode or tagging.
 * Set once by process init, before the first page exists; read on slow paths only. */
AXI_HIDDEN extern bool axi_prof_on;
/* How the profiler walks stacks: AXMALLOC_PROF_UNWIND=libgcc|check (default: the table) */
enum { AX_UNWIND_TABLE, AX_UNWIND_LIBGCC, AX_UNWIND_CHECK };
AXI_HIDDEN extern uint8_t axi_prof_unwind_mode;
/* The exact leak checker on (leak.c): AXMALLOC_LEAKS=1 or all, not with checked mode or
 * tagging. Set once by process init, before the first page exists; 2: all (the still
 * reachable blocks reported too). */
AXI_HIDDEN extern uint8_t axi_leaks;
/* Checked mode keeps every block's stacks for its reports (leak.c, check.c): AXMALLOC_CHECK=1
 * with AXMALLOC_PROF=1. Set once by process init. */
AXI_HIDDEN extern bool axi_check_stacks;
/* The profiler or the leak checker is on: malloc's slow path goes to them. Set once by process
 * init, with them. */
AXI_HIDDEN extern bool axi_malloc_hooked;
/* Every malloc and free takes the slow paths (checked mode, tagging, the leak checker): the
 * direct tables hold only the empty page and every fast_cap is 0. */
static inline bool axi_slow_only(void) { return axi_checked || axi_mte || axi_leaks; }

AXI_HIDDEN extern ax_options_t axi_options;
AXI_HIDDEN extern size_t axi_os_page; /* the OS page size, read at run time */
AXI_HIDDEN extern ax_page_t axi_page_empty;
AXI_HIDDEN extern ax_heap_t axi_heap_empty;
AXI_HIDDEN extern __thread ax_heap_t *axi_tls_heap;

/* The thread is in its last TSD destructors: its heap was done (lifecycle.c, pool.c) */
AXI_HIDDEN extern __thread bool axi_thread_exited;
/* The entry point whose free is under way when it is not free() itself ("realloc": its
 * reports name it, print.c); NULL otherwise */
AXI_HIDDEN extern __thread const char *axi_freeing_for;
/* address ^ axi_cookie_key is every segment header's first word (segment.c) */
AXI_HIDDEN extern uintptr_t axi_cookie_key;
/* process-wide counters, touched only on slow paths */
AXI_HIDDEN extern ax_global_stats_t axi_stats;
/* counter += delta, and peak follows it up (if given). Any thread, any time. */
static inline void axi_stat_add(ax_atomic_word *counter, ax_atomic_word *peak, intptr_t delta) {
  uintptr_t now = ax_atomic_fetch_add_relaxed(counter, (uintptr_t)delta) + (uintptr_t)delta;
  if (!peak)
    return;
  uintptr_t seen = ax_atomic_load_relaxed(peak);
  while ((intptr_t)now > (intptr_t)seen && !ax_atomic_cas_acq_rel(peak, &seen, now))
    ;
}

/* ==== base: options.c ================================================================= */
/* The AXMALLOC_* options, read once by process init (what each kind accepts and the message
 * format are at the top of options.c). One id each, in the order AXMALLOC_VERBOSE=1 lists
 * them; a new option is an id here and a row in options.c's table (how: above the table). */
enum axi_option {
  AXI_OPTION_CHECK,
  AXI_OPTION_FORCE_ISA,
  AXI_OPTION_FORCE_MT,
  AXI_OPTION_LEAKS,
  AXI_OPTION_LEAKS_EXITCODE,
  AXI_OPTION_LEAKS_SUPPRESSIONS,
  AXI_OPTION_MTE,
  AXI_OPTION_PAGE_SIZE,
  AXI_OPTION_PROF,
  AXI_OPTION_PROF_FILE,
  AXI_OPTION_PROF_LEAKS,
  AXI_OPTION_PROF_SAMPLE,
  AXI_OPTION_PROF_SIGNAL,
  AXI_OPTION_PROF_UNWIND,
  AXI_OPTION_PURGE_DELAY_MS,
  AXI_OPTION_STATS,
  AXI_OPTION_THP,
  AXI_OPTION_VERBOSE,
  AXI_OPTION_COUNT
};
/* Every option parsed, a bad value or unknown AXMALLOC_* name reported in one line each, and
 * state.c's settings set (the page size, stats, verbose, the purge delay, forced
 * multi-threading, checked mode). pre: process init, alone, axi_os_page the kernel's. No
 * allocation; errno kept. */
AXI_HIDDEN void axi_options_read(void);
/* AXMALLOC_PURGE_DELAY_MS's bound, and ax_ctl's purge.delay_ms's (an hour) */
#define AX_PURGE_DELAY_MAX_MS 3600000u
/* An option's value: a bool's 0 or 1, a size or number, a choice's index (the order of its
 * words in the table, which is its owner's enum's), a signal's number. pre: options read. */
AXI_HIDDEN uint64_t axi_option_num(enum axi_option o);
/* A choice's word, a string, a signal as given (never NULL for these). pre: options read. */
AXI_HIDDEN const char *axi_option_str(enum axi_option o);
/* Whether the value came from the environment (not the default, not a rejected value). */
AXI_HIDDEN bool axi_option_from_env(enum axi_option o);
/* An owner's own check failed (a kernel bulk.c does not know, a signal that cannot be
 * caught): "axmalloc: <NAME>=<value> <why>: the default <d> is used" when say, and the default
 * from now on. pre: process init, alone. */
AXI_HIDDEN void axi_option_reject(enum axi_option o, const char *why, bool say);
/* The owner's form of a string (the absolute profile prefix), listed and read from now on.
 * pre: process init, alone; str lives as long as the process. */
AXI_HIDDEN void axi_option_resolved(enum axi_option o, const char *str);
/* AXMALLOC_VERBOSE=1: one line per option, its value and "(environment)" or "(default)". */
AXI_HIDDEN void axi_options_print(void);

/* The options read back (ax_ctl's "opt.<name>": env + 9, lower case), one view each. */
enum { AXI_OPT_BOOL, AXI_OPT_SIZE, AXI_OPT_UINT, AXI_OPT_WORD };
typedef struct ax_option_view {
  const char *env; /* "AXMALLOC_PROF_SAMPLE" */
  uint8_t kind;    /* AXI_OPT_BOOL, AXI_OPT_SIZE, AXI_OPT_UINT, AXI_OPT_WORD (string/enum) */
  uint64_t num;    /* bool and numbers (a choice's index, a signal's number too) */
  const char *str; /* words and strings, else NULL */
  bool from_env;
} ax_option_view_t;
/* pre: process init ran (axi_heap_get). Any thread. */
AXI_HIDDEN size_t axi_option_count(void);
AXI_HIDDEN bool axi_option_at(size_t i, ax_option_view_t *out); /* false past the end */

/* ==== base: os.c, print.c, locks ======================================================== */

/* os.c */
AXI_HIDDEN void *axi_os_map(size_t size);
AXI_HIDDEN void *axi_os_reserve(size_t size);
AXI_HIDDEN void *axi_os_reserve_aligned(size_t size, size_t align, size_t guard);
AXI_HIDDEN bool axi_os_protect(void *p, size_t size, bool access);
AXI_HIDDEN bool axi_os_commit(void *p, size_t size);
AXI_HIDDEN void *axi_os_map_aligned(size_t size, size_t align, size_t off);
AXI_HIDDEN void axi_os_unmap(void *p, size_t size);
AXI_HIDDEN void axi_os_purge(void *p, size_t size);
AXI_HIDDEN bool axi_os_zero_pages(void *p, size_t size);
AXI_HIDDEN bool axi_os_resident(const void *p);
AXI_HIDDEN bool axi_os_remap(void *p, size_t old_size, size_t new_size);
AXI_HIDDEN bool axi_os_move(void *p, size_t old_size, size_t new_size, void *target);
AXI_HIDDEN enum ax_thp_kernel axi_os_thp_read(const char *dir, size_t *size);
AXI_HIDDEN bool axi_os_thp_advise(void *p, size_t size, bool on);
AXI_HIDDEN int axi_os_open(const char *path, int flags, unsigned mode);
AXI_HIDDEN long axi_os_read(int fd, void *buf, size_t n);
AXI_HIDDEN long axi_os_write(int fd, const void *buf, size_t n);
AXI_HIDDEN int axi_os_close(int fd);
AXI_HIDDEN int axi_os_fcntl(int fd, int cmd, int arg);
AXI_HIDDEN bool axi_os_getcwd(char *buf, size_t size);
AXI_HIDDEN int axi_os_access(const char *path, int mode);
AXI_HIDDEN void *axi_os_map_file(int fd, size_t size);
AXI_HIDDEN long axi_os_file_size(int fd);
AXI_HIDDEN long axi_os_readlink(const char *path, char *buf, size_t n);
AXI_HIDDEN void axi_os_wait(ax_atomic_word *w, uint32_t v, unsigned ms);
AXI_HIDDEN void axi_os_wake(ax_atomic_word *w, uint32_t n);
AXI_HIDDEN uint64_t axi_now_ms(void);
AXI_HIDDEN uint64_t axi_random(void);
/* A full memory barrier on every other running thread of the process (membarrier(2)).
 * post: false when the kernel offers none (then nothing relies on it). No allocation. */
AXI_HIDDEN void axi_os_barrier_init(void); /* pre: process init, alone */
AXI_HIDDEN bool axi_os_barrier(void);
AXI_HIDDEN bool axi_os_barrier_available(void);

/* print.c: a printf subset (%s %d %zu %llu %p %x) to stderr, without stdio or allocation,
 * not a cancellation point */
AXI_HIDDEN void axi_write(const char *fmt, ...);
AXI_HIDDEN void axi_write_keep_stderr(void);
AXI_HIDDEN void axi_write_to_saved_stderr(void);
AXI_HIDDEN __attribute__((noreturn)) void axi_fatal(const char *fmt, ...);
/* err in words ("No such file or directory") for a message; "errno <n>" in buf (24 bytes)
 * for one without a name here. Without strerror: its translations may allocate. */
AXI_HIDDEN const char *axi_strerror(int err, char *buf);

AXI_HIDDEN __attribute__((noreturn)) void axi_invalid_free(const char *fn, const void *p);
AXI_HIDDEN __attribute__((noreturn)) void axi_double_free(const char *fn, const void *p);
AXI_HIDDEN __attribute__((noreturn)) void axi_bad_size(const char *fn, const void *p, size_t size,
                                                       size_t block);
AXI_HIDDEN void axi_say_invalid_free(const char *fn, const void *p);
AXI_HIDDEN void axi_say_double_free(const char *fn, const void *p);
AXI_HIDDEN void axi_say_bad_size(const char *fn, const void *p, size_t size, size_t block);
AXI_HIDDEN __attribute__((noreturn)) void axi_corrupted_transit(const void *b);
AXI_HIDDEN __attribute__((noreturn)) void axi_corrupted(const void *at);
AXI_HIDDEN __attribute__((noreturn)) void axi_corrupted_list(const ax_page_t *page,
                                                             const ax_block_t *b);

/* lock.c: locks (ax_lock_t, types.h). An uncontended lock is one compare-and-swap, its
 * unlock one exchange and no system call; a waiter spins AX_LOCK_SPINS times, then sleeps on
 * the word (counted in axi_stats.sleeps), and an unlock that finds AX_LOCK_WAITERS wakes one. */
#define AX_LOCK_SPINS 128u
AXI_HIDDEN void axi_lock_wait(ax_lock_t *l);
AXI_HIDDEN void axi_lock_wake(ax_lock_t *l);
/* Something done once, by the first thread to ask (axi_once_enter true: it does it, then
 * calls axi_once_done); the others return false once it is done, waiting for it as for a
 * lock. Its word starts 0; a caller tests axi_once_is_done first. */
AXI_HIDDEN bool axi_once_enter(ax_atomic_word *once);
AXI_HIDDEN void axi_once_done(ax_atomic_word *once);
static inline bool axi_once_is_done(ax_atomic_word *once) {
  return ax_atomic_load_acquire(once) == 2;
}
static inline uintptr_t axi_lock_holder(void) { return ax_arch_thread_id() | AX_LOCK_HELD; }
static inline bool axi_trylock(ax_lock_t *l) {
  uintptr_t expect = 0;
  bool ok = ax_atomic_load_relaxed(&l->word) == 0 &&
            ax_atomic_cas_acq_rel(&l->word, &expect, axi_lock_holder());
  if (ok)
    AX_HOOK(AX_HOOK_LOCKED, l);
  return ok;
}
static inline void axi_lock(ax_lock_t *l) {
  if (!axi_trylock(l))
    axi_lock_wait(l);
}
static inline void axi_unlock(ax_lock_t *l) {
  if (ax_atomic_xchg_acq_rel(&l->word, 0) & AX_LOCK_WAITERS)
    axi_lock_wake(l);
}
/* fork's prepare handler: take l, marked as held for the fork, unless this thread holds it
 * already (see above: then it stays with the interrupted section). glibc's own fork skips
 * its malloc locks in a single-threaded process for the same reason (tst-mallocfork2). */
static inline void axi_lock_for_fork(ax_lock_t *l) {
  if ((ax_atomic_load_relaxed(&l->word) & ~AX_LOCK_WAITERS) == axi_lock_holder())
    return;
  axi_lock(l);
  ax_atomic_fetch_or_acq_rel(&l->word, AX_LOCK_FORK);
}
/* fork's parent and child handlers: release what axi_lock_for_fork took, nothing else. */
static inline void axi_unlock_after_fork(ax_lock_t *l) {
  if ((ax_atomic_load_relaxed(&l->word) & ~AX_LOCK_WAITERS) == (axi_lock_holder() | AX_LOCK_FORK))
    axi_unlock(l);
}

/* ==== maps: pagemap.c, and segment.c's segment map ====================================== */

/* The segment map: one bit per 4 MiB of the 48-bit address space (8 MiB of zero pages
 * until used), set for the start of every live segment. free() consults it before
 * touching a segment header, so a foreign pointer is reported, never followed. */
#define AX_MAP_BITS (1u << (48 - AX_SEGMENT_SHIFT))
AXI_HIDDEN extern ax_atomic_word axi_segmap[AX_MAP_BITS / (8 * sizeof(uintptr_t))];

static inline bool axi_segmap_has(uintptr_t seg) {
  uintptr_t i = seg >> AX_SEGMENT_SHIFT;
  if (ax_unlikely(i >= AX_MAP_BITS))
    return false;
  const unsigned w = 8 * sizeof(uintptr_t);
  return (ax_atomic_load_relaxed(&axi_segmap[i / w]) >> (i % w)) & 1;
}

/* The page map (pagemap.c): the page descriptor of any pointer in two loads, for free()'s
 * fast path. One entry per 64 KiB slice of the 48-bit address space, in second-level
 * tables of 2^20 entries (8 MiB each, mapped when the first segment of their 64 GiB region
 * is), under a first level whose unused entries point at one shared table of zeros. An
 * entry names the page covering the slice (every slice of a medium or large page names
 * it; a huge mapping's first segment and its block's slice name its page 0), or is NULL:
 * not ours. A pointer above 2^48 aliases a lower slice: the block-start test, which
 * compares the whole pointer with the page's area, rejects it.
 * A first-level entry holds its table's address less the offset of its region's first slice
 * (i << (AX_PM_L2_BITS + 3)), so that the slice number itself indexes it: no mask for the
 * second level (integers, not pointers: a biased base points into no object). Shifting the
 * pointer left by 16 first drops the bits above 2^48. */
#define AX_SLICE_SHIFT 16
#define AX_PM_L2_BITS 20
#define AX_PM_L1_BITS (48 - AX_SLICE_SHIFT - AX_PM_L2_BITS)
AXI_HIDDEN extern uintptr_t axi_pagemap[(size_t)1 << AX_PM_L1_BITS];

static inline ax_page_t *axi_pagemap_get(const void *p) {
  uintptr_t q = (uintptr_t)p << 16;
  uintptr_t i = q >> (64 - AX_PM_L1_BITS), s = q >> (16 + AX_SLICE_SHIFT);
  return (ax_page_t *)ax_atomic_load_relaxed(
      (const ax_atomic_word *)(axi_pagemap[i] + s * sizeof(ax_page_t *)));
}

/* pagemap.c. pre: start and len multiples of 64 KiB. post: the slices of [start, start+len)
 * name page (NULL: clear them); false when a second-level table could not be mapped. */
AXI_HIDDEN bool axi_pagemap_set(uintptr_t start, size_t len, ax_page_t *page);
/* pagemap.c: whether region i of the first level (64 GiB) has a table of its own */
AXI_HIDDEN bool axi_pagemap_region_used(unsigned i);
static inline ax_segment_t *axi_segment_of(const void *p) {
  return (ax_segment_t *)((uintptr_t)p & ~AX_SEGMENT_MASK);
}

static inline ax_page_t *axi_page_of(ax_segment_t *seg, const void *p) {
  return &seg->pages[((uintptr_t)p - (uintptr_t)seg) >> seg->page_shift];
}

/* ==== segments: thp.c segment.c ======================================================= */

/* thp.c: where huge pages are asked for (the policy is at the top of thp.c) */
AXI_HIDDEN void axi_thp_init(void);
AXI_HIDDEN size_t axi_thp_size(void);
AXI_HIDDEN const char *axi_thp_option_name(void);
AXI_HIDDEN const char *axi_thp_kernel_name(void);
AXI_HIDDEN void axi_thp_apply(ax_segment_t *seg, size_t size, enum ax_kind kind);
AXI_HIDDEN void axi_thp_decline(ax_segment_t *seg, size_t size);
AXI_HIDDEN void axi_thp_resized(const ax_segment_t *seg, intptr_t delta);
AXI_HIDDEN size_t axi_thp_align(size_t need);
AXI_HIDDEN size_t axi_thp_round(size_t need);
AXI_HIDDEN bool axi_thp_purge_clip(const ax_segment_t *seg, uintptr_t *lo, uintptr_t *hi);

/* segment.c */
AXI_HIDDEN void axi_segment_validate(const ax_segment_t *seg);
AXI_HIDDEN bool axi_segment_open_to(ax_segment_t *seg, uintptr_t end);
/* Blocks up to end (an address in seg, a small, medium or large segment) may be carved:
 * their memory is open (segment.c's guards). post: false when the OS refused. */
static inline bool axi_segment_open(ax_segment_t *seg, uintptr_t end) {
  return end - (uintptr_t)seg <= seg->open_end || axi_segment_open_to(seg, end);
}
/* The cheap part of axi_segment_validate, for paths that read the header often. */
static inline void axi_segment_check_cookie(const ax_segment_t *seg) {
  if (ax_unlikely(seg->cookie != ((uintptr_t)seg ^ axi_cookie_key)))
    axi_corrupted(seg);
}
AXI_HIDDEN void axi_page_validate(const ax_segment_t *seg, const ax_page_t *page);
AXI_HIDDEN uintptr_t axi_page_start(const ax_segment_t *seg, unsigned i);
AXI_HIDDEN uintptr_t axi_page_end(const ax_page_t *page);
AXI_HIDDEN ax_page_t *axi_segment_page_alloc(ax_heap_t *heap, enum ax_kind kind);
AXI_HIDDEN void axi_segment_page_retire(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN bool axi_segment_page_retire_keep(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN bool axi_segment_keep_on_exit(void);
AXI_HIDDEN void axi_segmap_set(ax_segment_t *seg, bool on);
/* Between hold and release no segment is unmapped, moved or joined: one that is still in the
 * segment map and the page map after hold stays mapped until release (its unmapper waits).
 * For reads of other heaps' segments (statistics, the double-free seek); keep them short. */
AXI_HIDDEN void axi_segments_hold(void);
AXI_HIDDEN void axi_segments_release(void);
/* Calls fn on every small, medium and large segment in the segment map, in address order.
 * pre: no other thread maps or unmaps one meanwhile (a fork child's handler, a test). */
AXI_HIDDEN void axi_segment_foreach(void (*fn)(ax_segment_t *, void *), void *arg);
AXI_HIDDEN uint64_t axi_segment_live_bytes(void); /* every page's live blocks (ax_ctl) */
AXI_HIDDEN ax_segment_t *axi_segment_map(enum ax_kind kind, size_t map_size, size_t align,
                                         size_t off);
AXI_HIDDEN void axi_segment_unmap(ax_segment_t *seg);
AXI_HIDDEN void axi_segment_split_off(ax_segment_t *seg, size_t map_size, enum ax_thp_advice thp);
AXI_HIDDEN void axi_segment_join(ax_segment_t *seg);
AXI_HIDDEN void axi_segment_hide_meta(ax_segment_t *seg, bool hide);
AXI_HIDDEN void axi_segment_abandon_all(ax_heap_t *heap);
AXI_HIDDEN void axi_segment_orphan(ax_segment_t *seg);
AXI_HIDDEN ax_segment_t *axi_segment_adopt(ax_heap_t *heap);
AXI_HIDDEN void axi_segment_purge(ax_heap_t *heap, bool force);
AXI_HIDDEN void axi_segment_purge_abandoned(bool force);
/* A link that may be cache->first, which is read without the lock: written atomically. */
static inline void axi_segcache_link(ax_segment_t **at, ax_segment_t *seg) {
  ax_atomic_store_relaxed((ax_atomic_word *)at, (uintptr_t)seg);
}
AXI_HIDDEN void axi_segment_cache_trim(enum ax_trim mode);
AXI_HIDDEN void axi_segment_fork_prepare(void);
AXI_HIDDEN void axi_segment_fork_child(void);
AXI_HIDDEN void axi_segment_fork_release(void);

/* ==== blocks: list.c (the free lists' links), huge.c ================================= */

static inline ax_block_t *axi_decode(const ax_page_t *page, uintptr_t enc) {
  return (ax_block_t *)(enc ^ page->key);
}
/* The link of a block on a free list. Under AX_VALGRIND a free block is no-access to
 * memcheck, so the allocator's own reads and writes of its link open that word briefly
 * (track.h); otherwise these are plain loads and stores. */
static inline ax_block_t *axi_link(const ax_page_t *page, const ax_block_t *b) {
  AX_TRACK_DEFINED(b, sizeof *b);
  uintptr_t enc = b->next_enc;
  AX_TRACK_NOACCESS(b, sizeof *b);
  return axi_decode(page, enc);
}
static inline uintptr_t axi_encode(const ax_page_t *page, const ax_block_t *b) {
  return (uintptr_t)b ^ page->key;
}
static inline void axi_set_link(const ax_page_t *page, ax_block_t *b, const ax_block_t *next) {
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = axi_encode(page, next);
  AX_TRACK_NOACCESS(b, sizeof *b);
}
/* The same with a key already loaded: the owner's copy (okey), which malloc's fast path
 * loads together with page->free. */
static inline ax_block_t *axi_link_key(uintptr_t key, const ax_block_t *b) {
  AX_TRACK_DEFINED(b, sizeof *b);
  uintptr_t enc = b->next_enc;
  AX_TRACK_NOACCESS(b, sizeof *b);
  return (ax_block_t *)(enc ^ key);
}
static inline void axi_set_link_own(const ax_page_t *page, ax_block_t *b, const ax_block_t *next) {
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = (uintptr_t)next ^ page->okey;
  AX_TRACK_NOACCESS(b, sizeof *b);
}

/* A free block's link, decoded, is NULL or a block of the heap: an address below 2^48, so
 * an encoded link's top 16 bits are the key's. A page's key has bit 63 set and not all of
 * bits 48..63 (axi_page_key), so the first words a program leaves in its blocks (pointers,
 * small or negative integers, text: two bytes of a string, below 0x8000) have other top
 * bits. A block that passes may be free already, and the caller looks
 * (axi_double_free_check). The test reads bytes 6 and 7 of each word (both architectures
 * are little-endian) as 2-byte loads: a narrower store the program just made at offsets 0..5
 * (a byte at p[0]) does not overlap them, so the load need not wait for that store to reach
 * the cache, as an 8-byte load of the word must (30 M malloc(32), p[0] = i, free: 333 ms
 * with the 8-byte load, 211 with this, tcmalloc 230). */
static inline bool axi_looks_free(const ax_page_t *page, const ax_block_t *b) {
  uint16_t top, key_top; /* the key's top too as a 2-byte load: no shift */
  __builtin_memcpy(&key_top, (const char *)&page->key + 6, sizeof key_top);
  AX_TRACK_DEFINED(b, sizeof *b);
  __builtin_memcpy(&top, (const char *)b + 6, sizeof top);
  AX_TRACK_NOACCESS(b, sizeof *b);
  return top == key_top;
}
/* A page's key from a random word: bit 63 set, and not all of bits 48..63 (axi_looks_free). */
static inline uintptr_t axi_page_key(uint64_t r) {
  return (uintptr_t)((r | (uint64_t)1 << 63) & ~((uint64_t)1 << 48));
}

/* A block in transit: in a batch of remote frees (remote.c) or an inbox, which span pages. Its
 * link is encoded with its own page's key, as on a free list (axi_looks_free sees it free),
 * with bit 0 of the decoded link set (AX_TRANSIT: no block's address has it). The owner that
 * takes a block rewrites its link (page.c), so a block reached twice in an inbox, freed twice,
 * is known by that bit. */
#define AX_TRANSIT ((uintptr_t)1)
static inline void axi_set_transit(const ax_page_t *page, ax_block_t *b, uintptr_t next) {
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = (next | AX_TRANSIT) ^ page->key;
  AX_TRACK_NOACCESS(b, sizeof *b);
}
/* The decoded link of a block in transit: the next block | AX_TRANSIT, or anything else when
 * the block is not in transit. */
static inline uintptr_t axi_transit(const ax_page_t *page, const ax_block_t *b) {
  return (uintptr_t)axi_link(page, b);
}

/* list.c: is b on list, one of page's free lists? (a link out of the page ends the walk) */
AXI_HIDDEN bool axi_list_has(const ax_page_t *page, const ax_block_t *list, const ax_block_t *b);

/* huge.c */
AXI_HIDDEN bool axi_huge_possible(size_t size, size_t align);
AXI_HIDDEN void axi_huge_pack_tight(void);
AXI_HIDDEN void *axi_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_huge_free(ax_segment_t *seg);
AXI_HIDDEN ax_segment_t *axi_huge_aligned_header(const void *p);
/* The header of a huge block that axi_huge_alloc or axi_huge_realloc returned: the segment
 * it is in, or the one before when it starts a segment (aligned to a segment or more). */
static inline ax_segment_t *axi_huge_segment_of(const void *p) {
  uintptr_t seg = (uintptr_t)axi_segment_of(p);
  return (ax_segment_t *)(seg == (uintptr_t)p ? seg - AX_SEGMENT_SIZE : seg);
}
AXI_HIDDEN void *axi_huge_realloc(ax_segment_t *seg, void *p, size_t size);
AXI_HIDDEN void axi_huge_cache_trim(enum ax_trim mode);
AXI_HIDDEN void axi_huge_fork_prepare(void);
AXI_HIDDEN void axi_huge_fork_release(void);

/* zero.c: zero-size allocations, each a unique address in a reservation nothing may touch */
#define AX_ZERO_SLOT ((size_t)16)
#define AX_ZERO_SLOTS ((size_t)1 << 18)
#define AX_ZERO_SIZE (AX_ZERO_SLOTS * AX_ZERO_SLOT) /* 4 MiB of address space */
AXI_HIDDEN extern ax_atomic_word axi_zero_base;
/* p is in the reservation (a zero-size block, or a pointer into the gaps between them) */
static inline bool axi_zero_has(const void *p) {
  uintptr_t base = ax_atomic_load_relaxed(&axi_zero_base);
  return base && (uintptr_t)p - base < AX_ZERO_SIZE;
}
/* post: a zero-size block; NULL when all are live or the OS refused the reservation. Any
 * thread, no lock, no allocation; errno kept. */
AXI_HIDDEN void *axi_zero_alloc(void);
/* pre: axi_zero_has(p). Gives p back; aborts naming p when it is no block or not live. */
AXI_HIDDEN void axi_zero_free(const char *fn, const void *p);
AXI_HIDDEN size_t axi_zero_live(void); /* zero-size blocks live now */

/* ==== heap pool: pool.c =============================================================== */

AXI_HIDDEN ax_heap_t *axi_heap_start(void);
AXI_HIDDEN void axi_heap_bind(ax_heap_t *heap);
AXI_HIDDEN void axi_heap_exit_key(void (*on_exit)(void *));
AXI_HIDDEN void axi_heap_put(ax_heap_t *heap, bool orphaned);
AXI_HIDDEN void axi_heap_foreach(void (*fn)(ax_heap_t *, void *), void *arg);
AXI_HIDDEN ax_heap_t *axi_heap_all(void);

/* ==== remote frees: remote.c ============================================================ */

AXI_HIDDEN void axi_remote_free(ax_block_t *b, ax_page_t *page, ax_segment_t *seg);
AXI_HIDDEN void axi_remote_push(ax_page_t *page, ax_segment_t *seg, uint32_t n, ax_block_t *head,
                                ax_block_t *tail);
AXI_HIDDEN void axi_remote_flush(ax_heap_t *heap, bool forget);
AXI_HIDDEN void axi_remote_exit(ax_heap_t *heap);
AXI_HIDDEN void axi_remote_age(ax_heap_t *heap);
AXI_HIDDEN void axi_remote_orphan(ax_heap_t *heap);
/* Is b (looking free) waiting anywhere a freed block waits? (the double-free model) */
AXI_HIDDEN bool axi_remote_seek(ax_page_t *page, ax_segment_t *seg, const ax_block_t *b);
/* Other threads' batches sent for them: all (trim), or those idle since the last sweep. */
AXI_HIDDEN unsigned axi_remote_steal(const ax_heap_t *self, bool all);
AXI_HIDDEN void axi_remote_sweep_wanted(void);
AXI_HIDDEN bool axi_remote_sweep_tick(ax_heap_t *heap);
AXI_HIDDEN const char *axi_remote_steal_mode(void); /* "membarrier" or "off" */
AXI_HIDDEN uint64_t axi_remote_sweeps(void);
AXI_HIDDEN void axi_remote_fork_prepare(void);
AXI_HIDDEN void axi_remote_fork_release(void);

/* ==== pages: page.c ==================================================================== */

AXI_HIDDEN void *axi_page_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void *axi_page_malloc_current(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN bool axi_page_reclaim(ax_heap_t *heap);
AXI_HIDDEN void axi_pages_retire_empty(ax_heap_t *heap, bool all);
AXI_HIDDEN void axi_page_purge_tick(ax_heap_t *heap);
AXI_HIDDEN void axi_free_slow(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_page_give_back(ax_heap_t *heap, ax_page_t *page, ax_block_t *b);
AXI_HIDDEN void axi_page_collect(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_page_count_mallocs(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_page_queue_push(ax_heap_t *heap, ax_page_t *page);
AXI_HIDDEN void axi_pages_collect_all(ax_heap_t *heap);
AXI_HIDDEN void axi_page_drain(ax_heap_t *heap, bool close);
AXI_HIDDEN void axi_page_return(ax_block_t *b);
AXI_HIDDEN void axi_page_orphan(ax_page_t *page);

AXI_HIDDEN ax_page_t *axi_page_with_free(ax_heap_t *heap, unsigned c);
AXI_HIDDEN ax_block_t *axi_page_pop(ax_page_t *page);
/* page.c's profiling grants: the fast path's lists cut to what may go before a sample
 * (axi_class_direct classes; prof.h has the inline part). */
AXI_HIDDEN void axi_page_prof_settle_walk(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void axi_page_prof_grant(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void *axi_page_prof_malloc(ax_heap_t *heap, size_t size, bool zero);
/* Close class c's grant: the blocks the fast path took from it count against left. With the
 * list used up (the usual way back to the slow path), it took them all: no walk. */
static inline void axi_page_prof_settle(ax_heap_t *heap, unsigned c) {
  ax_page_t *page = heap->prof.grant_page[c];
  if (!page)
    return;
  if (page->free)
    return axi_page_prof_settle_walk(heap, c);
  uint64_t left = heap->prof.left[c], taken = heap->prof.granted[c];
  heap->prof.left[c] = left > taken ? left - taken : 0;
  heap->prof.grant_page[c] = NULL;
}
AXI_HIDDEN void axi_page_prof_settle_all(ax_heap_t *heap);
AXI_HIDDEN void axi_page_prof_grant_all(ax_heap_t *heap);
/* A page's fast_cap for `capacity` carved blocks (see ax_page_t): checked mode stores 0,
 * which fails every block-start test of the fast paths, so that every free and realloc
 * leaves them for check.c: the default mode pays nothing for the switch. */
static inline void axi_page_set_capacity(ax_page_t *page, uint32_t capacity) {
  ax_poke(&page->capacity, capacity); /* (read by other threads' batch walks: remote.c) */
  ax_atomic_store_relaxed(&page->fast_cap, axi_slow_only() ? 0 : capacity);
}
/* pre: block_size > 0. Sets div_inv and div_shift for axi_is_block. */
static inline void axi_page_set_divisor(ax_page_t *page, uint32_t block_size) {
  unsigned s = (unsigned)__builtin_ctz(block_size);
  uint64_t odd = block_size >> s, inv = odd; /* Newton: each step doubles the good bits */
  for (int i = 0; i < 5; i++)
    inv *= 2 - odd * inv;
  page->div_inv = inv;
  page->div_shift = (uint8_t)s;
}

/* ==== the cache: cache.c ================================================================ */

AXI_HIDDEN void axi_cache_free(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_cache_free_prof(ax_block_t *b, ax_page_t *page);
AXI_HIDDEN void axi_cache_flush(ax_heap_t *heap);
AXI_HIDDEN void axi_double_free_check(ax_page_t *page, ax_block_t *b);
AXI_HIDDEN void axi_cache_unaside(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void axi_cache_orphan(ax_heap_t *heap);

/* post: a block of size's class taken off heap's cache (the one in `last`, else its stack's
 * top); NULL when there is none. pre: AX_DIRECT_MAX < size <= AX_CACHE_MAX. (cache.c has
 * the rest.) */
static inline ax_block_t *axi_cache_pop(ax_heap_t *heap, size_t size) {
  unsigned c = axi_cache_class[(size - 1) >> 8], i = c - AX_CACHE_FIRST;
  ax_block_t *b;
  if (heap->cache.last_cls == c) { /* one compare: last_cls is 0 when there is no last */
    b = heap->cache.last;
    heap->cache.last_cls = 0;
  } else {
    uint32_t n = heap->cache.n[i];
    if (!n)
      return NULL;
    b = heap->cache.slot[i][--n];
    heap->cache.n[i] = n;
  }
  AX_TRACK_UNDEFINED(b, sizeof *b);
  b->next_enc = 0; /* a live block must not look free to free()'s double-free check */
  heap->stats.class_mallocs[c]++;
  AX_TRACK_MALLOC(b, axi_class_size(c), 0);
  return b;
}

/* ==== heaps: heap.c ==================================================================== */

AXI_HIDDEN bool axi_heap_release(ax_heap_t *heap);
AXI_HIDDEN void axi_heap_trim(ax_heap_t *heap);
AXI_HIDDEN void *axi_heap_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void *axi_heap_page_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN ax_page_t *axi_heap_page_with_free(ax_heap_t *heap, unsigned c);
AXI_HIDDEN void *axi_heap_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_stats_merge_heap(ax_heap_t *heap);

/* ==== modes: mte.c, check.c, the profiler (prof.h has its own) ========================== */

/* mte.c */
AXI_HIDDEN void axi_mte_init(bool want);
AXI_HIDDEN void *axi_mte_tag(void *b);
AXI_HIDDEN void *axi_mte_release(const char *fn, void *p, bool keep);
/* check.c: checked mode (contracts there) */
AXI_HIDDEN void *axi_check_malloc(ax_heap_t *heap, size_t size, size_t align, bool zero);
AXI_HIDDEN void axi_check_free(ax_heap_t *heap, const char *fn, ax_segment_t *seg, ax_page_t *page,
                               void *p, size_t size, enum ax_sized how, enum ax_dealloc by);
AXI_HIDDEN void *axi_check_new_array(ax_heap_t *heap, size_t n);
AXI_HIDDEN void axi_check_flush(ax_heap_t *heap);
AXI_HIDDEN void axi_check_orphan(ax_heap_t *heap);
AXI_HIDDEN void axi_check_uncount(const ax_heap_t *heap, uint64_t *class_live);
AXI_HIDDEN void *axi_check_realloc(ax_heap_t *heap, const ax_ptr_t *x, void *p, size_t size);
AXI_HIDDEN size_t axi_check_usable(const ax_ptr_t *x, const void *p);
AXI_HIDDEN void axi_check_carve(ax_page_t *page, ax_block_t *first, uint32_t n);

/* prof.c, prof_dump.c: the sampling heap profiler (contracts there) */
AXI_HIDDEN void axi_prof_init(void);
AXI_HIDDEN void axi_prof_ready(void);
AXI_HIDDEN uint64_t axi_prof_rate(void);
AXI_HIDDEN void axi_prof_set_active(bool on); /* ax_ctl's prof.active (sampling paused) */
AXI_HIDDEN bool axi_prof_active(void);
AXI_HIDDEN const char *axi_prof_prefix(void);
AXI_HIDDEN void *axi_prof_malloc(ax_heap_t *heap, size_t size, bool zero);
AXI_HIDDEN void axi_prof_huge(void *p, size_t size);
AXI_HIDDEN void axi_prof_release(ax_segment_t *seg);
AXI_HIDDEN void axi_prof_slot_free(const char *fn, ax_segment_t *seg, void *p);
AXI_HIDDEN size_t axi_prof_slot_size(const char *fn, ax_segment_t *seg, const void *p);
AXI_HIDDEN void axi_prof_fork_child(void);
AXI_HIDDEN void axi_prof_trim(void);

/* leak.c: the exact leak checker (leak.h has the rest, contracts at the definitions) */
AXI_HIDDEN void axi_leak_init(void);
AXI_HIDDEN void axi_leak_ready(void);
AXI_HIDDEN void axi_leak_new(void *p, size_t size);
AXI_HIDDEN void axi_leak_forget(ax_page_t *page, void *p);
AXI_HIDDEN void axi_leak_resize(void *p, size_t size);
AXI_HIDDEN uint32_t axi_leak_stack_here(void);
AXI_HIDDEN void axi_leak_set(uintptr_t p, uint64_t v);
AXI_HIDDEN uint64_t axi_leak_get(uintptr_t p);
AXI_HIDDEN void axi_leak_print_stack(const char *title, uint32_t id);
/* The scan at exit reads the heap while other threads run: a free, a huge block's realloc or
 * an unmap holds leak.c's gate while it changes what the scan may read, and waits while a
 * scan runs, p (a block going, or NULL) then counted as gone. Nested holds pass. os.c calls
 * them from below (an exception named in tests/t_layers.py). pre: axi_leaks. */
AXI_HIDDEN void axi_leak_hold(const void *p);
AXI_HIDDEN void axi_leak_release(void);

/* ==== lifecycle: lifecycle.c ============================================================ */

/* The calling thread's first allocation: process init if need be, then its heap. post: the
 * heap; NULL only when the OS has no memory for it. */
AXI_HIDDEN ax_heap_t *axi_thread_start(void);
/* post: the calling thread's heap, started if need be; NULL with errno = ENOMEM. */
AXI_HIDDEN ax_heap_t *axi_heap_get(void);

/* ==== entry: ptr.c ====================================================================== */

AXI_HIDDEN void axi_ptr_classify(const char *fn, void *p, bool keep, ax_ptr_t *x);

/* A static link takes all of axmalloc or none of it: every object refers to alloc.o (which
 * defines malloc) and free.o, so a program linked with libc before libaxmalloc.a fails with a
 * duplicate malloc instead of mixing glibc's malloc with axmalloc's other objects (t_linkorder);
 * and to stats.o, whose destructor writes the AXMALLOC_STATS=1 report at exit. Through
 * markers, not the entry points: a reference that pulls an object in is not a call into a
 * higher layer (tests/t_layers names these and nothing else). */
#ifdef AX_CORE
AXI_HIDDEN extern const char axi_link_alloc_o, axi_link_free_o, axi_link_stats_o;
__attribute__((used)) static const char *const axi_pull_alloc = &axi_link_alloc_o;
__attribute__((used)) static const char *const axi_pull_free = &axi_link_free_o;
__attribute__((used)) static const char *const axi_pull_stats = &axi_link_stats_o;
#endif

#endif
