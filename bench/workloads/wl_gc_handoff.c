/* SPDX-License-Identifier: MIT */
/* wl_gc_handoff.c -- producer threads allocate, collector threads free (a GC pattern).
 *
 * Models seed 000: a Delphi application on a garbage-collected framework, where objects
 * are allocated by worker threads and freed by dedicated collector threads, ran up to 5x
 * slower on two cores than on one with FastMM4 (TBB's allocator scaled).
 *
 * Usage: wl_gc_handoff [objects_per_worker [workers [collectors [batch]]]]
 *        (defaults 1000000, 2, 2, 256)
 *
 * Each worker allocates objects of random size 16..512 bytes (fixed-seed xorshift per
 * worker) and fills them with a pattern derived from a tag stored in the object. New
 * objects enter a live set of 1024 slots per worker; the object a new one displaces
 * becomes garbage and goes into the current batch, so an object lives for a while before
 * it dies. Full batches (arrays malloc'd by the worker) are handed through a bounded
 * mutex/condvar queue to the collectors, which verify every object's header and payload,
 * add up the payload, and free the objects and the batch array. Every free is therefore a
 * cross-thread free. At the end the workers retire their live sets the same way.
 *
 * stderr, under axmalloc: its remote-free counts (wl_stats.h).
 * stdout: exactly one line "checksum <sum over objects of size + payload bytes>"; which
 * collector frees which object depends on timing, the sum does not.
 * Exit status 1 on allocation failure or an object whose contents changed.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wl_blocks.h"
#include "wl_stats.h"

#define LIVE_SLOTS 1024
#define QUEUE_CAP 64
#define MIN_OBJ 16
#define MAX_OBJ 512

/* An object: 8-byte header, then size-8 payload bytes. */
typedef struct object {
  uint32_t size; /* total size including the header */
  uint32_t tag;
  unsigned char payload[];
} object;

typedef struct batch {
  size_t n;
  object *objs[]; /* batch_size entries */
} batch;

/* ---- bounded queue of batches ------------------------------------------------------- */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t not_empty, not_full;
  batch *items[QUEUE_CAP];
  size_t head, count;
  unsigned producers_left;
} q = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .not_empty = PTHREAD_COND_INITIALIZER,
       .not_full = PTHREAD_COND_INITIALIZER};

static void queue_push(batch *b) {
  pthread_mutex_lock(&q.lock);
  while (q.count == QUEUE_CAP)
    pthread_cond_wait(&q.not_full, &q.lock);
  q.items[(q.head + q.count) % QUEUE_CAP] = b;
  q.count++;
  pthread_cond_signal(&q.not_empty);
  pthread_mutex_unlock(&q.lock);
}

static void queue_producer_done(void) {
  pthread_mutex_lock(&q.lock);
  q.producers_left--;
  pthread_cond_broadcast(&q.not_empty);
  pthread_mutex_unlock(&q.lock);
}

/* Returns NULL once all producers are done and the queue is drained. */
static batch *queue_pop(void) {
  pthread_mutex_lock(&q.lock);
  while (q.count == 0 && q.producers_left > 0)
    pthread_cond_wait(&q.not_empty, &q.lock);
  batch *b = NULL;
  if (q.count > 0) {
    b = q.items[q.head];
    q.head = (q.head + 1) % QUEUE_CAP;
    q.count--;
    pthread_cond_signal(&q.not_full);
  }
  pthread_mutex_unlock(&q.lock);
  return b;
}

/* ---- objects ----------------------------------------------------------------------- */
static inline unsigned char pattern_byte(uint32_t tag, size_t j) {
  return (unsigned char)((tag >> 3) + j * 7u);
}

static object *new_object(uint64_t *rng) {
  uint64_t r = xorshift64(rng);
  uint32_t size = MIN_OBJ + (uint32_t)(r % (MAX_OBJ - MIN_OBJ + 1));
  object *o = malloc(size);
  if (o == NULL)
    die("malloc returned NULL");
  o->size = size;
  o->tag = (uint32_t)(r >> 32);
  size_t n = size - sizeof(object);
  for (size_t j = 0; j < n; j++)
    o->payload[j] = pattern_byte(o->tag, j);
  return o;
}

/* Verify an object and return size + the sum of its payload bytes. */
static uint64_t verify_object(const object *o) {
  if (o->size < MIN_OBJ || o->size > MAX_OBJ)
    die("object header corrupted");
  size_t n = o->size - sizeof(object);
  uint64_t sum = o->size;
  unsigned bad = 0;
  for (size_t j = 0; j < n; j++) {
    bad |= o->payload[j] ^ pattern_byte(o->tag, j);
    sum += o->payload[j];
  }
  if (bad)
    die("object payload corrupted");
  return sum;
}

/* ---- threads ----------------------------------------------------------------------- */
typedef struct {
  unsigned id;
  unsigned long objects;
  size_t batch_size;
  uint64_t sum;   /* collectors: verified payload sum */
  uint64_t count; /* objects allocated (workers) or freed (collectors) */
  uint64_t batches;
} thread_arg;

static batch *new_batch(size_t batch_size) {
  batch *b = malloc(sizeof(batch) + batch_size * sizeof(object *));
  if (b == NULL)
    die("malloc returned NULL");
  b->n = 0;
  return b;
}

static void *worker(void *p) {
  thread_arg *a = p;
  uint64_t rng = 0x2545F4914F6CDD1Dull * (a->id + 1);
  object *live[LIVE_SLOTS] = {0};
  batch *b = new_batch(a->batch_size);

  for (unsigned long i = 0; i < a->objects; i++) {
    object *o = new_object(&rng);
    size_t slot = (size_t)(xorshift64(&rng) % LIVE_SLOTS);
    object *dead = live[slot];
    live[slot] = o;
    if (dead != NULL) {
      b->objs[b->n++] = dead;
      if (b->n == a->batch_size) {
        queue_push(b);
        a->batches++;
        b = new_batch(a->batch_size);
      }
    }
  }
  /* Retire the live set. */
  for (size_t s = 0; s < LIVE_SLOTS; s++) {
    if (live[s] == NULL)
      continue;
    b->objs[b->n++] = live[s];
    if (b->n == a->batch_size) {
      queue_push(b);
      a->batches++;
      b = new_batch(a->batch_size);
    }
  }
  if (b->n > 0) {
    queue_push(b);
    a->batches++;
  } else {
    free(b);
  }
  a->count = a->objects;
  queue_producer_done();
  return NULL;
}

static void *collector(void *p) {
  thread_arg *a = p;
  batch *b;
  while ((b = queue_pop()) != NULL) {
    for (size_t k = 0; k < b->n; k++) {
      a->sum += verify_object(b->objs[k]);
      free(b->objs[k]);
    }
    a->count += b->n;
    a->batches++;
    free(b);
  }
  return NULL;
}

static const char usage[] = "[objects_per_worker [workers [collectors [batch]]]]";

int main(int argc, char **argv) {
  wl_name = "wl_gc_handoff";
  unsigned long objects = argc > 1 ? parse_arg(argv[1], 1, 1UL << 40, usage) : 1000000;
  unsigned nworkers = argc > 2 ? (unsigned)parse_arg(argv[2], 1, 256, usage) : 2;
  unsigned ncollectors = argc > 3 ? (unsigned)parse_arg(argv[3], 1, 256, usage) : 2;
  size_t batch_size = argc > 4 ? parse_arg(argv[4], 1, 1UL << 20, usage) : 256;

  unsigned n = nworkers + ncollectors;
  pthread_t *tids = malloc(n * sizeof *tids);
  thread_arg *args = calloc(n, sizeof *args);
  if (tids == NULL || args == NULL)
    die("malloc returned NULL");
  q.producers_left = nworkers;

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned t = 0; t < n; t++) {
    args[t].id = t;
    args[t].objects = objects;
    args[t].batch_size = batch_size;
    if (pthread_create(&tids[t], NULL, t < nworkers ? worker : collector, &args[t]))
      die("pthread_create");
  }
  uint64_t checksum = 0, allocated = 0, freed = 0, batches_out = 0, batches_in = 0;
  for (unsigned t = 0; t < n; t++) {
    if (pthread_join(tids[t], NULL))
      die("pthread_join");
    if (t < nworkers) {
      allocated += args[t].count;
      batches_out += args[t].batches;
    } else {
      checksum += args[t].sum;
      freed += args[t].count;
      batches_in += args[t].batches;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (allocated != freed || batches_out != batches_in || q.count != 0)
    die("objects lost between workers and collectors");

  fprintf(stderr,
          "wl_gc_handoff: %u workers, %u collectors: %llu objects in %llu batches, %.3f s\n",
          nworkers, ncollectors, (unsigned long long)allocated, (unsigned long long)batches_in,
          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  free(tids);
  free(args);
  printf("checksum %llu\n", (unsigned long long)checksum);
  wl_print_remote_stats("wl_gc_handoff");
  return 0;
}
