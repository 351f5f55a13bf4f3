/* SPDX-License-Identifier: MIT */
/* A remote free touches nothing of the segment after its publishing CAS (issue 10, defect 1).
 *
 * The freeing thread stops right after its CAS (AX_HOOK_REMOTE_FREE_PUBLISHED, hooks.h);
 * meanwhile the owner frees every other block of the segment and trims, so the segment is
 * unmapped; only then does the freeing thread go on. The page was in its heap's full list,
 * which is the case where a remote free has more to do than the CAS (tell the owner). Before
 * the fix the freeing thread then read the segment header: SIGSEGV, every run.
 *
 *   t_race_remote   (linked with axmalloc_hooks)
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hooks.h"
#include "testutil.h"

/* Large blocks: a segment holds one page of one class, so nothing else of this process (or
 * of a sanitizer's runtime) can keep it alive. 8 fit in a segment: 12 fill the first one,
 * whose page then goes to the full list. */
#define BLOCK (448 << 10)
#define N 12
#define SEG ((uintptr_t)4 << 20)

static void *blocks[N];
static sem_t start, stopped, go;
static pthread_t freer;
static volatile int armed, freer_done;

static void sem_wait_all(sem_t *s) {
  while (sem_wait(s) != 0)
    CHECK(errno == EINTR);
}

static void hook(enum ax_hook_point at, const void *arg) {
  if (at != AX_HOOK_REMOTE_FREE_PUBLISHED || !armed || !pthread_equal(pthread_self(), freer))
    return;
  armed = 0;
  sem_post(&stopped);
  sem_wait_all(&go); /* the owner unmaps the segment meanwhile */
}

static void *freer_main(void *arg) {
  sem_wait_all(&start);
  free(blocks[0]); /* remote: stops in the hook after its CAS */
  freer_done = 1;
  return NULL;
}

static int mapped(uintptr_t addr) {
  unsigned char v;
  return mincore((void *)addr, 4096, &v) == 0 || errno != ENOMEM;
}

int main(void) {
  check_axmalloc_active();
  CHECK(sem_init(&start, 0, 0) == 0 && sem_init(&stopped, 0, 0) == 0 && sem_init(&go, 0, 0) == 0);
  CHECK(pthread_create(&freer, NULL, freer_main, NULL) == 0);
  for (int i = 0; i < N; i++)
    CHECK((blocks[i] = malloc(BLOCK)) != NULL);
  uintptr_t seg = (uintptr_t)blocks[0] & ~(SEG - 1);
  ax_test_set_hook(hook);
  armed = 1;
  sem_post(&start);
  sem_wait_all(&stopped); /* the freer has published blocks[0] and waits */
  for (int i = 1; i < N; i++)
    free(blocks[i]);
  malloc_trim(0); /* collects blocks[0], empties the segment, unmaps it */
  CHECKF(!mapped(seg), "segment %p still mapped: the test proves nothing", (void *)seg);
  CHECK(!freer_done);
  sem_post(&go);
  CHECK(pthread_join(freer, NULL) == 0);
  CHECK(freer_done);
  ax_test_set_hook(NULL);
  /* the allocator is intact: the same pattern again, without stops */
  for (int i = 0; i < N; i++)
    CHECK((blocks[i] = malloc(BLOCK)) != NULL);
  for (int i = 0; i < N; i++)
    free(blocks[i]);
  printf("t_race_remote: OK\n");
  return 0;
}
