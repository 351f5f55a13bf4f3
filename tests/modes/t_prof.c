/* SPDX-License-Identifier: MIT */
/* The heap profiler's subject: known amounts from known functions (t_prof.sh reads the
 * profiles with google-pprof and checks the numbers).
 *
 *   t_prof dump FILE   in use at the dump: f 64 MiB (1 KiB blocks, the direct table's sizes),
 *                      g 16 MiB (4 KiB blocks, in another thread), h 16 MiB (2 MiB blocks,
 *                      huge), k 0 (32 MiB of 256 B blocks, all freed: allocated 32 MiB),
 *                      r 8 MiB (1 MiB blocks grown from 64 B by realloc), m 0
 *                      (32 MiB of 4 KiB blocks through the heap's cache: allocated 32 MiB);
 *                      everything else small and freed. Then ax_prof_dump(FILE).
 *   t_prof leak        leaky() leaves 8 MiB of 512 B blocks live at exit; tidy() frees its own
 *   t_prof signal      f's 64 MiB, then raise(AXMALLOC_PROF_SIGNAL's signal: SIGUSR2)
 *   t_prof threads FILE  64 threads one after another, each keeping 128 blocks of 32 B from
 *                      w(): 256 KiB in use, all from new heaps' first pages (their first
 *                      lists must count as much as any later one); ax_prof_dump(FILE)
 *   t_prof info        prints ax_info's prof_sample
 *   t_prof frames      allocations under frames of every shape the stack walk meets: variable
 *                      length arrays, a realigned stack, a 100 KB frame, frame pointers kept,
 *                      200 calls deep, a libc callback (qsort), a signal handler, two threads
 *                      at once; t_prof.sh runs it with AXMALLOC_PROF_UNWIND=check, which walks
 *                      every sampled stack from the unwind table rules and by libgcc and
 *                      aborts where the two differ
 *   t_prof doublefree N  N pairs of malloc(4096)/free, then a block freed twice (stdout: its
 *                      address first): the second free must abort naming it, wherever the
 *                      first put it (the cache, its page, the block aside while a sample of its
 *                      class is due: t_prof.sh runs it for many N, the interval 32 KiB)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axmalloc.h"

#define MiB ((size_t)1 << 20)
#define NOINLINE __attribute__((noinline))

static void *keep[1 << 17];
static size_t kept;

static void hold(void *p) {
  if (!p || kept == sizeof keep / sizeof *keep) {
    fprintf(stderr, "t_prof: out of memory or slots\n");
    exit(1);
  }
  keep[kept++] = p;
}

/* Small blocks allocated and freed around the others: they must not show in use. */
static NOINLINE void noise(int rounds) {
  void *tmp[64];
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < 64; i++)
      tmp[i] = malloc((size_t)(16 + 16 * (i % 8)));
    for (int i = 0; i < 64; i++)
      free(tmp[i]);
  }
}

NOINLINE void f(void) {
  for (size_t i = 0; i < 64 * MiB / 1024; i++) {
    hold(malloc(1024));
    if (i % 1024 == 0)
      noise(1);
  }
  __asm__ volatile("" ::: "memory"); /* no tail call: f stays on the stack */
}

NOINLINE void g(void) {
  for (size_t i = 0; i < 16 * MiB / 4096; i++)
    hold(malloc(4096));
  __asm__ volatile("" ::: "memory");
}

NOINLINE void h(void) {
  for (int i = 0; i < 8; i++)
    hold(malloc(2 * MiB));
  __asm__ volatile("" ::: "memory");
}

NOINLINE void k(void) {
  void **tmp = malloc(32 * MiB / 256 * sizeof *tmp);
  for (size_t i = 0; i < 32 * MiB / 256; i++)
    tmp[i] = calloc(1, 256);
  for (size_t i = 0; i < 32 * MiB / 256; i++)
    free(tmp[i]);
  free(tmp);
  __asm__ volatile("" ::: "memory");
}

/* 32 MiB of 4 KiB blocks, each freed before the next: every malloc after the first takes the
 * block the free before it left in the heap's cache, which counts nothing when it hands it out. */
NOINLINE void m(void) {
  for (int i = 0; i < 8192; i++) {
    char *p = malloc(4096);
    if (!p)
      exit(1);
    p[i % 4096] = 1;
    free(p);
  }
  __asm__ volatile("" ::: "memory");
}

/* 8 blocks grown from 64 B to 1 MiB by doubling realloc: what is in use is the last size. */
NOINLINE void r(void) {
  for (int i = 0; i < 8; i++) {
    char *p = malloc(64);
    for (size_t n = 128; n <= MiB; n *= 2) {
      p = realloc(p, n);
      if (!p)
        exit(1);
      p[n - 1] = 1;
    }
    hold(p);
  }
  __asm__ volatile("" ::: "memory");
}

NOINLINE void w(void **out) {
  for (int i = 0; i < 128; i++)
    out[i] = malloc(32);
  __asm__ volatile("" ::: "memory");
}

static void *w_thread(void *arg) {
  w(arg);
  return arg;
}

static void *g_thread(void *arg) {
  g();
  return arg;
}

NOINLINE void leaky(void) {
  for (size_t i = 0; i < 8 * MiB / 512; i++)
    hold(malloc(512));
  __asm__ volatile("" ::: "memory");
}

NOINLINE void tidy(void) {
  void **tmp = malloc(16384 * sizeof *tmp);
  for (int i = 0; i < 16384; i++)
    tmp[i] = malloc(512);
  for (int i = 0; i < 16384; i++)
    free(tmp[i]);
  free(tmp);
  __asm__ volatile("" ::: "memory");
}

/* ---- frames ---------------------------------------------------------------------------- */

static volatile uintptr_t sink;

static NOINLINE void churn(size_t n) {
  for (int i = 0; i < 4; i++) {
    void *p = malloc(n + (size_t)i * 24);
    sink += (uintptr_t)p;
    free(p);
  }
}

static NOINLINE void vla(int depth, size_t n) { /* the CFA follows the frame pointer */
  char buf[n];
  memset(buf, depth, n);
  sink += (uintptr_t)buf[n - 1];
  if (depth)
    vla(depth - 1, n + 40);
  else
    churn(48);
  __asm__ volatile("" ::: "memory");
}

static NOINLINE void realigned(int depth) { /* the stack pointer rounded down to 64 bytes */
  _Alignas(64) char buf[64];
  memset(buf, depth, sizeof buf);
  sink += (uintptr_t)buf[63];
  if (depth)
    realigned(depth - 1);
  else
    churn(2000);
  __asm__ volatile("" ::: "memory");
}

static NOINLINE void big_frame(int depth) {
  volatile char buf[100000];
  buf[0] = (char)depth;
  buf[99999] = buf[0];
  if (depth)
    big_frame(depth - 1);
  else
    churn(300);
}

__attribute__((optimize("no-omit-frame-pointer"))) static NOINLINE void with_fp(int depth) {
  if (depth)
    with_fp(depth - 1);
  else
    churn(100000); /* (a huge block) */
  __asm__ volatile("" ::: "memory");
}

static NOINLINE void deep(int depth) { /* deeper than the 64 frames a stack keeps */
  if (depth)
    deep(depth - 1);
  else
    churn(64);
  __asm__ volatile("" ::: "memory");
}

/* Two callers, one after the other from the same frame, with frames of the same size: the
 * common callee's allocations start their walks at the same stack pointer, and the stacks
 * differ only in the return address saved for leaf (the memo must see it). */
static NOINLINE void leaf(void) {
  churn(72);
  __asm__ volatile("" ::: "memory");
}
static NOINLINE void via_a(void) {
  leaf();
  __asm__ volatile("" ::: "memory");
}
static NOINLINE void via_b(void) {
  leaf();
  __asm__ volatile("" ::: "memory");
}

static int cmp_alloc(const void *a, const void *b) {
  churn(24);
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static void on_usr1(int sig) { churn(200); }

static void *frames_work(void *arg) {
  for (int r = 0; r < 20; r++) {
    vla(r % 5, 16 + (size_t)r * 8);
    realigned(r % 3);
    big_frame(r % 2);
    with_fp(r % 4);
    deep(200);
    via_a();
    via_b();
    int v[32];
    for (int i = 0; i < 32; i++)
      v[i] = (i * 7919) % 32;
    qsort(v, 32, sizeof v[0], cmp_alloc);
  }
  return arg;
}

static int frames(void) {
  signal(SIGUSR1, on_usr1);
  pthread_t t;
  if (pthread_create(&t, NULL, frames_work, NULL) != 0)
    return 1;
  frames_work(NULL);
  if (pthread_join(t, NULL) != 0)
    return 1;
  for (int i = 0; i < 10; i++)
    raise(SIGUSR1);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "dump") == 0 && argc > 2) {
    noise(100);
    f();
    pthread_t t;
    if (pthread_create(&t, NULL, g_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
      return 1;
    h();
    k();
    m();
    r();
    noise(100);
    int err = ax_prof_dump(argv[2]);
    if (err) {
      fprintf(stderr, "t_prof: ax_prof_dump: %s\n", strerror(err));
      return 1;
    }
    return 0;
  }
  if (strcmp(mode, "threads") == 0 && argc > 2) {
    static void *blocks[64][128];
    for (int i = 0; i < 64; i++) {
      pthread_t t;
      if (pthread_create(&t, NULL, w_thread, blocks[i]) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    }
    int err = ax_prof_dump(argv[2]);
    if (err) {
      fprintf(stderr, "t_prof: ax_prof_dump: %s\n", strerror(err));
      return 1;
    }
    return 0;
  }
  if (strcmp(mode, "leak") == 0) {
    leaky();
    tidy();
    kept = 0; /* forget them: a leak */
    return 0;
  }
  if (strcmp(mode, "signal") == 0) {
    f();
    raise(SIGUSR2);
    return 0;
  }
  if (strcmp(mode, "info") == 0) {
    ax_info_t info;
    ax_info(&info);
    printf("prof_sample %zu\n", info.prof_sample);
    return 0;
  }
  if (strcmp(mode, "frames") == 0)
    return frames();
  if (strcmp(mode, "doublefree") == 0 && argc > 2) {
    for (long i = atol(argv[2]); i > 0; i--) {
      void *p = malloc(4096);
      sink += (uintptr_t)p;
      free(p);
    }
    void *q = malloc(4096);
    printf("%p\n", q);
    fflush(stdout);
    free(q);
    free(q);
    return 0; /* (t_prof.sh: not reached) */
  }
  fprintf(
      stderr,
      "usage: t_prof dump FILE | threads FILE | leak | signal | info | frames | doublefree N\n");
  return 2;
}
