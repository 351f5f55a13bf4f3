/* SPDX-License-Identifier: MIT */
/* t_mt_prodcons: producers and consumers where every free is a remote free.
 *
 * P producer threads (2) allocate blocks of mixed sizes, fill each with a pattern and
 * push it through a bounded lock-free single-producer/single-consumer ring to one of
 * C consumer threads (2). Consumers verify each block in full and free it. Producers
 * never free, consumers never allocate: every free hits a page owned by another thread.
 *
 * The rings are bounded, so at most P*C*RING blocks are live at once. If remote-freed
 * blocks are reused (collected back by the owning producer) the allocator's committed
 * memory stays near that live set; if they leak, os_committed approaches the total
 * bytes allocated. The test asserts os_committed (and its peak) stays well below the
 * total allocated bytes.
 *
 * usage: t_mt_prodcons [blocks in total=3000000]
 */
#include <axmalloc.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "sys_check.h"

#define NPROD 2
#define NCONS 2
#define RING 1024 /* power of two */
#define MAGIC 0xC0C0ull

typedef struct {
  _Alignas(64) atomic_size_t head; /* consumer's index */
  _Alignas(64) atomic_size_t tail; /* producer's index */
  _Alignas(64) void *slot[RING];
} ring_t;

static ring_t rings[NPROD][NCONS];
static atomic_int producers_done;
static long per_producer;
static atomic_ullong bytes_allocated, blocks_freed, bytes_freed;

static int ring_push(ring_t *r, void *p) {
  size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
  size_t h = atomic_load_explicit(&r->head, memory_order_acquire);
  if (t - h == RING)
    return 0;
  r->slot[t & (RING - 1)] = p;
  atomic_store_explicit(&r->tail, t + 1, memory_order_release);
  return 1;
}

static void *ring_pop(ring_t *r) {
  size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
  size_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
  if (h == t)
    return NULL;
  void *p = r->slot[h & (RING - 1)];
  atomic_store_explicit(&r->head, h + 1, memory_order_release);
  return p;
}

static size_t pick_size(uint64_t *rng) {
  uint64_t r = sys_rand(rng);
  unsigned k = (unsigned)(r % 100);
  r >>= 8;
  if (k < 90)
    return 16 + (size_t)(r % 1009); /* 16 .. 1 KiB */
  if (k < 99)
    return 1024 + (size_t)(r % 15361); /* 1 .. 16 KiB */
  return 16384 + (size_t)(r % 49153);  /* 16 .. 64 KiB */
}

static void *producer(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg;
  uint64_t rng = 0x1234567ull + 7919ull * me;
  unsigned long long bytes = 0;
  unsigned c = 0;
  for (long i = 0; i < per_producer; i++) {
    size_t size = pick_size(&rng);
    void *p = malloc(size);
    CHECKF(p != NULL, "malloc(%zu) failed", size);
    sys_fill(p, size, (MAGIC << 48) | ((uint64_t)me << 40) | (uint64_t)i);
    bytes += size;
    /* Round robin over the consumers; spin on a full ring, trying the other one. */
    for (;;) {
      if (ring_push(&rings[me][c], p))
        break;
      c = (c + 1) % NCONS;
      if (ring_push(&rings[me][c], p))
        break;
      sched_yield();
    }
    c = (c + 1) % NCONS;
  }
  atomic_fetch_add(&bytes_allocated, bytes);
  atomic_fetch_add(&producers_done, 1);
  return NULL;
}

static void *consumer(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg;
  unsigned long long n = 0, bytes = 0;
  for (;;) {
    int got = 0;
    for (unsigned pr = 0; pr < NPROD; pr++) {
      void *p;
      while ((p = ring_pop(&rings[pr][me])) != NULL) {
        const uint64_t *w = p;
        uint64_t tag = w[0];
        size_t size = (size_t)w[1];
        CHECKF((tag >> 48) == MAGIC && ((tag >> 40) & 0xff) == pr,
               "block %p from producer %u has header %#llx", p, pr, (unsigned long long)tag);
        CHECKF(size >= 16 && size <= 65536, "block %p: bad size %zu", p, size);
        CHECKF(malloc_usable_size(p) >= size, "block %p: usable %zu < %zu", p,
               malloc_usable_size(p), size);
        CHECKF(sys_verify(p, size, tag), "block %p (size %zu, tag %#llx) corrupted", p, size,
               (unsigned long long)tag);
        sys_poison(p);
        free(p); /* always remote: producers own every page */
        n++;
        bytes += size;
        got = 1;
      }
    }
    if (!got) {
      if (atomic_load(&producers_done) == NPROD) {
        /* Producers are finished: one more sweep picks up their last pushes. */
        int empty = 1;
        for (unsigned pr = 0; pr < NPROD; pr++) {
          ring_t *r = &rings[pr][me];
          if (atomic_load(&r->head) != atomic_load(&r->tail))
            empty = 0;
        }
        if (empty)
          break;
      } else {
        sched_yield();
      }
    }
  }
  atomic_fetch_add(&blocks_freed, n);
  atomic_fetch_add(&bytes_freed, bytes);
  return NULL;
}

int main(int argc, char **argv) {
  long total = argc > 1 ? atol(argv[1]) : 3000000;
  CHECK(total >= NPROD);
  per_producer = total / NPROD;
  total = per_producer * NPROD;

  ax_stats_t before, after;
  ax_stats_get(&before);

  pthread_t pt[NPROD], ct[NCONS];
  for (unsigned i = 0; i < NCONS; i++)
    CHECK(pthread_create(&ct[i], NULL, consumer, (void *)(uintptr_t)i) == 0);
  for (unsigned i = 0; i < NPROD; i++)
    CHECK(pthread_create(&pt[i], NULL, producer, (void *)(uintptr_t)i) == 0);
  for (unsigned i = 0; i < NPROD; i++)
    CHECK(pthread_join(pt[i], NULL) == 0);
  for (unsigned i = 0; i < NCONS; i++)
    CHECK(pthread_join(ct[i], NULL) == 0);

  ax_stats_get(&after);
  unsigned long long ab = atomic_load(&bytes_allocated);
  printf("t_mt_prodcons: %ld blocks, %.1f MiB allocated, %llu freed remotely\n", total,
         ab / 1048576.0, (unsigned long long)atomic_load(&blocks_freed));
  printf("  ax_stats: mallocs +%llu, os_committed %.1f MiB (peak %.1f MiB), os_reserved "
         "%.1f MiB (peak %.1f MiB), segments_live %llu\n",
         (unsigned long long)(after.mallocs - before.mallocs), after.os_committed / 1048576.0,
         after.os_committed_peak / 1048576.0, after.os_reserved / 1048576.0,
         after.os_reserved_peak / 1048576.0, (unsigned long long)after.segments_live);

  CHECK(atomic_load(&blocks_freed) == (unsigned long long)total);
  CHECK(atomic_load(&bytes_freed) == ab);
  CHECKF(after.mallocs - before.mallocs >= (uint64_t)total,
         "ax_stats mallocs grew by %llu, expected >= %ld",
         (unsigned long long)(after.mallocs - before.mallocs), total);

  /* Bounded memory: at most NPROD*NCONS*RING blocks (~4096, a few MiB) are live at any
   * time. Allow generous slack for per-thread pages and delayed purging, but far less
   * than the total allocated: 1/8 of it, clamped to [64 MiB, 256 MiB]. A leak of
   * remote-freed blocks makes os_committed approach the total. */
  uint64_t limit = ab / 8;
  if (limit < (64ull << 20))
    limit = 64ull << 20;
  if (limit > (256ull << 20))
    limit = 256ull << 20;
  CHECKF(ab > 2 * limit, "too few blocks (%llu bytes) for the bound %llu to mean anything", ab,
         (unsigned long long)limit);
  CHECKF(after.os_committed < limit,
         "os_committed %llu >= limit %llu (allocated total %llu): "
         "remote-freed blocks not reused?",
         (unsigned long long)after.os_committed, (unsigned long long)limit, ab);
  CHECKF(after.os_committed_peak < limit,
         "os_committed_peak %llu >= limit %llu (allocated "
         "total %llu): remote-freed blocks not reused?",
         (unsigned long long)after.os_committed_peak, (unsigned long long)limit, ab);
  printf("t_mt_prodcons: OK\n");
  return 0;
}
