/* SPDX-License-Identifier: MIT */
/* The heap profiler's profiles by the program's own measure: AXMALLOC_PROF_INTERVAL (one per
 * interval of bytes allocated) and AXMALLOC_PROF_GDUMP (one per new peak of the bytes mapped),
 * counted in the profile directory after known allocations. ctest runs it with
 * AXMALLOC_PROF=1, AXMALLOC_PROF_SAMPLE=4096 (peak: 1m) and
 * AXMALLOC_PROF_FILE=<dir>/t_prof_dumps.<mode>:
 *
 *   t_prof_dumps interval   AXMALLOC_PROF_INTERVAL=1m: 16 MiB allocated in 256-byte blocks
 *                           write 13 to 19 interval profiles (the estimate's error at 4,096
 *                           samples is about 1.6%), no peak profile
 *   t_prof_dumps peak       AXMALLOC_PROF_GDUMP=1 (sampling every 1 MiB, so that the samples'
 *                           own slots map little): 48 MiB kept live write peak profiles,
 *                           freeing them and allocating 8 MiB again writes none
 *   t_prof_dumps none       neither: no such profile at all (the counts are the options')
 */
#include <dirent.h>
#include <stdbool.h>
#include <unistd.h>

#include "testutil.h"

/* Profiles of this process whose name ends in .<kind>.heap; each must be a heap profile. */
static int count(const char *kind) {
  const char *prefix = getenv("AXMALLOC_PROF_FILE");
  CHECK(prefix && *prefix == '/');
  char dir[512], base[256], suffix[64];
  snprintf(dir, sizeof dir, "%s", prefix);
  char *slash = strrchr(dir, '/');
  snprintf(base, sizeof base, "%s.%d.", slash + 1, (int)getpid());
  *slash = 0;
  snprintf(suffix, sizeof suffix, ".%s.heap", kind);
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name), sl = strlen(suffix);
    if (strncmp(e->d_name, base, strlen(base)) != 0 || len < sl ||
        strcmp(e->d_name + len - sl, suffix) != 0)
      continue;
    char path[1024], head[16] = {0};
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    CHECK(fread(head, 1, 13, f) == 13);
    fclose(f);
    CHECKF(strcmp(head, "heap profile:") == 0, "%s starts %s", path, head);
    unlink(path);
    n++;
  }
  closedir(d);
  return n;
}

/* count() as it will run later, on a file of each kind of its own: what it allocates (a
 * directory stream, a FILE and its buffer) is mapped now, not after the peak under test
 * (once that was a segment of its own, a new peak seen in the phase after it). */
static void warm_up(void) {
  for (int k = 0; k < 2; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s.%d.warm.%s.heap", getenv("AXMALLOC_PROF_FILE"), (int)getpid(),
             k ? "peak" : "interval");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("heap profile: (not one: t_prof_dumps' warm-up)\n", f);
    fclose(f);
  }
  count("interval"), count("peak");
}

static void churn(size_t bytes, size_t size) {
  for (size_t done = 0; done < bytes; done += size) {
    volatile char *p = malloc(size);
    p[0] = 1;
    free((void *)p);
  }
}

enum { BIG = 16 << 10 };
static void *keep[48 << 20 >> 14];

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  ax_info_t info;
  ax_info(&info);
  if (!info.prof_sample) {
    printf("t_prof_dumps %s: skipped (no profiler: memory tagging?)\n", mode);
    return 77;
  }
  size_t interval = 1, len = sizeof interval;
  bool gdump = true;
  CHECK(ax_ctl("opt.prof_interval", &interval, &len, NULL, 0) == 0);
  len = sizeof gdump;
  CHECK(ax_ctl("opt.prof_gdump", &gdump, &len, NULL, 0) == 0);
  bool none = strcmp(mode, "none") == 0;
  warm_up();
  if (strcmp(mode, "interval") == 0 || none) {
    CHECK(interval == (none ? 0u : 1u << 20) && !gdump);
    churn(16 << 20, 256);
    int n = count("interval");
    if (none)
      CHECKF(n == 0, "%d interval profiles without AXMALLOC_PROF_INTERVAL", n);
    else
      CHECKF(n >= 13 && n <= 19, "%d interval profiles for 16 intervals", n);
    printf("t_prof_dumps: %d interval profiles\n", n);
  }
  if (strcmp(mode, "peak") == 0 || none) {
    CHECK(gdump == !none && (none || interval == 0));
    size_t n = sizeof keep / sizeof keep[0];
    for (size_t i = 0; i < n; i++) {
      keep[i] = malloc(BIG);
      memset(keep[i], 1, BIG);
    }
    /* a peak is seen at the next sample: 32 MiB more, which maps nothing (a block freed is
     * the next one taken), take about 32 samples, so that none is left unseen (e^-32) */
    churn(32 << 20, BIG);
    int grown = count("peak");
    for (size_t i = 0; i < n; i++)
      free(keep[i]);
    for (size_t i = 0; i < n / 6; i++)
      keep[i] = malloc(BIG);
    churn(32 << 20, BIG);
    int again = count("peak");
    for (size_t i = 0; i < n / 6; i++)
      free(keep[i]);
    if (none)
      CHECKF(grown == 0 && again == 0, "%d and %d peak profiles without AXMALLOC_PROF_GDUMP", grown,
             again);
    else
      CHECKF(grown >= 2 && again == 0,
             "%d peak profiles while 48 MiB grew (want 2 or more), %d after (want none)", grown,
             again);
    printf("t_prof_dumps: %d peak profiles, then %d\n", grown, again);
  }
  /* the other kind's option is off (none: both): not one profile of that kind; this kind's
   * may have gone on (count's own allocations) */
  if (strcmp(mode, "peak") != 0)
    CHECK(count("peak") == 0);
  if (strcmp(mode, "interval") != 0)
    CHECK(count("interval") == 0);
  printf("t_prof_dumps %s: OK\n", mode);
  return 0;
}
