/* SPDX-License-Identifier: MIT */
/* t_huge_resv: a huge block that realloc has to move takes a reservation of address space
 * ahead of it and grows there in place (huge.c, "growth in reserved address space").
 *
 *   t_huge_resv [maps] [limit]
 *
 * Always: a block grown many times by realloc keeps one address once the reservation is made,
 * and its bytes survive; the reservation counts in ax_stats os_reserved (stats.mapped,
 * stats.retained) and never in os_committed (stats.resident); it goes back to the OS when the
 * block is freed and when it shrinks by more than half (stats.retained falls back), not when it
 * shrinks by less.
 * maps (native: under qemu-user /proc/self is the emulator's): /proc/self/maps shows the tail
 * as an inaccessible mapping (---p) right after the block's, with Rss 0 in smaps, and gone
 * after the free and the shrink.
 * limit (native: qemu-user does not pass RLIMIT_AS on): in a child under a small RLIMIT_AS,
 * a growth that a reservation would not fit in still succeeds, with none made; and a
 * reservation that was made gives its address space back to an allocation that needs it,
 * which succeeds as it did before reservations existed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define MIB ((size_t)1 << 20)

static bool use_maps;
static size_t os_page;

static unsigned char pat(size_t i) { return (unsigned char)(i * 131 + 7); }

static void fill(unsigned char *p, size_t from, size_t to) {
  for (size_t i = from; i < to; i++)
    p[i] = pat(i);
}

/* Every byte of [0, n) (one in 61, and the last), as fill wrote it. */
static void verify(const unsigned char *p, size_t n, const char *when) {
  for (size_t i = 0; i < n; i += 61)
    CHECKF(p[i] == pat(i), "%s: byte %zu of %zu is %u, not %u", when, i, n, p[i], pat(i));
  CHECKF(p[n - 1] == pat(n - 1), "%s: the last byte of %zu is %u", when, n, p[n - 1]);
}

/* ax_stats_get's os_reserved less os_committed: the address space mapped and not resident,
 * which a reservation adds to; stats.retained must say the same. */
static size_t retained(void) {
  ax_stats_t s;
  ax_stats_get(&s);
  size_t r = 0, len = sizeof r;
  CHECK(ax_ctl("stats.retained", &r, &len, NULL, 0) == 0);
  CHECKF(r == (s.os_reserved > s.os_committed ? s.os_reserved - s.os_committed : 0),
         "stats.retained %zu, os_reserved %llu - os_committed %llu", r,
         (unsigned long long)s.os_reserved, (unsigned long long)s.os_committed);
  return r;
}

/* stats.resident, which must be ax_stats_get's os_committed. */
static size_t resident(void) {
  ax_stats_t s;
  size_t r = 0, len = sizeof r;
  CHECK(ax_ctl("stats.resident", &r, &len, NULL, 0) == 0);
  ax_stats_get(&s);
  CHECKF(r == s.os_committed, "stats.resident %zu, os_committed %llu", r,
         (unsigned long long)s.os_committed);
  return r;
}

/* ---- /proc/self/maps and smaps (native) ----------------------------------------------------- */

typedef struct {
  uintptr_t lo, hi;
  char perm[5];
} map_t;

/* Read with read(2) into a static buffer: stdio would malloc, and a new mapping of the
 * allocator's could land in the range being looked at. */
static char procbuf[1 << 20];

static size_t read_proc(const char *path) {
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  size_t n = 0;
  for (long r; n < sizeof procbuf - 1 && (r = read(fd, procbuf + n, sizeof procbuf - 1 - n)) > 0;)
    n += (size_t)r;
  close(fd);
  CHECK(n < sizeof procbuf - 1);
  procbuf[n] = 0;
  return n;
}

/* The mapping containing a. post: false when none does. */
static bool find_map(uintptr_t a, map_t *m) {
  read_proc("/proc/self/maps");
  for (char *line = procbuf; *line;) {
    char *next = strchr(line, '\n');
    next = next ? next + 1 : line + strlen(line);
    unsigned long lo, hi;
    char perm[5];
    if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) == 3 && a >= lo && a < hi) {
      m->lo = lo, m->hi = hi;
      memcpy(m->perm, perm, sizeof perm);
      return true;
    }
    line = next;
  }
  return false;
}

/* The Rss of the mapping that starts at lo, in KiB (smaps). */
static long rss_kb(uintptr_t lo) {
  read_proc("/proc/self/smaps");
  char head[32];
  snprintf(head, sizeof head, "%lx-", (unsigned long)lo);
  char *at = procbuf;
  while (at && strncmp(at, head, strlen(head)))
    at = (at = strchr(at, '\n')) ? at + 1 : NULL;
  CHECKF(at, "no smaps entry starts at %lx", (unsigned long)lo);
  char *rss = strstr(at, "\nRss:");
  CHECK(rss);
  return strtol(rss + 5, NULL, 10);
}

/* The reservation after the block at p: the end of p's mapping starts an inaccessible mapping
 * with nothing resident. post: that end. */
static uintptr_t check_reserved(const void *p, size_t min, const char *when) {
  map_t m, t;
  CHECKF(find_map((uintptr_t)p, &m), "%s: %p is in no mapping", when, p);
  CHECKF(find_map(m.hi, &t), "%s: nothing is mapped after the block (%lx): no reservation", when,
         (unsigned long)m.hi);
  CHECKF(!strcmp(t.perm, "---p"), "%s: the mapping after the block is %s, not ---p", when, t.perm);
  CHECKF(t.lo == m.hi && t.hi - t.lo >= min, "%s: reservation %lx-%lx after %lx", when,
         (unsigned long)t.lo, (unsigned long)t.hi, (unsigned long)m.hi);
  long kb = rss_kb(t.lo);
  CHECKF(kb == 0, "%s: the reservation has %ld KiB resident", when, kb);
  return m.hi;
}

/* post: no reservation at `at` (the end a block's mapping had when it had one). */
static void check_not_reserved(uintptr_t at, const char *when) {
  map_t t;
  CHECKF(!find_map(at, &t) || strcmp(t.perm, "---p"), "%s: %lx-%lx is still reserved (%s)", when,
         (unsigned long)t.lo, (unsigned long)t.hi, t.perm);
}

/* ---- the block ----------------------------------------------------------------------------- */

/* A block of n bytes, filled, with a page of address space taken right after its mapping (a
 * hint mmap, page by page from its usable end), so that its next growth cannot stay where it
 * is: the mapping after it makes realloc move it, which is when a reservation is made.
 * post: *past, a size past the end of its mapping (the growth that moves it). */
static unsigned char *block(size_t n, void **blocker, size_t *past) {
  unsigned char *p = malloc(n);
  CHECK(p);
  fill(p, 0, n);
  uintptr_t a = ((uintptr_t)p + malloc_usable_size(p) + os_page - 1) & ~(os_page - 1);
  *blocker = NULL;
  *past = malloc_usable_size(p) + 4 * MIB; /* (no blocker: past the huge page it ends in) */
  for (int i = 0; i < 2048 && !*blocker; i++, a += os_page) {
    void *q = mmap((void *)a, os_page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == (void *)a)
      *blocker = q, *past = a - (uintptr_t)p + MIB;
    else if (q != MAP_FAILED)
      munmap(q, os_page);
  }
  return p;
}

/* Grow the block p of n bytes to m, past its mapping: it moves, to a reservation. */
static unsigned char *grow_moved(unsigned char *p, size_t n, size_t m) {
  unsigned char *q = realloc(p, m);
  CHECK(q);
  verify(q, n, "the moving growth");
  fill(q, n, m);
  return q;
}

/* Many growths: one address from the reservation on, every byte kept, nothing resident but
 * what the block holds. */
static void test_growth(void) {
  void *blk;
  size_t n = 16 * MIB, m;
  unsigned char *p = block(n, &blk, &m);
  size_t r0 = retained(), c0 = resident();
  unsigned char *q = grow_moved(p, n, m);
  size_t c1 = resident(), r1 = retained();
  /* resident: what the block gained, up to a huge page of rounding */
  CHECKF(c1 <= c0 + (m - n) + 4 * MIB, "resident %zu -> %zu: the reservation is counted resident",
         c0, c1);
  /* the reservation: about as much again as the block, inaccessible */
  CHECKF(r1 >= r0 + n, "retained %zu -> %zu: no reservation after a moving growth", r0, r1);
  uintptr_t end = 0;
  if (use_maps)
    end = check_reserved(q, 8 * MIB, "after the moving growth");
  size_t len = m;
  for (size_t m = len + 256 * 1024 + 100; m <= 30 * MIB; m += 256 * 1024 + 100) {
    unsigned char *r = realloc(q, m);
    CHECKF(r == q, "growth to %zu moved the block %p -> %p: it had a reservation", m, (void *)q,
           (void *)r);
    fill(q, len, m);
    len = m;
    size_t c = resident();
    CHECKF(c <= c0 + (len - n) + 4 * MIB, "resident %zu after growing %zu: more than the block",
           c - c0, len - n);
  }
  verify(q, len, "after the growths");
  if (use_maps)
    end = check_reserved(q, os_page, "after the growths");
  CHECK(retained() >= r0 + MIB); /* (what is left of it) */
  free(q);
  size_t r2 = retained();
  CHECKF(r2 < r0 + 2 * MIB, "retained %zu -> %zu: the free kept the reservation", r0, r2);
  if (use_maps)
    check_not_reserved(end, "after the free");
  munmap(blk, os_page);
  ax_trim(0); /* (the freed mapping is cached: the next block must be fresh) */
}

/* A shrink by less than half keeps the reservation; one by more gives it back. */
static void test_shrink(void) {
  void *blk;
  size_t n = 20 * MIB, m;
  unsigned char *p = block(n, &blk, &m);
  size_t r0 = retained();
  unsigned char *q = grow_moved(p, n, m);
  CHECKF(retained() >= r0 + n, "retained %zu -> %zu: no reservation", r0, retained());
  uintptr_t end = use_maps ? check_reserved(q, 8 * MIB, "after the moving growth") : 0;
  unsigned char *r = realloc(q, m - 2 * MIB);
  CHECK(r == q);
  CHECKF(retained() >= r0 + n, "a shrink by less than half gave the reservation back");
  if (use_maps)
    check_reserved(q, 8 * MIB, "after a small shrink");
  r = realloc(q, 4 * MIB);
  CHECK(r == q); /* (a shrink stays in place) */
  verify(q, 4 * MIB, "after the shrink");
  size_t r1 = retained();
  CHECKF(r1 < r0 + 2 * MIB, "retained %zu -> %zu: the shrink kept the reservation", r0, r1);
  if (use_maps)
    check_not_reserved(end, "after the shrink");
  free(q);
  munmap(blk, os_page);
  ax_trim(0);
}

/* ---- under RLIMIT_AS (a child: the limit is the process's) ----------------------------------- */

static size_t vm_size(void) { /* the first field of statm: what RLIMIT_AS counts */
  read_proc("/proc/self/statm");
  return (size_t)strtoull(procbuf, NULL, 10) * (size_t)getpagesize();
}

static void limit_as(size_t bytes) {
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
  CHECK(rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= bytes);
  rl.rlim_cur = bytes;
  CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
}

/* A growth under a limit that leaves `room` bytes to map: it succeeds, with no reservation. */
static void grow_without(size_t room) {
  void *blk;
  size_t n = 16 * MIB, m;
  unsigned char *p = block(n, &blk, &m);
  limit_as(vm_size() + room);
  size_t r0 = retained();
  unsigned char *q = realloc(p, m);
  CHECKF(q, "a growth with room to move (%zu MiB) failed: errno %d", room / MIB, errno);
  verify(q, n, "the growth under RLIMIT_AS");
  CHECKF(retained() < r0 + 2 * MIB, "room %zu MiB: a reservation was made", room / MIB);
  if (use_maps) {
    map_t m, t;
    CHECK(find_map((uintptr_t)q, &m));
    CHECK(!find_map(m.hi, &t) || strcmp(t.perm, "---p"));
  }
  free(q);
  munmap(blk, os_page);
  ax_trim(0);
  limit_as(RLIM_INFINITY);
}

static void limit_child(void) {
  void *blk;
  size_t n = 16 * MIB, m;
  /* room for the moved block (20 MiB) and its alignment, not for a reservation (40 MiB) */
  grow_without(26 * MIB);
  /* room for the reservation, but it would take more than half of what is left */
  grow_without(50 * MIB);
  /* room for a reservation: it is made; then a malloc that fits only in what it holds
   * succeeds (the refused mapping gives the reservations back), and no more are made */
  unsigned char *p = block(n, &blk, &m);
  limit_as(vm_size() + 64 * MIB);
  size_t r0 = retained();
  unsigned char *q = realloc(p, m);
  CHECK(q);
  CHECKF(retained() >= r0 + n, "retained %zu -> %zu: no reservation with room for it", r0,
         retained());
  fill(q, n, m);
  unsigned char *big = malloc(48 * MIB);
  CHECKF(big, "a malloc that fits once the reservation is given back failed: errno %d", errno);
  memset(big, 1, 48 * MIB);
  CHECKF(retained() < r0 + 4 * MIB, "the reservation outlived a refused mapping");
  free(big);
  unsigned char *r = realloc(q, m + MIB); /* (moves or not: none is made any more) */
  CHECK(r);
  verify(r, m, "growth after the refusal");
  CHECKF(retained() < r0 + 4 * MIB, "a reservation was made after a refused mapping");
  free(r);
  _exit(0);
}

static void test_limit(void) {
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0)
    limit_child();
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the RLIMIT_AS child failed (status %#x)", st);
}

int main(int argc, char **argv) {
  bool limit = false;
  for (int i = 1; i < argc; i++) {
    use_maps |= !strcmp(argv[i], "maps");
    limit |= !strcmp(argv[i], "limit");
  }
  os_page = (size_t)getpagesize();
  test_growth();
  test_shrink();
  if (limit)
    test_limit();
  printf("t_huge_resv%s%s: OK\n", use_maps ? " maps" : "", limit ? " limit" : "");
  return 0;
}
