/* SPDX-License-Identifier: MIT */
/* Bad input: freeing a pointer axmalloc never returned, or freeing twice, aborts with
 *   axmalloc: free(): invalid pointer <p>   resp.   axmalloc: free(): double free <p>
 * (<p> as %p prints it), and a stray write over a segment header or a page descriptor
 * that the next free or page allocation sees aborts with
 *   axmalloc: corrupted segment metadata at <header or descriptor>
 * (the metadata modes use the layout from src/common/pagemap.h). Each case runs in a forked child
 * (so it also works under qemu-user, which has no exec of foreign binaries) whose stderr is
 * captured through a pipe; the parent checks that the child died of SIGABRT and printed the exact
 * message.
 *
 *   t_badfree            run every mode
 *   t_badfree <mode>     perform one bad action in this process (for manual runs) */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pagemap.h"
#include "testutil.h"

void free_sized(void *p, size_t size); /* C23; glibc 2.36 does not declare it */

#pragma GCC diagnostic ignored "-Wfree-nonheap-object"

#define MIB ((size_t)1 << 20)

static char static_array[256] __attribute__((aligned(64)));

/* The bad actions. Everything they free is set up before the fork, so the parent knows
 * the address the child will report. */
static char *blk64, *dbl, *huge, *dbl_huge, *dbl_inter, *dbl_remote;
static char *chain_a, *chain_b, *dbl_cached; /* (double_remote_chain, double_remote_cached) */
static char *mapped;
static char *stack_ptr;
static char *rdbl, *rzero; /* realloc of a freed block, of a freed or shifted malloc(0) */
static void *volatile sink;
static char *cor_blk;  /* the second 3000-byte block of its page (not at offset 0) */
static char *uncarved; /* a 4096-byte block: the page is carved one block at a time */
static char *small16;  /* a 16-byte block: its page's free list holds carved blocks */
/* 1 KiB blocks, a class the heap's cache leaves to its pages (cache.c): the first page of
 * them (64 blocks) is full */
#define FULL_N 80
static char *full_blk[FULL_N];

static void setup(void) {
  blk64 = malloc(64);
  dbl = malloc(64);
  dbl_remote = malloc(64);
  chain_a = malloc(64);
  chain_b = malloc(64);
  dbl_cached = malloc(4096);
  huge = malloc(3 * MIB);
  dbl_huge = malloc(2 * MIB + 4096);
  dbl_inter = malloc(5000);
  void *first = malloc(3000);
  cor_blk = malloc(3000);
  CHECK(first && cor_blk && ((uintptr_t)cor_blk & 0xffff) != 0);
  uncarved = malloc(4096);
  small16 = malloc(16);
  rdbl = malloc(64);
  rzero = malloc(0);
  CHECK(rdbl && rzero);
  for (int i = 0; i < FULL_N; i++)
    full_blk[i] = malloc(1024);
  CHECK(uncarved && small16 && full_blk[FULL_N - 1]);
  mapped = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(blk64 && dbl && dbl_remote && huge && dbl_huge && dbl_inter && mapped != MAP_FAILED);
}

struct mode {
  const char *name;
  const char *kind;    /* the message up to the address */
  void *(*addr)(void); /* the address the message must name */
  void (*act)(void);   /* the bad action; must not return */
  const char *kind2;   /* an accepted alternative message, or NULL */
};

static void *stack_addr(void) { return stack_ptr; }
static void act_stack(void) { free(stack_ptr); }
static void *mid16_addr(void) { return blk64 + 16; }
static void act_mid16(void) { free(blk64 + 16); }
static void *mid8_addr(void) { return blk64 + 8; }
static void act_mid8(void) { free(blk64 + 8); }
static void *huge_mid_addr(void) { return huge + 8192; }
static void act_huge_mid(void) { free(huge + 8192); }
static void *static_addr(void) { return static_array + 64; }
static void act_static(void) { free(static_array + 64); }
static void *mmap_addr(void) { return mapped + 4096; }
static void act_mmap(void) { free(mapped + 4096); }
static void *dbl_addr(void) { return dbl; }
static void act_double(void) {
  free(dbl);
  free(dbl);
}
static void *dbl_huge_addr(void) { return dbl_huge; }
static void act_double_huge(void) {
  free(dbl_huge);
  free(dbl_huge);
}
static void *dbl_inter_addr(void) { return dbl_inter; }
static void act_double_other_blocks(void) {
  /* the block sits in a page with other live blocks and is not the last freed */
  void *a = malloc(5000), *b = malloc(5000);
  free(dbl_inter);
  free(a);
  free(dbl_inter);
  free(b);
}
static void *realloc_mid_addr(void) { return blk64 + 16; }
static void act_realloc_mid(void) { sink = realloc(blk64 + 16, 200); }
static void *realloc_static_addr(void) { return static_array + 64; }
static void act_realloc_static(void) { sink = realloc(static_array + 64, 200); }
/* realloc's own frees are named after it, as glibc's reports are (issue 38) */
static void *rdbl_addr(void) { return rdbl; }
static void act_realloc_freed(void) {
  free(rdbl);
  sink = realloc(rdbl, 4000); /* (moves: the free of the old block finds it free) */
}
static void act_realloc0_freed(void) {
  free(rdbl);
  sink = realloc(rdbl, 0);
}
static void *rzero_addr(void) { return rzero; }
static void act_realloc_zero_freed(void) {
  free(rzero);
  sink = realloc(rzero, 40);
}
static void *rzero_mid_addr(void) { return rzero + 8; }
static void act_realloc_zero_mid(void) { sink = realloc(rzero + 8, 40); }

/* Stray writes over metadata. page_shift is read only off the fast path (free finds pages
 * through the page map): a free that leaves the fast path validates the header first. */
static ax_segment_t *cor_seg(void) { return axi_segment_of(cor_blk); }
static ax_page_t *cor_page(void) { return axi_page_of(cor_seg(), cor_blk); }
static void *cor_seg_addr(void) { return cor_seg(); }
static void *cor_page_addr(void) { return cor_page(); }
static void act_corrupt_shift(void) {
  CHECK(cor_page() != &cor_seg()->pages[0]);
  cor_seg()->page_shift = 40;
  free(cor_blk + 16); /* an interior pointer: the irregular path reads page_shift */
}
static void act_corrupt_area(void) {
  cor_page()->area += 16;
  free(cor_blk);
}
static void act_corrupt_magic(void) {
  cor_page()->div_inv = 3;
  free(cor_blk);
}
/* the header's cookie: seen when the heap takes its next page from this segment */
static void act_corrupt_cookie(void) {
  cor_seg()->cookie ^= 0x1000;
  for (int i = 0; i < 200; i++)
    sink = malloc(3000);
}
/* kind: seen by a free that leaves the fast path (here a pointer into a block's middle,
 * which would otherwise be reported as an invalid pointer) */
static void act_corrupt_kind(void) {
  cor_seg()->kind = 7;
  free(cor_blk + 16);
}

/* Block-aligned pointers malloc never returned (issue 10, defect 6): the first block past
 * the page's carved part, and a carved block still on the free list (the next one malloc
 * would hand out). Before the fix the first was accepted silently and later handed out
 * twice; the second was caught as a double free already. */
static ax_page_t *page_of(const void *p) { return axi_page_of(axi_segment_of(p), p); }
static void *uncarved_addr(void) {
  ax_page_t *pg = page_of(uncarved);
  return (char *)pg->area + (size_t)pg->capacity * pg->block_size;
}
static void act_uncarved(void) {
  free(uncarved_addr());
  void *a = malloc(4096), *b = malloc(4096); /* what used to follow: a == b */
  fprintf(stderr, "accepted; then malloc gave %p and %p\n", a, b);
}
static void *free_head_addr(void) {
  void *head = page_of(small16)->free;
  CHECK(head != NULL);
  return head;
}
static void act_free_head(void) { free(free_head_addr()); }
static void *free_in_thread(void *p) {
  free(p);
  return NULL;
}
static void free_remote(void *p) {
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_in_thread, p) == 0);
  pthread_join(t, NULL);
}
static void act_uncarved_remote(void) { free_remote(uncarved_addr()); }
/* Freed by one thread, then by another: the first free is published on the page's
 * thread_free list, and the second finds it there (without that check nothing would be
 * reported until the owner took the list). */
static void *dbl_remote_addr(void) { return dbl_remote; }
static void act_double_remote(void) {
  free_remote(dbl_remote);
  free_remote(dbl_remote);
}

/* A linear overflow from the block before a segment runs into its header: the cookie first
 * (it is the header's first word), then owner and heap. A free into a full page, from any
 * thread, uses the heap pointer: the cookie is checked before. */
static void *full_seg_addr(void) { return axi_segment_of(full_blk[0]); }
static void smash_header(void) {
  CHECK(page_of(full_blk[0])->xowner & AX_OWNER_FULL);
  memset(full_seg_addr(), 0x41, 40);
}
static void act_header_overflow(void) {
  smash_header();
  free(full_blk[0]);
}
static void act_header_overflow_remote(void) {
  smash_header();
  free_remote(full_blk[0]);
}

/* Freed by a thread that keeps it in an open chain (its second free into that page: remote.c),
 * then by another: the second finds it in the first one's chain. Before, nothing was reported
 * until the chain was published and the owner took it (a corrupted list, or nothing). */
static sem_t chained;
static void *hold_chain(void *arg) {
  (void)arg;
  free(malloc(16)); /* a heap, to keep chains in */
  free(chain_a);    /* names the page */
  free(chain_b);    /* opens a chain with it */
  sem_post(&chained);
  for (;;)
    pause(); /* the chain stays open */
  return NULL;
}
static void *chain_b_addr(void) { return chain_b; }
static void act_double_remote_chain(void) {
  pthread_t t;
  CHECK(sem_init(&chained, 0, 0) == 0);
  CHECK(pthread_create(&t, NULL, hold_chain, NULL) == 0);
  while (sem_wait(&chained) != 0)
    ;
  free_remote(chain_b);
}
/* Freed by its owner into its heap's cache (a class of 1,280 B .. 256 KiB), then by another
 * thread: the second finds it in the owner's cache. */
static void *dbl_cached_addr(void) { return dbl_cached; }
static void act_double_remote_cached(void) {
  free(dbl_cached);
  free_remote(dbl_cached);
}

/* free_sized with more bytes than the block holds (C23: the size malloc was asked for) */
static void *sized_addr(void) { return blk64; }
static void act_sized_larger(void) { free_sized(blk64, 300000); }

static const struct mode modes[] = {
    {"stack", "axmalloc: free(): invalid pointer", stack_addr, act_stack, NULL},
    {"middle16", "axmalloc: free(): invalid pointer", mid16_addr, act_mid16, NULL},
    {"middle8", "axmalloc: free(): invalid pointer", mid8_addr, act_mid8, NULL},
    {"huge_middle", "axmalloc: free(): invalid pointer", huge_mid_addr, act_huge_mid, NULL},
    {"static", "axmalloc: free(): invalid pointer", static_addr, act_static, NULL},
    {"mmap", "axmalloc: free(): invalid pointer", mmap_addr, act_mmap, NULL},
    {"double", "axmalloc: free(): double free", dbl_addr, act_double, NULL},
    /* a freed huge mapping may be gone: "invalid pointer" is as good an answer there */
    {"double_huge", "axmalloc: free(): double free", dbl_huge_addr, act_double_huge,
     "axmalloc: free(): invalid pointer"},
    /* the block is on its page's free list but not at its head: the lists are scanned */
    {"double_interleaved", "axmalloc: free(): double free", dbl_inter_addr, act_double_other_blocks,
     NULL},
    /* realloc of a foreign pointer: DESIGN §5 says it aborts too; the function name in the
     * message is not pinned down, only "invalid pointer <p>" */
    {"realloc_middle", "invalid pointer", realloc_mid_addr, act_realloc_mid, NULL},
    {"realloc_static", "invalid pointer", realloc_static_addr, act_realloc_static, NULL},
    {"realloc_freed", "axmalloc: realloc(): double free", rdbl_addr, act_realloc_freed, NULL},
    {"realloc0_freed", "axmalloc: realloc(): double free", rdbl_addr, act_realloc0_freed, NULL},
    {"realloc_zero_freed", "axmalloc: realloc(): double free", rzero_addr, act_realloc_zero_freed,
     NULL},
    {"realloc_zero_middle", "axmalloc: realloc(): invalid pointer", rzero_mid_addr,
     act_realloc_zero_mid, NULL},
    {"corrupt_shift", "axmalloc: corrupted segment metadata at", cor_seg_addr, act_corrupt_shift,
     NULL},
    {"corrupt_area", "axmalloc: corrupted segment metadata at", cor_page_addr, act_corrupt_area,
     NULL},
    {"corrupt_magic", "axmalloc: corrupted segment metadata at", cor_page_addr, act_corrupt_magic,
     NULL},
    {"corrupt_cookie", "axmalloc: corrupted segment metadata at", cor_seg_addr, act_corrupt_cookie,
     NULL},
    {"corrupt_kind", "axmalloc: corrupted segment metadata at", cor_seg_addr, act_corrupt_kind,
     NULL},
    {"uncarved", "axmalloc: free(): invalid pointer", uncarved_addr, act_uncarved, NULL},
    {"uncarved_remote", "axmalloc: free(): invalid pointer", uncarved_addr, act_uncarved_remote,
     NULL},
    {"double_remote", "axmalloc: free(): double free", dbl_remote_addr, act_double_remote, NULL},
    {"double_remote_chain", "axmalloc: free(): double free", chain_b_addr, act_double_remote_chain,
     NULL},
    {"double_remote_cached", "axmalloc: free(): double free", dbl_cached_addr,
     act_double_remote_cached, NULL},
    {"never_returned", "axmalloc: free(): double free", free_head_addr, act_free_head, NULL},
    {"sized_larger", "axmalloc: free_sized(): size mismatch", sized_addr, act_sized_larger, NULL},
    {"header_overflow", "axmalloc: corrupted segment metadata at", full_seg_addr,
     act_header_overflow, NULL},
    {"header_overflow_remote", "axmalloc: corrupted segment metadata at", full_seg_addr,
     act_header_overflow_remote, NULL},
};
#define NMODES (sizeof modes / sizeof modes[0])

/* The whole message "<kind> <addr>" in out, not followed by more hex digits. */
static int has_message(const char *out, const char *kind, void *addr) {
  char want[160];
  snprintf(want, sizeof want, "%s %p", kind, addr);
  size_t wl = strlen(want);
  for (const char *hit = strstr(out, want); hit; hit = strstr(hit + 1, want)) {
    char c = hit[wl];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return 1;
  }
  return 0;
}

static int run_mode(const struct mode *m) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork_to_die();
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    m->act();
    _exit(0); /* survived the bad action: the parent reports it */
  }
  close(fds[1]);
  static char out[65536];
  size_t len = 0;
  ssize_t r;
  while ((r = read(fds[0], out + len, sizeof out - 1 - len)) > 0)
    len += (size_t)r;
  out[len] = 0;
  close(fds[0]);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  int ok = 1;
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
    fprintf(stderr, "t_badfree %s: child did not die of SIGABRT (%s %d)\n", m->name,
            WIFSIGNALED(st) ? "signal" : "exit status",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    ok = 0;
  }
  int found =
      has_message(out, m->kind, m->addr()) || (m->kind2 && has_message(out, m->kind2, m->addr()));
  if (!found || !strstr(out, "axmalloc: ")) {
    fprintf(stderr, "t_badfree %s: stderr lacks \"%s %p\"; it was:\n%s\n", m->name, m->kind,
            m->addr(), out);
    ok = 0;
  }
  printf("t_badfree %-20s %s\n", m->name, ok ? "ok" : "FAILED");
  return ok;
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  skip_when_tagging("t_badfree");
  char stack_buf[128] __attribute__((aligned(16)));
  memset(stack_buf, 0, sizeof stack_buf);
  stack_ptr = stack_buf + 32;
  setup();
  if (argc > 1) {
    for (size_t i = 0; i < NMODES; i++)
      if (strcmp(argv[1], modes[i].name) == 0) {
        modes[i].act();
        fprintf(stderr, "t_badfree %s: the bad action did not abort\n", argv[1]);
        return 1;
      }
    fprintf(stderr, "t_badfree: unknown mode %s\n", argv[1]);
    return 2;
  }
  int failed = 0;
  for (size_t i = 0; i < NMODES; i++)
    failed += !run_mode(&modes[i]);
  /* the parent's own heap is intact after all that */
  void *p = malloc(64);
  CHECK(p != NULL);
  free(p);
  if (failed) {
    fprintf(stderr, "t_badfree: %d of %zu modes failed\n", failed, NMODES);
    return 1;
  }
  printf("t_badfree: OK\n");
  return 0;
}
