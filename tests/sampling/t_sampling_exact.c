/* SPDX-License-Identifier: MIT */
/* Guarded blocks (issue 43) keep malloc's promises, and their misuse stops the program: run
 * with AXMALLOC_GUARD=1 (every allocation that fits a page, while the pool has a slot) and
 * AXMALLOC_GUARD_SLOTS=8, under each AXMALLOC_GUARD_PLACE.
 *
 *   - a block is guarded when it sits alone in a page of its own: the mapping that holds it
 *     (/proc/self/maps) is one page (the pool's pages are inaccessible but a live block's, so
 *     each live one is a mapping of its own), AXMALLOC_PAGE_SIZE's or the system's
 *   - every allocation that fits a page is guarded, whatever classes came before
 *   - malloc_usable_size is the size asked for; the block lies where AXMALLOC_GUARD_PLACE says
 *   - calloc's blocks are zero, also in slots whose earlier blocks were written all over
 *   - realloc keeps the bytes, grown, shrunk, to above a page and back (a move into a guarded
 *     block must not copy past its end: realloc's shrink asks for whole 16 bytes)
 *   - aligned_alloc, posix_memalign and memalign align (32 .. 4096)
 *   - a freed slot is used again (the pool's slots are not lost)
 *   - ax_ctl: opt.guard and guard.* read, opt.guard written 0 and 1
 *   - each in a child that must die: a double free, an invalid free (inside a block), realloc
 *     and malloc_usable_size of a freed block, and a byte written after a block's end (seen
 *     at its free under place=end) abort (SIGABRT) with the pointer in the message; a read
 *     after free and an overflow into the guard page fault (SIGSEGV) */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <axmalloc.h>

#include "testutil.h"

static void *volatile hide;
static size_t page;
static const char *place;

/* the mapping holding p: its bounds; false when none */
static int mapping_of(const void *p, uintptr_t *lo, uintptr_t *hi) {
  FILE *f = fopen("/proc/self/maps", "r");
  CHECKF(f, "/proc/self/maps");
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    unsigned long s, e;
    if (sscanf(line, "%lx-%lx", &s, &e) == 2 && (uintptr_t)p >= s && (uintptr_t)p < e) {
      *lo = s;
      *hi = e;
      found = 1;
    }
  }
  fclose(f);
  return found;
}

static int guarded(const void *p) {
  uintptr_t lo, hi;
  return mapping_of(p, &lo, &hi) && hi - lo == page;
}

/* A block of size bytes, guarded (checked where it is) */
static unsigned char *guarded_block(size_t size, int zero) {
  unsigned char *p = zero ? calloc(1, size) : malloc(size);
  CHECKF(p && guarded(p), "%s(%zu) = %p: not guarded", zero ? "calloc" : "malloc", size, (void *)p);
  CHECKF(malloc_usable_size(p) == size, "malloc_usable_size(%p) = %zu, asked %zu", (void *)p,
         malloc_usable_size(p), size);
  uintptr_t a = (uintptr_t)p, start, end; /* (its page: the pool is aligned to the system's
                                             page, maybe not to AXMALLOC_PAGE_SIZE's) */
  CHECKF(mapping_of(p, &start, &end), "%p: no mapping", (void *)p);
  if (strcmp(place, "start") == 0)
    CHECKF(a == start, "place=start: %p of %zu bytes", (void *)p, size);
  else if (strcmp(place, "exact") == 0)
    CHECKF(a + size == end, "place=exact: %p of %zu bytes", (void *)p, size);
  else if (strcmp(place, "end") == 0)
    CHECKF(a % 16 == 0 && end - (a + size) < 16, "place=end: %p of %zu bytes", (void *)p, size);
  else
    CHECKF(a == start || (a % 16 == 0 && end - (a + size) < 16), "place=alternate: %p of %zu",
           (void *)p, size);
  return p;
}

static void pattern(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(seed + i * 13);
}
static void pattern_check(const unsigned char *p, size_t n, unsigned seed, const char *what) {
  for (size_t i = 0; i < n; i++)
    CHECKF(p[i] == (unsigned char)(seed + i * 13), "%s: byte %zu of %p", what, i, (void *)p);
}

/* AXMALLOC_GUARD=1: every allocation that fits a page is guarded while the pool has a slot,
 * whatever other classes were sampled in between (each class due on its own; guarded() itself
 * mallocs, a FILE of 472 bytes) */
static void test_every(void) {
  static const size_t sizes[] = {1,   4000, 4096, 472,  4096, 4096, 7,
                                 472, 7,    100,  3000, 100,  2048, 16};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    void *p = malloc(sizes[i]);
    CHECKF(guarded(p), "malloc(%zu) (%zu of the sequence) = %p: not guarded", sizes[i], i, p);
    free(p);
  }
}

static void test_usable(void) {
  static const size_t sizes[] = {1, 7, 8, 15, 17, 100, 1000, 1001, 2049, 4000};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    unsigned char *p = guarded_block(sizes[i], 0);
    pattern(p, sizes[i], (unsigned)i);
    pattern_check(p, sizes[i], (unsigned)i, "usable");
    free(p);
  }
  unsigned char *p = guarded_block(page, 0); /* the whole page */
  pattern(p, page, 3);
  pattern_check(p, page, 3, "a page");
  free(p);
}

/* every slot written all over and freed, then calloc in each */
static void test_calloc(void) {
  unsigned char *all[16];
  for (int i = 0; i < 16; i++) {
    all[i] = guarded_block(page, 0);
    memset(all[i], 0xff, page);
    free(all[i]);
  }
  for (int i = 0; i < 16; i++) {
    size_t n = (size_t)(i + 1) * 250 - 3;
    unsigned char *p = guarded_block(n, 1);
    for (size_t k = 0; k < n; k++)
      CHECKF(p[k] == 0, "calloc(1, %zu) = %p: byte %zu is %#x", n, (void *)p, k, p[k]);
    free(p);
  }
}

static void test_realloc(void) {
  unsigned char *p = guarded_block(1001, 0);
  pattern(p, 1001, 7);
  p = realloc(p, 3001); /* grown */
  CHECKF(p, "realloc");
  pattern_check(p, 1001, 7, "realloc grown");
  pattern(p, 3001, 8);
  p = realloc(p, 77); /* shrunk */
  pattern_check(p, 77, 8, "realloc shrunk");
  p = realloc(p, 3 * page); /* above a page */
  pattern_check(p, 77, 8, "realloc above a page");
  pattern(p, 3 * page, 9);
  p = realloc(p, 333); /* and back: a move into a (guarded) block of 333 bytes */
  CHECKF(p, "realloc");
  pattern_check(p, 333, 9, "realloc back");
  CHECKF(guarded(p) && malloc_usable_size(p) >= 333 && malloc_usable_size(p) < 333 + 16,
         "realloc(.., 333) = %p: not guarded, or %zu bytes", (void *)p, malloc_usable_size(p));
  free(p);
  unsigned char *q = malloc(5 * page / 2); /* a big block shrunk into a guarded one */
  pattern(q, 5 * page / 2, 10);
  q = realloc(q, 101);
  pattern_check(q, 101, 10, "realloc into a guarded block");
  free(q);
}

static void test_aligned(void) {
  int n_guarded = 0;
  for (size_t a = 32; a <= 4096 && a <= page; a *= 2) {
    size_t sizes[] = {a, a + 24, a / 2 + 1};
    for (int k = 0; k < 3; k++) {
      size_t n = sizes[k] <= page ? sizes[k] : a;
      void *p[3];
      p[0] = aligned_alloc(a, (n + a - 1) / a * a);
      CHECKF(posix_memalign(&p[1], a, n) == 0, "posix_memalign(%zu, %zu)", a, n);
      p[2] = memalign(a, n);
      for (int j = 0; j < 3; j++) {
        CHECKF(p[j] && (uintptr_t)p[j] % a == 0, "aligned allocation %d of %zu at %zu: %p", j, n, a,
               p[j]);
        CHECKF(malloc_usable_size(p[j]) >= n, "usable %zu < %zu", malloc_usable_size(p[j]), n);
        n_guarded += guarded(p[j]);
        memset(p[j], 0x3c, n);
      }
      for (int j = 0; j < 3; j++)
        free(p[j]);
    }
  }
  printf("t_sampling_exact: %d aligned blocks guarded\n", n_guarded);
  CHECKF(n_guarded > 0, "no aligned block was guarded");
}

/* 8 slots (AXMALLOC_GUARD_SLOTS=8), some held by blocks the C library keeps (stdout's
 * buffer): guarded blocks until the pool is full, then none; one freed, its slot again */
static void test_slots(void) {
  unsigned char *p[9];
  int k = 0;
  while (k < 9 && guarded(p[k] = malloc(100)))
    k++;
  CHECKF(k >= 4 && k <= 8, "%d blocks guarded with 8 slots", k);
  int more = 0;
  void *q[4];
  for (int i = 0; i < 4; i++) {
    q[i] = malloc(100);
    more += guarded(q[i]);
  }
  CHECKF(more == 0, "%d blocks guarded beyond the pool's 8 slots", more);
  free(p[0]);
  int again = 0;
  void *r[8];
  for (int i = 0; i < 8; i++) {
    r[i] = malloc(100);
    again += guarded(r[i]);
  }
  CHECKF(again == 1, "%d guarded blocks after a slot was freed (1 expected)", again);
  for (int i = 0; i < 8; i++)
    free(r[i]);
  for (int i = 0; i < 4; i++)
    free(q[i]);
  for (int i = 1; i <= k && i < 9; i++)
    free(p[i]);
}

/* ax_ctl: opt.guard reads 1, guard.slots 8; opt.guard written 0 stops sampling, 1 starts it
 * again (for a class first allocated then: a class drawn while it was 0 rechecks later) */
static int guarded_of(size_t n, int k) {
  int g = 0;
  for (int i = 0; i < k; i++) {
    void *p = malloc(n);
    g += guarded(p);
    free(p);
  }
  return g;
}
static void test_ctl(void) {
  size_t v = 0, len = sizeof v, zero = 0, one = 1;
  CHECKF(ax_ctl("opt.guard", &v, &len, NULL, 0) == 0 && v == 1, "opt.guard reads %zu", v);
  CHECKF(ctl_u64("guard.slots") == 8, "guard.slots %llu",
         (unsigned long long)ctl_u64("guard.slots"));
  uint64_t s0 = ctl_u64("guard.samples");
  void *p = malloc(2500);
  CHECKF(guarded(p) && ctl_u64("guard.samples") > s0 && ctl_u64("guard.live") >= 1,
         "guard.samples or guard.live");
  free(p);
  CHECKF(ax_ctl("opt.guard", NULL, NULL, &zero, sizeof zero) == 0, "opt.guard = 0");
  int off = guarded_of(100, 20) + guarded_of(1500, 20);
  CHECKF(off == 0, "%d guarded blocks with opt.guard 0", off);
  CHECKF(ax_ctl("opt.guard", NULL, NULL, &one, sizeof one) == 0, "opt.guard = 1");
  int on = guarded_of(1800, 20); /* (a class not allocated before) */
  CHECKF(on == 20, "%d of 20 guarded with opt.guard 1 again", on);
}

/* ---- misuse: each in a child that must die ------------------------------------------------ */

enum misuse {
  DOUBLE_FREE,
  INVALID_FREE,
  REALLOC_FREED,
  USABLE_FREED,
  OVERFLOW_SLACK,
  READ_FREED,
  OVERFLOW_PAGE,
  UNDERFLOW_PAGE
};
static const char *const misuse_name[] = {"double free",
                                          "invalid free",
                                          "realloc of a freed block",
                                          "malloc_usable_size of a freed",
                                          "overflow into the page",
                                          "read after free",
                                          "overflow into the guard page",
                                          "underflow into the guard page"};

/* in the child: the misuse, after a line with the address its message must name */
static void do_misuse(enum misuse m) {
  size_t n = m == OVERFLOW_PAGE || m == UNDERFLOW_PAGE ? page : 1001;
  unsigned char *p = guarded_block(n, 0);
  uintptr_t named = (uintptr_t)p + (m == INVALID_FREE ? 16 : m == OVERFLOW_SLACK ? n : 0);
  printf("T_NAMED %lx\n", (unsigned long)named);
  fflush(stdout);
  switch (m) {
  case DOUBLE_FREE:
    free(p);
    hide = p;
    free(hide);
    break;
  case INVALID_FREE:
    hide = p + 16;
    free(hide);
    break;
  case REALLOC_FREED:
    free(p);
    hide = p;
    hide = realloc(hide, 10);
    break;
  case USABLE_FREED:
    free(p);
    hide = p;
    printf("%zu\n", malloc_usable_size(hide));
    break;
  case OVERFLOW_SLACK: /* place=end: 1001 bytes end 7 before the page's end */
    hide = p;
    ((unsigned char *)hide)[n] ^= 1;
    free(hide);
    break;
  case READ_FREED:
    free(p);
    hide = p;
    printf("%d\n", ((volatile unsigned char *)hide)[10]);
    break;
  case OVERFLOW_PAGE:
    hide = p;
    ((volatile unsigned char *)hide)[n] = 1;
    break;
  case UNDERFLOW_PAGE:
    hide = p;
    ((volatile unsigned char *)hide)[-1] = 1;
    break;
  }
}

static void expect_death(enum misuse m, int sig) {
  int fd[2];
  CHECKF(pipe(fd) == 0, "pipe");
  fflush(NULL);
  pid_t pid = fork();
  CHECKF(pid >= 0, "fork");
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    close(fd[0]);
    dup2(fd[1], 2);
    dup2(fd[1], 1);
    do_misuse(m);
    _exit(0);
  }
  close(fd[1]);
  char out[8192];
  size_t len = 0;
  ssize_t r;
  while ((r = read(fd[0], out + len, sizeof out - 1 - len)) > 0)
    len += (size_t)r;
  out[len] = 0;
  close(fd[0]);
  int st;
  CHECKF(waitpid(pid, &st, 0) == pid, "waitpid");
  CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == sig,
         "%s: the child ended with status %#x, not by signal %d; its output:\n%s", misuse_name[m],
         st, sig, out);
  if (sig == SIGABRT) { /* an axmalloc message naming the address ("0x...") */
    char *at = strstr(out, "T_NAMED "), want[40];
    CHECKF(at, "%s: the child said nothing:\n%s", misuse_name[m], out);
    snprintf(want, sizeof want, "0x%lx", strtoul(at + 8, NULL, 16));
    CHECKF(strstr(out, "axmalloc") && strstr(out, want), "%s: no axmalloc message naming %s:\n%s",
           misuse_name[m], want, out);
  }
  printf("t_sampling_exact: %s: signal %d, ok\n", misuse_name[m], sig);
}

int main(void) {
  const char *ps = getenv("AXMALLOC_PAGE_SIZE");
  page = ps && *ps ? strtoul(ps, NULL, 0) : (size_t)sysconf(_SC_PAGESIZE);
  if (page < (size_t)sysconf(_SC_PAGESIZE))
    page = (size_t)sysconf(_SC_PAGESIZE);
  place = getenv("AXMALLOC_GUARD_PLACE");
  place = place && *place ? place : "end";
  test_every();
  test_usable();
  test_calloc();
  test_realloc();
  test_aligned();
  test_slots();
  expect_death(DOUBLE_FREE, SIGABRT);
  expect_death(INVALID_FREE, SIGABRT);
  expect_death(REALLOC_FREED, SIGABRT);
  expect_death(USABLE_FREED, SIGABRT);
  if (strcmp(place, "end") == 0)
    expect_death(OVERFLOW_SLACK, SIGABRT);
  expect_death(READ_FREED, SIGSEGV);
  expect_death(OVERFLOW_PAGE, SIGSEGV); /* (a block of a page: at both its ends, any place) */
  expect_death(UNDERFLOW_PAGE, SIGSEGV);
  test_ctl(); /* (last: the classes allocated while opt.guard is 0 recheck only later) */
  puts("t_sampling_exact: OK");
  return 0;
}
