/* SPDX-License-Identifier: MIT */
/* SSE2 bulk kernels: 16-byte MOVDQA, the x86-64 baseline. The loop body is the 16-byte
 * shape's, shared with NEON (../generic/bulk_body16.h); this file gives it the vector.
 *
 * Written with SIMDe: built for x86-64 (SSE2 is always on) these are the native
 * instructions; built elsewhere (tests/t_bulk under qemu-aarch64) the same logic runs as
 * portable code. Contract and list: arch_bulk.h. */
#include <stddef.h>

#include <simde/x86/sse2.h>

#include "arch_bulk.h"

typedef simde__m128i vec;

static inline vec vzero(void) { return simde_mm_setzero_si128(); }
static inline vec ld(const char *s) { return simde_mm_load_si128((const simde__m128i *)s); }
static inline void st(char *d, vec v) { simde_mm_store_si128((simde__m128i *)d, v); }

#include "../generic/bulk_body16.h"

void axi_bulk_zero_sse2(void *p, size_t n) { bulk_zero16(p, n); }
void axi_bulk_copy_sse2(void *dst, const void *src, size_t n) { bulk_copy16(dst, src, n); }
