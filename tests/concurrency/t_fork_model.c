/* SPDX-License-Identifier: MIT */
/* The fork child model (docs/design/10-lifecycle.md, "The fork child model"): what a child makes of
 * the parent's threads, which do not exist in it, wherever they were when the fork came.
 *
 * The parent's workers build up every kind of per-thread state: blocks of every size class
 * live, blocks in their heaps' caches (1,280 B .. 256 KiB), open chains of remote frees into
 * one another's pages and into main's, full pages. Then they wait, outside the allocator
 * ("quiescent"), or one of them stops at a point inside it (hooks.h):
 *
 *   refill    malloc's slow path, about to refill a page
 *   chain     a chain of remote frees about to be published
 *   release   a segment leaving its heap for the segment cache (inside malloc_trim)
 *   trim      malloc_trim, between publishing its chains and reclaiming
 *   slot      the profiler between taking a slot segment's last free slot and unlinking it
 *   dump      a heap profile being written, the profile's lock held
 *
 * Main forks meanwhile. The child frees what the parent's threads had live, in new threads,
 * the first of them before it ever mallocs (glibc gives new threads the dead threads' stacks
 * and thread pointers, which are the allocator's thread ids); two more threads allocate side
 * by side, fill their blocks with their own pattern and check that no block came to both;
 * then everything is freed, the threads exit, main trims, and ax_test_validate (validate.c)
 * must find every structure consistent and in_use must fall to what main held before its
 * threads, plus one page (the block a stopped thread was freeing, lost): no page pinned by a
 * dead thread's chain or cache.
 *
 *   t_fork_model <scenario> [forks]     (linked with axmalloc_hooks)
 *
 * Before the model: quiescent failed (cached blocks freed into the shared empty heap,
 * pages pinned by the dead threads' chains), slot hung (a slot segment listed twice). The
 * profiler's scenarios (slot, dump) run with AXMALLOC_PROF=1 AXMALLOC_PROF_SAMPLE=4096.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hooks.h"
#include "testutil.h"

#define WORKERS 3
#define LIVE 600 /* blocks each worker keeps live */
#define MAIN_PAGES 32
#define TAKERS 2
#define TAKES 400

static const char *scenario;
static enum ax_hook_point stop_at = AX_HOOK_POINTS;
static pthread_t stopper;
static volatile int armed, reached;
static const void *stop_arg; /* what the stop point named (slot: the segment) */
static sem_t stopped, go;
static pthread_barrier_t phase;

static void *live[WORKERS][LIVE];
static void *mains[MAIN_PAGES][1024]; /* main's 64 B blocks, 32 pages of them */
#define EXTRA 100000
static void *extra[EXTRA]; /* the stopper's sampled blocks (slot) */
static unsigned nextra;

static void sem_wait_all(sem_t *s) {
  while (sem_wait(s) != 0)
    CHECK(errno == EINTR);
}

static void hook(enum ax_hook_point at, const void *arg) {
  (void)arg;
  if (at != stop_at || !armed || !pthread_equal(pthread_self(), stopper))
    return;
  armed = 0;
  reached = 1;
  stop_arg = arg;
  sem_post(&stopped);
  sem_wait_all(&go); /* the fork happens meanwhile */
}

static size_t size_of(unsigned w, unsigned i) {
  static const size_t sizes[] = {16,   24,   48,   100,  256,   512,   1000,  1024,   1500,
                                 2048, 4096, 4096, 6000, 12000, 40000, 70000, 200000, 300000};
  return sizes[(i * 7 + w) % (sizeof sizes / sizeof *sizes)];
}

/* The stopper goes to its stop point (hook() posts `stopped` there and waits). */
static void go_stop(unsigned w) {
  armed = 1;
  if (stop_at == AX_HOOK_REFILL)
    while (armed)
      free(malloc(48));                 /* (a refill comes within a page's worth) */
  if (stop_at == AX_HOOK_CHAIN_PUBLISH) /* (the others free only blocks below 60) */
    for (unsigned v = (w + 1) % WORKERS, i = 60; armed && i < LIVE; i++)
      if (size_of(v, i) <= 1024) { /* (forgotten first: the free that stops is the dead's) */
        void *p = live[v][i];
        live[v][i] = NULL;
        free(p);
      }
  if (stop_at == AX_HOOK_SEGMENT_RELEASE) {
    void *big[8];
    for (unsigned i = 0; i < 8; i++)
      CHECK((big[i] = malloc(600000)) != NULL); /* large pages: a segment each */
    for (unsigned i = 0; i < 8; i++)
      free(big[i]);
    malloc_trim(0); /* the empty segments leave their heap */
  }
  if (stop_at == AX_HOOK_TRIM)
    malloc_trim(0);
  if (stop_at == AX_HOOK_SLOT_TAKE) /* sampled blocks kept live, until a segment's last slot */
    while (armed && nextra < EXTRA)
      CHECK((extra[nextra++] = malloc(64)) != NULL);
  if (stop_at == AX_HOOK_DUMP)
    ax_prof_dump("/dev/null");
  CHECKF(reached, "scenario %s: the stop point was never reached", scenario);
}

/* Every kind of per-thread state, then the stop (or the wait). */
static void *worker(void *arg) {
  unsigned w = (unsigned)(uintptr_t)arg;
  if (w == 0)
    stopper = pthread_self();
  for (unsigned i = 0; i < LIVE; i++) {
    CHECK((live[w][i] = malloc(size_of(w, i))) != NULL);
    memset(live[w][i], 0x40 + (int)w, 16);
  }
  for (unsigned i = 0; i < 40; i++) /* into the cache: cached classes freed by their owner */
    free(malloc(size_of(w, 9 + 18 * i)));
  for (unsigned i = 0; i < 60; i++) { /* chains into main's pages, left open */
    unsigned page = (w * 11 + i) % MAIN_PAGES, k = 100 + w * 200 + i;
    free(mains[page][k]);
    mains[page][k] = NULL;
  }
  pthread_barrier_wait(&phase);          /* every worker's blocks are there */
  for (unsigned v = 0; v < WORKERS; v++) /* chains into each other's pages */
    for (unsigned i = w; v != w && i < 60; i += WORKERS)
      if (size_of(v, i) <= 1024)
        free(live[v][i]), live[v][i] = NULL;
  pthread_barrier_wait(&phase);
  if (stop_at != AX_HOOK_POINTS && pthread_equal(pthread_self(), stopper)) {
    go_stop(w); /* (hook() waited for go there) */
    return NULL;
  }
  sem_post(&stopped);
  sem_wait_all(&go);
  return NULL;
}

/* ---- the child ------------------------------------------------------------------------------ */

static void *got[TAKERS][TAKES];
static uint64_t base_in_use; /* the parent's, before its threads and blocks */
static pthread_barrier_t both;

static void *free_dead(void *arg) { /* first thing this thread does: free, not malloc */
  unsigned from = (unsigned)(uintptr_t)arg;
  for (unsigned w = 0; w < WORKERS; w++)
    for (unsigned i = from; i < LIVE; i += 2)
      if (live[w][i])
        free(live[w][i]), live[w][i] = NULL;
  for (unsigned i = from; i < nextra; i += 2)
    free(extra[i]), extra[i] = NULL;
  return NULL;
}

static void *take(void *arg) {
  unsigned t = (unsigned)(uintptr_t)arg;
  pthread_barrier_wait(&both);
  for (unsigned i = 0; i < TAKES; i++) {
    size_t n = size_of(t, i);
    CHECK((got[t][i] = malloc(n)) != NULL);
    memset(got[t][i], 0xa0 + (int)t, n);
  }
  pthread_barrier_wait(&both);
  for (unsigned i = 0; i < TAKES; i++) { /* a block both took is overwritten by one */
    const unsigned char *p = got[t][i];
    for (size_t k = 0; k < size_of(t, i); k += 61)
      CHECKF(p[k] == 0xa0 + t, "block %p handed to two threads", (void *)p);
  }
  pthread_barrier_wait(&both);
  for (unsigned i = 0; i < TAKES; i += 2) /* half freed here, half by the other taker */
    free(got[t][i]);
  for (unsigned i = 1; i < TAKES; i += 2)
    free(got[1 - t][i]);
  return NULL;
}

static void run(void *(*fn)(void *), unsigned n) {
  pthread_t th[TAKERS];
  for (unsigned i = 0; i < n; i++)
    CHECK(pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)i) == 0);
  for (unsigned i = 0; i < n; i++)
    CHECK(pthread_join(th[i], NULL) == 0);
}

/* slot: the first free in the child is of a block in the segment the stopper's slot_take
 * left listed with no free slot (before the model, that free listed it a second time, after
 * itself: the next slot_take to use it up went round forever). */
static void free_in_stopped_segment(void) {
  uintptr_t seg = (uintptr_t)stop_arg;
  for (unsigned i = 0; i < nextra; i++)
    if (extra[i] && (uintptr_t)extra[i] - seg < ((uintptr_t)4 << 20)) {
      free(extra[i]);
      extra[i] = NULL;
      return;
    }
  for (unsigned p = 0; p < MAIN_PAGES; p++)
    for (unsigned k = 0; k < 1024; k++)
      if (mains[p][k] && (uintptr_t)mains[p][k] - seg < ((uintptr_t)4 << 20)) {
        free(mains[p][k]);
        mains[p][k] = NULL;
        return;
      }
  for (unsigned w = 0; w < WORKERS; w++) /* (every other slot of it is live: one of these) */
    for (unsigned i = 0; i < LIVE; i++)
      if (live[w][i] && (uintptr_t)live[w][i] - seg < ((uintptr_t)4 << 20)) {
        free(live[w][i]);
        live[w][i] = NULL;
        return;
      }
  CHECK(!"no block of the stopped slot segment: the scenario proves nothing");
}

static int child(void) {
  alarm(20); /* a hang (a list that goes round, a lock nobody frees) is SIGALRM */
  if (stop_at == AX_HOOK_SLOT_TAKE)
    free_in_stopped_segment();
  run(free_dead, 2);
  CHECK(pthread_barrier_init(&both, NULL, TAKERS) == 0);
  run(take, TAKERS);
  for (unsigned p = 0; p < MAIN_PAGES; p++)
    for (unsigned k = 0; k < 1024; k++)
      free(mains[p][k]);
  if (stop_at == AX_HOOK_DUMP || stop_at == AX_HOOK_SLOT_TAKE) {
    CHECK(ax_prof_dump("/dev/null") == 0); /* the profile's lock is free */
    static void *keep[3000]; /* samples enough to use up every slot freed since the fork */
    for (unsigned i = 0; i < 3000; i++)
      CHECK((keep[i] = malloc(8192)) != NULL);
    for (unsigned i = 0; i < 3000; i++)
      free(keep[i]);
  }
  for (int i = 0; i < 3; i++)
    malloc_trim(0);
  unsigned bad = ax_test_validate();
  CHECKF(bad == 0, "%u problems in the child's heap (scenario %s)", bad, scenario);
  ax_stats_t st;
  ax_stats_get(&st);
  CHECKF(st.in_use <= base_in_use + (128u << 10),
         "%llu KiB still in use in the child, %llu KiB in the parent before its threads: pinned "
         "pages",
         (unsigned long long)st.in_use >> 10, (unsigned long long)base_in_use >> 10);
  return 0;
}

static const struct {
  const char *name;
  enum ax_hook_point at;
} scenarios[] = {{"quiescent", AX_HOOK_POINTS},
                 {"refill", AX_HOOK_REFILL},
                 {"chain", AX_HOOK_CHAIN_PUBLISH},
                 {"release", AX_HOOK_SEGMENT_RELEASE},
                 {"trim", AX_HOOK_TRIM},
                 {"slot", AX_HOOK_SLOT_TAKE},
                 {"dump", AX_HOOK_DUMP}};

int main(int argc, char **argv) {
  check_axmalloc_active();
  scenario = argc > 1 ? argv[1] : "quiescent";
  int forks = argc > 2 ? atoi(argv[2]) : 20;
  unsigned k = 0;
  while (k < sizeof scenarios / sizeof *scenarios && strcmp(scenarios[k].name, scenario))
    k++;
  CHECKF(k < sizeof scenarios / sizeof *scenarios, "no scenario %s", scenario);
  stop_at = scenarios[k].at;
  ax_info_t info;
  ax_info(&info);
  if ((stop_at == AX_HOOK_SLOT_TAKE || stop_at == AX_HOOK_DUMP) && !info.prof_sample) {
    printf("t_fork_model %s: skipped: needs AXMALLOC_PROF=1\n", scenario);
    return 77;
  }
  if ((stop_at == AX_HOOK_REFILL || stop_at == AX_HOOK_CHAIN_PUBLISH) && ax_test_checked()) {
    printf("t_fork_model %s: skipped: checked mode has its own malloc and no chains\n", scenario);
    return 77;
  }
  ax_stats_t st;
  ax_stats_get(&st);
  base_in_use = st.in_use;
  CHECK(sem_init(&stopped, 0, 0) == 0 && sem_init(&go, 0, 0) == 0);
  CHECK(pthread_barrier_init(&phase, NULL, WORKERS) == 0);
  for (unsigned p = 0; p < MAIN_PAGES; p++)
    for (unsigned i = 0; i < 1024; i++)
      CHECK((mains[p][i] = malloc(64)) != NULL);
  ax_test_set_hook(hook);
  pthread_t th[WORKERS];
  for (unsigned w = 0; w < WORKERS; w++)
    CHECK(pthread_create(&th[w], NULL, worker, (void *)(uintptr_t)w) == 0);
  for (unsigned w = 0; w < WORKERS; w++)
    sem_wait_all(&stopped); /* each waits now; th[0] at its stop point, if any */
  for (int f = 0; f < forks; f++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
      _exit(child());
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { /* (_exit: a worker may hold a lock) */
      fprintf(stderr, "t_fork_model: scenario %s, fork %d: the child %s %d\n", scenario, f,
              WIFSIGNALED(status) ? "died of signal" : "exited with",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      _exit(1);
    }
  }
  for (unsigned w = 0; w < WORKERS; w++)
    sem_post(&go);
  for (unsigned w = 0; w < WORKERS; w++)
    CHECK(pthread_join(th[w], NULL) == 0);
  ax_test_set_hook(NULL);
  printf("t_fork_model %s: %d children consistent\n", scenario, forks);
  return 0;
}
