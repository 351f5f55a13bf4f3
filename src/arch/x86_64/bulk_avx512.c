/* AVX-512 bulk kernels: 64-byte zmm stores (avx512), and the same with non-temporal
 * stores for the aligned body (avx512_nt: VMOVNTDQ zmm).
 *
 * Written with SIMDe and compiled with -mavx512f -mavx512bw -mavx512vl (this file only,
 * arch.cmake): natively VMOVDQA64/VMOVDQU64 zmm; built without the flags (tests/t_bulk
 * under qemu-aarch64) the same logic runs as portable code. Contract and list: arch_bulk.h.
 * 64-byte vectors: a 16-byte aligned block needs a head store to reach 64-byte alignment,
 * which every aligned (and every streaming) store here relies on. */
#include <stddef.h>
#include <stdint.h>

#include <simde/x86/avx512.h>

#include "arch_bulk.h"

#define W 64 /* bytes per vector */
typedef simde__m512i vec;

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

/* n in {16, 32, 48}: one or two 16/32-byte moves (overlapping) */
static inline void copy_lt64(char *d, const char *s, size_t n) {
  if (n >= 32) {
    simde__m256i a = simde_mm256_loadu_si256((const void *)s);
    simde__m256i b = simde_mm256_loadu_si256((const void *)(s + n - 32));
    simde_mm256_storeu_si256((void *)d, a);
    simde_mm256_storeu_si256((void *)(d + n - 32), b);
  } else if (n) {
    simde_mm_store_si128((simde__m128i *)(void *)d, simde_mm_load_si128((const void *)s));
  }
}

/* ---- zero ---------------------------------------------------------------------------- */

static inline void zero(char *d, size_t n, int nt) {
  vec z = simde_mm512_setzero_si512();
  if (n <= 2 * W) { /* stores may overlap: cheaper than more branches */
    if (n >= W) {
      st(d, z);
      st(d + n - W, z);
    } else if (n >= 32) {
      simde_mm256_storeu_si256((void *)d, simde_mm256_setzero_si256());
      simde_mm256_storeu_si256((void *)(d + n - 32), simde_mm256_setzero_si256());
    } else if (n) {
      simde_mm_store_si128((simde__m128i *)(void *)d, simde_mm_setzero_si128());
    }
    return;
  }
  if (n <= 4 * W) {
    st(d, z);
    st(d + W, z);
    st(d + n - 2 * W, z);
    st(d + n - W, z);
    return;
  }
  char *end = d + n;
  st(d, z); /* head, then the body 64-byte aligned */
  char *a = (char *)(((uintptr_t)d + W) & ~(uintptr_t)(W - 1));
  for (; a + 4 * W <= end; a += 4 * W) {
    sta(a, z, nt);
    sta(a + W, z, nt);
    sta(a + 2 * W, z, nt);
    sta(a + 3 * W, z, nt);
  }
  if (a < end) { /* < 4 W left: the last 4 W bytes, overlapping what is done */
    st(end - 4 * W, z);
    st(end - 3 * W, z);
    st(end - 2 * W, z);
    st(end - W, z);
  }
  if (nt)
    simde_mm_sfence(); /* streaming stores are weakly ordered: order them before ours */
}

void axi_bulk_zero_avx512(void *p, size_t n) { zero(p, n, 0); }
void axi_bulk_zero_avx512_nt(void *p, size_t n) { zero(p, n, 1); }

/* ---- copy ---------------------------------------------------------------------------- */

static inline void copy(char *d, const char *s, size_t n, int nt) {
  if (n <= 2 * W) {
    if (n >= W) {
      vec a = ld(s), b = ld(s + n - W);
      st(d, a);
      st(d + n - W, b);
    } else {
      copy_lt64(d, s, n);
    }
    return;
  }
  if (n <= 4 * W) {
    vec a = ld(s), b = ld(s + W), c = ld(s + n - 2 * W), e = ld(s + n - W);
    st(d, a);
    st(d + W, b);
    st(d + n - 2 * W, c);
    st(d + n - W, e);
    return;
  }
  st(d, ld(s)); /* head, then the destination 64-byte aligned (the source may not be) */
  size_t k = (((uintptr_t)d + W) & ~(uintptr_t)(W - 1)) - (uintptr_t)d;
  for (; k + 4 * W <= n; k += 4 * W) {
    vec a = ld(s + k), b = ld(s + k + W), c = ld(s + k + 2 * W), e = ld(s + k + 3 * W);
    sta(d + k, a, nt);
    sta(d + k + W, b, nt);
    sta(d + k + 2 * W, c, nt);
    sta(d + k + 3 * W, e, nt);
  }
  if (k < n) {
    vec a = ld(s + n - 4 * W), b = ld(s + n - 3 * W), c = ld(s + n - 2 * W), e = ld(s + n - W);
    st(d + n - 4 * W, a);
    st(d + n - 3 * W, b);
    st(d + n - 2 * W, c);
    st(d + n - W, e);
  }
  if (nt)
    simde_mm_sfence();
}

void axi_bulk_copy_avx512(void *dst, const void *src, size_t n) { copy(dst, src, n, 0); }
void axi_bulk_copy_avx512_nt(void *dst, const void *src, size_t n) { copy(dst, src, n, 1); }
