/* SPDX-License-Identifier: MIT */
/* The heap's cache of freed mid-size blocks (src/common/cache.c; white-box: reads page
 * descriptors through src/common/pagemap.h). A local free of a block of 1,280 B .. 256 KiB
 * goes on its class's stack, the next malloc of the class takes it back; the stack is
 * bounded; a second free of a cached block is a double free; calloc zeroes a cached block;
 * trim and thread exit give every cached block back to its page. */
#include <axmalloc.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pagemap.h"
#include "testutil.h"

static ax_page_t *page_of(const void *p) { return axi_page_of(axi_segment_of(p), p); }
static bool cached_page(const void *p) {
  return (ax_atomic_load_relaxed(&page_of(p)->xowner) & AX_OWNER_CACHED) != 0;
}

/* The bounds in types.h are the classes they name. */
static void test_bounds(void) {
  CHECK(AX_CACHE_FIRST == axi_class_of(AX_DIRECT_MAX + 1));
  CHECK(axi_class_size(AX_CACHE_FIRST - 1) == AX_DIRECT_MAX);
  CHECK(AX_CACHE_LAST == axi_class_of(AX_CACHE_MAX));
  CHECK(axi_class_size(AX_CACHE_LAST) == AX_CACHE_MAX);
  CHECK(AX_CACHE_N == AX_CACHE_LAST - AX_CACHE_FIRST + 1);
  for (unsigned c = 1; c < AX_CLASSES; c++)
    CHECK(axi_class_cached(c) ==
          (axi_class_size(c) > AX_DIRECT_MAX && axi_class_size(c) <= AX_CACHE_MAX));
  /* a sized delete's test on free's fast path (free.c): (size(c) - n) >> span_shift(c) is 0
   * exactly when n is of class c, for every n a page's class holds (0 aside: axi_class_of) */
  for (size_t n = 0; n <= AX_LARGE_MAX + 1; n++) {
    unsigned of = axi_class_of(n);
    for (unsigned c = of > 1 ? of - 1 : 1; c <= of + 1 && c < AX_CLASSES; c++)
      CHECKF((((axi_class_size(c) - n) >> axi_class_span_shift(c)) == 0) == (c == of && n != 0),
             "size %zu, class %u (of class %u)", n, c, of);
  }
}

/* The cache finds a size's class through a table of 256-byte buckets (axi_cache_class): at
 * both ends of every bucket, and at every class's edges, malloc after free takes the block
 * just freed, which is big enough. A wrong entry would take another class's block, or none. */
static void check_same_block(size_t n) {
  char *p = malloc(n);
  CHECK(p != NULL);
  free(p);
  char *q = malloc(n);
  CHECKF(q == p && malloc_usable_size(q) >= n, "size %zu: %p (%zu usable) after freeing %p", n,
         (void *)q, malloc_usable_size(q), (void *)p);
  free(q);
}
static void test_class_table(void) {
  char *keep = malloc(AX_CACHE_MAX); /* none of the pages below empties */
  for (size_t n = AX_DIRECT_MAX + 1; n <= AX_CACHE_MAX; n += 256) {
    check_same_block(n);
    check_same_block(n + 255);
  }
  for (unsigned c = AX_CACHE_FIRST; c <= AX_CACHE_LAST; c++) {
    check_same_block(axi_class_size(c));
    check_same_block(axi_class_size(c - 1) + 1);
  }
  free(keep);
}

/* free, then malloc of the same class: the same block, for cached sizes only */
static void test_lifo(void) {
  static const size_t sizes[] = {1025, 1100, 4096, 5000, 65536, 100000, 262144};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    char *keep = malloc(n), *p = malloc(n);
    CHECK(keep && p);
    CHECKF(cached_page(p), "size %zu: page not marked cached", n);
    pat_fill(p, 0, n, 7);
    free(p);
    char *q = malloc(n);
    CHECKF(q == p, "size %zu: malloc after free gave %p, the freed block was %p", n, (void *)q,
           (void *)p);
    free(q);
    free(keep);
  }
  char *small = malloc(1024), *big = malloc(300000);
  CHECK(!cached_page(small) && !cached_page(big));
  free(small);
  free(big);
}

/* Blocks of n bytes, all freed: how many their pages still count as live (the cached
 * ones: the program holds none). */
static uint32_t live_after_freeing(size_t n, int count, char **blk) {
  for (int i = 0; i < count; i++)
    CHECK((blk[i] = malloc(n)) != NULL);
  ax_page_t *pages[256];
  int np = 0;
  for (int i = 0; i < count; i++) {
    ax_page_t *pg = page_of(blk[i]);
    int j = 0;
    while (j < np && pages[j] != pg)
      j++;
    if (j == np) {
      CHECK(np < 256);
      pages[np++] = pg;
    }
  }
  for (int i = 0; i < count; i++)
    free(blk[i]);
  uint32_t live = 0;
  for (int j = 0; j < np; j++)
    live += pages[j]->in_use ? axi_page_live(pages[j]) : 0;
  return live;
}

/* The stack of a class holds at most its depth: 16 blocks of 4 KiB, 8 of 8 KiB, one of
 * 64 KiB, and the heap's last freed block one more; the others are free in their pages. ax_stats
 * counts cached blocks as not live. */
static void test_depth(void) {
  static char *blk[200];
  struct {
    size_t size;
    uint32_t max;
  } cases[] = {{4096, 17}, {8192, 9}, {65536, 2}, {262144, 2}};
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    uint32_t live = live_after_freeing(cases[k].size, 200, blk);
    CHECKF(live >= 1 && live <= cases[k].max, "size %zu: %u blocks still held, depth %u",
           cases[k].size, live, cases[k].max);
    ax_stats_t st;
    ax_stats_get(&st);
    CHECKF(st.class_live[axi_class_of(cases[k].size)] == 0,
           "size %zu: stats count %llu live blocks, the program holds none", cases[k].size,
           (unsigned long long)st.class_live[axi_class_of(cases[k].size)]);
  }
}

/* calloc takes a dirty cached block and zeroes it */
static void test_calloc(void) {
  char *keep = malloc(6000), *p = malloc(6000);
  memset(p, 0xAA, 6000);
  free(p);
  char *q = calloc(1, 6000);
  CHECK(q == p);
  CHECK(all_zero(q, 6000));
  free(q);
  free(keep);
}

/* realloc that moves a block leaves the old one in the cache */
static void test_realloc(void) {
  char *keep = malloc(4096), *p = malloc(4096);
  pat_fill(p, 0, 4096, 3);
  char *q = realloc(p, 20000);
  CHECK(q && q != p);
  CHECK(pat_find_bad(q, 0, 4096, 3) == PAT_OK);
  char *r = malloc(4000);
  CHECK(r == p);
  free(r);
  free(q);
  free(keep);
}

static bool mapped(const void *p) {
  unsigned char v;
  return mincore((void *)((uintptr_t)p & ~(uintptr_t)4095), 4096, &v) == 0;
}

/* malloc_trim gives every cached block back: their pages empty and retire (the segment
 * may be unmapped then). */
static void test_trim(void) {
  static char *blk[200];
  CHECK(live_after_freeing(5000, 200, blk) > 0);
  malloc_trim(0);
  for (int i = 0; i < 200; i++) {
    if (!mapped(axi_segment_of(blk[i])))
      continue;
    ax_page_t *pg = page_of(blk[i]);
    CHECKF(!pg->in_use || axi_page_live(pg) == 0, "after trim, block %p's page holds %u",
           (void *)blk[i], axi_page_live(pg));
  }
}

/* A thread that frees everything it allocated and exits leaves no segment behind with
 * blocks in it: its cache went back to its pages first. (It may leave its last empty segment
 * on the abandoned stack for the next thread: empty, no page in use.) */
static ax_segment_t *exited_seg[300];
static void *churn_and_exit(void *arg) {
  static __thread char *blk[300];
  for (int i = 0; i < 300; i++) {
    CHECK((blk[i] = malloc(3000 + 16 * (size_t)(i % 50))) != NULL);
    exited_seg[i] = axi_segment_of(blk[i]);
  }
  for (int i = 0; i < 300; i++)
    free(blk[i]);
  return arg;
}
static void test_thread_exit(void) {
  ax_stats_t before, after;
  ax_stats_get(&before);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, churn_and_exit, NULL) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  ax_stats_get(&after);
  uint64_t left = after.segments_abandoned - before.segments_abandoned;
  CHECKF(left <= 1, "an exiting thread with nothing live abandoned %llu segments",
         (unsigned long long)left);
  for (int i = 0; i < 300; i++)
    CHECKF(!mapped(exited_seg[i]) || exited_seg[i]->used_pages == 0,
           "the exited thread's segment %p has %u pages in use", (void *)exited_seg[i],
           exited_seg[i]->used_pages);
}

/* A second free of a cached block (on top, below the top, or given back already) aborts
 * naming it. */
static void double_free_child(int which) {
  char *keep = malloc(4096), *blk[40];
  for (int i = 0; i < 40; i++)
    blk[i] = malloc(4096);
  char *victim = which == 0 ? blk[39] : which == 1 ? blk[30] : blk[0];
  for (int i = 0; i < 40; i++)
    free(blk[i]); /* blk[0] is given back to its page by now, blk[30], blk[39] are cached */
  fprintf(stderr, "victim %p\n", (void *)victim);
  free(victim);
  free(keep);
  _exit(0);
}
static void test_double_free(void) {
  for (int which = 0; which < 3; which++) {
    int fd[2];
    CHECK(pipe(fd) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      dup2(fd[1], 2);
      close(fd[0]);
      double_free_child(which);
    }
    close(fd[1]);
    char out[512] = {0};
    size_t got = 0;
    ssize_t r;
    while (got < sizeof out - 1 && (r = read(fd[0], out + got, sizeof out - 1 - got)) > 0)
      got += (size_t)r;
    close(fd[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "case %d: child did not abort:\n%s", which,
           out);
    void *victim = NULL;
    CHECK(sscanf(out, "victim %p", &victim) == 1);
    char want[96];
    snprintf(want, sizeof want, "axmalloc: free(): double free %p", victim);
    CHECKF(strstr(out, want) != NULL, "case %d: stderr lacks \"%s\":\n%s", which, want, out);
  }
}

int main(void) {
  check_axmalloc_active();
  skip_when_tagging("t_cache");
  test_bounds();
  test_class_table();
  test_lifo();
  test_depth();
  test_calloc();
  test_realloc();
  test_trim();
  test_thread_exit();
  test_double_free();
  puts("t_cache: ok");
  return 0;
}
