/* SPDX-License-Identifier: MIT */
/* Options from the environment and the stats printer.
 *
 *   t_options           no AXMALLOC_* set: ax_stats_print() prints "axmalloc stats (pid N):" first;
 *                       a process that exits prints nothing from the allocator (ctest also
 *                       fails the run if any "axmalloc" line reaches its output)
 *   t_options stats     run with AXMALLOC_STATS=1: exit prints the statistics, starting with
 *                       "axmalloc stats (pid N):", N the child's pid, and aligned rows
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

/* The per-class rows sit under the header's titles: "  class  block size       mallocs  live
 * (this thread)", each number right-aligned in its title's width (5, 10, 12 and 18). */
static void check_class_rows(const char *report) {
  static const char title[] = "  class  block size       mallocs  live (this thread)\n";
  const char *row = strstr(report, title);
  CHECKF(row != NULL, "no class table header in: %s", report);
  static const int widths[] = {5, 10, 12, 18};
  int rows = 0;
  for (row += strlen(title); *row; rows++) {
    const char *p = row;
    for (int col = 0; col < 4; col++) {
      CHECKF(p[0] == ' ' && p[1] == ' ', "row %d: no two-space gap before column %d: %.60s", rows,
             col, row);
      p += 2;
      int digits = 0, w = 0;
      for (; w < widths[col] && *p == ' '; w++, p++)
        ;
      for (; w < widths[col] && *p >= '0' && *p <= '9'; w++, p++)
        digits++;
      CHECKF(w == widths[col] && digits > 0, "row %d, column %d is not %d wide: %.60s", rows, col,
             widths[col], row);
    }
    CHECKF(*p == '\n', "row %d is longer than the header: %.60s", rows, row);
    row = p + 1;
  }
  CHECKF(rows > 0, "no class rows in: %s", report);
}

static void check_stats_print(void) {
  /* some activity so that there is something to report */
  void *keep[50];
  for (int i = 0; i < 50; i++)
    keep[i] = malloc(16 + (size_t)i * 100);
  size_t n = capture_stats_print();
  CHECKF(n > 0, "ax_stats_print() printed nothing");
  char head[64];
  snprintf(head, sizeof head, "axmalloc stats (pid %d):\n", (int)getpid());
  CHECKF(strncmp(out, head, strlen(head)) == 0, "ax_stats_print() output starts with: %.80s", out);
  check_class_rows(out);
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
    size_t n = capture_child_exit();
    CHECKF(n > 0, "AXMALLOC_STATS=1: nothing printed at exit");
    /* the report may follow other lines (e.g. verbose ones): find its header, which names
     * the child that exited, not this process */
    const char *h = strstr(out, "axmalloc stats (pid ");
    CHECKF(h != NULL && (h == out || h[-1] == '\n'),
           "no \"axmalloc stats (pid\" line at exit: %.300s", out);
    int pid = 0, end = 0;
    CHECKF(sscanf(h, "axmalloc stats (pid %d):%n", &pid, &end) == 1 && end > 0 && h[end] == '\n',
           "exit header is not \"axmalloc stats (pid N):\": %.60s", h);
    CHECKF(pid > 0 && pid != (int)getpid(), "exit header names pid %d, the child was not it", pid);
    check_class_rows(h);
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
