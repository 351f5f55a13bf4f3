/* SPDX-License-Identifier: MIT */
/* free()'s double-free filter (axi_looks_free in src/common/list.h; white-box): a block
 * whose first word, decoded with its page's key, has its top 16 bits clear may be free already
 * and takes the full check; every other block is pushed at once. So:
 *   - every block on a page's lists passes the filter (a double free of it is looked for);
 *   - a block the program holds fails it for the first words programs leave there: NULL
 *     (malloc clears the word), pointers, small and negative integers, text; otherwise every
 *     free of it would walk its page's lists (correct, but slow);
 *   - page keys from any random word have the bits that make this so (axi_page_key). */
#include <stdint.h>
#include <string.h>

#include "list.h"
#include "pagemap.h"
#include "testutil.h"

static ax_page_t *page_of(const void *p) { return axi_page_of(axi_segment_of(p), p); }

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next_random(void) { /* xorshift64* */
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return rng * 0x2545f4914f6cdd1du;
}

/* First words a live block commonly holds. */
static uintptr_t sample_word(unsigned i, const void *near) {
  static const char text[][9] = {"abcdefgh", "        ", "~~~~~~~~", "0123456\n", "Hi\0\0\0\0\0"};
  uintptr_t w;
  switch (i % 8) {
  case 0:
    return 0;
  case 1:
    return (uintptr_t)near + 16 * (i % 64); /* a pointer into the same page */
  case 2:
    return (uintptr_t)&rng; /* a static object */
  case 3:
    return (uintptr_t)(i % 1000); /* a small integer */
  case 4:
    return (uintptr_t)(-(intptr_t)(1 + i % 1000)); /* a negative one */
  case 5:
    return ((uintptr_t)near + i) | (uintptr_t)(i % 16) << 56; /* a tagged pointer (TBI) */
  case 6:
    memcpy(&w, text[i % 5], 8);
    return w;
  default:
    return (uintptr_t)1 << (i % 48); /* a flag word, a size */
  }
}

static void test_keys(void) {
  for (int i = 0; i < 100000; i++) {
    uintptr_t key = axi_page_key(next_random());
    CHECKF(key >> 63 == 1 && (key >> 48) != 0xffff, "key %#lx", (unsigned long)key);
  }
  /* the ends: a random word of all zeros or all ones */
  CHECK(axi_page_key(0) >> 63 == 1 && axi_page_key(~(uint64_t)0) >> 48 != 0xffff);
}

/* A fake page with a given key and one block holding word. */
static bool looks_free_with(uintptr_t key, uintptr_t word) {
  ax_page_t page = {.key = key};
  ax_block_t b = {.next_enc = word};
  return axi_looks_free(&page, &b);
}

static void test_live_words(void) {
  char here[64];
  for (int k = 0; k < 2000; k++) {
    uintptr_t key = axi_page_key(next_random());
    for (unsigned i = 0; i < 512; i++) {
      uintptr_t w = sample_word(i, here);
      CHECKF(!looks_free_with(key, w), "key %#lx: first word %#lx looks free", (unsigned long)key,
             (unsigned long)w);
    }
    /* and every link a free block can hold passes: NULL, and addresses below 2^48 */
    CHECK(looks_free_with(key, 0 ^ key));
    CHECK(looks_free_with(key, (uintptr_t)here ^ key));
    CHECK(looks_free_with(key, (((uintptr_t)1 << 48) - 16) ^ key));
  }
}

/* Real pages: the blocks on a page's lists pass, the ones the program holds do not. */
static void test_real_page(void) {
  enum { N = 200 };
  char *blk[N];
  for (int i = 0; i < N; i++) {
    blk[i] = malloc(48);
    CHECK(blk[i] != NULL && page_of(blk[i]) == page_of(blk[0]));
  }
  ax_page_t *page = page_of(blk[0]);
  for (int i = 0; i < N; i++) /* held: as malloc left them, then with the program's words */
    CHECKF(!axi_looks_free(page, (ax_block_t *)blk[i]), "fresh block %d looks free", i);
  for (int i = 0; i < N; i++)
    memcpy(blk[i], &(uintptr_t){sample_word((unsigned)i, blk[0])}, sizeof(uintptr_t));
  for (int i = 0; i < N; i++)
    CHECKF(!axi_looks_free(page, (ax_block_t *)blk[i]), "held block %d looks free", i);
  for (int i = 0; i < N; i += 2)
    free(blk[i]);
  for (int i = 0; i < N; i++) /* the freed ones are on local_free, the others still held */
    CHECKF(axi_looks_free(page, (ax_block_t *)blk[i]) == (i % 2 == 0), "block %d", i);
  int on_free = 0; /* and the blocks malloc has not handed out yet */
  for (ax_block_t *b = page->free; b && on_free < 10000; b = axi_link(page, b), on_free++)
    CHECK(axi_looks_free(page, b));
  CHECK(on_free < 10000);
  for (int i = 1; i < N; i += 2)
    free(blk[i]);
}

int main(void) {
  check_axmalloc_active();
  skip_when_tagging("t_free_filter");
  test_keys();
  test_live_words();
  test_real_page();
  puts("t_free_filter: OK");
  return 0;
}
