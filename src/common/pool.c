/* SPDX-License-Identifier: MIT */
/* The heap pool: heap structures, the registry of every heap ever made, and a thread's heap
 * made and installed.
 *
 * Heaps come from chunks mapped here and are never unmapped (type-stable), so other threads
 * may keep a stale pointer to one (see axi_remote_free). A heap that its thread left goes back
 * to the pool for the next thread (lifecycle.c: thread exit, fork children).
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

#define AX_HEAP_CHUNK ((size_t)64 << 10)
static ax_lock_t pool_lock; /* thread start and exit only */
static ax_heap_t *pool_free;
static ax_heap_t *all_heaps; /* every heap made, through all_next: recycled, never freed */
static char *chunk_at, *chunk_end;

static pthread_key_t exit_key;
static ax_atomic_word exit_key_made;

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
      ax_poke_release(&all_heaps, heap); /* (read without the lock) */
    }
  }
  axi_unlock(&pool_lock);
  return heap;
}

/* The thread's heap was done (thread exit): the thread is in its last TSD destructors. A heap
 * it makes now (another key's destructor allocates) is called again in the next round, but
 * not after the last (glibc: PTHREAD_DESTRUCTOR_ITERATIONS, 4), and would then outlive its
 * thread with its thread id, which glibc gives the next thread with this stack: that one would
 * free into its pages as their owner (a heapless one into the shared empty heap). So such a
 * heap gets an id no thread has (AX_TID_GHOST set: thread pointers are 64-byte aligned): every
 * free of its blocks, its own thread's too, is a remote free, and it keeps no chains. */
#define AX_TID_GHOST ((uintptr_t)8)

/* post: a heap for the calling thread, installed in TLS (before anything can call malloc
 * again: axi_heap_bind may calloc); NULL only when the OS has no memory for it. pre: the
 * thread has none (axi_tls_heap is the empty heap). */
ax_heap_t *axi_heap_start(void) {
  ax_heap_t *heap = heap_alloc();
  if (!heap)
    return NULL;
  memset(heap, 0, offsetof(ax_heap_t, full_pending)); /* (not what other threads touch) */
  ax_atomic_store_relaxed(&heap->full_pending, 0);
  for (unsigned i = 0; i < AX_DIRECT_N; i++)
    heap->direct[i] = &axi_page_empty;
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

/* A heap its thread left, back to the pool. pre: unlocked: none of the heap's fields is in
 * use; locked == false: fork's prepare handler holds the pool lock (axi_heap_fork_prepare). */
void axi_heap_put(ax_heap_t *heap, bool lock) {
  if (lock)
    axi_lock(&pool_lock);
  heap->pool_next = pool_free;
  pool_free = heap;
  if (lock)
    axi_unlock(&pool_lock);
}

/* Calls fn on every heap in use (racy reads: statistics, the double-free seek). */
void axi_heap_foreach(void (*fn)(ax_heap_t *, void *), void *arg) {
  for (ax_heap_t *h = ax_peek_acquire(&all_heaps); h; h = h->all_next)
    if (ax_peek(&h->active))
      fn(h, arg);
}

/* Every heap ever made, newest first, through all_next (a fork child's handler). */
ax_heap_t *axi_heap_all(void) { return ax_peek_acquire(&all_heaps); }

void axi_heap_fork_prepare(void) { axi_lock_for_fork(&pool_lock); }
void axi_heap_fork_release(void) { axi_unlock_after_fork(&pool_lock); }
