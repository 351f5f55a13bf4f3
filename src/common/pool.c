/* SPDX-License-Identifier: MIT */
/* The heap pool: heap structures, the registry of every heap ever made, and a thread's heap
 * made and installed.
 *
 * Heaps come from chunks mapped here and are never unmapped (type-stable), so other threads
 * may keep a stale pointer to one (see axi_remote_free). A heap that its thread left goes back
 * to the pool for the next thread (lifecycle.c: thread exit, fork children).
 *
 * No lock: thread start and exit take nothing that a preempted thread could hold (issue 39:
 * 1,024 threads on two cores spent 92% of their time spinning on this pool's lock while its
 * holder mapped a chunk). The free heaps are a stack popped and pushed with one CAS each; its
 * top word carries a tag beside the heap's address, bumped by every change, so that a pop
 * that read a top which left and came back meanwhile fails its CAS (ABA). A thread that finds
 * the pool empty maps a chunk of its own, outside any lock, takes its first heap and pushes
 * the others. A fork child finds the stack as the last CAS before the fork left it: a heap
 * taken or given back halfway is lost to it, never handed out twice (a heap is in the stack
 * only while it is inactive, and orphan_dead_heaps gives back active ones only).
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "pool.h"

#include "os.h"
#include "state.h"

/* Heaps start on a 4 KiB boundary, so that what a thread touches first (the direct table and
 * the fields after it) spans as few OS pages as it can. */
#define AX_HEAP_SLOT ((sizeof(ax_heap_t) + 4095) & ~(size_t)4095)
#define AX_HEAP_CHUNK (4 * AX_HEAP_SLOT)

/* The pool's top: a heap's address (64-byte aligned, below 2^48) with a 22-bit tag in the
 * bits it leaves free, the low 6 and the top 16. */
#define TOP_ADDR ((uintptr_t)0x0000ffffffffffc0u)
static ax_atomic_word pool_top;
static ax_atomic_word
    all_heaps; /* every heap made, through all_next: newest first, never shrinks */

static pthread_key_t exit_key;
static ax_atomic_word exit_key_made;

static ax_heap_t *top_heap(uintptr_t top) { return (ax_heap_t *)(top & TOP_ADDR); }
static uintptr_t top_of(ax_heap_t *heap, uintptr_t old) {
  uintptr_t tag = ((old & ~TOP_ADDR & 63) | (old >> 48 << 6)) + 1;
  return (uintptr_t)heap | (tag & 63) | (tag >> 6 << 48);
}

/* first .. last (linked through pool_next) onto the pool. */
static void pool_push(ax_heap_t *first, ax_heap_t *last) {
  uintptr_t top = ax_atomic_load_relaxed(&pool_top);
  do
    ax_poke(&last->pool_next, top_heap(top));
  while (!ax_atomic_cas_release(&pool_top, &top, top_of(first, top)));
}

/* post: a free heap, or NULL. A popper may read the link of a heap that another popper has
 * just taken and is resetting: type-stable memory, and the tag fails its CAS. */
static ax_heap_t *pool_pop(void) {
  uintptr_t top = ax_atomic_load_acquire(&pool_top);
  for (;;) {
    ax_heap_t *heap = top_heap(top);
    if (!heap)
      return NULL;
    ax_heap_t *next = ax_peek(&heap->pool_next);
    if (ax_atomic_cas_acq_rel(&pool_top, &top, top_of(next, top)))
      return heap;
  }
}

/* A chunk of new heaps: the first for the caller, the others to the pool, all registered. */
static ax_heap_t *chunk_new(void) {
  char *chunk = axi_os_map(AX_HEAP_CHUNK);
  if (!chunk)
    return NULL;
  size_t n = AX_HEAP_CHUNK / AX_HEAP_SLOT;
  ax_heap_t *first = (ax_heap_t *)chunk, *last = first;
  for (size_t i = 1; i < n; i++) {
    ax_heap_t *h = (ax_heap_t *)(chunk + i * AX_HEAP_SLOT);
    h->all_next = last;
    last = h;
  }
  /* all_next: last .. first, then the registry (read without a lock: release) */
  uintptr_t head = ax_atomic_load_relaxed(&all_heaps);
  do
    first->all_next = (ax_heap_t *)head;
  while (!ax_atomic_cas_release(&all_heaps, &head, (uintptr_t)last));
  if (n > 1) {
    ax_heap_t *second = (ax_heap_t *)(chunk + AX_HEAP_SLOT);
    for (size_t i = 1; i + 1 < n; i++)
      ((ax_heap_t *)(chunk + i * AX_HEAP_SLOT))->pool_next =
          (ax_heap_t *)(chunk + (i + 1) * AX_HEAP_SLOT);
    pool_push(second, last);
  }
  return first;
}

/* The thread's heap was done (thread exit): the thread is in its last TSD destructors. A heap
 * it makes now (another key's destructor allocates) is called again in the next round, but
 * not after the last (glibc: PTHREAD_DESTRUCTOR_ITERATIONS, 4), and would then outlive its
 * thread with its thread id, which glibc gives the next thread with this stack: that one would
 * free into its pages as their owner (a heapless one into the shared empty heap). So such a
 * heap gets an id no thread has (AX_TID_GHOST set: thread pointers are 64-byte aligned): every
 * free of its blocks, its own thread's too, is a remote free, and it keeps no chains. */
#define AX_TID_GHOST ((uintptr_t)8)

/* The direct table of a heap a thread had: the entries of the classes it had a current page
 * of back to the empty page. Each entry is its class's current page (page.c, current_update),
 * so the others are empty already: a thread that used a few small classes costs a few
 * hundred stores, not 1,025 (wl_thread_churn). */
static void direct_reset(ax_heap_t *heap) {
  for (unsigned c = 1; c < AX_CLASSES && axi_class_size(c) <= AX_DIRECT_MAX; c++) {
    if (heap->current[c] == &axi_page_empty)
      continue;
    size_t lo = c == 1 ? 1 : axi_class_size(c - 1) + 1, hi = axi_class_size(c);
    for (size_t i = lo; i <= hi; i++)
      heap->direct[i] = &axi_page_empty;
  }
}

/* post: a heap for the calling thread, installed in TLS (before anything can call malloc
 * again: axi_heap_bind may calloc); NULL only when the OS has no memory for it. pre: the
 * thread has none (axi_tls_heap is the empty heap). */
ax_heap_t *axi_heap_start(void) {
  ax_heap_t *heap = pool_pop();
  if (!heap)
    heap = chunk_new();
  if (!heap)
    return NULL;
  /* A heap of a new chunk is the kernel's zeroes: written only as its thread uses it (a
   * thread that mallocs once touches the first OS pages). One a thread had before is cleared
   * but for what other threads touch (from full_pending to stats): 5 KiB of its 17.6. */
  if (heap->reused) { /* (a cache row counts up to its n) */
    direct_reset(heap);
    memset(&heap->rb_last, 0, offsetof(ax_heap_t, full_pending) - offsetof(ax_heap_t, rb_last));
    memset(&heap->stats, 0, sizeof heap->stats);
    memset(&heap->guard, 0, sizeof heap->guard); /* (a class left due would never sample) */
    heap->cache.last = NULL;
    heap->cache.last_cls = 0;
    memset(heap->cache.n, 0, sizeof heap->cache.n);
    memset(&heap->rb, 0, sizeof *heap - offsetof(ax_heap_t, rb));
  } else {
    for (unsigned i = 0; i < AX_DIRECT_N; i++)
      heap->direct[i] = &axi_page_empty;
  }
  heap->reused = true;
  heap->hooked =
      (axi_malloc_hooked ? AX_HOOKED_MODES : 0) | (axi_guard_every ? AX_HOOKED_GUARD : 0);
  ax_atomic_store_relaxed(&heap->full_pending, 0);
  for (unsigned c = 0; c < AX_CLASSES; c++)
    heap->current[c] = &axi_page_empty;
  heap->tid = ax_arch_thread_id() | (axi_thread_exited ? AX_TID_GHOST : 0);
  /* The inbox opens (it was closed when the heap's last thread exited, and nobody writes a
   * closed one: remote.c); a ghost's stays closed, since it never takes it. */
  ax_atomic_store_release(&heap->inbox, axi_thread_exited ? AX_INBOX_CLOSED : 0);
  /* other threads may send its batches from now on (remote.c) */
  ax_atomic_store_release(&heap->steal, AX_STEAL_FREE);
  ax_poke(&heap->active, 1);
  ax_atomic_fetch_add_relaxed(&axi_stats.heaps_live, 1);
  axi_tls_heap = heap;
  return heap;
}

/* Calls on_exit(heap) at the exit of the thread of every heap bound to it (axi_heap_bind).
 * pre: once, by the first thread to start a heap, after it did. */
void axi_heap_exit_key(void (*on_exit)(void *)) {
  pthread_key_create(&exit_key, on_exit);
  ax_atomic_store_release(&exit_key_made, 1);
}

/* heap, the calling thread's, is given to on_exit at its thread's exit. pre: the exit key is
 * made (a thread that frees a block starts its heap after the key: that block was allocated
 * after the first thread's start made it). */
void axi_heap_bind(ax_heap_t *heap) {
  if (ax_atomic_load_acquire(&exit_key_made))
    pthread_setspecific(exit_key, heap); /* (may calloc: the heap is installed) */
}

/* A heap its thread left, back to the pool. pre: none of the heap's fields is in use. A
 * heap of a thread that vanished in a fork (orphaned: true) may have stopped inside a
 * current_update, between a class's current page and its direct entries: its direct table is
 * emptied whole here, since direct_reset trusts the current pages. */
void axi_heap_put(ax_heap_t *heap, bool orphaned) {
  if (orphaned)
    for (unsigned i = 0; i < AX_DIRECT_N; i++)
      heap->direct[i] = &axi_page_empty;
  pool_push(heap, heap);
}

/* Calls fn on every heap in use (racy reads: statistics, the double-free seek). */
void axi_heap_foreach(void (*fn)(ax_heap_t *, void *), void *arg) {
  for (ax_heap_t *h = axi_heap_all(); h; h = h->all_next)
    if (ax_peek(&h->active))
      fn(h, arg);
}

/* Every heap ever made, newest first, through all_next (a fork child's handler). */
ax_heap_t *axi_heap_all(void) { return (ax_heap_t *)ax_atomic_load_acquire(&all_heaps); }
