/* SPDX-License-Identifier: MIT */
/* Random intervals for the samplers: the heap profiler's (modes/prof.c) and guarded sampling's
 * (modes/guard.c) Poisson processes over the bytes allocated. */
#include "sample.h"

#include <string.h>

#include "os.h"
#include "state.h"

/* ln(x) for x in (0, 1]: x = m * 2^e, m in [sqrt(1/2), sqrt(2)), ln(m) = 2 atanh((m-1)/(m+1))
 * by its series (|t| < 0.172: seven terms leave < 1e-13). No libm: a static program linking
 * us need not add -lm. */
static double ln(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  int e = (int)((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & (((uint64_t)1 << 52) - 1)) | ((uint64_t)1023 << 52);
  double m;
  memcpy(&m, &bits, sizeof m);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    e++;
  }
  double t = (m - 1) / (m + 1), t2 = t * t;
  double s =
      t * (2 + t2 * (2.0 / 3 +
                     t2 * (2.0 / 5 +
                           t2 * (2.0 / 7 + t2 * (2.0 / 9 + t2 * (2.0 / 11 + t2 * 2.0 / 13))))));
  return e * 0.6931471805599453 + s;
}

double axi_exp_draw(uint64_t *state, double mean) {
  double u = (double)((axi_rng_next(state) >> 11) + 1) * 0x1p-53; /* (0, 1] */
  return -mean * ln(u);
}

uint64_t axi_skip_draw(uint64_t *state, double mean, size_t size, uint64_t limit) {
  double k = axi_exp_draw(state, mean) / (double)size;
  return k >= (double)limit ? limit : (uint64_t)k;
}

void axi_guard_draw(ax_heap_t *heap, unsigned c) {
  ax_guard_heap_t *g = &heap->guard;
  uint64_t mean = ax_peek(&axi_guard_mean);
  size_t size = axi_class_size(c);
  if (!g->rng)
    g->rng = (axi_random() ^ (uintptr_t)heap) | 1;
  g->drawn |= (uint64_t)1 << c;
  if (mean == 0)
    g->left[c] = AX_GUARD_RECHECK;
  else if (size > axi_os_page)
    g->left[c] = AX_GUARD_PENDING;
  else
    g->left[c] = (int64_t)axi_skip_draw(&g->rng, (double)mean, size, (uint64_t)AX_GUARD_PENDING);
}
