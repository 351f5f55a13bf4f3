/* SPDX-License-Identifier: MIT */
/* t_mt_threads: many short-lived threads, abandoned segments, bounded RSS.
 *
 * N threads (10,000 by default) run BATCH (4) at a time. Each allocates a few hundred
 * blocks of mixed sizes (one of them 64 KiB), frees about half of them itself, and
 * hands the rest to a global list before it exits, so the segments holding them are
 * abandoned with live blocks. The main thread frees the blocks of batch k (remote
 * frees into segments whose owner has exited) while batch k+1 runs (and may be
 * reclaiming those very segments). Each thread also mallocs from a pthread key
 * destructor, which runs during thread exit.
 *
 * Asserts: every block intact before its free; RSS (/proc/self/statm) at the end below
 * an absolute limit and not growing with the thread count (RSS after N threads < 2x
 * RSS after N/10 threads + slack); ax_stats os_committed, segments_live and heaps_live
 * bounded likewise.
 *
 * usage: t_mt_threads [threads=10000] [rss limit MiB=200]
 * An RSS limit of 0 skips the RSS checks (only the ax_stats ones remain): under
 * qemu-user /proc/self/statm is qemu's own RSS, which grows by ~270 KiB per guest thread
 * created (qemu 7.2, measured with glibc's malloc too).
 */
#include <axmalloc.h>
#include <malloc.h>
#include <pthread.h>

#include "sys_check.h"

#define BATCH 4
#define PER_THREAD 300
#define MAGIC 0x7EADull

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static void **list; /* blocks handed over by the running batch */
static size_t list_len, list_cap;
static pthread_key_t key;

static size_t pick_size(uint64_t *rng) {
  uint64_t r = sys_rand(rng);
  unsigned k = (unsigned)(r % 100);
  r >>= 8;
  if (k < 80)
    return 16 + (size_t)(r % 497); /* 16 .. 512 */
  if (k < 97)
    return 512 + (size_t)(r % 3585); /* .. 4 KiB */
  return 4096 + (size_t)(r % 28673); /* .. 32 KiB */
}

static void check_block(void *p) {
  const uint64_t *w = p;
  CHECKF((w[0] >> 48) == MAGIC, "block %p: header %#llx is not ours", p, (unsigned long long)w[0]);
  size_t size = (size_t)w[1];
  CHECKF(size >= 16 && size <= 65536, "block %p: bad size %zu", p, size);
  CHECKF(malloc_usable_size(p) >= size, "block %p: usable %zu < %zu", p, malloc_usable_size(p),
         size);
  CHECKF(sys_verify(p, size, w[0]), "block %p (size %zu) corrupted", p, size);
}

static void key_destructor(void *v) {
  /* Runs during thread exit, possibly after the allocator's own thread-exit hook. */
  check_block(v);
  sys_poison(v);
  free(v);
  void *q = malloc(200);
  CHECK(q != NULL);
  sys_fill(q, 200, (MAGIC << 48) | 0xffffffull);
  check_block(q);
  free(q);
}

static void *worker(void *arg) {
  uint64_t id = (uint64_t)(uintptr_t)arg;
  uint64_t rng = 0xABCDEF12345ull ^ (id * 0x9E3779B97F4A7C15ull);
  void *blk[PER_THREAD];
  size_t n = PER_THREAD - (size_t)(sys_rand(&rng) % 50);
  for (size_t i = 0; i < n; i++) {
    size_t size = i == n / 2 ? 65536 : pick_size(&rng);
    blk[i] = malloc(size);
    CHECKF(blk[i] != NULL, "malloc(%zu) failed in thread %llu", size, (unsigned long long)id);
    sys_fill(blk[i], size, (MAGIC << 48) | (id << 16) | i);
  }
  /* Free about half ourselves, in a scattered order. */
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (sys_rand(&rng) & 1) {
      check_block(blk[i]);
      sys_poison(blk[i]);
      free(blk[i]);
    } else {
      blk[kept++] = blk[i];
    }
  }
  /* A block for the key destructor, freed during thread exit. */
  void *kv = malloc(100);
  CHECK(kv != NULL);
  sys_fill(kv, 100, (MAGIC << 48) | (id << 16) | 0xfffe);
  CHECK(pthread_setspecific(key, kv) == 0);

  /* Hand the rest to the main thread. */
  pthread_mutex_lock(&list_lock);
  if (list_len + kept > list_cap) {
    size_t cap = list_cap ? list_cap * 2 : 1024;
    while (cap < list_len + kept)
      cap *= 2;
    void **nl = realloc(list, cap * sizeof *nl);
    CHECK(nl != NULL);
    list = nl;
    list_cap = cap;
  }
  for (size_t i = 0; i < kept; i++)
    list[list_len++] = blk[i];
  pthread_mutex_unlock(&list_lock);
  return NULL;
}

static void free_list(void **l, size_t n) {
  for (size_t i = 0; i < n; i++) {
    check_block(l[i]);
    sys_poison(l[i]);
    free(l[i]);
  }
}

int main(int argc, char **argv) {
  long nthreads = argc > 1 ? atol(argv[1]) : 10000;
  long rss_limit_mib = argc > 2 ? atol(argv[2]) : 200;
  CHECK(nthreads >= 10 * BATCH && rss_limit_mib >= 0);
  CHECK(pthread_key_create(&key, key_destructor) == 0);

  long sample_at = nthreads / 10;
  uint64_t rss_early = 0, seg_early = 0, heaps_early = 0, committed_early = 0;
  int sampled = 0;
  void **prev = NULL; /* the previous batch's handed-over blocks */
  size_t prev_len = 0;
  unsigned long long remote_freed = 0;
  ax_stats_t st;

  for (long done = 0; done < nthreads; done += BATCH) {
    pthread_t th[BATCH];
    int nb = (int)(nthreads - done < BATCH ? nthreads - done : BATCH);
    for (int t = 0; t < nb; t++)
      CHECK(pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)(done + t)) == 0);
    /* Free the previous batch's blocks (their owners have exited) while this batch
     * runs and may be reclaiming the abandoned segments that hold them. */
    free_list(prev, prev_len);
    remote_freed += prev_len;
    free(prev);
    for (int t = 0; t < nb; t++)
      CHECK(pthread_join(th[t], NULL) == 0);
    pthread_mutex_lock(&list_lock);
    prev = list;
    prev_len = list_len;
    list = NULL;
    list_len = list_cap = 0;
    pthread_mutex_unlock(&list_lock);

    if (done + nb >= sample_at && !sampled) {
      sampled = 1;
      rss_early = sys_rss_bytes();
      ax_stats_get(&st);
      seg_early = st.segments_live;
      heaps_early = st.heaps_live;
      committed_early = st.os_committed;
      printf("t_mt_threads: after %ld threads: RSS %.1f MiB, os_committed %.1f MiB, "
             "segments_live %llu, heaps_live %llu, abandoned %llu, reclaimed %llu\n",
             done + nb, rss_early / 1048576.0, committed_early / 1048576.0,
             (unsigned long long)seg_early, (unsigned long long)heaps_early,
             (unsigned long long)st.segments_abandoned, (unsigned long long)st.segments_reclaimed);
      CHECK(rss_early > 0);
    }
  }
  /* Sample at the end with the last batch's blocks still live, like the early sample. */
  uint64_t rss_end = sys_rss_bytes();
  ax_stats_get(&st);
  printf("t_mt_threads: after %ld threads: RSS %.1f MiB, os_committed %.1f MiB, segments_live "
         "%llu, heaps_live %llu, abandoned %llu, reclaimed %llu\n",
         nthreads, rss_end / 1048576.0, st.os_committed / 1048576.0,
         (unsigned long long)st.segments_live, (unsigned long long)st.heaps_live,
         (unsigned long long)st.segments_abandoned, (unsigned long long)st.segments_reclaimed);
  free_list(prev, prev_len);
  remote_freed += prev_len;
  free(prev);
  printf("t_mt_threads: %llu blocks freed by main after their owner exited\n", remote_freed);

  uint64_t slack = 32ull << 20;
  if (rss_limit_mib > 0) {
    CHECKF(rss_end < (uint64_t)rss_limit_mib << 20, "RSS %.1f MiB >= limit %ld MiB",
           rss_end / 1048576.0, rss_limit_mib);
    CHECKF(rss_end < 2 * rss_early + slack,
           "RSS grows with the thread count: %.1f MiB after "
           "%ld threads, %.1f MiB after %ld",
           rss_early / 1048576.0, sample_at, rss_end / 1048576.0, nthreads);
  } else {
    printf("t_mt_threads: RSS checks skipped (limit 0)\n");
  }
  /* The allocator's own view, valid under qemu too: committed memory bounded. */
  CHECKF(st.os_committed < 2 * committed_early + slack,
         "os_committed grows with the thread "
         "count: %.1f MiB after %ld threads, %.1f MiB after %ld",
         committed_early / 1048576.0, sample_at, st.os_committed / 1048576.0, nthreads);
  CHECKF(st.os_committed < (160ull << 20), "os_committed %.1f MiB >= 160 MiB",
         st.os_committed / 1048576.0);
  /* At most ~2 batches of threads hold live blocks: a few dozen segments at most. */
  CHECKF(st.segments_live <= 2 * seg_early + 8,
         "segments_live grows with the thread count: "
         "%llu after %ld threads, %llu after %ld",
         (unsigned long long)seg_early, sample_at, (unsigned long long)st.segments_live, nthreads);
  CHECKF(st.segments_live <= 64, "segments_live %llu > 64 (256 MiB of segments)",
         (unsigned long long)st.segments_live);
  CHECKF(st.heaps_live <= 2 * heaps_early + 8 && st.heaps_live <= 64,
         "heaps_live %llu (%llu after %ld threads): heaps of exited threads not released",
         (unsigned long long)st.heaps_live, (unsigned long long)heaps_early, sample_at);
  CHECK(st.mallocs >= (uint64_t)nthreads * (PER_THREAD - 50));
  printf("t_mt_threads: OK\n");
  return 0;
}
