/* SPDX-License-Identifier: MIT */
/* A heap that a new thread took over while another thread's batch was still keyed by it
 * strands no block of a third thread's pages (issue 38: "a heap that a thread left is reused
 * by a new thread while another thread's open batch is still keyed by it; blocks of segments
 * that a third thread has since reclaimed then wait in the new thread's inbox, stranded if it
 * never allocates again").
 *
 * Built step by step, each thread stopped between its steps:
 *   O allocates b1 and b2 (64 B) in its segment S; the consumer C frees both: b1 alone to
 *   O's inbox (its first remote free to O), b2 opens a batch keyed by O's heap. O exits: its
 *   heap goes to the pool, S (b2 still counted used) is abandoned. R, whose heap has no
 *   segment of small pages, mallocs 64 B and so reclaims S. A new thread N takes O's heap
 *   (the pool is LIFO: checked by the heap its block's segment names) and goes idle. C's
 *   batch is sent (below) to the heap it is keyed by: b2, of R's page, waits in N's inbox
 *   (checked when it lands: AX_HOOK_REMOTE_FREE_PUBLISHED). Nobody takes that inbox: N never
 *   calls the allocator again.
 *
 *   t_race_reuse trim    C's malloc_trim(0) sends its batch; then R trims twice: the
 *                        second trim finds N's inbox as the first left it, gives b2 to its
 *                        page's thread_free (remote.c, forward_idle_inbox), collects it
 *                        there and unmaps S, now empty
 *   t_race_reuse sweep   nobody trims: with a purge delay of 1 ms, R's slow paths (a huge
 *                        malloc and free, for at most 20 s) make the sweeps that send C's
 *                        batch and then forward N's idle inbox; then one trim by R unmaps S
 *
 * Without the forward, b2 stays in N's inbox and S stays mapped. Exits 77 (skipped) in
 * checked mode (no batches), with the heap profiler (a sampled block is in no class's page)
 * and without membarrier (ax_ctl remote.steal "off": no sweep runs at all).
 *
 *   t_race_reuse trim|sweep   (linked with axmalloc_hooks)
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "hooks.h"
#include "pagemap.h"
#include "testutil.h"

#define LARGE (512 << 10) /* R's first block: a heap without segments of small pages */

/* A thread that runs one step at a time: fn, then waits for the next (NULL: it exits). */
typedef struct actor {
  pthread_t thread;
  sem_t go, done;
  void (*fn)(void);
} actor_t;

static actor_t o, c, r, n;
static void *b1, *b2, *r_large, *r_small, *n_small;
static const void *at2; /* b2's address, as the allocator names it (no tag) */
static ax_heap_t *heap_o;
static volatile int sent_to_n, given_to_page; /* what the hook saw of b2 */

static void sem_wait_all(sem_t *s) {
  while (sem_wait(s) != 0)
    CHECK(errno == EINTR);
}

static void *actor_main(void *arg) {
  actor_t *a = arg;
  for (;;) {
    sem_wait_all(&a->go);
    if (!a->fn)
      return NULL;
    a->fn();
    sem_post(&a->done);
  }
}

static void start(actor_t *a) {
  CHECK(sem_init(&a->go, 0, 0) == 0 && sem_init(&a->done, 0, 0) == 0);
  CHECK(pthread_create(&a->thread, NULL, actor_main, a) == 0);
}

static void step(actor_t *a, void (*fn)(void)) {
  a->fn = fn;
  sem_post(&a->go);
  sem_wait_all(&a->done);
}

static void finish(actor_t *a) {
  a->fn = NULL;
  sem_post(&a->go);
  CHECK(pthread_join(a->thread, NULL) == 0);
}

/* b2 was published (sent to an inbox, or given to its page's thread_free): where is it now?
 * The sender, whoever it is, is right after its CAS, and N (the inbox's taker) is idle. */
static void hook(enum ax_hook_point at, const void *arg) {
  if (at != AX_HOOK_REMOTE_FREE_PUBLISHED || !at2 || arg != at2)
    return;
  ax_page_t *page = axi_page_of(axi_segment_of(at2), at2);
  if (__atomic_load_n(&heap_o->inbox, __ATOMIC_ACQUIRE) == (uintptr_t)at2)
    sent_to_n = 1;
  else if (axi_tf_list(__atomic_load_n(&page->thread_free, __ATOMIC_ACQUIRE)) == at2)
    given_to_page = 1;
}

/* An address without its tag (memory tagging: AArch64's top byte). */
static const void *untagged(const void *p) {
  return (const void *)((uintptr_t)p & (((uintptr_t)1 << 56) - 1));
}

static ax_segment_t *seg_of(const void *p) { return axi_segment_of(untagged(p)); }

static ax_heap_t *heap_of(const void *p) {
  return (ax_heap_t *)__atomic_load_n(&seg_of(p)->heap, __ATOMIC_RELAXED);
}

static void o_alloc(void) { CHECK((b1 = malloc(64)) != NULL && (b2 = malloc(64)) != NULL); }
static void c_heap(void) { free(malloc(16)); } /* (without a heap, no batch: remote.c) */
static void c_free(void) {
  free(b1); /* alone to O's inbox */
  free(b2); /* opens a batch keyed by O's heap */
}
static void c_trim(void) { malloc_trim(0); } /* sends the batch */
static void r_heap(void) { CHECK((r_large = malloc(LARGE)) != NULL); }
static void r_reclaim(void) {
  CHECK((r_small = malloc(64)) != NULL); /* no page of its own: takes an abandoned segment */
  free(r_small);
}
static void r_trim(void) { malloc_trim(0); }
static void r_free(void) { free(r_large); }
static void n_alloc(void) { CHECK((n_small = malloc(64)) != NULL); }

/* R's slow paths, each purge tick a look at the sweep's clock, until b2 left N's inbox. */
static void r_sweep(void) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    void *p = malloc(2u << 20);
    CHECK(p != NULL);
    free(p);
    struct timespec nap = {0, 200000};
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while (!given_to_page && t.tv_sec - t0.tv_sec < 20);
}

int main(int argc, char **argv) {
  CHECK(argc == 2);
  bool trim = strcmp(argv[1], "trim") == 0;
  CHECK(trim || strcmp(argv[1], "sweep") == 0);
  check_axmalloc_active();
  ax_info_t info;
  ax_info(&info);
  const char *mode = NULL;
  size_t len = sizeof mode;
  CHECK(ax_ctl("remote.steal", &mode, &len, NULL, 0) == 0);
  const char *skip = ax_test_checked()                 ? "checked mode keeps no batches"
                     : info.prof_sample                ? "a sampled block has a place of its own"
                     : strcmp(mode, "membarrier") != 0 ? "remote.steal is off"
                                                       : NULL;
  if (skip) {
    printf("t_race_reuse %s: skipped: %s\n", argv[1], skip);
    return 77;
  }
  /* trim: no sweep meanwhile (a sweep waits a purge delay); sweep: one every millisecond or
   * so, but only from the 64th slow path of a heap: none before R's loop */
  uint64_t delay = trim ? 60000 : 1;
  CHECK(ax_ctl("purge.delay_ms", NULL, NULL, &delay, sizeof delay) == 0);
  ax_test_set_hook(hook);
  start(&r);
  step(&r, r_heap);
  start(&c);
  step(&c, c_heap);
  start(&o);
  step(&o, o_alloc);
  const ax_segment_t *s = seg_of(b2);
  heap_o = heap_of(b2);
  at2 = untagged(b2);
  CHECK(seg_of(b1) == s && heap_of(r_large) != heap_o);
  step(&c, c_free);
  finish(&o); /* O's heap to the pool; S abandoned, b2 counted used */
  step(&r, r_reclaim);
  CHECKF(seg_of(r_small) == s, "R did not reclaim O's segment: the test proves nothing");
  CHECK(heap_of(b2) == heap_of(r_large));
  start(&n);
  step(&n, n_alloc);
  CHECKF(heap_of(n_small) == heap_o, "N did not take O's heap: the test proves nothing");
  /* N is idle from here on; C's batch goes to the heap it is keyed by, N's now */
  if (trim) {
    step(&c, c_trim);
    CHECKF(sent_to_n, "b2 was not sent to N's inbox: the test proves nothing");
    step(&r, r_trim);
    step(&r, r_trim);
  } else {
    step(&r, r_sweep);
    CHECKF(sent_to_n, "b2 was not sent to N's inbox: the test proves nothing");
  }
  CHECKF(given_to_page, "b2 stranded in the inbox of the heap N took over (inbox %#lx)",
         (unsigned long)__atomic_load_n(&heap_o->inbox, __ATOMIC_RELAXED));
  CHECK(__atomic_load_n(&heap_o->inbox, __ATOMIC_RELAXED) == 0);
  if (!trim)
    step(&r, r_trim);
  CHECKF(!ax_test_segmap_has(s), "S, empty, is still mapped after R's trim");
  ax_test_set_hook(NULL);
  finish(&n);
  finish(&c);
  step(&r, r_free);
  finish(&r);
  CHECK(ax_test_validate() == 0);
  printf("t_race_reuse %s: OK (b2 went from N's inbox to R's page)\n", argv[1]);
  return 0;
}
