/* Options from the environment and the stats printer.
 *
 *   t_options           no AXMALLOC_* set: ax_stats_print() prints "axmalloc stats:" first;
 *                       a process that exits prints nothing from the allocator (ctest also
 *                       fails the run if any "axmalloc" line reaches its output)
 *   t_options stats     run with AXMALLOC_STATS=1: exit prints the statistics, starting with
 *                       the same "axmalloc stats:" line ax_stats_print() gives
 *   t_options verbose   run with AXMALLOC_VERBOSE=1: ctest matches an "axmalloc:" line in
 *                       the output before "t_options: verbose OK"
 *
 * Output is captured by pointing fd 2 at a memfd, in this process (ax_stats_print) or in a
 * forked child that then exits (the at-exit report), so it works under qemu-user too. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char out[1 << 20];

/* Read all of fd (from offset 0) into out. */
static size_t slurp(int fd) {
  size_t len = 0;
  ssize_t r;
  CHECK(lseek(fd, 0, SEEK_SET) == 0);
  while (len < sizeof out - 1 && (r = read(fd, out + len, sizeof out - 1 - len)) > 0)
    len += (size_t)r;
  out[len] = 0;
  return len;
}

/* What ax_stats_print() writes to stderr. */
static size_t capture_stats_print(void) {
  int fd = memfd_create("stats", 0);
  CHECK(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  CHECK(saved >= 0 && dup2(fd, 2) == 2);
  ax_stats_print();
  fflush(stderr);
  CHECK(dup2(saved, 2) == 2);
  close(saved);
  size_t n = slurp(fd);
  close(fd);
  return n;
}

/* What a forked child that mallocs a little and exits writes to stderr. */
static size_t capture_child_exit(void) {
  int fd = memfd_create("exit", 0);
  CHECK(fd >= 0);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fd, 2);
    for (int i = 0; i < 100; i++)
      free(malloc(100 + (size_t)i * 1000));
    exit(0); /* exit, not _exit: at-exit reporting must run */
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", st);
  size_t n = slurp(fd);
  close(fd);
  return n;
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

static void first_line(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  while (src[i] && src[i] != '\n' && i + 1 < cap) {
    dst[i] = src[i];
    i++;
  }
  dst[i] = 0;
}

static void check_stats_print(void) {
  /* some activity so that there is something to report */
  void *keep[50];
  for (int i = 0; i < 50; i++)
    keep[i] = malloc(16 + (size_t)i * 100);
  size_t n = capture_stats_print();
  CHECKF(n > 0, "ax_stats_print() printed nothing");
  CHECKF(strncmp(out, "axmalloc stats:", 15) == 0, "ax_stats_print() output starts with: %.80s",
         out);
  CHECKF(strchr(out, '\n') != NULL && n > 40, "ax_stats_print() output is too short: %s", out);
  for (int i = 0; i < 50; i++)
    free(keep[i]);
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  const char *mode = argc > 1 ? argv[1] : "default";
  check_stats_print();

  if (strcmp(mode, "default") == 0) {
    if (!env_on("AXMALLOC_STATS") && !env_on("AXMALLOC_VERBOSE")) {
      size_t n = capture_child_exit();
      CHECKF(n == 0, "a quiet process printed at exit: %.200s", out);
    }
  } else if (strcmp(mode, "stats") == 0) {
    CHECK(env_on("AXMALLOC_STATS"));
    char want[256], got[256];
    capture_stats_print();
    first_line(want, sizeof want, out);
    size_t n = capture_child_exit();
    CHECKF(n > 0, "AXMALLOC_STATS=1: nothing printed at exit");
    /* the report may follow other lines (e.g. verbose ones): find its header */
    const char *h = strstr(out, "axmalloc stats:");
    CHECKF(h != NULL && (h == out || h[-1] == '\n'), "no \"axmalloc stats:\" line at exit: %.300s",
           out);
    first_line(got, sizeof got, h);
    CHECKF(strcmp(want, got) == 0, "exit header \"%s\" != ax_stats_print header \"%s\"", got, want);
    CHECK(strlen(h) > 40);
  } else if (strcmp(mode, "verbose") == 0) {
    CHECK(env_on("AXMALLOC_VERBOSE"));
    for (int i = 0; i < 100; i++)
      free(malloc((size_t)i * 5000));
    printf("t_options: verbose OK\n");
    fflush(stdout);
    return 0;
  } else {
    fprintf(stderr, "t_options: unknown mode %s\n", mode);
    return 2;
  }
  printf("t_options %s: OK\n", mode);
  fflush(stdout); /* before the at-exit report, which ctest expects after this line */
  return 0;
}
