/* SSE2 bulk kernels: 16-byte MOVDQA, the x86-64 baseline.
 *
 * Written with SIMDe: built for x86-64 (SSE2 is always on) these are the native
 * instructions; built elsewhere (tests/t_bulk under qemu-aarch64) the same logic runs as
 * portable code. Contract and list: arch_bulk.h. Blocks and sizes are 16-byte multiples,
 * so every load and store here is an aligned one. */
#include <stddef.h>
#include <stdint.h>

#include <simde/x86/sse2.h>

#include "arch_bulk.h"

#define W 16 /* bytes per vector */
typedef simde__m128i vec;

static inline vec ld(const char *s) { return simde_mm_load_si128((const simde__m128i *)s); }
static inline void st(char *d, vec v) { simde_mm_store_si128((simde__m128i *)d, v); }

/* pre: n <= 4 W. Stores may overlap: cheaper than a branch per size. */
static inline void zero_small(char *d, size_t n, vec z) {
  if (n <= 2 * W) {
    if (n) {
      st(d, z);
      st(d + n - W, z);
    }
    return;
  }
  st(d, z);
  st(d + W, z);
  st(d + n - 2 * W, z);
  st(d + n - W, z);
}

void axi_bulk_zero_sse2(void *p, size_t n) {
  char *d = p;
  vec z = simde_mm_setzero_si128();
  if (n <= 4 * W) {
    zero_small(d, n, z);
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

void axi_bulk_copy_sse2(void *dst, const void *src, size_t n) {
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
