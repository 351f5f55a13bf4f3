/* SPDX-License-Identifier: MIT */
/* fork() from a signal handler that interrupted malloc or free (issue 10, defect 3).
 *
 * glibc supports this in a single-threaded process (its tst-mallocfork2: a SIGUSR1 handler
 * forks in a loop while the program allocates): a crash handler that forks must not hang
 * because axmalloc is linked. Before the fix, fork's prepare handler spun forever on a lock
 * the interrupted code held.
 *
 *   t_sigfork locked [threads]   deterministic: every time the allocator takes one of its
 *                                global locks (AX_HOOK_LOCKED, hooks.h), and inside each of
 *                                this thread's own forks once the prepare handler has taken
 *                                them and before the parent handler releases them
 *                                (AX_HOOK_FORK_PREPARED, _RELEASING), this thread raises SIGUSR1
 * and the handler forks; with threads > 0 other threads allocate and free meanwhile (glibc's fork
 * in a multithreaded program from a handler is beyond POSIX: this checks axmalloc's own part)
 *   t_sigfork storm [forks]      glibc's pattern: a child process sends SIGUSR1 every
 *                                millisecond while this process allocates, frees and now and
 *                                then forks, until the handler has forked that many times
 * A child exits at once with _exit(0) (all a forked handler may do); the parent checks it.
 * alarm() turns a hang into a failure: after 30 s, or AX_HANG_SECONDS (the cross build: 200).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "testutil.h"

#define MIB ((size_t)1 << 20)

static volatile sig_atomic_t in_handler, forks, fork_errors;
static volatile sig_atomic_t armed;
static pthread_t main_thread;

static void on_usr1(int sig) {
  int saved = errno;
  in_handler = 1;
  pid_t pid = fork();
  if (pid == 0)
    _exit(0);
  int status = -1;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
    fork_errors++;
  else
    forks++;
  in_handler = 0;
  errno = saved;
}

static void on_alarm(int sig) {
  static const char msg[] = "t_sigfork: hang (fork from a signal handler did not return)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  _exit(3);
}

/* ---- locked: fork while this thread holds each global lock ----------------------------- */

#define MAX_LOCKS 16
static const void *locks_seen[MAX_LOCKS];
static volatile sig_atomic_t nlocks;

static volatile sig_atomic_t nested_forks;

static void hook(enum ax_hook_point at, const void *arg) {
  if (!armed || in_handler || !pthread_equal(pthread_self(), main_thread))
    return;
  if (at == AX_HOOK_FORK_PREPARED || at == AX_HOOK_FORK_RELEASING) { /* inside our own fork */
    nested_forks++;
    raise(SIGUSR1);
    return;
  }
  if (at != AX_HOOK_LOCKED)
    return;
  int known = 0;
  for (int i = 0; i < nlocks; i++)
    known |= locks_seen[i] == arg;
  if (!known && nlocks < MAX_LOCKS)
    locks_seen[nlocks++] = arg;
  raise(SIGUSR1); /* the handler runs now, inside the locked section */
}

static volatile int stop_workers;

static void *worker(void *arg) {
  void *keep[64] = {0};
  for (unsigned i = 0; !stop_workers; i++) {
    unsigned k = i % 64;
    free(keep[k]);
    keep[k] = malloc(i % 7 == 0 ? 2 * MIB : 16 + (i * 37) % 20000);
  }
  for (int k = 0; k < 64; k++)
    free(keep[k]);
  return NULL;
}

/* This thread forks; the child exits at once. */
static void fork_here(void) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0)
    _exit(0);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Allocation patterns that take every global lock: huge blocks through the mapping cache,
 * segments through the segment cache (trim), threads (heap pool, abandoned segments). */
static void *churn_thread(void *arg) {
  free(malloc(100)); /* heap from the pool; at exit its segment is abandoned or cached */
  return NULL;
}

static void run_locked(int threads) {
  pthread_t t[8];
  for (int i = 0; i < threads; i++)
    CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
  ax_test_set_hook(hook);
  for (int round = 0; round < 20; round++) {
    armed = 1;
    void *h = malloc(3 * MIB), *m = malloc(100000);
    CHECK(h && m);
    free(h);
    free(m);
    malloc_trim(0);
    armed = 0;
    pthread_t c;
    CHECK(pthread_create(&c, NULL, churn_thread, NULL) == 0);
    CHECK(pthread_join(c, NULL) == 0);
    armed = 1;
    free(malloc(100)); /* reclaims the exited thread's segment if it was abandoned */
    free(malloc(5 * MIB));
    fork_here();
    armed = 0;
  }
  ax_test_set_hook(NULL);
  stop_workers = 1;
  for (int i = 0; i < threads; i++)
    CHECK(pthread_join(t[i], NULL) == 0);
  CHECKF(nlocks >= 2, "only %d distinct locks were taken", (int)nlocks);
  CHECKF(forks >= 40, "only %d forks from inside a locked section", (int)forks);
  CHECKF(nested_forks == 40, "%d forks from inside a fork, expected 40", (int)nested_forks);
  printf("t_sigfork locked: OK (%d forks from the handler inside %d distinct locks and %d forks, "
         "%d other threads)\n",
         (int)forks, (int)nlocks, (int)nested_forks, threads);
}

/* ---- storm: glibc's tst-mallocfork2 pattern --------------------------------------------- */

static void run_storm(long want) {
  pid_t parent = getpid(), sender = fork();
  CHECK(sender >= 0);
  if (sender == 0) {
    struct timespec ts = {0, 1000000};
    for (;;) {
      if (kill(parent, SIGUSR1) != 0)
        _exit(0);
      nanosleep(&ts, NULL);
    }
  }
  enum { OBJECTS = 1009, MAXSIZE = 70000 };
  static void *objs[OBJECTS];
  unsigned r = 12345;
  long i = 0;
  for (; forks < want; i++) {
    r = r * 1103515245u + 12345u;
    unsigned k = (r >> 8) % OBJECTS;
    free(objs[k]);
    if ((r >> 20) % 7 == 0)
      fork_here(); /* the signal may arrive inside it (glibc bug 24161) */
    size_t n = (r >> 4) % 97 == 0 ? 2 * MIB : (r >> 12) % MAXSIZE;
    CHECK((objs[k] = malloc(n)) != NULL);
    if (n)
      ((char *)objs[k])[0] = 1;
  }
  kill(sender, SIGKILL);
  waitpid(sender, NULL, 0);
  for (int k = 0; k < OBJECTS; k++)
    free(objs[k]);
  printf("t_sigfork storm: OK (%d forks from the handler in %ld iterations)\n", (int)forks, i);
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  const char *mode = argc > 1 ? argv[1] : "locked";
  long n = argc > 2 ? atol(argv[2]) : -1;
  main_thread = pthread_self();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
  signal(SIGALRM, on_alarm);
  const char *hang = getenv("AX_HANG_SECONDS"); /* (qemu: about 20 s for locked 0) */
  alarm(hang && atoi(hang) > 0 ? (unsigned)atoi(hang) : 30);
  if (strcmp(mode, "locked") == 0)
    run_locked(n < 0 ? 0 : (int)n);
  else if (strcmp(mode, "storm") == 0)
    run_storm(n < 0 ? 500 : n);
  else
    CHECKF(0, "unknown mode %s", mode);
  CHECKF(fork_errors == 0, "%d forks failed", (int)fork_errors);
  return 0;
}
