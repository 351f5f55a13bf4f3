/* SPDX-License-Identifier: MIT */
/* NEON bulk kernels: q-register stores and loads, 64 bytes a step (STP/LDP pairs). The
 * loop body is the 16-byte shape's, shared with SSE2 (../generic/bulk_body16.h); this file
 * gives it the vector.
 *
 * Written with SIMDe: built for AArch64 (ASIMD is always on) these are the native
 * instructions; built elsewhere (tests/t_bulk on x86-64) the same logic runs through
 * SIMDe's portable or SSE code. Contract and list: arch_bulk.h. */
#include <stddef.h>
#include <stdint.h>

#include <simde/arm/neon.h>

#include "arch_bulk.h"

typedef simde_uint8x16_t vec;

static inline vec vzero(void) { return simde_vdupq_n_u8(0); }
static inline vec ld(const char *s) { return simde_vld1q_u8((const uint8_t *)s); }
static inline void st(char *d, vec v) { simde_vst1q_u8((uint8_t *)d, v); }

#include "../generic/bulk_body16.h"

void axi_bulk_zero_neon(void *p, size_t n) { bulk_zero16(p, n); }
void axi_bulk_copy_neon(void *dst, const void *src, size_t n) { bulk_copy16(dst, src, n); }
