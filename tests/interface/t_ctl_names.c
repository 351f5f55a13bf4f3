/* SPDX-License-Identifier: MIT */
/* ax_ctl's names listed ("names", ax_ctl_name), its per-class figures (stats.classes.<c>.*,
 * thread.classes.<c>.*) after allocations of known classes, the options a program may write
 * (opt.stats, opt.purge_delay_ms, opt.thp) and the ones it may not, and stats.dump.
 *
 *   t_ctl_names         (ctest sets AXMALLOC_THP=never, and a kernel in madvise mode through
 *                       AXMALLOC_THP_SYSFS: opt.thp starts at never)
 *   t_ctl_names stats   opt.stats written on: the report at exit (ctest matches it)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

/* "names" and ax_ctl_name list the same names, in the same order; every one listed can be
 * read (or, write-only, is refused a read with EPERM) with the type the listing gives. */
static void check_names(void) {
  const char *list = NULL;
  size_t len = sizeof list;
  CHECK(ax_ctl("names", &list, &len, NULL, 0) == 0);
  CHECK(list != NULL);
  size_t i = 0, classes = 0, opts = 0;
  bool seen_allocated = false, seen_live60 = false, seen_prof_sample = false;
  for (const char *n = list; *n; n += strlen(n) + 1, i++) {
    const char *type = NULL, *access = NULL, *again = ax_ctl_name(i, &type, &access);
    CHECKF(again && strcmp(again, n) == 0, "name %zu: list %s, ax_ctl_name %s", i, n,
           again ? again : "NULL");
    CHECK(type && access && *access);
    seen_allocated |= strcmp(n, "stats.allocated") == 0 && strcmp(type, "size_t") == 0 &&
                      strcmp(access, "r") == 0;
    seen_live60 |= strcmp(n, "thread.classes.60.live") == 0;
    seen_prof_sample |= strcmp(n, "opt.prof_sample") == 0 && strcmp(type, "size_t") == 0;
    classes += strstr(n, ".classes.") != NULL;
    opts += strncmp(n, "opt.", 4) == 0;
    size_t want = strcmp(type, "bool") == 0       ? sizeof(bool)
                  : strcmp(type, "uint64_t") == 0 ? sizeof(uint64_t)
                  : strcmp(type, "size_t") == 0   ? sizeof(size_t)
                  : strcmp(type, "void") == 0     ? 0
                                                  : sizeof(const char *);
    char value[16];
    size_t vlen = want;
    int rc = ax_ctl(n, value, &vlen, NULL, 0);
    if (strchr(access, 'r'))
      CHECKF(rc == 0, "%s (%s, %s): read = %d", n, type, access, rc);
    else
      CHECKF(rc == EPERM, "%s (%s, %s): read = %d, want EPERM", n, type, access, rc);
  }
  CHECK(ax_ctl_name(i, NULL, NULL) == NULL);
  CHECK(ax_ctl_name((size_t)-1, NULL, NULL) == NULL);
  CHECKF(classes == 4 * (AX_NUM_CLASSES - 1), "%zu per-class names", classes);
  CHECKF(opts >= 18, "%zu options", opts);
  CHECK(seen_allocated && seen_live60 && seen_prof_sample);
  const char *type = NULL, *access = NULL;
  CHECK(strcmp(ax_ctl_name(0, &type, &access), "names") == 0);
  CHECK(strcmp(type, "const char *") == 0 && strcmp(access, "r") == 0);
  /* the list is static: a second read gives the same memory */
  const char *again = NULL;
  CHECK(ax_ctl("names", &again, &len, NULL, 0) == 0 && again == list);
  CHECK(ax_ctl("names", NULL, NULL, &again, sizeof again) == EPERM);
}

/* Class c's figures after n blocks of its size: mallocs (every thread's and the calling
 * thread's) grow by at least n (a page refill counts the blocks it hands out: up to a page
 * more), live by exactly n. */
static void check_classes(void) {
  enum { N = 3000 };
  static void *p[N];
  unsigned c = 0;
  size_t size = 0, len = sizeof size;
  for (unsigned k = 1; k < AX_NUM_CLASSES && !c; k++)
    if (ax_class_size(k) == 48)
      c = k;
  CHECK(c != 0);
  char name[64];
  snprintf(name, sizeof name, "stats.classes.%u.size", c);
  CHECK(ax_ctl(name, &size, &len, NULL, 0) == 0);
  CHECK(size == 48);
  char all[64], mine[64], live[64];
  snprintf(all, sizeof all, "stats.classes.%u.mallocs", c);
  snprintf(mine, sizeof mine, "thread.classes.%u.mallocs", c);
  snprintf(live, sizeof live, "thread.classes.%u.live", c);
  uint64_t a0 = ctl_u64(all), m0 = ctl_u64(mine), l0 = ctl_u64(live);
  for (int i = 0; i < N; i++)
    p[i] = malloc(40); /* (class 48) */
  uint64_t a1 = ctl_u64(all), m1 = ctl_u64(mine), l1 = ctl_u64(live);
  ax_stats_t s; /* the same figures as ax_stats_get's, absolutely */
  ax_stats_get(&s);
  CHECKF(s.class_live[c] == l1, "live %llu, ax_stats_get %llu", (unsigned long long)l1,
         (unsigned long long)s.class_live[c]);
  CHECK(s.class_mallocs[c] == a1);
  CHECKF(l1 - l0 == N, "live %llu -> %llu", (unsigned long long)l0, (unsigned long long)l1);
  CHECKF(m1 - m0 >= N && m1 - m0 < N + 4096, "thread mallocs %llu -> %llu", (unsigned long long)m0,
         (unsigned long long)m1);
  CHECKF(a1 - a0 >= N && a1 - a0 < N + 4096, "mallocs %llu -> %llu", (unsigned long long)a0,
         (unsigned long long)a1);
  CHECK(m1 <= a1);
  for (int i = 0; i < N; i++)
    free(p[i]);
  CHECKF(ctl_u64(live) == l0, "live after the frees %llu", (unsigned long long)ctl_u64(live));
  /* names that are no class */
  uint64_t v;
  len = sizeof v;
  CHECK(ax_ctl("stats.classes.0.mallocs", &v, &len, NULL, 0) == ENOENT);
  CHECK(ax_ctl("stats.classes.61.mallocs", &v, &len, NULL, 0) == ENOENT);
  CHECK(ax_ctl("stats.classes.07.mallocs", &v, &len, NULL, 0) == ENOENT);
  CHECK(ax_ctl("stats.classes.7.nothing", &v, &len, NULL, 0) == ENOENT);
  CHECK(ax_ctl("stats.classes.7.mallocs.", &v, &len, NULL, 0) == ENOENT);
  CHECK(ax_ctl("stats.classes.99999999999.size", &v, &len, NULL, 0) == ENOENT);
  CHECK(ax_ctl("stats.classes..size", &v, &len, NULL, 0) == ENOENT);
  CHECK(ax_ctl("thread.classes.7.size", &v, &len, NULL, 0) == ENOENT);
  CHECK(ax_ctl("stats.classes.7.mallocs", &v, &len, &v, sizeof v) == EPERM);
  len = 4;
  CHECK(ax_ctl("stats.classes.7.mallocs", &v, &len, NULL, 0) == EINVAL);
}

static void *other_thread(void *arg) {
  unsigned c = *(unsigned *)arg;
  char mine[64];
  snprintf(mine, sizeof mine, "thread.classes.%u.mallocs", c);
  uint64_t *out = malloc(2 * sizeof *out);
  out[0] = ctl_u64(mine); /* (its heap: the malloc above, of another class) */
  return out;
}

/* thread.classes.* are the calling thread's: a new thread's count of a class it never used
 * is 0 while this one's is not. */
static void check_thread_classes(void) {
  unsigned c = 0;
  for (unsigned k = 1; k < AX_NUM_CLASSES && !c; k++)
    if (ax_class_size(k) == 96)
      c = k;
  void *keep = malloc(90);
  char mine[64];
  snprintf(mine, sizeof mine, "thread.classes.%u.mallocs", c);
  CHECK(ctl_u64(mine) > 0);
  pthread_t t;
  void *ret;
  CHECK(pthread_create(&t, NULL, other_thread, &c) == 0);
  CHECK(pthread_join(t, &ret) == 0);
  CHECKF(((uint64_t *)ret)[0] == 0, "another thread's count %llu",
         (unsigned long long)((uint64_t *)ret)[0]);
  free(ret);
  free(keep);
}

/* The writable options read back what was written, and refuse what is out of range; the
 * others refuse every write. */
static void check_option_writes(void) {
  bool b = true;
  size_t len = sizeof b;
  CHECK(ax_ctl("opt.stats", &b, &len, NULL, 0) == 0 && !b);
  b = true;
  CHECK(ax_ctl("opt.stats", NULL, NULL, &b, sizeof b) == 0);
  CHECK(ax_ctl("opt.stats", &b, &len, NULL, 0) == 0 && b);
  b = false; /* (and off again: the report at exit is t_ctl_names.stats's) */
  CHECK(ax_ctl("opt.stats", NULL, NULL, &b, sizeof b) == 0);
  CHECK(ax_ctl("opt.stats", &b, &len, NULL, 0) == 0 && !b);

  uint64_t ms = 77, got = 0, over = 3600001;
  CHECK(ax_ctl("opt.purge_delay_ms", NULL, NULL, &ms, sizeof ms) == 0);
  CHECK(ctl_u64("opt.purge_delay_ms") == 77 && ctl_u64("purge.delay_ms") == 77);
  CHECK(ax_ctl("opt.purge_delay_ms", NULL, NULL, &over, sizeof over) == EINVAL);
  ms = 33;
  CHECK(ax_ctl("purge.delay_ms", NULL, NULL, &ms, sizeof ms) == 0);
  CHECK(ctl_u64("opt.purge_delay_ms") == 33);
  /* read the old value and write a new one in one call, as mallctl */
  ms = 10;
  len = sizeof got;
  CHECK(ax_ctl("opt.purge_delay_ms", &got, &len, &ms, sizeof ms) == 0 && got == 33);
  CHECK(ctl_u64("opt.purge_delay_ms") == 10);

  const char *thp = NULL, *word = "Always";
  len = sizeof thp;
  CHECK(ax_ctl("opt.thp", &thp, &len, NULL, 0) == 0 && strcmp(thp, "never") == 0);
  CHECK(ax_ctl("opt.thp", NULL, NULL, &word, sizeof word) == 0);
  CHECK(ax_ctl("opt.thp", &thp, &len, NULL, 0) == 0 && strcmp(thp, "always") == 0);
  ax_thp_info_t t;
  ax_thp_info(&t);
  CHECK(strcmp(t.option, "always") == 0);
  word = "sometimes";
  CHECK(ax_ctl("opt.thp", NULL, NULL, &word, sizeof word) == EINVAL);
  word = NULL;
  CHECK(ax_ctl("opt.thp", NULL, NULL, &word, sizeof word) == EINVAL);
  CHECK(ax_ctl("opt.thp", &thp, &len, NULL, 0) == 0 && strcmp(thp, "always") == 0);
  word = "never";
  CHECK(ax_ctl("opt.thp", NULL, NULL, &word, sizeof word) == 0);

  /* fixed at start-up: every other option refuses a write, whatever its type */
  size_t sample = 4096;
  CHECK(ax_ctl("opt.prof_sample", NULL, NULL, &sample, sizeof sample) == EPERM);
  b = true;
  CHECK(ax_ctl("opt.check", NULL, NULL, &b, sizeof b) == EPERM);
  CHECK(ax_ctl("opt.verbose", NULL, NULL, &b, sizeof b) == EPERM);
  CHECK(ax_ctl("opt.stats", NULL, NULL, &b, 4) == EINVAL);
  const char *type, *access;
  for (size_t i = 0; ax_ctl_name(i, &type, &access); i++) {
    const char *n = ax_ctl_name(i, NULL, NULL);
    bool w = strcmp(n, "opt.stats") == 0 || strcmp(n, "opt.purge_delay_ms") == 0 ||
             strcmp(n, "opt.thp") == 0 || strcmp(n, "opt.guard") == 0;
    if (strncmp(n, "opt.", 4) == 0)
      CHECKF(strcmp(access, w ? "rw" : "r") == 0, "%s: %s", n, access);
  }
}

/* opt.thp acts on mappings made after the write: with the kernel's madvise mode (ctest points
 * AXMALLOC_THP_SYSFS at tests/platform/thp/madvise_2m), a huge block mapped under never is
 * not advised, one mapped after "large" is (large advises every huge block; auto only where
 * its probe found huge pages cheaper, which under qemu-user it did not: t_thp checks that). */
static void check_thp_write(void) {
  ax_thp_info_t t;
  ax_thp_info(&t);
  if (!t.page_size) {
    printf("t_ctl_names: the kernel has no huge pages here: opt.thp's effect not checked\n");
    return;
  }
  size_t size = (size_t)8 << 20;
  void *before = malloc(size);
  ax_thp_info(&t);
  uint64_t advised = t.advised;
  CHECKF(advised == 0, "advised %llu under never", (unsigned long long)advised);
  const char *word = "large";
  CHECK(ax_ctl("opt.thp", NULL, NULL, &word, sizeof word) == 0);
  void *after = malloc(size);
  ax_thp_info(&t);
  CHECKF(t.advised >= size, "advised %llu after large, want %zu or more",
         (unsigned long long)t.advised, size);
  free(after);
  free(before);
  word = "never";
  CHECK(ax_ctl("opt.thp", NULL, NULL, &word, sizeof word) == 0);
}

/* opt.guard acts on each class's next countdown: off (0), a class counting down looks again
 * within 2^20 blocks; at 1 byte every block that fits a page is guarded while the pool has a
 * slot (guard.samples counts them, guard.live those not freed). Off in checked mode (EPERM). */
static void check_guard_write(void) {
  size_t mean = 0, was = 0, len = sizeof was;
  CHECK(ax_ctl("opt.guard", &was, &len, NULL, 0) == 0);
  if (!getenv("AXMALLOC_GUARD"))
    CHECKF(was == (size_t)64 << 20, "opt.guard %zu, want the default 64 MiB", was);
  if (getenv("AXMALLOC_CHECK") || ax_ctl("opt.guard", NULL, NULL, &mean, sizeof mean) == EPERM) {
    printf("t_ctl_names: guarded sampling is off here (checked mode): opt.guard not written\n");
    return;
  }
  uint64_t before = ctl_u64("guard.samples"), slots = ctl_u64("guard.slots");
  CHECK(slots >= 8 && slots <= 64);
  for (int i = 0; i < (1 << 21); i++) /* (every class looks at the rate again) */
    free(malloc(64));
  CHECK(ctl_u64("guard.samples") == before);
  mean = 1;
  CHECK(ax_ctl("opt.guard", NULL, NULL, &mean, sizeof mean) == 0);
  void *keep[4];
  for (int i = 0; i < (1 << 21) && ctl_u64("guard.samples") < before + 4; i++)
    free(malloc(64));
  CHECKF(ctl_u64("guard.samples") >= before + 4, "guard.samples %llu, before %llu",
         (unsigned long long)ctl_u64("guard.samples"), (unsigned long long)before);
  for (int i = 0; i < 4; i++) /* (the class sampled all along, at every malloc now) */
    keep[i] = malloc(64);
  CHECK(ctl_u64("guard.live") >= 1);
  for (int i = 0; i < 4; i++)
    free(keep[i]);
  mean = (size_t)1 << 41;
  CHECK(ax_ctl("opt.guard", NULL, NULL, &mean, sizeof mean) == EINVAL);
  mean = was;
  CHECK(ax_ctl("opt.guard", NULL, NULL, &mean, sizeof mean) == 0);
  CHECK(ax_ctl("opt.guard", &mean, &len, NULL, 0) == 0 && mean == was);
}

/* stats.dump writes the JSON report into the file (its first bytes), and says why not. */
static void check_dump(void) {
  char path[256];
  snprintf(path, sizeof path, "t_ctl_names.%d.json", (int)getpid());
  const char *p = path;
  CHECK(ax_ctl("stats.dump", NULL, NULL, &p, sizeof p) == 0);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  char head[64] = {0};
  CHECK(fread(head, 1, sizeof head - 1, f) > 0);
  fclose(f);
  unlink(path);
  CHECKF(strncmp(head, "{\"axmalloc\":{\"version\":\"", 24) == 0, "dump starts %s", head);
  p = "/nonexistent/dir/x.json";
  CHECK(ax_ctl("stats.dump", NULL, NULL, &p, sizeof p) == ENOENT);
  p = NULL;
  CHECK(ax_ctl("stats.dump", NULL, NULL, &p, sizeof p) == EINVAL);
  size_t len = sizeof p;
  CHECK(ax_ctl("stats.dump", &p, &len, NULL, 0) == EPERM);
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  if (argc > 1 && strcmp(argv[1], "stats") == 0) { /* opt.stats on: the report at exit */
    bool on = true;
    CHECK(ax_ctl("opt.stats", NULL, NULL, &on, sizeof on) == 0);
    printf("t_ctl_names stats: OK\n");
    fflush(stdout);
    return 0;
  }
  check_names();
  check_classes();
  check_thread_classes();
  check_option_writes();
  check_guard_write();
  check_thp_write();
  check_dump();
  printf("t_ctl_names: OK\n");
  return 0;
}
