/* SPDX-License-Identifier: MIT */
/* x86-64 CPU features, decoded in one place: cpu_x86_64.c reads CPUID and XGETBV once into
 * the struct below, and both users read that struct, the description (ax_arch_cpu_features,
 * arch.h) and the bulk kernels' detection (bulk_detect.c). */
#ifndef AX_X86_64_ARCH_CPU_H
#define AX_X86_64_ARCH_CPU_H

#include <stddef.h>

/* One flag per feature, in the order the description lists them. The AVX flags are set
 * only when XGETBV shows the OS saves the registers (OSXSAVE, XCR0). */
#define AX_ARCH_CPU_FEATURES(X)                                                                    \
  X(avx2)   /* CPUID.7.0:EBX[5] and XCR0 SSE|AVX */                                                \
  X(avx512) /* CPUID.7.0:EBX[16,30,31] (F, BW, VL) and XCR0 opmask|ZMM_Hi256|Hi16_ZMM */           \
  X(erms)   /* CPUID.7.0:EBX[9] enhanced REP MOVSB/STOSB */                                        \
  X(fsrm)   /* CPUID.7.0:EDX[4] fast short REP MOVSB */

typedef struct ax_arch_cpu {
#define AX_CPU_FLAG(f) unsigned char f;
  AX_ARCH_CPU_FEATURES(AX_CPU_FLAG)
#undef AX_CPU_FLAG
  unsigned char zen4; /* AMD family 0x19 with AVX-512: Zen 4, where the bulk plan was measured */
  size_t l2;          /* L2 data/unified cache per core, bytes (0: unknown) */
  size_t l3;          /* L3 per socket/CCX as CPUID reports it, bytes (0: unknown) */
} ax_arch_cpu_t;

/* The CPU's features, decoded on the first call; every later call returns the same struct.
 * pre: the first call runs before a second thread exists (process init; may be before
 * constructors). post: allocates nothing, no stdio, errno unchanged. */
__attribute__((visibility("hidden"))) const ax_arch_cpu_t *ax_arch_cpu(void);

#endif
