/* Thread heaps: one per thread, reached through one initial-exec TLS slot.
 *
 * A thread starts on axi_heap_empty, whose direct table points at an empty page, so its
 * first malloc falls into the slow path, which creates the heap here. Heaps come from a
 * pool and are never unmapped (type-stable), so other threads may keep a stale pointer to
 * one (see axi_remote_free). At thread exit a pthread key destructor collects the heap,
 * abandons its segments that still hold live blocks and returns the heap to the pool.
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

ax_page_t axi_page_empty; /* free == NULL: the fast path always falls through */
ax_heap_t axi_heap_empty = {.direct = {[0 ... AX_DIRECT_N - 1] = &axi_page_empty},
                            .current = {[0 ... AX_CLASSES - 1] = &axi_page_empty}};
__thread ax_heap_t *axi_tls_heap __attribute__((tls_model("initial-exec"))) = &axi_heap_empty;

/* ---- the heap pool ------------------------------------------------------------------ */

#define AX_HEAP_CHUNK ((size_t)64 << 10)
static ax_lock_t pool_lock; /* thread start and exit only */
static ax_heap_t *pool_free;
static ax_heap_t *all_heaps; /* every heap made, through all_next: recycled, never freed */
static char *chunk_at, *chunk_end;

static ax_heap_t *heap_alloc(void) {
  axi_lock(&pool_lock);
  ax_heap_t *heap = pool_free;
  if (heap) {
    pool_free = heap->pool_next;
  } else {
    size_t sz = (sizeof(ax_heap_t) + 63) & ~(size_t)63;
    if (chunk_at + sz > chunk_end) {
      chunk_at = axi_os_map(AX_HEAP_CHUNK);
      chunk_end = chunk_at ? chunk_at + AX_HEAP_CHUNK : NULL;
    }
    if (chunk_at) {
      heap = (ax_heap_t *)chunk_at;
      chunk_at += sz;
      heap->all_next = all_heaps;
      __atomic_store_n(&all_heaps, heap, __ATOMIC_RELEASE); /* (read without the lock) */
    }
  }
  axi_unlock(&pool_lock);
  return heap;
}

static void heap_free(ax_heap_t *heap) {
  axi_lock(&pool_lock);
  heap->pool_next = pool_free;
  pool_free = heap;
  axi_unlock(&pool_lock);
}

/* Calls fn on every heap in use (racy reads: statistics only). */
void axi_heap_foreach(void (*fn)(ax_heap_t *, void *), void *arg) {
  for (ax_heap_t *h = __atomic_load_n(&all_heaps, __ATOMIC_ACQUIRE); h; h = h->all_next)
    if (__atomic_load_n(&h->active, __ATOMIC_RELAXED))
      fn(h, arg);
}

/* ---- thread exit and fork -------------------------------------------------------------- */

static pthread_key_t heap_key;

/* The thread's heap was done (heap_done): the thread is in its last TSD destructors. A heap it
 * makes now (another key's destructor allocates) is called again in the next round, but not
 * after the last (glibc: PTHREAD_DESTRUCTOR_ITERATIONS, 4), and would then outlive its thread
 * with its thread id, which glibc gives the next thread with this stack: that one would free
 * into its pages as their owner (a heapless one into the shared empty heap). So such a heap
 * gets an id no thread has (AX_TID_GHOST set: thread pointers are 64-byte aligned): every
 * free of its blocks, its own thread's too, is a remote free, and it keeps no chains. */
static __thread bool heap_exited __attribute__((tls_model("initial-exec")));
#define AX_TID_GHOST ((uintptr_t)8)

bool axi_heap_thread_exited(void) { return heap_exited; }

static void heap_done(void *arg) {
  ax_heap_t *heap = arg;
  heap_exited = true;
  axi_remote_flush(heap, true);
  axi_cache_flush(heap);
  axi_pages_collect_all(heap);
  axi_segment_purge(heap, true); /* what stays behind with abandoned segments is purged */
  axi_segment_abandon_all(heap);
  axi_stats_merge_heap(heap);
  __atomic_store_n(&heap->active, 0, __ATOMIC_RELAXED);
  ax_atomic_fetch_add_relaxed(&axi_stats.heaps_live, (uintptr_t)-1);
  if (axi_tls_heap == heap)
    axi_tls_heap = &axi_heap_empty;
  heap_free(heap);
}

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
  __atomic_signal_fence(__ATOMIC_SEQ_CST); /* counted before the first lock is taken */
  axi_lock_for_fork(&pool_lock);
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
  axi_unlock_after_fork(&pool_lock);
  __atomic_signal_fence(__ATOMIC_SEQ_CST); /* uncounted after the last lock is released */
  fork_depth = 0;
}

/* ---- the fork child model (docs/design.md, "Fork") ------------------------------------ */

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
 * structures leaves them consistent at each store (docs/design.md). pre: fork's prepare
 * handler holds the pool lock (this thread is alone). */
static void orphan_dead_heaps(void) {
  ax_heap_t *self = axi_tls_heap;
  unsigned dead = 0;
  for (ax_heap_t *h = all_heaps; h; h = h->all_next)
    if (h->active && h != self) {
      h->active = AX_HEAP_DEAD;
      dead++;
    }
  if (!dead)
    return;
  for (ax_heap_t *h = all_heaps; h; h = h->all_next)
    if (h->active == AX_HEAP_DEAD) {
      axi_remote_orphan(h);
      axi_cache_orphan(h);
    }
  axi_segment_foreach(orphan_segment, NULL);
  for (ax_heap_t *h = all_heaps; h; h = h->all_next)
    if (h->active == AX_HEAP_DEAD) {
      axi_stats_merge_heap(h);
      h->active = 0;
      h->pool_next = pool_free;
      pool_free = h;
    }
  ax_atomic_fetch_add_relaxed(&axi_stats.heaps_live, (uintptr_t)-dead);
}

static void fork_child(void) {
  axi_prof_fork_child(); /* (its lock is not taken for a fork: see there) */
  if (fork_depth == 1)   /* (a fork nested in a handler inside a fork takes nothing: above) */
    orphan_dead_heaps();
  if (fork_parent_mt)
    axi_forked = true; /* our thread_free lists may hold what the parent's threads pushed */
  fork_release();
}

/* ---- trim and refused mappings ---------------------------------------------------------- */

/* malloc_trim: purge all that can be purged now: this thread's empty pages, abandoned
 * segments that turn out empty, and both caches. Other threads' empty pages wait for their
 * own slow path (their heaps are theirs alone). pre: heap is the calling thread's. */
void axi_heap_trim(ax_heap_t *heap) {
  if (heap != &axi_heap_empty) {
    if (axi_prof_on) /* the walks below lengthen the fast path's lists (page.c) */
      axi_page_prof_settle_all(heap);
    axi_remote_flush(heap, true);
    AX_HOOK(AX_HOOK_TRIM, heap);
    for (int i = 0; i < 64 && axi_page_reclaim(heap); i++)
      ;
    axi_cache_flush(heap);
    axi_pages_retire_empty(heap, true);
    axi_segment_purge(heap, true);
    if (axi_prof_on)
      axi_page_prof_grant_all(heap);
  }
  axi_segment_cache_trim(AX_TRIM_ALL);
  axi_huge_cache_trim(AX_TRIM_ALL);
  if (axi_prof_on)
    axi_prof_trim();
}

/* The OS refused a mapping. Only unmapping helps (RLIMIT_AS and the overcommit check count
 * address space, not resident pages: no purge): take over exited threads' segments, retire
 * the pages that are empty, then unmap both caches without waiting for their locks (fork's
 * prepare handler may hold them). A program that tries a huge buffer and falls back to a
 * smaller one pays little per refusal. Every class keeps its current page (pinned): the
 * next malloc of that size would map it again (a refused request cost the next malloc(16) a
 * segment's mmap and faults, 17-23 us; glibc's tst-malloc-too-large took 16-21 s instead of
 * 2-3). post: true when something was unmapped. */
bool axi_heap_release(ax_heap_t *heap) {
  uint64_t before = ax_atomic_load_relaxed(&axi_stats.munmap_calls);
  if (axi_prof_on) /* as in trim */
    axi_page_prof_settle_all(heap);
  axi_remote_flush(heap, false);
  axi_huge_pack_tight();
  for (int i = 0; i < 64 && axi_page_reclaim(heap); i++)
    ;
  axi_cache_flush(heap);
  axi_pages_retire_empty(heap, false);
  if (axi_prof_on)
    axi_page_prof_grant_all(heap);
  axi_segment_cache_trim(AX_TRIM_ALL_NOWAIT);
  axi_huge_cache_trim(AX_TRIM_ALL_NOWAIT);
  return ax_atomic_load_relaxed(&axi_stats.munmap_calls) != before;
}

/* The allocations that map memory, retried once after axi_heap_release when the OS refuses
 * (t_oom.limit: memory freed just before, waiting out the purge delay or in the caches,
 * is usable at once). */
void *axi_heap_page_malloc(ax_heap_t *heap, size_t size, bool zero) {
  void *p = axi_page_malloc(heap, size, zero);
  if (!p && axi_heap_release(heap))
    p = axi_page_malloc(heap, size, zero);
  return p;
}

ax_page_t *axi_heap_page_with_free(ax_heap_t *heap, unsigned c) {
  ax_page_t *page = axi_page_with_free(heap, c);
  if (!page && axi_heap_release(heap))
    page = axi_page_with_free(heap, c);
  return page;
}

/* A request no address space holds fails at once: nothing to release for it. */
void *axi_heap_huge_alloc(ax_heap_t *heap, size_t size, size_t align, bool zero) {
  axi_page_purge_tick(heap);
  void *p = axi_huge_alloc(heap, size, align, zero);
  if (!p && axi_huge_possible(size, align) && axi_heap_release(heap))
    p = axi_huge_alloc(heap, size, align, zero);
  return p;
}

/* ---- process and thread init ---------------------------------------------------------- */

static ax_atomic_word init_state; /* 0: not yet, 1: in progress, 2: done */

static void init_once(void) {
  uintptr_t expect = 0;
  if (ax_atomic_cas_acq_rel(&init_state, &expect, 1)) {
    axi_init_process();
    ax_atomic_store_release(&init_state, 2);
  }
  while (ax_atomic_load_acquire(&init_state) != 2)
    ax_arch_pause();
}

/* The first malloc of a thread. post: the thread's heap, installed in TLS; NULL only
 * when the OS has no memory for it. May run before main and inside dlsym. */
ax_heap_t *axi_heap_init_thread(void) {
  static ax_atomic_word hooks_state;
  if (ax_atomic_load_acquire(&init_state) != 2)
    init_once();
  ax_heap_t *heap = heap_alloc();
  if (!heap)
    return NULL;
  memset(heap, 0, offsetof(ax_heap_t, full_pending)); /* (not what other threads touch) */
  ax_atomic_store_relaxed(&heap->full_pending, 0);
  for (unsigned i = 0; i < AX_DIRECT_N; i++)
    heap->direct[i] = &axi_page_empty;
  for (unsigned c = 0; c < AX_CLASSES; c++)
    heap->current[c] = &axi_page_empty;
  heap->tid = ax_arch_thread_id() | (heap_exited ? AX_TID_GHOST : 0);
  __atomic_store_n(&heap->active, 1, __ATOMIC_RELAXED);
  ax_atomic_fetch_add_relaxed(&axi_stats.heaps_live, 1);
  axi_tls_heap = heap; /* before anything below can call malloc again */

  uintptr_t expect = 0;
  if (ax_atomic_cas_acq_rel(&hooks_state, &expect, 1)) {
    pthread_key_create(&heap_key, heap_done);
    pthread_atfork(fork_prepare, fork_release, fork_child);
    ax_atomic_store_release(&hooks_state, 2);
  }
  while (ax_atomic_load_acquire(&hooks_state) != 2)
    ax_arch_pause();
  pthread_setspecific(heap_key, heap);
  return heap;
}
