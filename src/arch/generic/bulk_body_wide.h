/* SPDX-License-Identifier: MIT */
/* The body of the wide bulk kernels (x86_64/bulk_avx2.c, x86_64/bulk_avx512.c): vectors of
 * W > 16 bytes, four a step. Blocks are only 16-byte aligned, so one unaligned head store
 * brings the destination to W-byte alignment; the body is then aligned stores (or streaming
 * ones, nt = 1), and an overlapping unaligned 4 W tail finishes it. Sizes below W go to the
 * kernel file's narrower moves.
 *
 * A template, not a header: no include guard. The kernel file defines, then includes it:
 *   W                                  bytes per vector, a power of two > 16
 *   vec                                the W-byte vector type
 *   vec vzero(void)                    a vector of zero bytes
 *   vec ld(const char *s)              load W bytes, any alignment
 *   void st(char *d, vec v)            store W bytes, any alignment
 *   void sta(char *d, vec v, int nt)   store W bytes, streaming if nt; pre: d W-byte aligned
 *   void fence_nt(void)                order the streaming stores before later stores
 *   void zero_lt_w(char *d, size_t n)  pre: n < W, a multiple of 16 (0 too); d 16-aligned
 *   void copy_lt_w(char *d, const char *s, size_t n)   the same, for a copy
 * and gets bulk_zero(d, n, nt) and bulk_copy(d, s, n, nt), with arch_bulk.h's contract, to
 * define its exported kernels with (nt a constant, so each folds to one variant). */
#include <stddef.h>
#include <stdint.h>

static inline void bulk_zero(char *d, size_t n, int nt) {
  vec z = vzero();
  if (n <= 2 * W) { /* stores may overlap: cheaper than more branches */
    if (n >= W) {
      st(d, z);
      st(d + n - W, z);
    } else {
      zero_lt_w(d, n);
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
  st(d, z); /* head, then the body W-byte aligned */
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
    fence_nt(); /* streaming stores are weakly ordered: order them before ours */
}

static inline void bulk_copy(char *d, const char *s, size_t n, int nt) {
  if (n <= 2 * W) {
    if (n >= W) {
      vec a = ld(s), b = ld(s + n - W);
      st(d, a);
      st(d + n - W, b);
    } else {
      copy_lt_w(d, s, n);
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
  st(d, ld(s)); /* head, then the destination W-byte aligned (the source may not be) */
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
    fence_nt();
}
