/* SPDX-License-Identifier: MIT */
/* The process's lifecycle: process init, a thread's start and exit, fork's three handlers.
 * The top of the core below the entry points: everything here runs once per process, thread
 * or fork, and calls down into every layer.
 *
 * Process init runs before constructors, inside dlsym, in a fork child's first malloc: no
 * stdio, no allocation, errno restored. A thread starts on axi_heap_empty, whose direct table
 * points at an empty page, so its first malloc falls into the slow path, which starts its heap
 * here (axi_thread_start). At thread exit a pthread key destructor collects the heap, abandons
 * its segments that still hold live blocks and returns the heap to the pool.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sys/auxv.h>

#include "lifecycle.h"

#include "bulk.h"
#include "cache.h"
#include "heap.h"
#include "hooks.h"
#include "huge.h"
#include "lock.h"
#include "modes/check.h"
#include "modes/guard.h"
#include "modes/leak.h"
#include "modes/mte.h"
#include "modes/prof.h"
#include "options.h"
#include "os.h"
#include "page.h"
#include "pool.h"
#include "print.h"
#include "remote.h"
#include "segment.h"
#include "state.h"
#include "thp.h"

/* ---- process init ------------------------------------------------------------------ */

/* pre: called once, by the first thread that allocates, before any other thread can
 * (a second thread exists only after the first called pthread_create, which mallocs). */
static void process_init(void) {
  int saved = errno;
  unsigned long pg = getauxval(AT_PAGESZ);
  axi_os_page = pg ? pg : 4096;
  axi_options_read(); /* first: every other init reads options (and state.c's are set) */
  axi_thp_init();
  /* AXMALLOC_THP=always where the kernel has no huge pages to give advises nothing (thp.c):
   * said, as every option that does nothing (issue 42); never and auto get what they ask for */
  if (axi_options.thp == AX_THP_ALWAYS && axi_option_from_env(AXI_OPTION_THP) && !axi_thp_size())
    axi_write("axmalloc: AXMALLOC_THP=%s does nothing here: the kernel gives no transparent huge "
              "pages (kernel: %s)\n",
              axi_option_str(AXI_OPTION_THP), axi_thp_kernel_name());
  axi_os_barrier_init(); /* (steals of idle threads' batches: remote.c) */
  axi_cookie_key = (uintptr_t)axi_random();
  if (axi_options.stats)
    axi_write_keep_stderr(); /* the report at exit must find stderr (print.c) */
  ax_arch_cpu_detect();
  /* tagging: asked for, not with checked mode (whose pointers are not their blocks' starts:
   * check.c), and said when this CPU or kernel has none (it did nothing, unsaid: issue 42) */
  bool mte = axi_option_num(AXI_OPTION_MTE) != 0;
  if (mte && axi_checked)
    axi_write("axmalloc: memory tagging is not available with checked mode: off\n");
  axi_mte_init(mte && !axi_checked);
  if (mte && !axi_checked && !axi_mte)
    axi_write("axmalloc: AXMALLOC_MTE=%s does nothing here: this CPU or kernel has no memory "
              "tagging\n",
              axi_option_str(AXI_OPTION_MTE));
  axi_check_init(); /* its seam, and its blocks' stacks (stacks/depot.c) */
  axi_leak_init();  /* after checked mode and tagging, which rule it out */
  axi_prof_init();  /* after those three, which rule it out */
  axi_malloc_hooked = axi_prof_on || axi_leaks;
  axi_heap_empty.hooked = axi_malloc_hooked ? AX_HOOKED_MODES : 0; /* (pool.c: every heap's) */
  axi_guard_init(); /* after checked mode and tagging, which rule it out */
  /* The profiler asked for and refused (its line said why) installs no handler either: the
   * dump signal keeps its default action, which ends the program. (Without the profiler asked
   * for at all, options.c said so.) */
  if (!axi_prof_on && axi_option_from_env(AXI_OPTION_PROF_SIGNAL) &&
      (axi_option_num(AXI_OPTION_PROF) || axi_option_num(AXI_OPTION_PROF_LEAKS)))
    axi_write("axmalloc: AXMALLOC_PROF_SIGNAL=%s does nothing with the profiler off (the signal "
              "will kill the program)\n",
              axi_option_str(AXI_OPTION_PROF_SIGNAL));
  /* AXMALLOC_VERBOSE: the version line first, then what was chosen, in the order it was; the
   * bulk plan's line is bulk.c's, in its place (issue 42: its lines came before the version
   * line, and this block then named one kernel where they had named several). The options'
   * warnings came before, with the options. */
  if (axi_options.verbose)
    axi_write("axmalloc: version %d.%d, arch %s, cpu features: %s\n"
              "axmalloc: atomics %s, single-threaded twins %s%s\n",
              AX_VERSION_MAJOR, AX_VERSION_MINOR, AX_ARCH_NAME, ax_arch_cpu_features(),
              ax_arch_atomics_name(), axi_single_threaded() ? "on" : "off",
              axi_force_mt ? " (AXMALLOC_FORCE_MT)" : "");
  axi_bulk_init(); /* (calloc and realloc are right before it: the table starts on the baseline) */
  if (axi_options.verbose)
    axi_write("axmalloc: os page %zu B, segment %zu KiB, purge delay %zu ms%s, memory tagging %s, "
              "heap profiling %s%s\n"
              "axmalloc: transparent huge pages %s (kernel: %s, huge page %zu KiB, defrag %s)%s\n",
              axi_os_page, (size_t)(AX_SEGMENT_SIZE >> 10), (size_t)axi_options.purge_delay_ms,
              axi_checked ? ", checked mode" : "", axi_mte_state,
              axi_prof_on        ? "on"
              : axi_check_stacks ? "off (checked mode: every block's stacks kept)"
                                 : "off",
              axi_leaks ? ", leak checker on" : "", axi_thp_option_name(), axi_thp_kernel_name(),
              axi_thp_size() >> 10, axi_thp_defrag_name(),
              !axi_thp_size() ? ": none to be had, nothing advised"
              : axi_options.thp == AX_THP_AUTO
                  ? ": huge blocks advised once huge pages are measured "
                    "cheaper than OS pages"
                  : "");
  if (axi_options.verbose && axi_prof_on)
    axi_write(
        "axmalloc: heap profiling: one sample per %llu B on average, profiles %s.<pid>.*.heap\n",
        (unsigned long long)axi_prof_rate(), axi_prof_prefix());
  if (axi_options.verbose)
    axi_guard_say();
  if (axi_options.verbose)
    axi_options_print();
  errno = saved;
}

/* process init: once (lock.c), the others wait for the first */
static ax_atomic_word init_state;

static void init_once(void) {
  if (axi_once_enter(&init_state)) {
    process_init();
    axi_once_done(&init_state); /* (no system call unless one sleeps) */
  }
}

/* ---- thread start and exit ------------------------------------------------------------ */

static void thread_exit(void *arg) {
  ax_heap_t *heap = arg;
  if (axi_checked)
    axi_check_flush(heap); /* (its blocks leave their quarantine first: some go remote) */
  axi_thread_exited = true;
  axi_remote_exit(heap);      /* (a steal ends first; none starts from now on) */
  axi_page_drain(heap, true); /* (from now on senders give our blocks to their pages) */
  axi_cache_flush(heap);
  heap->keep_empty = axi_segment_keep_on_exit(); /* (abandoned below, for the next thread) */
  axi_pages_collect_all(heap);
  axi_segment_purge(heap, false); /* what is not due yet stays for the next owner a while */
  axi_segment_abandon_all(heap);
  axi_stats_merge_heap(heap);
  ax_poke(&heap->active, 0);
  ax_atomic_fetch_add_relaxed(&axi_stats.heaps_live, (uintptr_t)-1);
  if (axi_tls_heap == heap)
    axi_tls_heap = &axi_heap_empty;
  axi_heap_put(heap, false);
}

static void fork_prepare(void);
static void fork_release(void);
static void fork_child(void);

/* The first malloc of a thread. post: the thread's heap, installed in TLS; NULL only
 * when the OS has no memory for it. May run before main and inside dlsym. */
ax_heap_t *axi_thread_start(void) {
  static ax_atomic_word hooks_state;
  if (!axi_once_is_done(&init_state))
    init_once();
  ax_heap_t *heap = axi_heap_start();
  if (!heap)
    return NULL;
  if (!axi_once_is_done(&hooks_state) && axi_once_enter(&hooks_state)) {
    axi_heap_exit_key(thread_exit);
    pthread_atfork(fork_prepare, fork_release, fork_child);
    axi_once_done(&hooks_state);
  }
  axi_heap_bind(heap);
  return heap;
}

/* post: the calling thread's heap, started if need be; NULL (ENOMEM) when out of memory. */
ax_heap_t *axi_heap_get(void) {
  ax_heap_t *heap = axi_tls_heap;
  if (ax_unlikely(heap == &axi_heap_empty) && !(heap = axi_thread_start()))
    errno = ENOMEM;
  return heap;
}

/* ---- fork ------------------------------------------------------------------------------ */

/* fork: the child must not inherit a global lock held by a thread that does not exist
 * there, nor an identity: those threads' heaps are taken over (orphan_dead_heaps, below).
 * A signal handler may fork while this thread is inside the allocator: inside a locked
 * section (axi_lock_for_fork leaves that lock to it), or inside another fork, between its
 * prepare and parent/child handlers (glibc's tst-mallocfork2 forks in its main loop too).
 * The nested fork takes nothing: the outer one holds what it took, and a child of a signal
 * handler may only call async-signal-safe functions (malloc is none). */
/* Counts this thread's forks in progress, from the start of prepare to the end of the
 * parent/child handler, so that a fork nested anywhere in between sees it. */
static __thread volatile unsigned fork_depth;
/* Another thread existed when the fork began (in this process or an ancestor it forked
 * from: axi_forked is inherited), so the child may inherit blocks pushed on its pages'
 * thread_free lists. A child of a process that never had a second thread knows none are
 * there, and keeps the single-threaded shortcuts (stress-ng forks its workers: with
 * axi_forked set, each malloc_trim there walked every page of every class). */
static bool fork_parent_mt;

static void fork_prepare(void) {
  fork_parent_mt = !axi_single_threaded();
  if (fork_depth++ > 0)
    return;
  ax_compiler_fence();       /* counted before the first lock is taken */
  axi_remote_fork_prepare(); /* (no steal is half done in the child) */
  axi_segment_fork_prepare();
  axi_huge_fork_prepare();
  AX_HOOK(AX_HOOK_FORK_PREPARED, NULL);
}

static void fork_release(void) {
  if (fork_depth > 1) {
    fork_depth--;
    return;
  }
  AX_HOOK(AX_HOOK_FORK_RELEASING, NULL);
  axi_huge_fork_release();
  axi_segment_fork_release();
  axi_remote_fork_release();
  ax_compiler_fence(); /* uncounted after the last lock is released */
  fork_depth = 0;
}

/* ---- the fork child model (docs/design/10-lifecycle.md) ------------------------------ */

#define AX_HEAP_DEAD 2 /* active: in use by a thread that does not exist in this fork child */

/* A segment of a dead heap: unpinned, recounted, abandoned (segment.c). Found by address
 * (axi_segment_foreach), not through the heap's lists, which its thread may have left
 * half-updated. */
static void orphan_segment(ax_segment_t *seg, void *arg) {
  ax_heap_t *heap = (ax_heap_t *)ax_atomic_load_relaxed(&seg->heap);
  if (!heap || heap->active != AX_HEAP_DEAD)
    return;
  for (unsigned i = 0; i < seg->npages; i++)
    if (seg->pages[i].in_use)
      axi_page_orphan(&seg->pages[i]);
  axi_segment_orphan(seg);
}

/* In a fork child, the heaps of the parent's other threads belong to nobody, and their
 * thread ids are the thread pointers glibc hands the child's next threads (it reclaims the
 * dead threads' stacks for them): a page still naming one would take a new thread's frees as
 * its owner's (two threads got one block; a heapless thread put blocks in the shared empty
 * heap). So, while the child is still alone: every open chain of theirs is published, their
 * caches go back to their pages, their segments are abandoned as at thread exit (every owner
 * word 0: nothing matches them again; the child's threads reclaim them), and the heaps go
 * back to the pool. What a dead thread was doing inside the allocator at the fork is lost at
 * worst (a block, a chain, a segment), never done twice: every update of a thread's own
 * structures leaves them consistent at each store (docs/design/10-lifecycle.md, "Two-store
 * updates"). pre: this thread is alone. */
static void orphan_dead_heaps(void) {
  ax_heap_t *self = axi_tls_heap;
  unsigned dead = 0;
  for (ax_heap_t *h = axi_heap_all(); h; h = h->all_next)
    if (h->active && h != self) {
      h->active = AX_HEAP_DEAD;
      dead++;
    }
  if (!dead)
    return;
  for (ax_heap_t *h = axi_heap_all(); h; h = h->all_next)
    if (h->active == AX_HEAP_DEAD) {
      axi_remote_orphan(h);
      axi_cache_orphan(h);
      if (axi_checked)
        axi_check_orphan(h);
    }
  axi_segment_foreach(orphan_segment, NULL);
  for (ax_heap_t *h = axi_heap_all(); h; h = h->all_next)
    if (h->active == AX_HEAP_DEAD) {
      axi_stats_merge_heap(h);
      h->active = 0;
      axi_heap_put(h, true);
    }
  ax_atomic_fetch_add_relaxed(&axi_stats.heaps_live, (uintptr_t)-dead);
}

static void fork_child(void) {
  axi_prof_fork_child();  /* (its lock is not taken for a fork: see there) */
  axi_guard_fork_child(); /* (nor is the guard pool's) */
  axi_segment_fork_child();
  if (fork_depth == 1) /* (a fork nested in a handler inside a fork takes nothing: above) */
    orphan_dead_heaps();
  if (fork_parent_mt)
    axi_forked = true; /* our thread_free lists may hold what the parent's threads pushed */
  fork_release();
}
