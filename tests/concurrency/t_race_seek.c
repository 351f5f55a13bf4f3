/* SPDX-License-Identifier: MIT */
/* The double-free seek holds off every unmap while it reads other threads' blocks in transit
 * (issue 38: the seek read other threads' batches and inboxes, and the page descriptors of
 * their blocks, with nothing that stopped a segment from being unmapped meanwhile).
 *
 * The owner O holds a block b of 64 B and a large block x alone in a segment of its own. A
 * third thread frees x (its first remote free to O: sent alone), so x waits in O's inbox.
 * Thread A then frees b, whose first word it made look free (axi_looks_free): the seek runs
 * (b is not free: no report) and walks O's inbox, and A stops at x (AX_HOOK_SEEK_STEP).
 * Meanwhile O trims: x goes back to its page, the page empties, the segment goes to the cache
 * and the cache's trim unmaps it. The unmap clears the segment's bit first (the test waits
 * for that: O has reached it), then must wait for the seek: with A stopped, O's trim does not
 * finish and the segment stays mapped (O is given 500 ms; before the fix it unmapped the
 * segment under the seek at once, and a seek stopped after its page-map look-up read the
 * page descriptor and x's link from unmapped memory). Then A goes on: its free, O's trim and
 * the allocator's structures (ax_test_validate) complete.
 *
 *   t_race_seek   (linked with axmalloc_hooks)
 *
 * Exits 77 (skipped) in checked mode (a remote free goes alone to its page: x never waits in
 * an inbox), with memory tagging (the seek does not run: mte.c finds double frees) and with
 * the heap profiler (x, sampled, is no block of a large page). */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "list.h"
#include "pagemap.h"
#include "testutil.h"

#define LARGE (512 << 10) /* a large class: one page per segment, x alone in it */

static void *x, *b;
static sem_t o_ready, o_trim, o_exit, t_free, t_done, a_free, a_done, stopped, go;
static const void *volatile armed; /* the block to stop A at */
static volatile int o_trimmed, a_stopped, a_freed;

static void sem_wait_all(sem_t *s) {
  while (sem_wait(s) != 0)
    CHECK(errno == EINTR);
}

static void hook(enum ax_hook_point at, const void *arg) {
  if (at != AX_HOOK_SEEK_STEP || arg != armed ||
      !__atomic_compare_exchange_n(&armed, &arg, NULL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return;
  a_stopped = 1;
  sem_post(&stopped);
  sem_wait_all(&go); /* O unmaps (or tries to) meanwhile */
}

static void *owner(void *arg) {
  CHECK((x = malloc(LARGE)) != NULL && (b = malloc(64)) != NULL);
  sem_post(&o_ready);
  sem_wait_all(&o_trim);
  malloc_trim(0); /* takes x back, empties its segment, unmaps it */
  o_trimmed = 1;
  sem_wait_all(&o_exit);
  return NULL;
}

/* Frees x, its first remote free to O (sent alone: remote.c), then stays (its exit would put
 * its empty segment in the cache, which O's trim would then unmap first). */
static void *third(void *arg) {
  free(malloc(16)); /* (a heap: a thread without one gives x to its page, not to O's inbox) */
  sem_wait_all(&t_free);
  free(x);
  sem_post(&t_done);
  sem_wait_all(&t_free);
  return NULL;
}

static void *freer(void *arg) {
  free(malloc(16));
  sem_wait_all(&a_free);
  ax_page_t *page = axi_page_of(axi_segment_of(b), b);
  *(uintptr_t *)b = page->key; /* looks free: a link to nothing, encoded with the page's key */
  CHECK(axi_looks_free(page, b));
  free(b); /* remote, and not free: the seek, which stops at x */
  a_freed = 1;
  sem_post(&stopped); /* (in case it did not stop) */
  sem_wait_all(&a_done);
  return NULL;
}

static int mapped(const void *addr) {
  unsigned char v;
  return mincore((void *)addr, 4096, &v) == 0 || errno != ENOMEM;
}

/* Up to ms milliseconds until *flag is set or the segment's bit is clear: no allocation (an
 * allocation could unmap, and wait for the stopped seek). post: whether it happened. */
static int wait_for(volatile int *flag, const void *seg, unsigned ms) {
  for (unsigned i = 0; i < ms; i++) {
    if ((flag && *flag) || (seg && !ax_test_segmap_has(seg)))
      return 1;
    struct timespec ns = {0, 1000000};
    nanosleep(&ns, NULL);
  }
  return 0;
}

int main(void) {
  check_axmalloc_active();
  skip_when_tagging("t_race_seek");
  ax_info_t info;
  ax_info(&info);
  if (ax_test_checked() || info.prof_sample) {
    printf("t_race_seek: skipped: %s\n", info.prof_sample
                                             ? "a sampled block has a place of its own"
                                             : "checked mode sends no block to an inbox");
    return 77;
  }
  /* no sweep forwards x from O's inbox meanwhile (a sweep waits a purge delay) */
  uint64_t delay = 60000;
  CHECK(ax_ctl("purge.delay_ms", NULL, NULL, &delay, sizeof delay) == 0);
  malloc_trim(0); /* the segment cache empty: O's trim unmaps x's segment first */
  sem_t *sems[] = {&o_ready, &o_trim, &o_exit, &t_free, &t_done, &a_free, &a_done, &stopped, &go};
  for (unsigned i = 0; i < sizeof sems / sizeof *sems; i++)
    CHECK(sem_init(sems[i], 0, 0) == 0);
  pthread_t o, t, a;
  CHECK(pthread_create(&o, NULL, owner, NULL) == 0);
  sem_wait_all(&o_ready);
  const ax_segment_t *seg_x = axi_segment_of(x), *seg_b = axi_segment_of(b);
  ax_heap_t *heap_o = (ax_heap_t *)__atomic_load_n(&seg_b->heap, __ATOMIC_RELAXED);
  CHECK(seg_x != seg_b && __atomic_load_n(&seg_x->heap, __ATOMIC_RELAXED) == (uintptr_t)heap_o);
  CHECK(ax_test_segmap_has(seg_x));
  CHECK(pthread_create(&t, NULL, third, NULL) == 0);
  sem_post(&t_free);
  sem_wait_all(&t_done);
  CHECKF(__atomic_load_n(&heap_o->inbox, __ATOMIC_ACQUIRE) == (uintptr_t)x,
         "x is not alone in O's inbox (%#lx): the test proves nothing",
         (unsigned long)__atomic_load_n(&heap_o->inbox, __ATOMIC_RELAXED));
  ax_test_set_hook(hook);
  armed = x;
  CHECK(pthread_create(&a, NULL, freer, NULL) == 0);
  sem_post(&a_free);
  sem_wait_all(&stopped);
  CHECKF(a_stopped, "the seek did not reach x in O's inbox: the test proves nothing");
  /* A is inside the seek, at x; O trims: nothing here allocates until A goes on */
  sem_post(&o_trim);
  int reached = wait_for(&o_trimmed, seg_x, 10000);
  int finished = wait_for(&o_trimmed, NULL, 500), still = mapped(seg_x);
  sem_post(&go);
  CHECKF(reached, "O's trim did not reach the unmap of x's segment in 10 s");
  CHECKF(!finished && still,
         "O's trim %s and x's segment is %s while a seek was reading x: the unmap did not wait",
         finished ? "finished" : "did not finish", still ? "mapped" : "unmapped");
  CHECKF(wait_for(&a_freed, NULL, 10000), "A's free did not complete");
  CHECKF(wait_for(&o_trimmed, NULL, 10000), "O's trim did not complete");
  CHECK(!ax_test_segmap_has(seg_x) && !mapped(seg_x));
  ax_test_set_hook(NULL);
  sem_post(&a_done);
  sem_post(&t_free);
  sem_post(&o_exit);
  CHECK(pthread_join(a, NULL) == 0 && pthread_join(t, NULL) == 0 && pthread_join(o, NULL) == 0);
  CHECK(ax_test_validate() == 0);
  printf("t_race_seek: OK (O's unmap waited for the seek)\n");
  return 0;
}
