/* NEON bulk kernels: q-register stores and loads, 64 bytes a step (STP/LDP pairs).
 *
 * Written with SIMDe: built for AArch64 (ASIMD is always on) these are the native
 * instructions; built elsewhere (tests/t_bulk on x86-64) the same logic runs through
 * SIMDe's portable or SSE code. Contract and list: arch_bulk.h. Blocks and sizes are
 * 16-byte multiples, so no access here straddles a 16-byte boundary. */
#include <stddef.h>
#include <stdint.h>

#include <simde/arm/neon.h>

#include "arch_bulk.h"

#define W 16 /* bytes per vector */
typedef simde_uint8x16_t vec;

static inline vec ld(const char *s) { return simde_vld1q_u8((const uint8_t *)s); }
static inline void st(char *d, vec v) { simde_vst1q_u8((uint8_t *)d, v); }

void axi_bulk_zero_neon(void *p, size_t n) {
  char *d = p;
  vec z = simde_vdupq_n_u8(0);
  if (n <= 2 * W) { /* stores may overlap: cheaper than a branch per size */
    if (n) {
      st(d, z);
      st(d + n - W, z);
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
  for (; d + 4 * W <= end; d += 4 * W) {
    st(d, z);
    st(d + W, z);
    st(d + 2 * W, z);
    st(d + 3 * W, z);
  }
  if (d < end) { /* < 4 W left: the last 4 W bytes, overlapping what is done */
    st(end - 4 * W, z);
    st(end - 3 * W, z);
    st(end - 2 * W, z);
    st(end - W, z);
  }
}

void axi_bulk_copy_neon(void *dst, const void *src, size_t n) {
  char *d = dst;
  const char *s = src;
  if (n <= 2 * W) {
    if (n) {
      vec a = ld(s), b = ld(s + n - W);
      st(d, a);
      st(d + n - W, b);
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
  size_t k = 0;
  for (; k + 4 * W <= n; k += 4 * W) {
    vec a = ld(s + k), b = ld(s + k + W), c = ld(s + k + 2 * W), e = ld(s + k + 3 * W);
    st(d + k, a);
    st(d + k + W, b);
    st(d + k + 2 * W, c);
    st(d + k + 3 * W, e);
  }
  if (k < n) {
    vec a = ld(s + n - 4 * W), b = ld(s + n - 3 * W), c = ld(s + n - 2 * W), e = ld(s + n - W);
    st(d + n - 4 * W, a);
    st(d + n - 3 * W, b);
    st(d + n - 2 * W, c);
    st(d + n - W, e);
  }
}
