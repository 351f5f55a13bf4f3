/* SPDX-License-Identifier: MIT */
/* The body of the 16-byte bulk kernels (x86_64/bulk_sse2.c, aarch64/bulk_neon.c): four
 * 16-byte vectors a step. Blocks and sizes are 16-byte multiples (arch_bulk.h's contract)
 * and so is the vector, so every access is 16-byte aligned: no head to align, no
 * streaming variant.
 *
 * A template, not a header: no include guard. The kernel file defines, then includes it:
 *   vec                        the 16-byte vector type
 *   vec vzero(void)            a vector of zero bytes
 *   vec ld(const char *s)      load 16 bytes;  pre: s 16-byte aligned
 *   void st(char *d, vec v)    store 16 bytes; pre: d 16-byte aligned
 * and gets bulk_zero16(d, n) and bulk_copy16(d, s, n), with arch_bulk.h's contract, to
 * define its exported kernels with. */
#include <stddef.h>

#define W 16 /* bytes per vector */

/* pre: n <= 4 W. Stores may overlap: cheaper than a branch per size. */
static inline void bulk_zero16_small(char *d, size_t n, vec z) {
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

static inline void bulk_zero16(char *d, size_t n) {
  vec z = vzero();
  if (n <= 4 * W) {
    bulk_zero16_small(d, n, z);
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

static inline void bulk_copy16(char *d, const char *s, size_t n) {
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

#undef W
