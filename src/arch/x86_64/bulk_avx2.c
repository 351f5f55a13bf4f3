/* AVX2 bulk kernels: 32-byte stores (avx2), and the same with non-temporal stores for the
 * aligned body (avx2_nt: VMOVNTDQ writes around the caches, no read-for-ownership).
 *
 * Written with SIMDe and compiled with -mavx2 (this file only, arch.cmake): natively the
 * intrinsics are VMOVDQA/VMOVDQU ymm and VMOVNTDQ; built without the flag (tests/t_bulk
 * under qemu-aarch64) the same logic runs as portable code. Contract and list: arch_bulk.h. */
#include <stddef.h>
#include <stdint.h>

#include <simde/x86/avx2.h>

#include "arch_bulk.h"

#define W 32 /* bytes per vector */
typedef simde__m256i vec;

static inline vec ld(const char *s) { return simde_mm256_loadu_si256((const void *)s); }
static inline void st(char *d, vec v) { simde_mm256_storeu_si256((void *)d, v); }
/* pre: d 32-byte aligned */
static inline void sta(char *d, vec v, int nt) {
  if (nt)
    simde_mm256_stream_si256((simde__m256i *)(void *)d, v);
  else
    simde_mm256_store_si256((simde__m256i *)(void *)d, v);
}
static inline void st16(char *d, const char *s) {
  simde_mm_store_si128((simde__m128i *)(void *)d, simde_mm_load_si128((const void *)s));
}

/* ---- zero ---------------------------------------------------------------------------- */

static inline void zero(char *d, size_t n, int nt) {
  vec z = simde_mm256_setzero_si256();
  if (n <= 2 * W) { /* 0, 16, 32, 48, 64: stores may overlap, cheaper than more branches */
    if (n >= W) {
      st(d, z);
      st(d + n - W, z);
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
  st(d, z); /* head, then the body 32-byte aligned */
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

void axi_bulk_zero_avx2(void *p, size_t n) { zero(p, n, 0); }
void axi_bulk_zero_avx2_nt(void *p, size_t n) { zero(p, n, 1); }

/* ---- copy ---------------------------------------------------------------------------- */

static inline void copy(char *d, const char *s, size_t n, int nt) {
  if (n <= 2 * W) {
    if (n >= W) {
      vec a = ld(s), b = ld(s + n - W);
      st(d, a);
      st(d + n - W, b);
    } else if (n) {
      st16(d, s);
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
  st(d, ld(s)); /* head, then the destination 32-byte aligned (the source may not be) */
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

void axi_bulk_copy_avx2(void *dst, const void *src, size_t n) { copy(dst, src, n, 0); }
void axi_bulk_copy_avx2_nt(void *dst, const void *src, size_t n) { copy(dst, src, n, 1); }
