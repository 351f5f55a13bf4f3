/* SPDX-License-Identifier: MIT */
/* axmalloc: a general-purpose malloc replacement for x86-64 and AArch64.
 *
 * The library overrides the whole malloc family (malloc, free, calloc, realloc, ...)
 * when preloaded or linked. The ax_* entry points below are the same allocator under
 * prefixed names, callable side by side with whatever malloc the program uses.
 */
#ifndef AXMALLOC_H
#define AXMALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#pragma GCC visibility push(default)

#define AX_VERSION_MAJOR 0
#define AX_VERSION_MINOR 1

/* The malloc family under prefixed names; same contracts as glibc's. */
void *ax_malloc(size_t size);
void ax_free(void *p);
/* free(p) with the size it was allocated with (C23 free_sized): a size larger than the block
 * aborts naming p ("size mismatch"); checked mode wants the very size asked for. */
void ax_free_sized(void *p, size_t size);
void *ax_calloc(size_t n, size_t size);
void *ax_realloc(void *p, size_t size);
void *ax_reallocarray(void *p, size_t n, size_t size);
void *ax_aligned_alloc(size_t alignment, size_t size);
int ax_posix_memalign(void **out, size_t alignment, size_t size);
void *ax_memalign(size_t alignment, size_t size);
size_t ax_usable_size(const void *p);

/* Return memory to the OS now: purges every empty page and cached mapping it can.
 * Returns 1 when some memory was released, 0 otherwise (like malloc_trim). */
int ax_trim(size_t pad);

/* Statistics. Counters are process-wide; per-thread counters of live threads are
 * merged in at the time of the call (racy but monotone). */
#define AX_NUM_CLASSES 61 /* class 0 is unused; 1..60 cover 16 B .. 1 MiB */
typedef struct ax_stats {
  uint64_t mallocs;                       /* blocks made available to malloc, all sizes: counted
                                           * per refill of a page's free list, so exact up to the
                                           * blocks still waiting on free lists */
  uint64_t huge_allocs;                   /* blocks > 1 MiB, each in its own mapping */
  uint64_t in_use;                        /* bytes of pages and huge blocks holding live blocks
                                           * (page granularity: an upper bound of live bytes) */
  uint64_t in_use_peak;                   /* peak of in_use */
  uint64_t os_reserved;                   /* bytes currently mapped from the OS */
  uint64_t os_reserved_peak;              /* peak of os_reserved */
  uint64_t os_committed;                  /* bytes mapped and not purged (upper bound of RSS) */
  uint64_t os_committed_peak;             /* peak of os_committed */
  uint64_t os_purged;                     /* bytes returned with madvise(MADV_DONTNEED), total */
  uint64_t os_mmap_calls;                 /* mmap calls made */
  uint64_t os_munmap_calls;               /* munmap calls made */
  uint64_t os_madvise_calls;              /* madvise calls made */
  uint64_t os_mremap_calls;               /* mremap calls made (huge realloc) */
  uint64_t segments_live;                 /* 4 MiB segments owned or abandoned now */
  uint64_t segments_abandoned;            /* segments abandoned by exiting threads, total */
  uint64_t segments_reclaimed;            /* abandoned segments taken over by other threads */
  uint64_t huge_cache_hits;               /* huge allocations served from the mapping cache */
  uint64_t heaps_live;                    /* thread heaps in use */
  uint64_t class_mallocs[AX_NUM_CLASSES]; /* blocks handed out per size class */
  uint64_t class_live[AX_NUM_CLASSES];    /* live blocks per size class in the calling
                                           * thread's own pages (exact) */
  uint64_t remote_frees;      /* blocks freed by threads other than their page's owner (by
                               * threads with a heap: a thread's first frees are not counted) */
  uint64_t remote_publishes;  /* CASes that handed such blocks over: one per block sent
                               * alone, one per batch of blocks to one owner (remote.c) */
  uint64_t remote_drains;     /* exchanges that took a heap's inbox of such blocks: the
                               * owners' only atomic for them (page.c) */
  uint64_t os_mprotect_calls; /* mprotect calls made: segment memory opened as it is first
                               * carved (the rest stays inaccessible) */
  uint64_t zero_live;         /* zero-size blocks live (malloc(0): no memory, see axmalloc(3)) */
} ax_stats_t;

void ax_stats_get(ax_stats_t *out);

/* What the allocator chose at init, so that tests can prove which path runs. */
typedef struct ax_info {
  const char *arch;         /* "x86_64" or "aarch64" */
  const char *atomics;      /* "x86-lock", "lse" (ARMv8.1 CAS/SWP/LDADD) or "llsc" (LDAXR/STLXR) */
  const char *bulk_zero;    /* the kernel calloc zeroes with ("libc" = memset) */
  const char *bulk_copy;    /* the kernel realloc copies with ("libc" = memcpy) */
  const char *cpu_features; /* what CPU detection found */
  int single_threaded;      /* 1 while the atomics' plain single-threaded twins are in use */
  size_t page_size;         /* the OS page size the allocator works with */
  /* 0 while no other thread exists and none ever did, so no block can wait on a page's
   * list of remote frees (the slow paths skip that list); a fork child of a process that
   * had threads is 1: it may have inherited some */
  int remote_frees_possible;
  /* memory tagging (AArch64 MTE, AXMALLOC_MTE=1 or checked mode): "on", "off" (not asked
   * for), or "unavailable" (asked for, but the CPU or kernel has none: nothing changed) */
  const char *mte;
  /* the sampling heap profiler (AXMALLOC_PROF=1): its mean interval in bytes, 0 when off */
  size_t prof_sample;
} ax_info_t;
void ax_info(ax_info_t *out);
/* Transparent huge pages (AXMALLOC_THP): what was chosen, what the kernel offers, and the
 * bytes advised. A struct of its own: ax_stats_t and ax_info_t keep the layout that programs
 * built against earlier headers pass in (they are filled whole). */
typedef struct ax_thp_info {
  const char *option; /* AXMALLOC_THP: "auto", "never", "always" or "large" */
  /* the kernel's mode: "always", "madvise", "never", or "absent" (no transparent_hugepage in
   * sysfs, or no huge page size it gives that a mapping could be aligned to) */
  const char *kernel;
  size_t page_size;       /* the kernel's huge page size; 0 when it has none: nothing advised */
  uint64_t advised;       /* bytes mapped now with madvise(MADV_HUGEPAGE) */
  uint64_t advised_peak;  /* peak of advised */
  uint64_t advised_total; /* bytes ever advised so */
  uint64_t declined;      /* bytes advised MADV_NOHUGEPAGE, total (where the kernel's mode is
                           * `always`: segments whose pages are purged one by one) */
} ax_thp_info_t;
void ax_thp_info(ax_thp_info_t *out);
/* Write the sampling heap profiler's profile (AXMALLOC_PROF=1) to path, or to
 * <AXMALLOC_PROF_FILE>.<pid>.<seq>.heap when path is NULL, in gperftools' heap-profile format
 * (google-pprof --text prog path). Returns 0, EINVAL when profiling is off, or the errno of the
 * failed open or write. Does not allocate; errno is left as it was. */
int ax_prof_dump(const char *path);
/* Print statistics to stderr (also done at exit with AXMALLOC_STATS=1): ax_stats_write's
 * text report. */
void ax_stats_print(void);
/* The statistics report, handed to write(arg, text) a NUL-terminated piece at a time (write
 * NULL: stderr), as jemalloc's malloc_stats_print. opts NULL or "": text, byte figures in
 * human units (KiB, MiB, GiB: tenths, powers of 1024); "b": the text with exact bytes; "J":
 * one JSON object, {"axmalloc": {"version", "pid", "stats": {...}, "thread": {...},
 * "classes": [60 objects, class c at c - 1], "options": {...}}}, bytes exact. The report is
 * made in a buffer on the stack (pieces of at most 511 bytes) and does not allocate; its
 * figures are all taken before the first piece, so a write that allocates (a FILE *'s
 * buffer) changes none of them. */
void ax_stats_write(void (*write)(void *arg, const char *text), void *arg, const char *opts);
/* Size of the blocks of class c (0 when c is out of range). */
size_t ax_class_size(unsigned c);

/* Statistics and controls by name, called as jemalloc's mallctl: reads copy the value to
 * *oldp when *oldlenp is its size, writes take *newp when newlen is its size. Returns 0, or
 * ENOENT (no such name), EINVAL (a wrong length or value), EPERM (a write to a read-only
 * name, a read of a write-only one), or the action's error (prof.dump); errno is kept.
 *
 *   version             const char *  r   "0.1"
 *   epoch               uint64_t      rw  figures are taken when read; writing counts it up
 *   stats.allocated     size_t        r   bytes of live blocks (usable sizes), the process's
 *   stats.active        size_t        r   bytes of the pages holding live blocks, and huge
 *                                         blocks' mappings
 *   stats.resident      size_t        r   bytes mapped and not purged (RSS's upper bound)
 *   stats.mapped        size_t        r   bytes mapped from the OS
 *   stats.retained      size_t        r   mapped bytes purged (mapped - resident)
 *   thread.allocated    uint64_t      r   bytes the calling thread allocated, in total
 *   thread.deallocated  uint64_t      r   bytes of them freed since (by any thread, once
 *                                         the calling thread collected the free; huge blocks
 *                                         count where they are freed)
 *   purge.delay_ms      uint64_t      rw  AXMALLOC_PURGE_DELAY_MS, from now on
 *   purge               void          w   return free memory to the OS now (ax_trim(0))
 *   prof.active         bool          rw  sampling on (AXMALLOC_PROF=1 started it) or paused
 *   prof.dump           const char *  w   write a profile (ax_prof_dump; NULL: the default)
 *   remote.steal        const char *  r   "membarrier": an idle thread's batches of remote
 *                                         frees are sent by other threads (a trim, a sweep
 *                                         every purge delay); "off": they wait for it
 *   stats.remote_steals uint64_t      r   batches and idle inboxes sent so
 *   stats.remote_sweeps uint64_t      r   trims and sweeps that looked for them
 *   stats.sleeps        uint64_t      r   waits for a lock (or another thread's step)
 *                                         whose brief spin ran out: the thread slept
 *   stats.dump          const char *  w   write ax_stats_write's JSON report to this file
 *                                         (created or truncated, mode 0644)
 *   thp.choice          const char *  r   AXMALLOC_THP=auto: "huge" (huge blocks advised: huge
 *                                         pages measured cheaper), "small" (not), "unknown"
 *                                         (no block measured yet: not advised)
 *   thp.cost_huge       uint64_t      r   ns of CPU a huge page's fault took per MiB (the
 *                                         probes' running mean; 0 before the first)
 *   thp.cost_small      uint64_t      r   ... and OS pages' faults, per MiB
 *   thp.probes          uint64_t      r   probes made
 *   thp.defrag          const char *  r   the kernel's defrag setting ("madvise", "never"...)
 *   stats.classes.<c>.size     size_t   r   class c's block size (c from 1 to 60)
 *   stats.classes.<c>.mallocs  uint64_t r   class c's blocks handed out, every thread's
 *   thread.classes.<c>.mallocs uint64_t r   ... the calling thread's
 *   thread.classes.<c>.live    uint64_t r   class c's live blocks in the calling thread's
 *                                         pages (exact)
 *   names               const char *  r   every name above, classes' and options' spelt out
 *                                         ("stats.classes.1.size"), each ended by a NUL, an
 *                                         empty name last; static memory (ax_ctl_name gives
 *                                         them one at a time with their types)
 *   opt.<option>        (its kind)    r   every AXMALLOC_* option as read at start-up, named
 *                                         in lower case without AXMALLOC_ (opt.prof_sample):
 *                                         on/off options bool, sizes size_t, numbers
 *                                         uint64_t, words and paths const char *
 *   opt.stats           bool          rw  ... writable: the report at exit
 *   opt.purge_delay_ms  uint64_t      rw  ... as purge.delay_ms
 *   opt.thp             const char *  rw  ... "auto", "never" or "always": the advice of
 *                                         mappings made from now on
 *
 * Blocks the heap profiler sampled are not in stats.allocated and the thread figures. */
int ax_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
/* The i-th name ax_ctl knows (i from 0; NULL past the last), with its type ("bool",
 * "uint64_t", "size_t", "const char *" or "void") and access ("r", "w" or "rw") in *type and
 * *access when they are not NULL. The strings are static: no allocation, nothing to free. */
const char *ax_ctl_name(size_t i, const char **type, const char **access);

/* A program's compiled-in defaults for the AXMALLOC_* options, which it may define (jemalloc's
 * malloc_conf): const char *axmalloc_conf = "purge_delay_ms:50,stats:1";
 * name:value pairs (or name=value) separated by commas, names as opt.<name> spells them (any
 * case, AXMALLOC_ optional). Read at start-up, each as its AXMALLOC_* variable would be: the
 * same values, the same messages; a variable set in the environment overrides it. A program
 * linked with -laxmalloc or statically has it read; one that only preloads the library needs
 * -rdynamic. Not declared here: a program defines it, once. */

#pragma GCC visibility pop
#ifdef __cplusplus
}
#endif
#endif
