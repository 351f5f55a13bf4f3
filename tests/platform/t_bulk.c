/* SPDX-License-Identifier: MIT */
/* The bulk kernels (src/arch/<arch>/arch_bulk.h) and their dispatch.
 *
 *   t_bulk        guard-band sweeps of every kernel in this backend's list that the CPU
 *                 supports, and of the other backend's kernels built through SIMDe
 *                 (portable code: the x86 kernels' logic under qemu-aarch64, the NEON and
 *                 DC ZVA logic on x86-64); then the allocator checks below.
 *   t_bulk alloc  the allocator checks only: AXMALLOC_FORCE_ISA=<k> shows in ax_info() when
 *                 the CPU supports <k> (and is ignored otherwise); calloc of dirty reused
 *                 blocks returns zeros and realloc keeps contents, small to huge.
 *
 * A sweep fills a buffer with a sentinel, runs the kernel on [off, off+n) for every 16-byte
 * offset in 0..240 and every n = 0, 16, .. 4 KiB (copies also from three source offsets),
 * and checks the bytes before, inside and after; then a few big sizes (1 MiB, 9 MiB + 48:
 * the streaming-store paths) with 4 KiB guards.
 * Stand-ins (asm-only kernels in the other backend): erms on AArch64 is a byte loop and
 * tests nothing of REP STOSB; dczva on x86-64 zeroes the aligned block like DC ZVA, so the
 * head/body/tail logic is tested with block sizes 16 .. 2048. */
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"

#if defined(__x86_64__)
#include "x86_64/arch_bulk.h"
#define AX_BULK_FOREIGN 1
#include "aarch64/arch_bulk.h"
#define FOREIGN_KERNELS(X) AX_BULK_KERNELS_AARCH64(X)
#define FOREIGN_HAS_DCZVA 1
#elif defined(__aarch64__)
#include "aarch64/arch_bulk.h"
#define AX_BULK_FOREIGN 1
#include "x86_64/arch_bulk.h"
#define FOREIGN_KERNELS(X) AX_BULK_KERNELS_X86_64(X)
#define FOREIGN_HAS_DCZVA 0
#else
#error "t_bulk: no bulk kernels for this architecture"
#endif

typedef void (*zero_fn)(void *p, size_t n);
typedef void (*copy_fn)(void *dst, const void *src, size_t n);

typedef struct kernel {
  const char *name;
  zero_fn zero;
  copy_fn copy;
  int native;    /* this backend's (else the other's, through SIMDe) */
  int supported; /* native: the CPU has it; other backend: always (portable build) */
} kernel_t;

static kernel_t kernels[] = {
/* clang-format off */
#define NATIVE_ROW(name, zero, copy, supp) {#name, zero, copy, 1, 0},
    AX_ARCH_BULK_KERNELS(NATIVE_ROW)
#undef NATIVE_ROW
#define FOREIGN_ROW(name, zero, copy, supp) {#name "(simde)", zero, copy, 0, 1},
    FOREIGN_KERNELS(FOREIGN_ROW)
#undef FOREIGN_ROW
    /* clang-format on */
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])
#define MIB ((size_t)1 << 20)

void ax_arch_cpu_detect(void); /* cpu_<arch>.c, compiled into this test (arch.h) */

static void detect(void) {
  ax_arch_cpu_detect(); /* the bulk detection reads what it found (DC ZVA block size) */
  ax_arch_bulk_detect();
  int k = 0;
#define NATIVE_SUPP(name, zero, copy, supp) kernels[k++].supported = (supp);
  AX_ARCH_BULK_KERNELS(NATIVE_SUPP)
#undef NATIVE_SUPP
}

/* ---- guard-band sweeps --------------------------------------------------------------- */

#define SENTINEL 0xA5
#define MAX_OFF 256 /* offsets 0, 16, .. 240 */

static uint8_t *dst_buf, *src_buf;
static size_t buf_size;

static void fill(uint8_t *b, size_t from, size_t to, uint8_t v) {
  for (size_t i = from; i < to; i++)
    b[i] = v;
}

static size_t find_not(const uint8_t *b, size_t from, size_t to, uint8_t v) {
  for (size_t i = from; i < to; i++)
    if (b[i] != v)
      return i;
  return PAT_OK;
}

/* One run: the kernel on dst_buf[guard+off, +n) (from src_buf[guard+soff, +n)), checking
 * the `guard` bytes on each side. pre: guard+off+n+guard <= buf_size, same for soff. */
static void run_one(const kernel_t *k, int copy, size_t guard, size_t off, size_t soff, size_t n) {
  size_t lo = guard + off, hi = lo + n, end = hi + guard;
  fill(dst_buf, off, end, SENTINEL);
  if (copy) {
    pat_fill(src_buf, guard + soff, guard + soff + n, 7);
    k->copy(dst_buf + lo, src_buf + guard + soff, n);
  } else {
    k->zero(dst_buf + lo, n);
  }
  size_t bad = find_not(dst_buf, off, lo, SENTINEL);
  CHECKF(bad == PAT_OK, "%s %s: off %zu n %zu: byte %zd before the region written", k->name,
         copy ? "copy" : "zero", off, n, (ptrdiff_t)(bad - lo));
  bad = find_not(dst_buf, hi, end, SENTINEL);
  CHECKF(bad == PAT_OK, "%s %s: off %zu n %zu: byte %zu after the region written", k->name,
         copy ? "copy" : "zero", off, n, bad - hi);
  if (copy) {
    /* the source pattern is position based: compare byte i of dst with byte i of src */
    for (size_t i = 0; i < n; i++)
      CHECKF(dst_buf[lo + i] == src_buf[guard + soff + i],
             "%s copy: off %zu soff %zu n %zu: byte %zu is %#x, source %#x", k->name, off, soff, n,
             i, dst_buf[lo + i], src_buf[guard + soff + i]);
  } else {
    CHECKF(all_zero(dst_buf + lo, n), "%s zero: off %zu n %zu: a byte inside is not zero", k->name,
           off, n);
  }
}

static void sweep(const kernel_t *k, size_t max_n) {
  const size_t guard = 256;
  for (size_t off = 0; off < MAX_OFF; off += 16)
    for (size_t n = 0; n <= max_n; n += 16) {
      run_one(k, 0, guard, off, 0, n);
      static const size_t shift[] = {0, 16, 48}; /* source misaligned against dst by ... */
      for (int s = 0; s < 3; s++)
        run_one(k, 1, guard, off, (off + shift[s]) % MAX_OFF, n);
    }
  /* big: the streaming-store paths (NT kernels), DC ZVA with many blocks */
  static const size_t big[] = {(size_t)1 << 20, ((size_t)9 << 20) + 48};
  for (int b = 0; b < 2; b++)
    for (size_t off = 16; off < 64; off += 32) {
      run_one(k, 0, 4096, off, 0, big[b]);
      run_one(k, 1, 4096, off, off + 32, big[b]);
    }
}

static void test_kernels(void) {
  size_t max_n = scaled(4096) & ~(size_t)15;
  if (max_n < 1024)
    max_n = 1024;
  buf_size = ((size_t)10 << 20);
  dst_buf = mmap(NULL, buf_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  src_buf = mmap(NULL, buf_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(dst_buf != MAP_FAILED && src_buf != MAP_FAILED);

  int tested = 0;
  for (size_t i = 0; i < NKERNELS; i++) {
    const kernel_t *k = &kernels[i];
    if (!k->supported) {
      printf("t_bulk: %s: not supported by this CPU, skipped\n", k->name);
      continue;
    }
#if FOREIGN_HAS_DCZVA
    if (!k->native && strcmp(k->name, "dczva(simde)") == 0) {
      /* the stand-in: every block size DCZID_EL0 can give that the kernel accepts, and 0
       * (prohibited: NEON only) */
      static const size_t blocks[] = {0, 16, 32, 64, 128, 256, 2048};
      for (int b = 0; b < 7; b++) {
        axi_bulk_dczva_block = blocks[b];
        sweep(k, max_n);
      }
      printf("t_bulk: %s: swept with DC ZVA blocks 0 (prohibited), 16 .. 2048\n", k->name);
      tested++;
      continue;
    }
#endif
    sweep(k, max_n);
    printf("t_bulk: %s: guard-band sweep OK (n <= %zu, offsets 0..240, 1 MiB, 9 MiB)\n", k->name,
           max_n);
    tested++;
  }
#if !FOREIGN_HAS_DCZVA
  /* natively: DC ZVA prohibited must fall back to NEON alone */
  size_t saved = axi_bulk_dczva_block;
  axi_bulk_dczva_block = 0;
  for (size_t i = 0; i < NKERNELS; i++)
    if (kernels[i].native && strcmp(kernels[i].name, "dczva") == 0)
      sweep(&kernels[i], 1024);
  axi_bulk_dczva_block = saved;
  printf("t_bulk: dczva with DC ZVA prohibited (block 0): NEON fallback OK; block here %zu\n",
         saved);
#endif
  CHECK(tested >= 2);
  munmap(dst_buf, buf_size);
  munmap(src_buf, buf_size);
}

/* ---- through the allocator ----------------------------------------------------------- */

static void test_forced(void) {
  ax_info_t info;
  ax_info(&info);
  CHECK(info.bulk_zero != NULL && info.bulk_copy != NULL);
  const char *force = getenv("AXMALLOC_FORCE_ISA");
  if (!force || !*force) { /* the plan's kernels: "libc" or ones the CPU supports */
    for (int op = 0; op < 2; op++) {
      const char *name = op ? info.bulk_copy : info.bulk_zero;
      int ok = strcmp(name, "libc") == 0;
      for (size_t i = 0; i < NKERNELS; i++)
        ok |= kernels[i].native && kernels[i].supported && strcmp(kernels[i].name, name) == 0;
      CHECKF(ok, "default bulk %s kernel %s: not libc nor a supported kernel", op ? "copy" : "zero",
             name);
    }
    printf("t_bulk: default dispatch: zero %s, copy %s\n", info.bulk_zero, info.bulk_copy);
    return;
  }
  int supported = strcmp(force, "libc") == 0, known = supported;
  for (size_t i = 0; i < NKERNELS; i++)
    if (kernels[i].native && strcmp(kernels[i].name, force) == 0) {
      known = 1;
      supported = kernels[i].supported;
    }
  if (supported) {
    CHECKF(strcmp(info.bulk_zero, force) == 0 && strcmp(info.bulk_copy, force) == 0,
           "AXMALLOC_FORCE_ISA=%s but ax_info says zero %s, copy %s", force, info.bulk_zero,
           info.bulk_copy);
    printf("t_bulk: AXMALLOC_FORCE_ISA=%s: in use for zero and copy\n", force);
  } else {
    CHECKF(strcmp(info.bulk_zero, force) != 0 && strcmp(info.bulk_copy, force) != 0,
           "AXMALLOC_FORCE_ISA=%s (%s) was not ignored", force,
           known ? "unsupported here" : "unknown");
    printf("t_bulk: AXMALLOC_FORCE_ISA=%s %s: ignored (zero %s, copy %s)\n", force,
           known ? "unsupported here" : "unknown", info.bulk_zero, info.bulk_copy);
  }
}

/* Dirty blocks of size n freed, then calloc'd again: zero. */
static void calloc_dirty(size_t n, int count) {
  void *ps[8];
  for (int i = 0; i < count; i++) {
    ps[i] = malloc(n);
    CHECK(ps[i] != NULL);
    memset(ps[i], 0xAA, malloc_usable_size(ps[i]));
  }
  for (int i = 0; i < count; i++)
    free(ps[i]);
  for (int i = 0; i < count; i++) {
    ps[i] = calloc(1, n);
    CHECKF(ps[i] != NULL && all_zero(ps[i], n), "calloc(1, %zu) of a dirty block not zero", n);
    memset(ps[i], 0xAA, n); /* dirty again for the next size */
  }
  for (int i = count - 1; i >= 0; i--)
    free(ps[i]);
}

/* realloc through a chain of sizes: the prefix that fits keeps its pattern. */
static void realloc_chain(const size_t *sizes, int count) {
  size_t have = sizes[0];
  uint8_t *p = malloc(have);
  CHECK(p != NULL);
  pat_fill(p, 0, have, 3);
  for (int i = 1; i < count; i++) {
    size_t n = sizes[i], keep = have < n ? have : n;
    p = realloc(p, n);
    CHECKF(p != NULL, "realloc to %zu failed", n);
    size_t bad = pat_find_bad(p, 0, keep, 3);
    CHECKF(bad == PAT_OK, "realloc %zu -> %zu: byte %zu changed", have, n, bad);
    pat_fill(p, keep, n, 3);
    have = n;
  }
  free(p);
}

static void test_alloc(void) {
  check_axmalloc_active();
  test_forced();
  static const size_t sizes[] = {16,    48,    64,      80,      128,           240,
                                 256,   496,   1024,    4000,    8192,          16384,
                                 65536, 96000, 1 * MIB, 3 * MIB, 9 * MIB + 4096};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    calloc_dirty(sizes[i], sizes[i] > MIB ? 2 : 8);
  static const size_t chain[] = {16,      100,     1000,  5000,    60000,   300000,
                                 1 * MIB, 5 * MIB, 70000, 9 * MIB, 2 * MIB, 64,
                                 40000,   20000,   10000, 4096,    500,     32};
  realloc_chain(chain, (int)(sizeof chain / sizeof chain[0]));
  printf("t_bulk: calloc of dirty blocks zero, realloc keeps contents (16 B .. 9 MiB)\n");
}

int main(int argc, char **argv) {
  detect();
  if (!(argc > 1 && strcmp(argv[1], "alloc") == 0))
    test_kernels();
  test_alloc();
  printf("t_bulk: OK\n");
  return 0;
}
