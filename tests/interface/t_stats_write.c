/* SPDX-License-Identifier: MIT */
/* ax_stats_write: the report through a callback, as text with human units, as text with
 * exact bytes ("b"), and as JSON ("J"), in NUL-terminated pieces, without allocating.
 *
 *   t_stats_write        the text forms, checked here
 *   t_stats_write json   prints the JSON report on stdout after 5,000 live 1000-byte blocks:
 *                        t_stats_write.py parses it (json.tool) and checks its fields
 */
#include <stdbool.h>
#include <unistd.h>

#include "testutil.h"

static char text[1 << 16];
static size_t text_n;
static unsigned pieces;

/* Appends each piece; allocates nothing, so that the report alone is measured. */
static void collect(void *arg, const char *piece) {
  CHECK(arg == &text_n);
  size_t n = strlen(piece);
  CHECK(n > 0 && n < 512); /* a piece is the report's stack buffer at most */
  CHECK(text_n + n < sizeof text);
  memcpy(text + text_n, piece, n);
  text_n += n;
  text[text_n] = 0;
  pieces++;
}

static const char *report(const char *opts) {
  text_n = 0;
  pieces = 0;
  ax_stats_write(collect, &text_n, opts);
  return text;
}

static uint64_t thread_allocated(void) {
  uint64_t v = 0;
  size_t len = sizeof v;
  CHECK(ax_ctl("thread.allocated", &v, &len, NULL, 0) == 0);
  return v;
}

/* The figure after label, in the text report: "<digits>[.<digit>] <unit>". */
static void figure(const char *t, const char *label, char *out, size_t n) {
  const char *p = strstr(t, label);
  CHECKF(p != NULL, "no '%s' in:\n%s", label, t);
  p += strlen(label);
  while (*p == ' ')
    p++;
  size_t k = strcspn(p, "(\n");
  while (k && p[k - 1] == ' ')
    k--;
  CHECK(k < n);
  memcpy(out, p, k);
  out[k] = 0;
}

static void check_text(void) {
  enum { N = 3000 };
  static void *keep[N];
  for (int i = 0; i < N; i++)
    keep[i] = malloc(1000); /* 3 MB in one class: "in use" in MiB */
  uint64_t before = thread_allocated();
  const char *t = report(NULL);
  /* nothing allocated while the report was made (the callback allocates nothing either) */
  CHECK(thread_allocated() == before);
  char head[64];
  snprintf(head, sizeof head, "axmalloc stats (pid %d):\n", (int)getpid());
  CHECKF(strncmp(t, head, strlen(head)) == 0, "report starts: %.80s", t);
  CHECKF(pieces > 1, "%u pieces", pieces);
  char v[64];
  figure(t, "in use (pages)", v, sizeof v);
  double mib = 0;
  char unit[8] = {0};
  CHECKF(sscanf(v, "%lf %7s", &mib, unit) == 2 && strcmp(unit, "MiB") == 0 && mib >= 2.8 &&
             mib < 64,
         "in use: '%s'", v);
  const char *dot = strchr(v, '.');
  CHECKF(dot && dot[1] >= '0' && dot[1] <= '9' && dot[2] == ' ', "one decimal: '%s'", v);
  figure(t, "allocated", v, sizeof v);
  CHECKF(strstr(v, " MiB") != NULL, "allocated: '%s'", v);
  figure(t, "os purged", v, sizeof v);
  CHECKF(strcmp(v, "0 B") == 0 || strstr(v, "iB") != NULL || strspn(v, "0123456789") > 0,
         "purged: '%s'", v);
  CHECK(strstr(t, "  class  block size       mallocs  live (this thread)\n") != NULL);
  /* "b": exact bytes, as ax_stats_get has them */
  t = report("b");
  figure(t, "in use (pages)", v, sizeof v);
  ax_stats_t s;
  ax_stats_get(&s);
  char want[32];
  snprintf(want, sizeof want, "%llu B", (unsigned long long)s.in_use);
  CHECKF(strcmp(v, want) == 0, "in use exact: '%s', ax_stats_get %s", v, want);
  CHECK(strstr(t, "iB") == NULL);
  for (int i = 0; i < N; i++)
    free(keep[i]);
}

static void to_stdout(void *arg, const char *piece) { fputs(piece, (FILE *)arg); }

int main(int argc, char **argv) {
  check_axmalloc_active();
  if (argc > 1 && strcmp(argv[1], "json") == 0) {
    enum { N = 5000 };
    static void *keep[N];
    for (int i = 0; i < N; i++)
      keep[i] = malloc(1000);
    ax_stats_write(to_stdout, stdout, "J"); /* (the callback allocates: stdout's buffer) */
    fflush(stdout);
    for (int i = 0; i < N; i++)
      free(keep[i]);
    return 0;
  }
  check_text();
  printf("t_stats_write: OK\n");
  return 0;
}
