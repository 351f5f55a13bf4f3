/* SPDX-License-Identifier: MIT */
/* AArch64 CPU detection: the one decoder of the auxiliary vector and DCZID_EL0
 * (arch_cpu.h), and what is built from it: the description, the LSE atomics flag, the
 * DC ZVA block size (no allocation, no stdio, errno kept). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

#include "arch.h"
#include "arch_cpu.h"

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ATOMICS
#define HWCAP_ATOMICS (1 << 8)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
#ifndef HWCAP2_MTE
#define HWCAP2_MTE (1 << 18)
#endif

/* ---- the decoder ------------------------------------------------------------------- */

static void decode(ax_arch_cpu_t *f) {
  int saved = errno; /* getauxval sets ENOENT for a missing entry */
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  errno = saved;
  f->asimd = (hw & HWCAP_ASIMD) != 0;
  f->lse = (hw & HWCAP_ATOMICS) != 0;
  f->sve = (hw & HWCAP_SVE) != 0;
  f->mte = (hw2 & HWCAP2_MTE) != 0;

  /* DCZID_EL0 is readable at EL0 (the kernel never traps it): bits 3:0 are log2 of the
   * DC ZVA block in 4-byte words, bit 4 (DZP) set means DC ZVA is prohibited.
   * "=r": the register's value; no memory or flags touched, so no clobbers. */
  uint64_t dczid;
  __asm__ __volatile__("mrs %0, dczid_el0" : "=r"(dczid));
  f->dczva_block = (dczid & 16) ? 0 : (size_t)4 << (dczid & 15);
  f->dczva = f->dczva_block >= 16 && f->dczva_block <= 2048;
}

#include "../generic/cpu_once.h"

/* ---- what is built from it --------------------------------------------------------- */

/* Starts false, the LL/SC side, correct on every core: see arch_atomic.h. */
axi_arch_flag_t axi_arch_lse;

static size_t dczva_size; /* 0 until ax_arch_cpu_detect (arch.h) */
static char features[96] = "baseline";

static void add(char **at, const char *end, const char *name) {
  if (*at != features)
    *(*at)++ = ' ';
  while (*name && *at < end - 1)
    *(*at)++ = *name++;
  **at = 0;
}

void ax_arch_cpu_detect(void) {
  const ax_arch_cpu_t *c = ax_arch_cpu();
  char *at = features, *end = features + sizeof features;
  add(&at, end, c->asimd ? "asimd" : "no-asimd");
  if (c->lse)
    add(&at, end, "lse");
  if (c->sve)
    add(&at, end, "sve");
  if (c->mte)
    add(&at, end, "mte");

  dczva_size = c->dczva_block;
  if (dczva_size) { /* "dczva=<bytes>": 4 << 15 at most, five digits */
    char num[16] = "dczva=", *d = num + 16 - 1;
    size_t n = dczva_size;
    *d = 0;
    do
      *--d = (char)('0' + n % 10);
    while (n /= 10);
    for (char *s = num + 6; (*s++ = *d++);)
      ;
    add(&at, end, num);
  }

  /* Set last, before any other thread exists (pre of ax_arch_cpu_detect). */
  __atomic_store_n(&axi_arch_lse.on, c->lse, __ATOMIC_RELAXED);
}

const char *ax_arch_cpu_features(void) { return features; }

size_t ax_arch_dczva_size(void) { return dczva_size; }

/* ---- memory tagging ----------------------------------------------------------------- */

#ifndef PR_SET_TAGGED_ADDR_CTRL
#define PR_SET_TAGGED_ADDR_CTRL 55
#define PR_TAGGED_ADDR_ENABLE (1UL << 0)
#endif
#ifndef PR_MTE_TCF_SYNC
#define PR_MTE_TCF_SYNC (1UL << 1)
#define PR_MTE_TAG_SHIFT 3
#endif

bool ax_arch_mte_enable(void) {
  int saved = errno;
  bool on =
      ax_arch_cpu()->mte &&
      prctl(PR_SET_TAGGED_ADDR_CTRL,
            PR_TAGGED_ADDR_ENABLE | PR_MTE_TCF_SYNC | (0xfffeUL << PR_MTE_TAG_SHIFT), 0, 0, 0) == 0;
  errno = saved;
  return on;
}

/* ax_arch_mte_set from 1 KiB: DC GVA per DC ZVA block (64 B on most cores, 512 B on qemu's
 * max) over the aligned middle of a span of two blocks or more, STG around it. ST2G alone
 * costs 4 instructions per 32 B with its loop: a 64 KiB malloc+free 16,849, with DC GVA
 * 2,043 (qemu -cpu max). */
void ax_arch_mte_set_large(void *p, size_t n) {
  char *q = p, *end = q + n;
  size_t z = dczva_size;
  if (z && n >= 2 * z) {
    for (; (uintptr_t)q & (z - 1); q += 16)
      __asm__ __volatile__(".arch armv8.5-a+memtag\n\tstg %0, [%0]" : : "r"(q) : "memory");
    for (; q + z <= end; q += z)
      __asm__ __volatile__(".arch armv8.5-a+memtag\n\tdc gva, %0" : : "r"(q) : "memory");
  }
  for (; q < end; q += 16)
    __asm__ __volatile__(".arch armv8.5-a+memtag\n\tstg %0, [%0]" : : "r"(q) : "memory");
}
