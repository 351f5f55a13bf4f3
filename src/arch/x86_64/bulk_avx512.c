/* SPDX-License-Identifier: MIT */
/* AVX-512 bulk kernels: 64-byte zmm stores (avx512), and the same with non-temporal
 * stores for the aligned body (avx512_nt: VMOVNTDQ zmm). The loop body is the wide shape's,
 * shared with AVX2 (../generic/bulk_body_wide.h); this file gives it the vector and the
 * moves below 64 bytes.
 *
 * Written with SIMDe and compiled with -mavx512f -mavx512bw -mavx512vl (this file only,
 * arch.cmake): natively VMOVDQA64/VMOVDQU64 zmm; built without the flags (tests/t_bulk
 * under qemu-aarch64) the same logic runs as portable code. Contract and list: arch_bulk.h.
 * 64-byte vectors: a 16-byte aligned block needs a head store to reach 64-byte alignment,
 * which every aligned (and every streaming) store here relies on. */
#include <stddef.h>

#include <simde/x86/avx512.h>

#include "arch_bulk.h"

#define W 64 /* bytes per vector */
typedef simde__m512i vec;

static inline vec vzero(void) { return simde_mm512_setzero_si512(); }
static inline vec ld(const char *s) { return simde_mm512_loadu_si512((const void *)s); }
static inline void st(char *d, vec v) { simde_mm512_storeu_si512((void *)d, v); }
/* pre: d 64-byte aligned */
static inline void sta(char *d, vec v, int nt) {
#if defined(SIMDE_X86_AVX512F_NATIVE)
  if (nt) {
    _mm512_stream_si512((void *)d, v); /* SIMDe 0.7.4 has no simde_mm512_stream_si512 */
    return;
  }
#endif
  simde_mm512_store_si512((void *)d, v);
}
static inline void fence_nt(void) { simde_mm_sfence(); }

/* n in {0, 16, 32, 48}: none, one 16-byte move, or two overlapping 32-byte ones */
static inline void zero_lt_w(char *d, size_t n) {
  if (n >= 32) {
    simde_mm256_storeu_si256((void *)d, simde_mm256_setzero_si256());
    simde_mm256_storeu_si256((void *)(d + n - 32), simde_mm256_setzero_si256());
  } else if (n) {
    simde_mm_store_si128((simde__m128i *)(void *)d, simde_mm_setzero_si128());
  }
}
static inline void copy_lt_w(char *d, const char *s, size_t n) {
  if (n >= 32) {
    simde__m256i a = simde_mm256_loadu_si256((const void *)s);
    simde__m256i b = simde_mm256_loadu_si256((const void *)(s + n - 32));
    simde_mm256_storeu_si256((void *)d, a);
    simde_mm256_storeu_si256((void *)(d + n - 32), b);
  } else if (n) {
    simde_mm_store_si128((simde__m128i *)(void *)d, simde_mm_load_si128((const void *)s));
  }
}

#include "../generic/bulk_body_wide.h"

void axi_bulk_zero_avx512(void *p, size_t n) { bulk_zero(p, n, 0); }
void axi_bulk_zero_avx512_nt(void *p, size_t n) { bulk_zero(p, n, 1); }
void axi_bulk_copy_avx512(void *dst, const void *src, size_t n) { bulk_copy(dst, src, n, 0); }
void axi_bulk_copy_avx512_nt(void *dst, const void *src, size_t n) { bulk_copy(dst, src, n, 1); }
