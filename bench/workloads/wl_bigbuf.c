/* SPDX-License-Identifier: MIT */
/* wl_bigbuf.c -- per-thread large buffers: prefault, then copy in 1 KiB blocks.
 *
 * Models seed 004: a memory benchmark ("sv_mem -mode=wr -block=1K -threads=N") where each
 * thread mallocs a large buffer, prefaults it, then memcpy's it block by block; the
 * threads synchronise before each stage. Page-fault servicing dominated on some systems,
 * so how an allocator obtains, reuses and returns large blocks matters.
 *
 * Usage: wl_bigbuf [buffer_MiB [repeats [threads [block_bytes [callocs]]]]]
 *        (defaults 64, 4, 2, 1024, 0)
 *
 * Each thread, per repeat: malloc a source buffer and prefault it with memset (a nonzero
 * byte, so the compiler cannot turn malloc+memset into calloc and skip the faults), stamp
 * one byte per 4 KiB page; wait for all threads; malloc a destination buffer and copy the
 * source into it in block_bytes pieces; wait for all threads; verify two sampled bytes
 * per page of the destination; free both buffers. Then, callocs times, calloc 8 MiB, check
 * that it reads as zero (one byte per 4 KiB), fill it and free it (issue 44's large-buffer
 * setup: `wl_bigbuf 512 1 2 1024 200`).
 *
 * stdout: exactly one line "checksum <sum of the sampled bytes>".
 * stderr: per-stage times (max over threads, summed over repeats); the page faults taken
 * (getrusage) and, under axmalloc, the bytes advised for huge pages (wl_stats.h).
 * Exit status 1 on allocation failure or a wrong sampled byte.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wl_stats.h"

#define PAGE 4096u

static void die(const char *msg) {
  fprintf(stderr, "wl_bigbuf: FAILED: %s\n", msg);
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
  unsigned id;
  size_t size, block;
  unsigned long repeats, callocs;
  pthread_barrier_t *barrier;
  uint64_t sum;
  double t_prefault, t_copy, t_calloc; /* this thread's stage times, summed over repeats */
} thread_arg;

static inline unsigned char fill_byte(unsigned tid, unsigned long rep) {
  return (unsigned char)(0x5a ^ (tid * 16 + rep)) | 1; /* never zero */
}

static inline size_t stamp_off(size_t page) { return (page * 61u) & (PAGE - 1); }

static inline unsigned char stamp_byte(size_t page, unsigned tid, unsigned long rep) {
  return (unsigned char)(page * 13u + tid * 7u + rep * 3u + 1u);
}

static void *worker(void *p) {
  thread_arg *a = p;
  const size_t size = a->size, block = a->block, pages = size / PAGE;
  uint64_t sum = 0;

  for (unsigned long rep = 0; rep < a->repeats; rep++) {
    pthread_barrier_wait(a->barrier);

    /* Stage 1: allocate and prefault the source. */
    double t0 = now();
    unsigned char *src = malloc(size);
    if (src == NULL)
      die("malloc returned NULL");
    unsigned char fill = fill_byte(a->id, rep);
    memset(src, fill, size);
    for (size_t pg = 0; pg < pages; pg++)
      src[pg * PAGE + stamp_off(pg)] = stamp_byte(pg, a->id, rep);
    a->t_prefault += now() - t0;

    pthread_barrier_wait(a->barrier);

    /* Stage 2: allocate the destination and copy block by block. */
    t0 = now();
    unsigned char *dst = malloc(size);
    if (dst == NULL)
      die("malloc returned NULL");
    size_t off = 0;
    for (; off + block <= size; off += block)
      memcpy(dst + off, src + off, block);
    if (off < size)
      memcpy(dst + off, src + off, size - off);
    a->t_copy += now() - t0;

    pthread_barrier_wait(a->barrier);

    /* Stage 3: verify samples, release. */
    for (size_t pg = 0; pg < pages; pg++) {
      size_t s = pg * PAGE + stamp_off(pg);
      size_t f = pg * PAGE + ((stamp_off(pg) + PAGE / 2) & (PAGE - 1));
      if (dst[s] != stamp_byte(pg, a->id, rep) || dst[f] != fill)
        die("copied buffer has wrong contents");
      sum += dst[s] + dst[f];
    }
    if (dst[size - 1] != src[size - 1] || dst[size - 1] == 0)
      die("copied buffer has wrong contents at its end");
    sum += dst[size - 1];
    free(src);
    free(dst);
  }
  double t0 = now();
  for (unsigned long i = 0; i < a->callocs; i++) {
    const size_t n = (size_t)8 << 20;
    unsigned char *z = calloc(1, n);
    if (z == NULL)
      die("calloc returned NULL");
    for (size_t off = (i * 61) % PAGE; off < n; off += PAGE)
      if (z[off] != 0)
        die("calloc's block is not zero");
    memset(z, (int)(i & 0xff) | 1, n);
    sum += z[n - 1];
    free(z);
  }
  a->t_calloc = now() - t0;
  a->sum = sum;
  return NULL;
}

static unsigned long parse_arg(const char *s, unsigned long lo, unsigned long hi) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "wl_bigbuf: bad argument '%s' (want %lu..%lu)\n", s, lo, hi);
    fprintf(stderr, "usage: wl_bigbuf [buffer_MiB [repeats [threads [block_bytes [callocs]]]]]\n");
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? parse_arg(argv[1], 1, 1UL << 20) : 64;
  unsigned long repeats = argc > 2 ? parse_arg(argv[2], 1, 1000000) : 4;
  unsigned nthreads = argc > 3 ? (unsigned)parse_arg(argv[3], 1, 256) : 2;
  size_t block = argc > 4 ? parse_arg(argv[4], 1, 1UL << 30) : 1024;
  unsigned long callocs = argc > 5 ? parse_arg(argv[5], 0, 1000000) : 0;
  size_t size = mib << 20;

  pthread_barrier_t barrier;
  if (pthread_barrier_init(&barrier, NULL, nthreads))
    die("pthread_barrier_init");
  pthread_t *tids = malloc(nthreads * sizeof *tids);
  thread_arg *args = calloc(nthreads, sizeof *args);
  if (tids == NULL || args == NULL)
    die("malloc returned NULL");

  double t0 = now();
  for (unsigned t = 0; t < nthreads; t++) {
    args[t].id = t;
    args[t].size = size;
    args[t].block = block;
    args[t].repeats = repeats;
    args[t].callocs = callocs;
    args[t].barrier = &barrier;
    if (pthread_create(&tids[t], NULL, worker, &args[t]))
      die("pthread_create");
  }
  uint64_t checksum = 0;
  double prefault = 0, copy = 0, zeroed = 0;
  for (unsigned t = 0; t < nthreads; t++) {
    if (pthread_join(tids[t], NULL))
      die("pthread_join");
    checksum += args[t].sum;
    if (args[t].t_prefault > prefault)
      prefault = args[t].t_prefault;
    if (args[t].t_copy > copy)
      copy = args[t].t_copy;
    if (args[t].t_calloc > zeroed)
      zeroed = args[t].t_calloc;
  }
  double total = now() - t0;
  pthread_barrier_destroy(&barrier);

  double mib_copied = (double)mib * (double)repeats * nthreads;
  fprintf(stderr,
          "wl_bigbuf: %u threads x %lu x %zu MiB, block %zu: prefault %.3f s, memcpy %.3f s "
          "(%.0f MiB/s aggregate), %lu callocs of 8 MiB %.3f s, total %.3f s\n",
          nthreads, repeats, mib, block, prefault, copy, copy > 0 ? mib_copied / copy : 0.0,
          callocs, zeroed, total);
  free(tids);
  free(args);
  wl_print_faults("wl_bigbuf");
  printf("checksum %llu\n", (unsigned long long)checksum);
  return 0;
}
