/* SPDX-License-Identifier: MIT */
/* AVX2 bulk kernels: 32-byte stores (avx2), and the same with non-temporal stores for the
 * aligned body (avx2_nt: VMOVNTDQ writes around the caches, no read-for-ownership). The
 * loop body is the wide shape's, shared with AVX-512 (../generic/bulk_body_wide.h); this
 * file gives it the vector and the moves below 32 bytes.
 *
 * Written with SIMDe and compiled with -mavx2 (this file only, arch.cmake): natively the
 * intrinsics are VMOVDQA/VMOVDQU ymm and VMOVNTDQ; built without the flag (tests/t_bulk
 * under qemu-aarch64) the same logic runs as portable code. Contract and list: arch_bulk.h. */
#include <stddef.h>

#include <simde/x86/avx2.h>

#include "arch_bulk.h"

#define W 32 /* bytes per vector */
typedef simde__m256i vec;

static inline vec vzero(void) { return simde_mm256_setzero_si256(); }
static inline vec ld(const char *s) { return simde_mm256_loadu_si256((const void *)s); }
static inline void st(char *d, vec v) { simde_mm256_storeu_si256((void *)d, v); }
/* pre: d 32-byte aligned */
static inline void sta(char *d, vec v, int nt) {
  if (nt)
    simde_mm256_stream_si256((simde__m256i *)(void *)d, v);
  else
    simde_mm256_store_si256((simde__m256i *)(void *)d, v);
}
static inline void fence_nt(void) { simde_mm_sfence(); }

/* n in {0, 16}: one 16-byte move or none */
static inline void zero_lt_w(char *d, size_t n) {
  if (n)
    simde_mm_store_si128((simde__m128i *)(void *)d, simde_mm_setzero_si128());
}
static inline void copy_lt_w(char *d, const char *s, size_t n) {
  if (n)
    simde_mm_store_si128((simde__m128i *)(void *)d, simde_mm_load_si128((const void *)s));
}

#include "../generic/bulk_body_wide.h"

void axi_bulk_zero_avx2(void *p, size_t n) { bulk_zero(p, n, 0); }
void axi_bulk_zero_avx2_nt(void *p, size_t n) { bulk_zero(p, n, 1); }
void axi_bulk_copy_avx2(void *dst, const void *src, size_t n) { bulk_copy(dst, src, n, 0); }
void axi_bulk_copy_avx2_nt(void *dst, const void *src, size_t n) { bulk_copy(dst, src, n, 1); }
