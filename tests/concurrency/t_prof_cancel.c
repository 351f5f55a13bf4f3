/* SPDX-License-Identifier: MIT */
/* Cancellation inside the APIs that take a lock (AXMALLOC_PROF=1): no cancellation point
 * while a lock is held, so a cancelled thread never leaves one behind.
 *
 *   t_prof_cancel pending     a thread with a cancellation pending dumps the profile: the dump
 *                             completes (the profile's lock is released) and the thread is
 *                             cancelled at its next cancellation point; then the process's
 *                             sampled mallocs go on. Before the fix (open, write, read, close
 *                             inside the dump are cancellation points) the thread was
 *                             cancelled holding the lock and the next sampled malloc spun
 *                             forever.
 *   t_prof_cancel storm <n>   n rounds: threads call ax_prof_dump, malloc_stats, malloc_info,
 *                             malloc_trim, ax_stats_print and malloc/free in a loop and are
 *                             cancelled at random moments; the process goes on (sampled
 *                             mallocs, dumps, trims, statistics) after every round.
 * alarm() turns a hang into a failure.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static char path[512];
static int saved_err = 2;

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "t_prof_cancel: hung (a lock left held by a cancelled thread?)\n";
  ssize_t r = write(saved_err, msg, sizeof msg - 1);
  (void)r;
  _exit(1);
}

static void churn(unsigned n) { /* sampled mallocs: they take the profile's lock */
  for (unsigned i = 0; i < n; i++)
    free(malloc(64 + i % 4000));
}

static void *dump_pending(void *arg) {
  (void)arg;
  CHECK(pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL) == 0);
  CHECK(pthread_cancel(pthread_self()) == 0); /* pending from here on */
  int err = ax_prof_dump(path);               /* no cancellation point inside */
  CHECKF(err == 0, "ax_prof_dump: %d", err);
  pthread_testcancel();
  CHECK(!"not cancelled at pthread_testcancel");
  return NULL;
}

static void pending(void) {
  pthread_t t;
  void *ret;
  CHECK(pthread_create(&t, NULL, dump_pending, NULL) == 0);
  CHECK(pthread_join(t, &ret) == 0);
  CHECK(ret == PTHREAD_CANCELED);
  static char text[1 << 16];
  int fd = open(path, O_RDONLY);
  CHECKF(fd >= 0, "no profile at %s", path);
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  CHECK(n > 0);
  text[n] = 0;
  CHECKF(strncmp(text, "heap profile: ", 14) == 0 && strstr(text, "MAPPED_LIBRARIES:\n"),
         "the dump was cut short");
  churn(200000);
  CHECK(ax_prof_dump(path) == 0);
  printf("t_prof_cancel pending: the dump was whole and the lock free after the cancel\n");
}

static void close_null(void *f) { fclose(f); }

static void *storm_thread(void *arg) {
  unsigned k = (unsigned)(uintptr_t)arg;
  FILE *null = fopen("/dev/null", "w");
  CHECK(null != NULL);
  pthread_cleanup_push(close_null, null);
  for (unsigned i = 0;; i++) {
    switch ((k + i) % 6) {
    case 0:
      ax_prof_dump(path);
      break;
    case 1:
      malloc_stats();
      break;
    case 2:
      malloc_info(0, null);
      break;
    case 3:
      malloc_trim(0);
      break;
    case 4:
      ax_stats_print();
      break;
    default:
      churn(500);
    }
    pthread_testcancel();
  }
  pthread_cleanup_pop(1);
  return NULL;
}

static void storm(unsigned rounds) {
  int null = open("/dev/null", O_WRONLY);
  CHECK(null >= 0 && (saved_err = dup(2)) >= 0);
  CHECK(dup2(null, 2) == 2); /* (the reports go nowhere; failures to saved_err) */
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  enum { N = 4 };
  for (unsigned r = 0; r < rounds; r++) {
    pthread_t t[N];
    for (unsigned k = 0; k < N; k++)
      CHECK(pthread_create(&t[k], NULL, storm_thread, (void *)(uintptr_t)(k + r)) == 0);
    for (unsigned k = 0; k < N; k++) {
      struct timespec ts = {0, (long)(rnd_next(&rng) % 3000000)}; /* up to 3 ms */
      nanosleep(&ts, NULL);
      CHECK(pthread_cancel(t[k]) == 0);
    }
    for (unsigned k = 0; k < N; k++)
      CHECK(pthread_join(t[k], NULL) == 0);
    churn(2000); /* the process goes on: every lock is free */
    CHECK(ax_prof_dump(path) == 0);
    malloc_trim(0);
    ax_stats_print();
  }
  dup2(saved_err, 2);
  printf("t_prof_cancel storm: %u rounds of %d threads cancelled inside the locking APIs\n", rounds,
         (int)N);
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  ax_info_t info;
  ax_info(&info);
  if (!info.prof_sample) {
    printf("t_prof_cancel: skipped: run with AXMALLOC_PROF=1\n");
    return 77;
  }
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/t_prof_cancel.%d.heap", dir && *dir ? dir : "/tmp",
           (int)getpid());
  signal(SIGALRM, on_alarm);
  const char *hang = getenv("AX_HANG_SECONDS");
  alarm(hang && atoi(hang) > 0 ? (unsigned)atoi(hang) : 60);
  if (argc > 1 && strcmp(argv[1], "storm") == 0)
    storm(argc > 2 ? (unsigned)atoi(argv[2]) : 50);
  else
    pending();
  unlink(path);
  return 0;
}
