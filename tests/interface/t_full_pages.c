/* SPDX-License-Identifier: MIT */
/* Full pages and the page in front of their class's queue (white-box: reads page
 * descriptors through src/common/pagemap.h). A local free into a full page, while the page
 * in front has nothing left to hand out, swaps the two at once: the freed block's page
 * serves the next malloc and the exhausted one is parked in the full list. When a remote
 * free has just reached the exhausted page, it is not parked: it keeps its block for a
 * later malloc. Either way every block comes back exactly once. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "pagemap.h"
#include "testutil.h"

#define SIZE 1024 /* a class the heap's cache (cache.c) leaves to the pages */
#define MAXB 4096

static char *blk[MAXB];

static ax_page_t *page_of(const void *p) { return axi_page_of(axi_segment_of(p), p); }
static bool is_full(const void *p) {
  return (ax_atomic_load_relaxed(&page_of(p)->xowner) & AX_OWNER_FULL) != 0;
}

static void *free_it(void *p) {
  free(p);
  return NULL;
}

int main(void) {
  check_axmalloc_active();
  skip_when_tagging("t_full_pages");
  /* Blocks until three pages are full and a fourth, the one in front, is exhausted too. */
  int n = 0, pages = 0;
  for (;;) {
    CHECK(n < MAXB);
    blk[n] = malloc(SIZE);
    CHECK(blk[n] != NULL);
    pat_fill(blk[n], 0, SIZE, (uint32_t)n);
    ax_page_t *pg = page_of(blk[n]);
    pages += n == 0 || pg != page_of(blk[n - 1]);
    n++;
    if (pages == 4 && axi_page_live(pg) == pg->reserved)
      break;
  }
  int last = n - 1, mid = -1;
  for (int i = 0; i < n && mid < 0; i++)
    if (page_of(blk[i]) != page_of(blk[0]) && page_of(blk[i]) != page_of(blk[last]))
      mid = i;
  CHECK(mid > 0);
  CHECKF(is_full(blk[0]) && is_full(blk[mid]), "pages of %p and %p not in the full list",
         (void *)blk[0], (void *)blk[mid]);
  CHECK(!is_full(blk[last])); /* nothing walked past it yet */

  /* A local free into the first page: it and the exhausted front page change places. */
  char *freed = blk[0];
  free(freed);
  CHECKF(is_full(blk[last]), "the exhausted front page (%p) was not parked",
         (void *)page_of(blk[last])->area);
  CHECK(!is_full(blk[1]));
  blk[0] = malloc(SIZE);
  CHECKF(blk[0] == freed, "malloc after the swap: %p, the freed block was %p", (void *)blk[0],
         (void *)freed);
  pat_fill(blk[0], 0, SIZE, 0);

  /* The first page is in front and exhausted again. A remote free reaches it, then a local
   * free lands in a full page: the front page keeps its remote block, so it is not parked. */
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_it, blk[1]) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  char *remote = blk[1], *local = blk[mid];
  free(local);
  CHECK(!is_full(blk[0]) && !is_full(blk[mid]));
  char *a = malloc(SIZE), *b = malloc(SIZE);
  CHECKF(a == local && b == remote, "after the local and the remote free: %p %p, want %p %p",
         (void *)a, (void *)b, (void *)local, (void *)remote);
  blk[mid] = a;
  blk[1] = b;
  pat_fill(blk[mid], 0, SIZE, (uint32_t)mid);
  pat_fill(blk[1], 0, SIZE, 1);

  for (int i = 0; i < n; i++) {
    CHECKF(pat_find_bad(blk[i], 0, SIZE, (uint32_t)i) == PAT_OK, "block %d (%p) overwritten", i,
           (void *)blk[i]);
    free(blk[i]);
  }
  printf("t_full_pages: OK\n");
  return 0;
}
