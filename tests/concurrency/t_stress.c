/* SPDX-License-Identifier: MIT */
/* t_stress: long multithreaded stress, in rounds of threads that are created and destroyed.
 *
 * Each round starts T threads. A thread does random operations on its own array of slots:
 * malloc, calloc, aligned allocations (aligned_alloc, posix_memalign, memalign) and realloc
 * of random sizes (mostly small, some medium and large, rarely huge: > 1 MiB, each its own
 * mapping), and frees. Every block carries a header (its size, a random seed, and a check
 * word derived from its address and size) and a body pattern derived from the seed; both
 * are verified before the block is freed or reallocated, so a block handed out twice, two
 * live blocks that overlap, or a realloc that lost bytes is caught. calloc results are
 * checked all zero, aligned results checked aligned, realloc results checked to keep the
 * old prefix. Blocks also change hands: a thread swaps one of its blocks into a shared
 * transfer array with an atomic exchange and adopts whatever was there (most often another
 * thread's block), which it later frees or reallocates (remote frees, realloc of a foreign
 * block). When a round ends, each thread frees half of its blocks and leaves the rest in
 * the transfer array, so its heap is abandoned with live blocks in it and the next round's
 * threads reclaim those segments. Between rounds the main thread frees half of the
 * transfer array. After the last round everything is freed, and the test checks that
 * segments were abandoned and reclaimed.
 *
 * usage: t_stress [threads=8] [rounds=10] [scale=100] [seconds=0]
 *   scale    operations per thread per round, in hundreds (thread i does (1 + i % 4) times)
 *   seconds  when > 0 (or AX_STRESS_SECONDS set), rounds repeat until that much time has
 *            passed, and `rounds` is only the minimum; hours are fine
 * The last line is a summary: threads, rounds, operations, seconds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#define LOCAL_SLOTS 128
#define TRANSFER_SLOTS 1024
#define HDR_WORDS 2 /* size|seed, check */
#define MIN_BLOCK (HDR_WORDS * sizeof(uint64_t))

static unsigned nthreads;
static size_t scale;
static _Atomic(void *) transfer[TRANSFER_SLOTS];
static atomic_ullong total_ops;

/* ---- block contents ----------------------------------------------------------------- */

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The check word ties a header to the block's address and size: a block that shows up at
 * another address (handed out twice, or its header copied over) does not verify. */
static uint64_t check_word(const void *p, uint64_t w0) { return mix((uintptr_t)p ^ mix(w0)); }

static uint64_t body_word(uint32_t seed, size_t i) { return mix(((uint64_t)seed << 32) ^ i); }

/* The words of an n-word block that are written and checked: all of the first and last 64,
 * and every 64th between (one per 512 B), so a huge block costs a store per 512 B, not per
 * word, and still touches every page. The set depends on positions only, so a realloc'd
 * prefix is checked at the same words it was filled at. */
static inline size_t next_word(size_t i, size_t n) {
  if (n < 128 || i < 63 || i + 1 >= n - 64)
    return i + 1;
  size_t next = (i | 63) + 1;
  return next < n - 64 ? next : n - 64;
}

static size_t words_of(size_t size) { return size / sizeof(uint64_t); }

/* Fill the body of a block of `size` bytes from word from_word (>= HDR_WORDS) on, and its
 * tail bytes past the last whole word. Position-based, so a prefix keeps its pattern when
 * realloc moves it. */
static void body_fill(uint64_t *w, size_t from_word, size_t size, uint32_t seed) {
  size_t n = words_of(size);
  for (size_t i = from_word; i < n; i = next_word(i, n))
    w[i] = body_word(seed, i);
  uint8_t *b = (uint8_t *)w;
  for (size_t i = n * 8; i < size; i++)
    b[i] = (uint8_t)(seed + i);
}

/* Check the first `upto` bytes of the body of a block filled for `size` bytes.
 * post: the offset of the first bad byte, or (size_t)-1. */
static size_t body_bad(const uint64_t *w, size_t size, size_t upto, uint32_t seed) {
  size_t n = words_of(size), lim = words_of(upto);
  for (size_t i = HDR_WORDS; i < lim; i = next_word(i, n))
    if (w[i] != body_word(seed, i))
      return i * 8;
  const uint8_t *b = (const uint8_t *)w;
  for (size_t i = n * 8; upto == size && i < size; i++)
    if (b[i] != (uint8_t)(seed + i))
      return i;
  return (size_t)-1;
}

static void header_set(void *p, size_t size, uint32_t seed) {
  uint64_t *w = p;
  w[0] = ((uint64_t)seed << 32) | size;
  w[1] = check_word(p, w[0]);
}

/* Fill a fresh block of size >= MIN_BLOCK. */
static void block_fill(void *p, size_t size, uint32_t seed) {
  header_set(p, size, seed);
  body_fill(p, HDR_WORDS, size, seed);
}

/* Verify a block before it is freed or reallocated. post: its requested size. */
static size_t block_verify(const void *p, const char *when) {
  CHECKF(((uintptr_t)p & 15) == 0, "%s: block %p not 16-byte aligned", when, p);
  const uint64_t *w = p;
  size_t size = (size_t)(uint32_t)w[0];
  uint32_t seed = (uint32_t)(w[0] >> 32);
  CHECKF(w[1] == check_word(p, w[0]),
         "%s: block %p: header %#llx/%#llx does not belong to this address (freed while "
         "live, handed out twice, or overlapped)",
         when, p, (unsigned long long)w[0], (unsigned long long)w[1]);
  CHECKF(malloc_usable_size((void *)p) >= size, "%s: block %p: usable size %zu < %zu", when, p,
         malloc_usable_size((void *)p), size);
  size_t bad = body_bad(w, size, size, seed);
  CHECKF(bad == (size_t)-1, "%s: block %p (size %zu): byte %zu corrupted", when, p, size, bad);
  return size;
}

static void block_free(void *p, const char *when) {
  if (!p)
    return;
  block_verify(p, when);
  ((uint64_t *)p)[1] = 0; /* a second hand-out of the same address fails the check */
  free(p);
}

/* ---- random sizes and operations ------------------------------------------------------ */

/* Mostly small, some medium and large, rarely huge (> 1 MiB: a mapping of its own). */
static size_t pick_size(uint64_t *rng) {
  uint64_t r = rnd_next(rng);
  unsigned k = (unsigned)(r % 10000);
  r >>= 14;
  if (k < 7000)
    return MIN_BLOCK + r % 241; /* 16 .. 256 B */
  if (k < 9000)
    return 257 + r % (8192 - 256); /* .. 8 KiB */
  if (k < 9890)
    return 8193 + r % (128 * 1024 - 8192); /* medium, .. 128 KiB */
  if (k < 9995)
    return 128 * 1024 + 1 + r % (896 * 1024); /* large, .. 1 MiB */
  return (1u << 20) + 1 + r % (7u << 20);     /* huge, .. 8 MiB */
}

static void *alloc_aligned(uint64_t *rng, size_t size) {
  static const size_t aligns[] = {32, 64, 128, 256, 1024, 4096, 16384, 65536};
  uint64_t r = rnd_next(rng);
  size_t a = aligns[r % 8];
  void *p = NULL;
  switch ((r >> 8) % 3) {
  case 0:
    p = aligned_alloc(a, (size + a - 1) & ~(a - 1)); /* C11: size a multiple of align */
    break;
  case 1:
    CHECK(posix_memalign(&p, a, size) == 0);
    break;
  default:
    p = memalign(a, size);
  }
  CHECKF(p && ((uintptr_t)p & (a - 1)) == 0, "aligned allocation %zu/%zu gave %p", a, size, p);
  return p;
}

/* A new block in a random way. */
static void *alloc_any(uint64_t *rng) {
  size_t size = pick_size(rng);
  uint64_t r = rnd_next(rng);
  unsigned how = (unsigned)(r % 16);
  void *p;
  if (how < 2) {
    size_t k = 1 + r % 3, m = (size + k - 1) / k; /* k * m >= size */
    p = calloc(k, m);
    CHECKF(p && all_zero(p, k * m), "calloc(%zu, %zu) gave %p, not all zero", k, m, p);
  } else if (how < 3) {
    p = alloc_aligned(rng, size);
  } else {
    p = malloc(size);
    CHECKF(p, "malloc(%zu) failed (errno %d)", size, errno);
  }
  block_fill(p, size, (uint32_t)(r >> 32));
  return p;
}

/* Verify p, reallocate it to a random size, check the prefix survived, refill the rest. */
static void *realloc_block(void *p, uint64_t *rng) {
  size_t old = block_verify(p, "before realloc");
  uint32_t seed = (uint32_t)(((uint64_t *)p)[0] >> 32);
  size_t size = pick_size(rng);
  void *q = realloc(p, size);
  CHECKF(q, "realloc(%p, %zu) failed (errno %d)", p, size, errno);
  size_t keep = old < size ? old : size;
  size_t bad = body_bad(q, old, keep, seed);
  CHECKF(bad == (size_t)-1, "realloc %p(%zu) -> %p(%zu): byte %zu of the kept prefix lost", p, old,
         q, size, bad);
  header_set(q, size, seed);
  /* Words the new size checks that the old one did not fill: the old tail bytes onwards
   * when growing; the new last 64 words and tail bytes when shrinking. */
  size_t from = size > old ? words_of(old) : words_of(size) > 64 ? words_of(size) - 64 : 0;
  body_fill(q, from < HDR_WORDS ? HDR_WORDS : from, size, seed);
  return q;
}

/* malloc(0..15): too small for a header; written, checked and freed on the spot. */
static void tiny_roundtrip(uint64_t *rng) {
  size_t n = rnd_next(rng) % 16;
  uint8_t *p = malloc(n);
  CHECKF(p && malloc_usable_size(p) >= n, "malloc(%zu) gave %p", n, (void *)p);
  memset(p, 0xA5, n);
  for (size_t i = 0; i < n; i++)
    CHECK(p[i] == 0xA5);
  free(p);
}

/* ---- the threads ------------------------------------------------------------------------ */

static void stress_thread_body(unsigned tid, uint64_t seed) {
  void *local[LOCAL_SLOTS] = {0};
  uint64_t rng = mix(seed + tid) | 1;
  size_t ops = scale * 100 * (1 + tid % 4);
  for (size_t op = 0; op < ops; op++) {
    unsigned r = (unsigned)(rnd_next(&rng) % 100);
    void **slot = &local[rnd_next(&rng) % LOCAL_SLOTS];
    if (r < 50) { /* allocate into a slot, freeing what was there */
      block_free(*slot, "free");
      *slot = alloc_any(&rng);
    } else if (r < 65) {
      block_free(*slot, "free");
      *slot = NULL;
    } else if (r < 75) {
      if (*slot)
        *slot = realloc_block(*slot, &rng);
    } else if (r < 95) { /* hand a block over, adopt another thread's */
      void *mine = *slot;
      void *theirs = atomic_exchange(&transfer[rnd_next(&rng) % TRANSFER_SLOTS], mine);
      if (theirs)
        block_verify(theirs, "adopted");
      *slot = theirs;
    } else {
      tiny_roundtrip(&rng);
    }
  }
  /* Half is freed here, the rest outlives this thread's heap. */
  for (unsigned i = 0; i < LOCAL_SLOTS; i++) {
    if (!local[i])
      continue;
    if (rnd_next(&rng) & 1)
      block_free(local[i], "free at exit");
    else
      block_free(atomic_exchange(&transfer[rnd_next(&rng) % TRANSFER_SLOTS], local[i]),
                 "free at exit");
  }
  atomic_fetch_add(&total_ops, ops);
}

struct targ {
  unsigned tid;
  uint64_t seed;
};

static void *stress_thread(void *arg) {
  struct targ *a = arg;
  stress_thread_body(a->tid, a->seed);
  return NULL;
}

static void run_round(unsigned round) {
  pthread_t th[nthreads];
  struct targ args[nthreads];
  pthread_attr_t attr;
  CHECK(pthread_attr_init(&attr) == 0);
  CHECK(pthread_attr_setstacksize(&attr, 256 << 10) == 0);
  for (unsigned i = 0; i < nthreads; i++) {
    args[i] = (struct targ){i, mix(round * 7919u + i)};
    int rc = pthread_create(&th[i], &attr, stress_thread, &args[i]);
    CHECKF(rc == 0, "pthread_create: %s", strerror(rc));
  }
  for (unsigned i = 0; i < nthreads; i++)
    CHECK(pthread_join(th[i], NULL) == 0);
  pthread_attr_destroy(&attr);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned long arg_or(int argc, char **argv, int i, unsigned long dflt) {
  return argc > i ? strtoul(argv[i], NULL, 10) : dflt;
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  nthreads = (unsigned)arg_or(argc, argv, 1, 8);
  unsigned min_rounds = (unsigned)arg_or(argc, argv, 2, 10);
  scale = arg_or(argc, argv, 3, 100);
  double seconds = (double)arg_or(argc, argv, 4, 0);
  const char *env = getenv("AX_STRESS_SECONDS");
  if (env && *env)
    seconds = atof(env);
  CHECK(nthreads >= 1 && nthreads <= 1024 && min_rounds >= 1 && scale >= 1);
  printf("t_stress: %u threads, %u rounds minimum, scale %zu, %.0f s\n", nthreads, min_rounds,
         scale, seconds);
  fflush(stdout);

  ax_stats_t st0;
  ax_stats_get(&st0);
  double t0 = now_s(), last_report = t0;
  uint64_t rng = 0x7feb352d;
  unsigned round = 0;
  while (round < min_rounds || now_s() - t0 < seconds) {
    run_round(round++);
    int last = round >= min_rounds && now_s() - t0 >= seconds;
    for (unsigned i = 0; i < TRANSFER_SLOTS; i++) /* half survives into the next round */
      if (last || (rnd_next(&rng) & 1))
        block_free(atomic_exchange(&transfer[i], NULL), "free between rounds");
    if (seconds > 0 && now_s() - last_report >= 60) { /* progress for long runs */
      last_report = now_s();
      printf("t_stress: %u rounds, %llu operations, %.0f s\n", round,
             (unsigned long long)atomic_load(&total_ops), last_report - t0);
      fflush(stdout);
    }
  }
  double secs = now_s() - t0;

  /* Threads left live blocks behind at every exit: their segments were abandoned, and
   * later threads (or this one) must have taken them over. */
  ax_stats_t st;
  ax_stats_get(&st);
  uint64_t abandoned = st.segments_abandoned - st0.segments_abandoned;
  uint64_t reclaimed = st.segments_reclaimed - st0.segments_reclaimed;
  printf("t_stress: segments abandoned %llu, reclaimed %llu, live %llu; huge allocs %llu\n",
         (unsigned long long)abandoned, (unsigned long long)reclaimed,
         (unsigned long long)st.segments_live, (unsigned long long)st.huge_allocs);
  CHECKF(abandoned > 0, "no segment was abandoned by an exiting thread");
  if (round >= 2)
    CHECKF(reclaimed > 0, "abandoned segments were never reclaimed");
  printf("t_stress: threads %u, rounds %u, operations %llu, seconds %.2f: OK\n", nthreads, round,
         (unsigned long long)atomic_load(&total_ops), secs);
  return 0;
}
