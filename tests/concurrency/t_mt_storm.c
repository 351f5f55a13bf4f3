/* SPDX-License-Identifier: MIT */
/* t_mt_storm: cross-thread free storm.
 *
 * T threads each allocate blocks of mixed sizes (16 B .. 64 KiB, and now and then one
 * above 1 MiB, which axmalloc serves as a huge mapping), fill them with a pattern unique
 * to the allocation, and swap them into a random slot of a shared array of atomic
 * slots. Whatever block comes out of the slot (most often one published by another
 * thread) is verified in full and freed, so most frees are remote frees. A block that
 * is handed out twice while live, or that overlaps another live block, breaks the
 * pattern of one of them and is caught before its free. Headers are poisoned just
 * before free so that a double hand-out of the same address is caught too.
 *
 * usage: t_mt_storm [threads=4] [iterations per thread=300000] [slots=4096]
 */
#include <axmalloc.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>

#include "sys_check.h"

#define MAGIC 0xA55Aull
#define HUGE_MIN ((size_t)1 << 20)

static _Atomic(uintptr_t) *slots;
static size_t nslots;
static long iters;
static atomic_ullong total_allocs, total_bytes, total_remote, total_huge;

static uint64_t make_tag(unsigned tid, uint64_t seq) {
  return (MAGIC << 48) | ((uint64_t)(tid & 0xff) << 40) | (seq & 0xffffffffffull);
}

static size_t pick_size(uint64_t *rng) {
  uint64_t r = sys_rand(rng);
  unsigned k = (unsigned)(r % 1000);
  r >>= 10;
  if (k == 0)
    return HUGE_MIN + 1 + (size_t)(r % (3u << 20)); /* 1 MiB .. 4 MiB */
  if (k < 600)
    return 16 + (size_t)(r % 497); /* 16 .. 512 */
  if (k < 900)
    return 16 + (size_t)(r % 8177);           /* .. 8 KiB */
  return 16 + (size_t)(r % (65536 - 16 + 1)); /* .. 64 KiB */
}

/* Verify a block taken out of a slot, poison its header, free it. */
static void check_and_free(void *p, unsigned me) {
  CHECKF(((uintptr_t)p & 15) == 0, "block %p not 16-byte aligned", p);
  const uint64_t *w = (const uint64_t *)p;
  uint64_t tag = w[0];
  size_t size = (size_t)w[1];
  CHECKF((tag >> 48) == MAGIC,
         "block %p: header tag %#llx is not ours (freed or "
         "overwritten while live?)",
         p, (unsigned long long)tag);
  CHECKF(size >= 16 && size <= HUGE_MIN + (4u << 20), "block %p: bad size %zu", p, size);
  CHECKF(malloc_usable_size(p) >= size, "block %p: usable %zu < requested %zu", p,
         malloc_usable_size(p), size);
  CHECKF(sys_verify(p, size, tag),
         "block %p (size %zu, tag %#llx) corrupted: overlap "
         "with another live block or double hand-out",
         p, size, (unsigned long long)tag);
  if (((tag >> 40) & 0xff) != me)
    atomic_fetch_add_explicit(&total_remote, 1, memory_order_relaxed);
  sys_poison(p);
  free(p);
}

static void *worker(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull * (me + 1) + 12345;
  unsigned long long nalloc = 0, nbytes = 0, nhuge = 0;
  for (long i = 0; i < iters; i++) {
    size_t size = pick_size(&rng);
    void *p = malloc(size);
    CHECKF(p != NULL, "malloc(%zu) failed", size);
    sys_fill(p, size, make_tag(me, (uint64_t)i));
    nalloc++;
    nbytes += size;
    if (size > HUGE_MIN)
      nhuge++;
    size_t s = (size_t)(sys_rand(&rng) % nslots);
    uintptr_t old = atomic_exchange_explicit(&slots[s], (uintptr_t)p, memory_order_acq_rel);
    if (old)
      check_and_free((void *)old, me);
    /* Sometimes drain a second slot without refilling it, so that threads also free
     * while slots are empty and allocation/free counts interleave irregularly. */
    if ((sys_rand(&rng) & 7) == 0) {
      s = (size_t)(sys_rand(&rng) % nslots);
      old = atomic_exchange_explicit(&slots[s], 0, memory_order_acq_rel);
      if (old)
        check_and_free((void *)old, me);
    }
  }
  atomic_fetch_add(&total_allocs, nalloc);
  atomic_fetch_add(&total_bytes, nbytes);
  atomic_fetch_add(&total_huge, nhuge);
  return NULL;
}

int main(int argc, char **argv) {
  int nthreads = argc > 1 ? atoi(argv[1]) : 4;
  iters = argc > 2 ? atol(argv[2]) : 300000;
  nslots = argc > 3 ? (size_t)atol(argv[3]) : 4096;
  CHECK(nthreads >= 2 && nthreads <= 255 && iters > 0 && nslots > 0);

  ax_stats_t before, after;
  ax_stats_get(&before);

  slots = calloc(nslots, sizeof *slots);
  CHECK(slots != NULL);
  for (size_t i = 0; i < nslots; i++)
    CHECK(atomic_load(&slots[i]) == 0);

  pthread_t th[256];
  for (int t = 0; t < nthreads; t++)
    CHECK(pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t) == 0);
  for (int t = 0; t < nthreads; t++)
    CHECK(pthread_join(th[t], NULL) == 0);

  size_t left = 0;
  for (size_t i = 0; i < nslots; i++) {
    uintptr_t p = atomic_exchange(&slots[i], 0);
    if (p) {
      check_and_free((void *)p, 255);
      left++;
    }
  }
  free(slots);

  ax_stats_get(&after);
  unsigned long long na = atomic_load(&total_allocs);
  printf("t_mt_storm: %d threads, %llu blocks (%llu huge), %.1f MiB, %llu remote frees, "
         "%zu drained at end\n",
         nthreads, na, (unsigned long long)atomic_load(&total_huge),
         atomic_load(&total_bytes) / 1048576.0, (unsigned long long)atomic_load(&total_remote),
         left);
  printf("  ax_stats: mallocs +%llu, huge +%llu, segments_live %llu, os_committed %.1f MiB "
         "(peak %.1f MiB)\n",
         (unsigned long long)(after.mallocs - before.mallocs),
         (unsigned long long)(after.huge_allocs - before.huge_allocs),
         (unsigned long long)after.segments_live, after.os_committed / 1048576.0,
         after.os_committed_peak / 1048576.0);
  /* Every block was verified before its free; most frees must have been remote. */
  CHECK(atomic_load(&total_remote) > na / 4);
  /* The blocks came from axmalloc (exited threads' counters are merged at exit). */
  CHECKF(after.mallocs - before.mallocs >= na, "ax_stats mallocs grew by %llu, expected >= %llu",
         (unsigned long long)(after.mallocs - before.mallocs), na);
  CHECK(after.huge_allocs - before.huge_allocs >= atomic_load(&total_huge));
  printf("t_mt_storm: OK\n");
  return 0;
}
