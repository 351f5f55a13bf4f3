/* SPDX-License-Identifier: MIT */
/* Giving address space back clears the segment map first (issue 10, defect 2).
 *
 * realloc moves a huge block (its neighbour page is taken, so mremap cannot grow it in
 * place) and stops right after the move (AX_HOOK_HUGE_MOVED, hooks.h), when the old range
 * is free for anyone to map. There the segment map must not know the old address any more
 * (checked directly). And another thread allocates huge blocks of the old size until one
 * lands exactly there: before the fix the mover cleared the segment-map bit of the old
 * address only after the move, which removed the other thread's new block from the map, and
 * its free aborted with "invalid pointer", every run. (qemu-user places guest mappings on its
 * own and does not hand the range out again soon: there only the direct check applies.)
 *
 *   t_race_remap   (linked with axmalloc_hooks)
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "hooks.h"
#include "testutil.h"
#include "types.h"

#define MIB ((size_t)1 << 20)
#define SIZE (8 * MIB)
#define SEG ((uintptr_t)4 << 20)
#define TRIES 32

static sem_t moved, go;
static volatile uintptr_t old_seg;
static volatile int mapped_at_hook = -1;
static void *landed[TRIES];
static int nlanded, hit = -1;

static void sem_wait_all(sem_t *s) {
  while (sem_wait(s) != 0)
    CHECK(errno == EINTR);
}

static void hook(enum ax_hook_point at, const void *arg) {
  if (at != AX_HOOK_HUGE_MOVED || old_seg)
    return;
  old_seg = (uintptr_t)arg;
  mapped_at_hook = ax_test_segmap_has(arg);
  sem_post(&moved);
  sem_wait_all(&go); /* the other thread maps the old range meanwhile */
}

/* Huge blocks of the old block's size until one's segment starts at the old address. */
static void *mapper_main(void *arg) {
  sem_wait_all(&moved);
  for (nlanded = 0; nlanded < TRIES && hit < 0; nlanded++) {
    char *p = malloc(SIZE);
    CHECK(p != NULL);
    memset(p, 0x5a, 4096);
    landed[nlanded] = p;
    if (((uintptr_t)p & ~(SEG - 1)) == old_seg)
      hit = nlanded;
  }
  sem_post(&go);
  return NULL;
}

int main(void) {
  check_axmalloc_active();
  CHECK(sem_init(&moved, 0, 0) == 0 && sem_init(&go, 0, 0) == 0);
  pthread_t mapper;
  CHECK(pthread_create(&mapper, NULL, mapper_main, NULL) == 0);
  char *p = malloc(SIZE);
  CHECK(p != NULL);
  memset(p, 0x11, SIZE);
  /* take the page right after the mapping, so that mremap has to move it (the mapping's
   * end from its header: in checked mode the usable size is the size asked for) */
  uintptr_t seg = (uintptr_t)p & ~(SEG - 1), end = seg + ((ax_segment_t *)seg)->map_size;
  void *guard =
      mmap((void *)end, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  CHECKF(guard == (void *)end, "guard page at %p: %p (errno %d)", (void *)end, guard, errno);
  ax_test_set_hook(hook);
  char *q = realloc(p, 2 * SIZE);
  CHECK(q != NULL && q != p);
  CHECK(pthread_join(mapper, NULL) == 0);
  ax_test_set_hook(NULL);
  CHECKF(old_seg == seg, "the hook saw %p, the block's segment was %p", (void *)old_seg,
         (void *)seg);
  CHECKF(mapped_at_hook == 0, "the segment map still held %p when its range went back to the OS",
         (void *)seg);
  for (size_t i = 0; i < SIZE; i += 4096)
    CHECK(q[i] == 0x11);
  /* the other thread's blocks are still known: usable size, realloc, free */
  for (int i = 0; i < nlanded; i++)
    CHECK(malloc_usable_size(landed[i]) >= SIZE);
  if (hit >= 0) {
    landed[hit] = realloc(landed[hit], SIZE + MIB);
    CHECK(landed[hit] != NULL && ((char *)landed[hit])[0] == 0x5a);
  }
  for (int i = 0; i < nlanded; i++)
    free(landed[i]);
  free(q);
  munmap(guard, 4096);
  if (hit >= 0)
    printf("t_race_remap: OK (block %d of %d landed at the old range)\n", hit + 1, nlanded);
  else
    printf("t_race_remap: OK (none of %d blocks landed at the old range)\n", nlanded);
  return 0;
}
