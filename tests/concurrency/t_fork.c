/* SPDX-License-Identifier: MIT */
/* t_fork: fork from a busy multithreaded parent; the children must be able to malloc.
 *
 * Three threads malloc and free continuously (mixed sizes, huge ones too; most frees
 * cross-thread through a shared array of atomic slots) while the main thread forks
 * NFORKS times. Each child, with only the forking thread alive:
 *   - frees blocks inherited from the parent's other threads (taken out of the slots:
 *     their owners do not exist in the child) after verifying them,
 *   - mallocs/frees a few thousand blocks of mixed sizes incl. huge ones, verifying,
 *   - checks calloc zeroes and realloc preserves contents,
 *   - starts a thread that allocates and frees, with frees in both directions,
 *   - _exit(0)s; any failed check writes file:line (no stdio) and _exit(1)s.
 * alarm() in the child turns a deadlock (allocator lock held by a thread that does not
 * exist in the child) into SIGALRM; the parent asserts every child exited with 0.
 *
 * usage: t_fork [forks=20] [child timeout seconds=20] [child starts a thread=1]
 * Pass 0 as the third argument under qemu-user 7.2: there, pthread_create in the child of
 * a multithreaded process dies in qemu itself ("cpu_exec: assertion failed: (cpu ==
 * current_cpu)", exit 127), with glibc's malloc as well.
 */
#include <axmalloc.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "sys_check.h"

#define NTHREADS 3
#define NSLOTS 512
#define MAGIC 0xF0F0ull

static _Atomic(uintptr_t) slots[NSLOTS];
static atomic_int stop;
static atomic_ullong worker_ops;

static size_t pick_size(uint64_t *rng) {
  uint64_t r = sys_rand(rng);
  unsigned k = (unsigned)(r % 1000);
  r >>= 10;
  if (k < 3)
    return (1u << 20) + 16 + (size_t)(r % (3u << 20)); /* huge: 1 .. 4 MiB */
  if (k < 700)
    return 16 + (size_t)(r % 497);
  if (k < 950)
    return 512 + (size_t)(r % 7681);
  return 8192 + (size_t)(r % 57345); /* .. 64 KiB */
}

static uint64_t make_tag(unsigned who, uint64_t seq) {
  return (MAGIC << 48) | ((uint64_t)(who & 0xff) << 40) | (seq & 0xffffffffffull);
}

/* Async-signal-safe verification (used in children too). */
static void verify_free(void *p) {
  SAFE_CHECK(((uintptr_t)p & 15) == 0);
  const uint64_t *w = p;
  SAFE_CHECK((w[0] >> 48) == MAGIC);
  size_t size = (size_t)w[1];
  SAFE_CHECK(size >= 16 && size <= (5u << 20));
  SAFE_CHECK(malloc_usable_size(p) >= size);
  SAFE_CHECK(sys_verify(p, size, w[0]));
  sys_poison(p);
  free(p);
}

static void *worker(void *arg) {
  unsigned me = (unsigned)(uintptr_t)arg;
  uint64_t rng = 0x5151ull + 104729ull * me;
  uint64_t seq = 0;
  unsigned long long ops = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    size_t size = pick_size(&rng);
    void *p = malloc(size);
    CHECKF(p != NULL, "malloc(%zu) failed", size);
    sys_fill(p, size, make_tag(me, seq++));
    if (sys_rand(&rng) & 3) {
      /* Publish; free whatever was there (usually another thread's block). */
      size_t s = (size_t)(sys_rand(&rng) % NSLOTS);
      uintptr_t old = atomic_exchange(&slots[s], (uintptr_t)p);
      if (old)
        verify_free((void *)old);
    } else {
      verify_free(p); /* local free */
    }
    ops++;
  }
  atomic_fetch_add(&worker_ops, ops);
  return NULL;
}

/* ---- child ------------------------------------------------------------------------ */

static void *child_thread(void *arg) {
  void **handoff = arg; /* 64 blocks from the child's main thread: free them here */
  for (int i = 0; i < 64; i++)
    verify_free(handoff[i]);
  uint64_t rng = 0x77ull;
  for (int i = 0; i < 64; i++) {
    size_t size = pick_size(&rng);
    handoff[i] = malloc(size);
    SAFE_CHECK(handoff[i] != NULL);
    sys_fill(handoff[i], size, make_tag(201, (uint64_t)i));
  }
  return NULL; /* the child's main thread frees these */
}

static void __attribute__((noreturn))
child_main(unsigned timeout, void *premade, int round, int child_thread_ok) {
  alarm(timeout);
  /* 1. Blocks inherited from the parent: one the forking thread allocated, and up to
   *    64 published by the parent's worker threads, which do not exist here. */
  verify_free(premade);
  int taken = 0;
  for (int i = 0; i < NSLOTS && taken < 64; i++) {
    uintptr_t p = atomic_exchange(&slots[i], 0);
    if (p) {
      verify_free((void *)p);
      taken++;
    }
  }
  /* 2. Churn a few thousand blocks through a window of live ones, incl. huge. */
  uint64_t rng = 0xC417Dull + (uint64_t)round;
  enum { WIN = 128 };
  void *win[WIN] = {0};
  for (int i = 0; i < 4000; i++) {
    size_t size = (i % 500 == 17) ? (6u << 20) / 2 + (size_t)i : pick_size(&rng);
    void *p = malloc(size);
    SAFE_CHECK(p != NULL);
    sys_fill(p, size, make_tag(200, (uint64_t)i));
    int s = (int)(sys_rand(&rng) % WIN);
    if (win[s])
      verify_free(win[s]);
    win[s] = p;
  }
  for (int s = 0; s < WIN; s++)
    if (win[s])
      verify_free(win[s]);
  /* 3. calloc zeroes, realloc keeps contents (small -> large -> huge). */
  unsigned char *z = calloc(1000, 100);
  SAFE_CHECK(z != NULL);
  for (int i = 0; i < 100000; i++)
    SAFE_CHECK(z[i] == 0);
  free(z);
  unsigned char *r = malloc(100);
  SAFE_CHECK(r != NULL);
  for (int i = 0; i < 100; i++)
    r[i] = (unsigned char)i;
  r = realloc(r, 50000);
  SAFE_CHECK(r != NULL);
  for (int i = 0; i < 100; i++)
    SAFE_CHECK(r[i] == (unsigned char)i);
  r = realloc(r, 3u << 20);
  SAFE_CHECK(r != NULL);
  for (int i = 0; i < 100; i++)
    SAFE_CHECK(r[i] == (unsigned char)i);
  free(r);
  /* 4. A new thread in the child: frees in both directions. */
  void *handoff[64];
  for (int i = 0; i < 64; i++) {
    size_t size = pick_size(&rng);
    handoff[i] = malloc(size);
    SAFE_CHECK(handoff[i] != NULL);
    sys_fill(handoff[i], size, make_tag(202, (uint64_t)i));
  }
  if (child_thread_ok) {
    pthread_t t;
    SAFE_CHECK(pthread_create(&t, NULL, child_thread, handoff) == 0);
    SAFE_CHECK(pthread_join(t, NULL) == 0);
  } else {
    child_thread(handoff); /* same work, on this thread */
  }
  for (int i = 0; i < 64; i++)
    verify_free(handoff[i]);
  _exit(0);
}

int main(int argc, char **argv) {
  int nforks = argc > 1 ? atoi(argv[1]) : 20;
  unsigned timeout = argc > 2 ? (unsigned)atoi(argv[2]) : 20;
  int child_thread_ok = argc > 3 ? atoi(argv[3]) : 1;
  CHECK(nforks > 0 && timeout > 0);
  /* Whole-test guard: a hung parent fails instead of hanging ctest. */
  alarm(timeout * 4 + (unsigned)nforks * timeout / 2);

  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++)
    CHECK(pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t) == 0);

  uint64_t rng = 0xF0Bull;
  int failures = 0;
  for (int i = 0; i < nforks; i++) {
    /* Let the workers run a little between forks, at irregular times. */
    struct timespec ts = {0, (long)(2 + sys_rand(&rng) % 20) * 1000000L};
    nanosleep(&ts, NULL);
    void *premade = malloc(3000 + (size_t)i);
    CHECK(premade != NULL);
    sys_fill(premade, 3000 + (size_t)i, make_tag(100, (uint64_t)i));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
      child_main(timeout, premade, i, child_thread_ok);
    verify_free(premade);
    int status = 0;
    pid_t w;
    do
      w = waitpid(pid, &status, 0);
    while (w < 0 && errno == EINTR);
    CHECK(w == pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      continue;
    failures++;
    if (WIFSIGNALED(status))
      fprintf(stderr, "t_fork: child %d killed by signal %d%s\n", i, WTERMSIG(status),
              WTERMSIG(status) == SIGALRM ? " (timeout: deadlock in the child?)" : "");
    else
      fprintf(stderr, "t_fork: child %d exited with %d\n", i, WEXITSTATUS(status));
  }

  atomic_store(&stop, 1);
  for (int t = 0; t < NTHREADS; t++)
    CHECK(pthread_join(th[t], NULL) == 0);
  for (int i = 0; i < NSLOTS; i++) {
    uintptr_t p = atomic_exchange(&slots[i], 0);
    if (p)
      verify_free((void *)p);
  }
  printf("t_fork: %d forks, %d failed children, %llu worker operations\n", nforks, failures,
         (unsigned long long)atomic_load(&worker_ops));
  CHECK(failures == 0);
  CHECK(atomic_load(&worker_ops) > 0);
  ax_stats_t st;
  ax_stats_get(&st);
  CHECK(st.mallocs >= atomic_load(&worker_ops));
  printf("t_fork: OK\n");
  return 0;
}
