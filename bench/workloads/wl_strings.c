/* SPDX-License-Identifier: MIT */
/* wl_strings.c -- threads creating and destroying many short strings.
 *
 * Models seed 003: two threads each creating/destroying 100k std::strings ran 80x slower
 * on a real-time heap than on glibc (which serves them from per-thread caches / fast
 * bins without a lock).
 *
 * Usage: wl_strings [strings_per_round [rounds [threads]]]   (defaults 100000, 25, 2)
 *
 * Each thread, per round, builds `strings_per_round` strings of random length 8..64
 * (malloc(len+1) then memcpy from a text, or snprintf of a formatted record); one in four
 * is then appended to with realloc (like std::string += growing its buffer). About half
 * of the strings are temporaries, hashed and freed at once (the seed's create/destroy
 * loop); the others are kept in a vector grown by doubling realloc and, at the end of the
 * round, verified (length and hash) and freed in a shuffled order.
 * Each thread uses its own fixed-seed xorshift generator, so the work is deterministic.
 *
 * stdout: exactly one line "checksum <sum of string lengths and string hashes>".
 * Exit status 1 on allocation failure or a string whose contents changed.
 */
#define _POSIX_C_SOURCE 200809L
#include "wl_blocks.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char text[] =
    "It was the best of times, it was the worst of times, it was the age of wisdom, it "
    "was the age of foolishness, it was the epoch of belief, it was the epoch of "
    "incredulity, it was the season of Light, it was the season of Darkness, it was the "
    "spring of hope, it was the winter of despair, we had everything before us, we had "
    "nothing before us, we were all going direct to Heaven, we were all going direct the "
    "other way -- in short, the period was so far like the present period, that some of "
    "its noisiest authorities insisted on its being received, for good or for evil, in "
    "the superlative degree of comparison only.";

static const char *const words[] = {"alpha",   "bravo", "charlie", "delta",   "echo",
                                    "foxtrot", "golf",  "hotel",   "india",   "juliet",
                                    "kilo",    "lima",  "mike",    "november"};

static uint32_t hash_str(const char *s, size_t len) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)s[i];
    h *= 16777619u;
  }
  return h;
}

typedef struct {
  char *s;
  uint32_t len;
  uint32_t hash;
} kept_str;

typedef struct {
  unsigned id;
  unsigned long count, rounds;
  pthread_barrier_t *start;
  uint64_t sum;
  uint64_t strings, reallocs;
} thread_arg;

/* Build one string; returns it and stores its final length in *plen. */
static char *make_string(uint64_t *rng, unsigned tid, unsigned long i, size_t *plen,
                         uint64_t *reallocs) {
  uint64_t r = xorshift64(rng);
  size_t len = 8 + (size_t)(r % 57); /* 8..64 */
  char *s = malloc(len + 1);
  if (s == NULL)
    die("malloc returned NULL");
  if (((r >> 8) & 7) == 0) {
    /* A formatted record, truncated to len characters. */
    int n = snprintf(s, len + 1, "%s:%u:%lu:%s/%llu", words[(r >> 12) % 14], tid, i,
                     words[(r >> 16) % 14], (unsigned long long)(r >> 40));
    if (n < 0)
      die("snprintf failed");
    if ((size_t)n < len)
      len = (size_t)n;
  } else {
    size_t off = (size_t)((r >> 12) % (sizeof text - 1 - 64));
    memcpy(s, text + off, len);
    s[len] = '\0';
  }
  if (((r >> 20) & 3) == 0) {
    /* Append a word: realloc to grow, like a string's += */
    const char *w = words[(r >> 24) % 14];
    size_t wl = strlen(w);
    char *t = realloc(s, len + 1 + wl + 1);
    if (t == NULL)
      die("realloc returned NULL");
    s = t;
    s[len] = ' ';
    memcpy(s + len + 1, w, wl + 1);
    len += 1 + wl;
    (*reallocs)++;
  }
  *plen = len;
  return s;
}

static void *worker(void *p) {
  thread_arg *a = p;
  uint64_t rng = 0x9E3779B97F4A7C15ull * (a->id + 1);
  uint64_t sum = 0;

  pthread_barrier_wait(a->start);
  for (unsigned long round = 0; round < a->rounds; round++) {
    kept_str *kept = NULL;
    size_t nkept = 0, cap = 0;
    for (unsigned long i = 0; i < a->count; i++) {
      size_t len;
      char *s = make_string(&rng, a->id, i, &len, &a->reallocs);
      uint32_t h = hash_str(s, len);
      if (xorshift64(&rng) & 1) {
        /* temporary: used once, destroyed */
        sum += len + h;
        free(s);
      } else {
        if (nkept == cap) {
          size_t ncap = cap ? cap * 2 : 16;
          kept_str *k = realloc(kept, ncap * sizeof *kept);
          if (k == NULL)
            die("realloc returned NULL");
          kept = k;
          cap = ncap;
        }
        kept[nkept].s = s;
        kept[nkept].len = (uint32_t)len;
        kept[nkept].hash = h;
        nkept++;
      }
    }
    /* Destroy the kept strings in a shuffled order, verifying each. */
    for (size_t n = nkept; n > 0; n--) {
      size_t j = (size_t)(xorshift64(&rng) % n);
      kept_str k = kept[j];
      kept[j] = kept[n - 1];
      if (strlen(k.s) != k.len || hash_str(k.s, k.len) != k.hash)
        die("string contents changed between creation and destruction");
      sum += k.len + k.hash;
      free(k.s);
    }
    free(kept);
    a->strings += a->count;
  }
  a->sum = sum;
  return NULL;
}

static const char usage[] = "[strings_per_round [rounds [threads]]]";

int main(int argc, char **argv) {
  wl_name = "wl_strings";
  unsigned long count = argc > 1 ? parse_arg(argv[1], 1, 100000000, usage) : 100000;
  unsigned long rounds = argc > 2 ? parse_arg(argv[2], 1, 1000000, usage) : 25;
  unsigned nthreads = argc > 3 ? (unsigned)parse_arg(argv[3], 1, 256, usage) : 2;

  pthread_barrier_t start;
  if (pthread_barrier_init(&start, NULL, nthreads))
    die("pthread_barrier_init");
  pthread_t *tids = malloc(nthreads * sizeof *tids);
  thread_arg *args = calloc(nthreads, sizeof *args);
  if (tids == NULL || args == NULL)
    die("malloc returned NULL");

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned t = 0; t < nthreads; t++) {
    args[t].id = t;
    args[t].count = count;
    args[t].rounds = rounds;
    args[t].start = &start;
    if (pthread_create(&tids[t], NULL, worker, &args[t]))
      die("pthread_create");
  }
  uint64_t checksum = 0, strings = 0, reallocs = 0;
  for (unsigned t = 0; t < nthreads; t++) {
    if (pthread_join(tids[t], NULL))
      die("pthread_join");
    checksum += args[t].sum;
    strings += args[t].strings;
    reallocs += args[t].reallocs;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  pthread_barrier_destroy(&start);

  fprintf(stderr, "wl_strings: %u threads, %llu strings (%llu appended by realloc) in %.3f s\n",
          nthreads, (unsigned long long)strings, (unsigned long long)reallocs,
          (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  free(tids);
  free(args);
  printf("checksum %llu\n", (unsigned long long)checksum);
  return 0;
}
