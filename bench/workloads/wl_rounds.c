/* SPDX-License-Identifier: MIT */
/* wl_rounds.c -- threads born, allocating, handing blocks over and dying, in rounds.
 *
 * Models mimalloc-bench's mstress (mimalloc's test-stress): the allocator's cost of thread
 * churn (a heap for every new thread, segments abandoned at exit and reclaimed by the next
 * round) together with cross-thread frees. Each round starts `threads` threads; each makes
 * `allocs` blocks of 16 B .. 1 KiB (one in 64 of 4-64 KiB) from its own fixed-seed generator,
 * writes a tag through each, and either keeps it (a live set of 256 slots, the displaced
 * block freed at once) or swaps it into a global transfer array of 1024 slots (atomic
 * exchange: what comes out was made by another thread, maybe of an earlier round, and is
 * checked and freed here). At its exit a thread frees half of its live set and leaves the
 * other half in the transfer array (freed by later threads, or by main at the end).
 *
 * Usage: wl_rounds [rounds [threads [allocs]]]     (defaults 100 4 20000)
 *
 * stderr, under axmalloc: its remote-free counts (wl_stats.h).
 * stdout: exactly one line "checksum <n>", the number of bytes requested (which thread frees
 * what depends on timing, the requests do not). Exit status 1 on allocation failure or a
 * block whose tag changed.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "wl_stats.h"

#define LIVE 256
#define TRANSFER 1024
#define MAX_THREADS 64

typedef struct obj {
  uint64_t tag; /* size << 32 | check */
} obj_t;

static _Atomic(obj_t *) transfer[TRANSFER];
static long allocs_per_thread;
static atomic_uint_fast64_t requested;

static void die(const char *msg) {
  fprintf(stderr, "wl_rounds: FAILED: %s\n", msg);
  exit(1);
}

static uint64_t rnd(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static uint64_t tag_of(size_t size) {
  return (uint64_t)size << 32 | (uint32_t)(size * 2654435761u);
}

static obj_t *make(size_t size) {
  obj_t *o = malloc(size);
  if (!o)
    die("malloc returned NULL");
  o->tag = tag_of(size);
  ((unsigned char *)o)[size - 1] = (unsigned char)size;
  return o;
}

static void drop(obj_t *o) {
  if (!o)
    return;
  size_t size = (size_t)(o->tag >> 32);
  if (size < sizeof(obj_t) || o->tag != tag_of(size) ||
      ((unsigned char *)o)[size - 1] != (unsigned char)size)
    die("a block's tag changed");
  free(o);
}

static void *worker(void *arg) {
  uint64_t seed = (uintptr_t)arg * 0x9e3779b97f4a7c15u | 1, bytes = 0;
  obj_t *live[LIVE] = {0};
  for (long i = 0; i < allocs_per_thread; i++) {
    uint64_t r = rnd(&seed);
    size_t size = r % 64 == 0 ? 4096 + (r >> 8) % (60 << 10) : 16 + (r >> 8) % 1009;
    bytes += size;
    obj_t *o = make(size);
    if ((r >> 40) % 4 == 0) { /* hand it over: free what another thread left */
      drop(atomic_exchange(&transfer[(r >> 20) % TRANSFER], o));
    } else {
      obj_t **slot = &live[(r >> 30) % LIVE];
      drop(*slot);
      *slot = o;
    }
  }
  for (unsigned k = 0; k < LIVE; k++) {
    if (k % 2)
      drop(atomic_exchange(&transfer[(k * 7 + (seed & 63)) % TRANSFER], live[k]));
    else
      drop(live[k]);
  }
  atomic_fetch_add(&requested, bytes);
  return NULL;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 100, threads = argc > 2 ? atoi(argv[2]) : 4;
  allocs_per_thread = argc > 3 ? atol(argv[3]) : 20000;
  if (rounds < 1 || threads < 1 || threads > MAX_THREADS || allocs_per_thread < 1)
    return 2;
  pthread_t t[MAX_THREADS];
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < threads; i++)
      if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(r * MAX_THREADS + i + 1)))
        die("pthread_create");
    for (int i = 0; i < threads; i++)
      pthread_join(t[i], NULL);
  }
  for (unsigned k = 0; k < TRANSFER; k++)
    drop(atomic_exchange(&transfer[k], NULL));
  printf("checksum %llu\n", (unsigned long long)atomic_load(&requested));
  wl_print_remote_stats("wl_rounds");
  return 0;
}
