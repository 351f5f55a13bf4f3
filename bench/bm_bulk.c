/* SPDX-License-Identifier: MIT */
/* bm_bulk: every bulk kernel of this backend (arch_bulk.h's list) against the C library's
 * memset/memcpy, 64 B .. 64 MiB, GB/s as a markdown table. Kernels the CPU lacks are
 * skipped. The dispatch plan in src/arch/<arch>/bulk_detect.c comes from these numbers;
 * docs/bulk.md has the tables and how they were taken.
 *
 *   bm_bulk [zero|copy|both] [-r repeats] [-t ms] [-o offset] [-s factor | -a add]
 *           [-m min] [-M max] [-u]
 *
 * Each cell is the best of `repeats` passes (-r, default 5); one pass calls the kernel on
 * the same buffer in batches that double until a batch takes `ms` (-t, default 10), so
 * sizes up to the cache sizes measure cache-resident throughput and the largest measure
 * memory. Passes go over all sizes and kernels in turn, so a noisy moment of a shared
 * machine spreads over all cells instead of spoiling one column. -o offsets the buffers
 * from a page boundary (default 0; 16 gives the 16-byte-only alignment of some blocks);
 * rows go from -m (64) to -M (64M) bytes (suffixes K, M), each -s times the last (2; 4,
 * or 1.189 for four rows per doubling), rounded to 16, or -a bytes more than the last.
 * -u ("use"): after each call, read the region back (one load per 64-byte line), as a
 * program reads the block calloc or realloc gave it; the time of both counts. This is what
 * separates streaming stores (the data is not in the cache afterwards) from ordinary ones. Both
 * buffers are mapped and touched before timing. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "arch_bulk.h"

typedef void (*zero_fn)(void *p, size_t n);
typedef void (*copy_fn)(void *dst, const void *src, size_t n);

static struct kernel {
  const char *name;
  zero_fn zero;
  copy_fn copy;
  int supported;
} kernels[] = {
    /* clang-format off */
    {"libc", NULL, NULL, 1}, /* memset/memcpy themselves, see measure() */
#define AX_BM_ROW(name, zero, copy, supported) {#name, zero, copy, 0},
    AX_ARCH_BULK_KERNELS(AX_BM_ROW)
#undef AX_BM_ROW
    /* clang-format on */
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

static void mark_supported(void) {
  int k = 1;
#define AX_BM_SUPP(name, zero, copy, supp) kernels[k++].supported = (supp);
  AX_ARCH_BULK_KERNELS(AX_BM_SUPP)
#undef AX_BM_SUPP
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int use_after; /* -u */
static volatile uint64_t use_sink;

/* Read the region back: one 8-byte load per 64-byte line. */
static void use(const char *p, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i += 64)
    sum += *(const uint64_t *)(const void *)(p + i);
  use_sink += sum;
}

/* GB/s (1e9 bytes per second) of one pass: batches double until one takes `budget` s. */
static double measure(const struct kernel *k, int copy, char *dst, const char *src, size_t n,
                      double budget) {
  if (use_after) { /* the same, plus use() after each call (no volatile-pointer loops) */
    for (size_t batch = 1;; batch *= 2) {
      double t0 = now();
      for (size_t i = 0; i < batch; i++) {
        if (copy && k->copy)
          k->copy(dst, src, n);
        else if (copy)
          memcpy(dst, src, n);
        else if (k->zero)
          k->zero(dst, n);
        else
          memset(dst, 0, n);
        use(dst, n);
      }
      double t = now() - t0;
      if (t >= budget || batch >= ((size_t)1 << 40))
        return (double)n * (double)batch / t / 1e9;
    }
  }
  /* volatile pointers: one real call per iteration, never inlined or merged. "libc" calls
   * memset/memcpy straight (as the dispatcher does for its libc ranges), not a wrapper. */
  zero_fn volatile zf = k->zero;
  copy_fn volatile cf = k->copy;
  void *(*volatile ms)(void *, int, size_t) = memset;
  void *(*volatile mc)(void *, const void *, size_t) = memcpy;
  for (size_t batch = 1;; batch *= 2) {
    double t0 = now();
    if (copy && cf)
      for (size_t i = 0; i < batch; i++)
        cf(dst, src, n);
    else if (copy)
      for (size_t i = 0; i < batch; i++)
        mc(dst, src, n);
    else if (zf)
      for (size_t i = 0; i < batch; i++)
        zf(dst, n);
    else
      for (size_t i = 0; i < batch; i++)
        ms(dst, 0, n);
    double t = now() - t0;
    if (t >= budget || batch >= ((size_t)1 << 40))
      return (double)n * (double)batch / t / 1e9;
  }
}

static void cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    char *c = strchr(line, ':');
    if (c && (strncmp(line, "model name", 10) == 0 || strncmp(line, "CPU part", 8) == 0)) {
      c += 2;
      c[strcspn(c, "\n")] = 0;
      snprintf(out, cap, "%s", c);
      break;
    }
  }
  fclose(f);
}

static size_t parse_size(const char *s) {
  char *end;
  size_t v = (size_t)strtoul(s, &end, 0);
  if (*end == 'K' || *end == 'k')
    v <<= 10;
  else if (*end == 'M' || *end == 'm')
    v <<= 20;
  return v;
}

static void size_label(size_t n, char *out, size_t cap) {
  if (n >= ((size_t)1 << 20) && n % ((size_t)1 << 20) == 0)
    snprintf(out, cap, "%zu MiB", n >> 20);
  else if (n >= ((size_t)1 << 20))
    snprintf(out, cap, "%.1f MiB", (double)n / (1 << 20));
  else if (n >= 1024 && n % 1024 == 0)
    snprintf(out, cap, "%zu KiB", n >> 10);
  else
    snprintf(out, cap, "%zu B", n);
}

int main(int argc, char **argv) {
  int do_zero = 1, do_copy = 1, repeats = 5;
  double budget = 0.010, step = 2.0;
  size_t offset = 0, min = 64, max = (size_t)64 << 20, add = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "zero") == 0)
      do_copy = 0;
    else if (strcmp(argv[i], "copy") == 0)
      do_zero = 0;
    else if (strcmp(argv[i], "both") == 0)
      do_zero = do_copy = 1;
    else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
      repeats = atoi(argv[++i]);
    else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
      budget = atof(argv[++i]) / 1e3;
    else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
      offset = (size_t)strtoul(argv[++i], NULL, 0) & ~(size_t)15;
    else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
      step = atof(argv[++i]);
    else if (strcmp(argv[i], "-a") == 0 && i + 1 < argc)
      add = parse_size(argv[++i]) & ~(size_t)15;
    else if (strcmp(argv[i], "-u") == 0)
      use_after = 1;
    else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
      min = parse_size(argv[++i]);
    else if (strcmp(argv[i], "-M") == 0 && i + 1 < argc)
      max = parse_size(argv[++i]);
    else {
      fprintf(stderr,
              "usage: %s [zero|copy|both] [-r repeats] [-t ms] [-o offset] [-s factor "
              "| -a add] [-m min] [-M max] [-u]\n",
              argv[0]);
      return 2;
    }
  }
  if (repeats < 1)
    repeats = 1;
  if (!(step >= 1.05))
    step = 2.0;
  if (min < 16)
    min = 16;
  if (max < min)
    max = min;

  ax_arch_bulk_detect();
  mark_supported();

  size_t sizes[64];
  int nsizes = 0;
  for (double x = (double)min; x <= (double)max + 0.5 && nsizes < 64;
       x = add ? x + (double)add : x * step) {
    size_t n = ((size_t)(x + 8) & ~(size_t)15);
    if (n && (nsizes == 0 || n > sizes[nsizes - 1]))
      sizes[nsizes++] = n;
  }

  size_t map = max + offset + 4096;
  char *dst = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *src = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (dst == MAP_FAILED || src == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  memset(dst, 1, map);
  for (size_t i = 0; i < map; i++)
    src[i] = (char)(i * 131 + 7);
  dst += offset;
  src += offset;

  char model[128];
  cpu_model(model, sizeof model);
  time_t t = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
  printf("bm_bulk: %s, %s; features:", model, date);
#define AX_BM_FEATURE(f)                                                                           \
  if (ax_arch_bulk_has_##f())                                                                      \
    printf(" %s", #f);
  AX_ARCH_BULK_FEATURES(AX_BM_FEATURE)
#undef AX_BM_FEATURE
#if defined(__x86_64__)
  printf("; L2 %zu KiB, L3 %zu KiB", ax_arch_bulk_cpu.l2 >> 10, ax_arch_bulk_cpu.l3 >> 10);
#elif defined(__aarch64__)
  printf("; DC ZVA block %zu B", ax_arch_bulk_cpu.dczva_block);
#endif
  printf("\nbest of %d passes of >= %.0f ms each; buffers at page + %zu%s\n", repeats, budget * 1e3,
         offset, use_after ? "; -u: each call followed by a read of the region" : "");

  static double best[2][64][16];
  for (int op = 0; op < 2; op++) {
    if ((op == 0 && !do_zero) || (op == 1 && !do_copy))
      continue;
    for (int r = 0; r < repeats; r++)
      for (int s = 0; s < nsizes; s++)
        for (size_t k = 0; k < NKERNELS && k < 16; k++) {
          if (!kernels[k].supported)
            continue;
          double g = measure(&kernels[k], op, dst, src, sizes[s], budget);
          if (g > best[op][s][k])
            best[op][s][k] = g;
        }

    printf("\n### %s, GB/s (higher is better)\n\n| size |", op ? "copy (memcpy)" : "zero (memset)");
    for (size_t k = 0; k < NKERNELS; k++)
      if (kernels[k].supported)
        printf(" %s |", kernels[k].name);
    printf(" best vs libc |\n|---:|");
    for (size_t k = 0; k < NKERNELS; k++)
      if (kernels[k].supported)
        printf("---:|");
    printf("---|\n");
    for (int s = 0; s < nsizes; s++) {
      char label[32];
      size_label(sizes[s], label, sizeof label);
      printf("| %s |", label);
      size_t win = 0;
      for (size_t k = 0; k < NKERNELS; k++) {
        if (!kernels[k].supported)
          continue;
        printf(" %.1f |", best[op][s][k]);
        if (best[op][s][k] > best[op][s][win])
          win = k;
      }
      printf(" %s %+.0f%% |\n", kernels[win].name,
             100.0 * (best[op][s][win] / best[op][s][0] - 1.0));
    }
  }
  return 0;
}
