/* SPDX-License-Identifier: MIT */
/* Bulk zeroing and copying for calloc and realloc: a dispatch table over the backend's
 * kernels (arch_bulk.h lists them) and the C library's memset/memcpy ("libc").
 *
 * The table maps size ranges to kernels. It starts on the backend's baseline kernel, so a
 * call before axi_bulk_init is correct; axi_bulk_init fills it once, from
 *   - AXMALLOC_FORCE_ISA=<name>: that kernel for every size (tests, benchmarks), when the
 *     CPU supports it; otherwise the option is ignored (options.c's message; for a kernel the
 *     CPU lacks under AXMALLOC_VERBOSE only);
 *   - else the backend's measured plan (ax_arch_bulk_plan): per size range the kernel that
 *     beat glibc there in bench/bm_bulk, and "libc" where none did (docs/bulk.md).
 */
#include <stdint.h>
#include <string.h>

#include "arch_bulk.h"
#include "bulk.h"

#include "options.h"
#include "print.h"
#include "state.h"

typedef void (*zero_fn)(void *p, size_t n);
typedef void (*copy_fn)(void *dst, const void *src, size_t n);

static void zero_libc(void *p, size_t n) { memset(p, 0, n); }
static void copy_libc(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

/* ---- the kernels: "libc", then the backend's list ------------------------------------ */

enum {
  AX_BULK_libc,
#define AX_BULK_ENUM(name, zero, copy, supported) AX_BULK_##name,
  AX_ARCH_BULK_KERNELS(AX_BULK_ENUM)
#undef AX_BULK_ENUM
      AX_BULK_KERNEL_COUNT
};

static const struct {
  const char *name;
  zero_fn zero;
  copy_fn copy;
} kernels[AX_BULK_KERNEL_COUNT] = {
    /* clang-format off */
    {"libc", zero_libc, copy_libc},
#define AX_BULK_ROW(name, zero, copy, supported) {#name, zero, copy},
    AX_ARCH_BULK_KERNELS(AX_BULK_ROW)
#undef AX_BULK_ROW
    /* clang-format on */
};

/* pre: ax_arch_bulk_detect ran. */
static int supported(int k) {
  switch (k) {
#define AX_BULK_SUPPORTED(name, zero, copy, supp)                                                  \
  case AX_BULK_##name:                                                                             \
    return (supp);
    AX_ARCH_BULK_KERNELS(AX_BULK_SUPPORTED)
#undef AX_BULK_SUPPORTED
  default:
    return 1; /* libc */
  }
}

/* The kernel's index, or -1 when `name` is not listed. */
static int find(const char *name) {
  for (int k = 0; k < AX_BULK_KERNEL_COUNT; k++)
    if (strcmp(kernels[k].name, name) == 0)
      return k;
  return -1;
}

/* ---- the table ----------------------------------------------------------------------- */

/* Range i covers sizes below upto[i] not covered by range i-1; the last has SIZE_MAX. */
typedef struct {
  size_t upto[AX_BULK_STEPS];
  zero_fn fn[AX_BULK_STEPS];
  unsigned char kernel[AX_BULK_STEPS];
} zero_table_t;
typedef struct {
  size_t upto[AX_BULK_STEPS];
  copy_fn fn[AX_BULK_STEPS];
  unsigned char kernel[AX_BULK_STEPS];
} copy_table_t;

#define AX_BULK_BASELINE_NAME_(k) AX_BULK_##k
#define AX_BULK_BASELINE_NAME(k) AX_BULK_BASELINE_NAME_(k)
#define AX_BULK_BASELINE_FN_(op, k) axi_bulk_##op##_##k
#define AX_BULK_BASELINE_FN(op, k) AX_BULK_BASELINE_FN_(op, k)

static zero_table_t zero_table = {{SIZE_MAX},
                                  {AX_BULK_BASELINE_FN(zero, AX_ARCH_BULK_BASELINE)},
                                  {AX_BULK_BASELINE_NAME(AX_ARCH_BULK_BASELINE)}};
static copy_table_t copy_table = {{SIZE_MAX},
                                  {AX_BULK_BASELINE_FN(copy, AX_ARCH_BULK_BASELINE)},
                                  {AX_BULK_BASELINE_NAME(AX_ARCH_BULK_BASELINE)}};
static unsigned char zero_ranges = 1, copy_ranges = 1;

/* Turn a plan (ascending steps) into a table; steps naming an unknown or unsupported
 * kernel fall back to libc. post: returns the number of ranges (>= 1). */
static int fill(const ax_bulk_step_t *plan, size_t *upto, unsigned char *kernel) {
  int r = 0;
  for (int i = 0; i < AX_BULK_STEPS && plan[i].kernel; i++) {
    int k = find(plan[i].kernel);
    if (k < 0 || !supported(k))
      k = AX_BULK_libc;
    if (r > 0 && kernel[r - 1] == k)
      continue; /* same kernel as the range below: merge */
    if (r > 0)
      upto[r - 1] = plan[i].from;
    kernel[r++] = (unsigned char)k;
  }
  if (r == 0)
    kernel[r++] = AX_BULK_libc;
  upto[r - 1] = SIZE_MAX;
  return r;
}

/* AXMALLOC_FORCE_ISA's kernel, or -1. A name this build does not know is a mistake, and said;
 * a kernel this CPU lacks is said under AXMALLOC_VERBOSE only, because the test passes force
 * every kernel on every machine. */
static int forced_kernel(void) {
  if (!axi_option_from_env(AXI_OPTION_FORCE_ISA))
    return -1;
  int k = find(axi_option_str(AXI_OPTION_FORCE_ISA));
  if (k < 0) {
    static char why[256] = "is not a bulk kernel ("; /* (process init: alone) */
    for (int i = 0; i < AX_BULK_KERNEL_COUNT; i++)
      strcat(strcat(why, i ? ", " : ""), kernels[i].name);
    axi_option_reject(AXI_OPTION_FORCE_ISA, strcat(why, ")"), true);
  } else if (!supported(k)) {
    axi_option_reject(AXI_OPTION_FORCE_ISA, "is not a kernel this CPU supports",
                      axi_options.verbose);
    k = -1;
  }
  return k;
}

/* AXMALLOC_VERBOSE: one table in one line, its ranges when it has more than one. Printed here,
 * after the version line (process init calls this after it), and only here: the start-up
 * block no longer names the largest sizes' kernel besides (issue 42: "bulk zero libc" under
 * three ranges of which two were not libc). */
static void say_plan(const char *op, const unsigned char *kernel, const size_t *upto, int n) {
  if (n == 1) {
    axi_write("axmalloc: bulk %s %s\n", op, kernels[kernel[0]].name);
    return;
  }
  axi_write("axmalloc: bulk %s by size:", op);
  for (int i = 0; i < n; i++)
    axi_write("%s %s from %zu B", i ? "," : "", kernels[kernel[i]].name,
              i ? upto[i - 1] : (size_t)0);
  axi_write("\n");
}

void axi_bulk_init(void) {
  ax_arch_bulk_detect();
  ax_bulk_step_t zplan[AX_BULK_STEPS] = {{0}}, cplan[AX_BULK_STEPS] = {{0}};
  int forced = forced_kernel();
  if (forced >= 0) {
    zplan[0] = cplan[0] = (ax_bulk_step_t){0, kernels[forced].name};
  } else {
    ax_arch_bulk_plan(zplan, cplan);
  }

  zero_table_t z = {0};
  copy_table_t c = {0};
  int nz = fill(zplan, z.upto, z.kernel), nc = fill(cplan, c.upto, c.kernel);
  for (int i = 0; i < nz; i++)
    z.fn[i] = kernels[z.kernel[i]].zero;
  for (int i = 0; i < nc; i++)
    c.fn[i] = kernels[c.kernel[i]].copy;
  /* pre of process init (lifecycle.c): no other thread allocates yet, so plain stores publish. */
  zero_table = z;
  copy_table = c;
  zero_ranges = (unsigned char)nz;
  copy_ranges = (unsigned char)nc;

  if (axi_options.verbose && nz == 1 && nc == 1)
    axi_write("axmalloc: bulk zero %s, bulk copy %s\n", kernels[z.kernel[0]].name,
              kernels[c.kernel[0]].name);
  else if (axi_options.verbose) {
    say_plan("zero", z.kernel, z.upto, nz);
    say_plan("copy", c.kernel, c.upto, nc);
  }
}

/* ---- the calls ----------------------------------------------------------------------- */

/* libc ranges call memset/memcpy directly rather than through zero_libc: one indirect
 * jump less, and the same call the allocator made before there was a table. */
void axi_bulk_zero(void *p, size_t n) {
  int i = 0;
  while (n >= zero_table.upto[i]) /* the last range ends at SIZE_MAX */
    i++;
  if (zero_table.kernel[i] == AX_BULK_libc)
    memset(p, 0, n);
  else
    zero_table.fn[i](p, n);
}

void axi_bulk_copy(void *dst, const void *src, size_t n) {
  int i = 0;
  while (n >= copy_table.upto[i])
    i++;
  if (copy_table.kernel[i] == AX_BULK_libc)
    memcpy(dst, src, n);
  else
    copy_table.fn[i](dst, src, n);
}

/* The kernel of the largest sizes (the only one unless the plan splits by size). */
const char *axi_bulk_zero_name(void) { return kernels[zero_table.kernel[zero_ranges - 1]].name; }
const char *axi_bulk_copy_name(void) { return kernels[copy_table.kernel[copy_ranges - 1]].name; }
