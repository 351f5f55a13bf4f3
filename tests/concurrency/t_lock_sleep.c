/* SPDX-License-Identifier: MIT */
/* A thread stopped inside a global lock: the threads that want it sleep in the kernel
 * instead of spinning through their time slices (issue 39: 1,024 threads on two cores ran
 * 75x slower than glibc, 92% of the time spinning on a lock whose holder waited for a core).
 *
 * A recording pass lists every lock the operation takes (AX_HOOK_LOCKED, hooks.h): a trim
 * with the segment and huge-mapping caches filled first (and, under AXMALLOC_PROF=1, the
 * profiler's slots). Then, for each lock in turn, the holder runs the operation and stops
 * inside that lock in its trim (with the caches still full), while 16 contenders confined to one
 * CPU run it too. Each contender either finishes (the lock is only ever tried: nobody waits for it)
 * or must be seen sleeping (state S in /proc/self/task/<tid>/stat) within 20 s, and stats.sleeps
 * must count the sleeps. At least one lock must make contenders wait (the test sees what it
 * checks). With a lock that spins forever the contenders stay runnable (R) and the test fails.
 *
 *   t_lock_sleep   (linked with axmalloc_hooks; t_lock_sleep.prof under AXMALLOC_PROF=1)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "testutil.h"

#define CONTENDERS 16
#define MAX_LOCKS 16
#define MIB ((size_t)1 << 20)

static pthread_t holder, holder_id; /* (holder_id: written by the holder itself) */
static volatile int recording, stopped;
static const void *volatile stop_at;
static int holder_set;
static __thread volatile int
    in_trim; /* (the holder stops only there: where the caches' locks are waited for) */
static const void *seen[MAX_LOCKS];
static volatile int nseen;
static sem_t held, release_holder, go;

static void sem_wait_all(sem_t *s) {
  while (sem_wait(s) != 0)
    CHECK(errno == EINTR);
}

static void hook(enum ax_hook_point at, const void *arg) {
  if (at != AX_HOOK_LOCKED || !__atomic_load_n(&holder_set, __ATOMIC_ACQUIRE) ||
      !pthread_equal(pthread_self(), holder_id))
    return;
  if (recording) {
    if (!in_trim)
      return;
    for (int i = 0; i < nseen; i++)
      if (seen[i] == arg)
        return;
    if (nseen < MAX_LOCKS)
      seen[nseen++] = arg;
    return;
  }
  if (arg != stop_at || stopped || !in_trim)
    return;
  stopped = 1;
  sem_post(&held);
  sem_wait_all(&release_holder); /* inside the lock until the contenders were seen */
}

static uint64_t sleeps(void) {
  uint64_t v = 0;
  size_t len = sizeof v;
  CHECK(ax_ctl("stats.sleeps", &v, &len, NULL, 0) == 0);
  return v;
}

/* The operation: the caches filled, then emptied by a trim (a huge mapping to the huge
 * cache; a thread's segment of medium blocks to the segment cache). */
static void *segment_user(void *arg) {
  void *p[40];
  for (int i = 0; i < 40; i++)
    CHECK((p[i] = malloc(100000)) != NULL);
  for (int i = 0; i < 40; i++)
    free(p[i]);
  return NULL;
}
static void operation(void) {
  void *h = malloc(6 * MIB);
  CHECK(h != NULL);
  free(h);
  segment_user(NULL);
  void *s = malloc(200); /* (a sampled one, sometimes, under AXMALLOC_PROF=1) */
  free(s);
  in_trim = 1;
  malloc_trim(0);
  in_trim = 0;
}

static pid_t tids[CONTENDERS];
static volatile int done[CONTENDERS];

static void *contender(void *arg) {
  int i = (int)(intptr_t)arg;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  CHECK(sched_setaffinity(0, sizeof one, &one) == 0); /* (0: this thread) */
  free(malloc(64)); /* (its heap first: the thread start is not what is tested) */
  __atomic_store_n(&tids[i], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
  sem_wait_all(&go);
  operation();
  __atomic_store_n(&done[i], 1, __ATOMIC_RELEASE);
  return NULL;
}

/* A thread's state letter (R running, S sleeping), read without malloc: while the holder is
 * stopped, an allocation here could want its lock (a sampled one, under AXMALLOC_PROF=1). */
static char state_of(pid_t tid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return '?';
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  char *paren = strrchr(buf, ')'); /* (the name may hold spaces and parentheses) */
  return paren && paren[1] == ' ' ? paren[2] : '?';
}

static void *holder_main(void *arg) {
  holder_id = pthread_self();
  __atomic_store_n(&holder_set, 1, __ATOMIC_RELEASE);
  operation();
  __atomic_store_n(&holder_set, 0, __ATOMIC_RELEASE);
  return NULL;
}

/* The holder stops inside lock k; returns how many contenders were seen asleep. The
 * contenders start first (main allocates nothing while the holder holds the lock). */
static int one_lock(int k) {
  stop_at = seen[k];
  stopped = 0;
  pthread_t c[CONTENDERS];
  for (int i = 0; i < CONTENDERS; i++) {
    tids[i] = done[i] = 0;
    CHECK(pthread_create(&c[i], NULL, contender, (void *)(intptr_t)i) == 0);
  }
  for (int i = 0; i < CONTENDERS; i++)
    while (!__atomic_load_n(&tids[i], __ATOMIC_ACQUIRE))
      usleep(1000);
  CHECK(pthread_create(&holder, NULL, holder_main, NULL) == 0);
  struct timespec limit;
  CHECK(clock_gettime(CLOCK_REALTIME, &limit) == 0);
  limit.tv_sec += 20;
  int got = 0;
  while ((got = sem_timedwait(&held, &limit)) != 0 && errno == EINTR)
    ;
  uint64_t sleeps0 = sleeps();
  for (int i = 0; i < CONTENDERS; i++)
    sem_post(&go);
  int asleep = -1, waiting = 0;
  for (int round = 0; got == 0 && round < 2000 && asleep < 0; round++) { /* 20 s at most */
    usleep(10000);
    int n = 0, s = 0;
    for (int i = 0; i < CONTENDERS; i++) {
      if (__atomic_load_n(&done[i], __ATOMIC_ACQUIRE))
        continue;
      n++;
      s += state_of(tids[i]) == 'S';
    }
    if (round >= 10 && s == n) { /* (0.1 s: every spin is over) */
      asleep = s;
      waiting = n;
    }
  }
  uint64_t slept = sleeps() - sleeps0;
  if (got == 0)
    sem_post(&release_holder);
  CHECK(pthread_join(holder, NULL) == 0);
  for (int i = 0; i < CONTENDERS; i++)
    CHECK(pthread_join(c[i], NULL) == 0);
  if (got != 0) { /* the holder's operation did not take this lock this time: not a failure */
    printf("t_lock_sleep: lock %d (%p): not taken again, skipped\n", k, seen[k]);
    return 0;
  }
  CHECKF(asleep >= 0, "lock %d (%p): contenders still running after 20 s with its holder stopped",
         k, seen[k]);
  CHECKF(slept >= (uint64_t)waiting, "lock %d: %d contenders waited, %llu sleeps counted", k,
         waiting, (unsigned long long)slept);
  printf("t_lock_sleep: lock %d (%p): %d of %d contenders waited, all asleep (%llu sleeps)\n", k,
         seen[k], waiting, CONTENDERS, (unsigned long long)slept);
  return waiting;
}

int main(void) {
  CHECK(sem_init(&held, 0, 0) == 0 && sem_init(&release_holder, 0, 0) == 0 &&
        sem_init(&go, 0, 0) == 0);
  ax_test_set_hook(hook);
  recording = 1;
  holder_id = pthread_self();
  __atomic_store_n(&holder_set, 1, __ATOMIC_RELEASE);
  operation();
  operation();
  __atomic_store_n(&holder_set, 0, __ATOMIC_RELEASE);
  recording = 0;
  CHECKF(nseen > 0, "the operation took no global lock");
  int waited = 0;
  for (int k = 0; k < nseen; k++)
    waited += one_lock(k) > 0;
  ax_test_set_hook(NULL);
  CHECKF(waited > 0, "no lock of the %d made a contender wait: the test saw nothing", nseen);
  printf("t_lock_sleep: OK (%d locks, %d with waiters)\n", nseen, waited);
  return 0;
}
