/* SPDX-License-Identifier: MIT */
/* Zero-size allocations: malloc(0) and its kin hand out a unique 16-byte aligned address in a
 * reservation that is never readable nor writable, so a read or write through the pointer
 * faults at once (hardened_malloc and OpenBSD's malloc do the same); free, realloc and
 * malloc_usable_size know it by its address (ptr.c). glibc returns a 24-byte block there,
 * which such a read or write corrupts silently.
 *
 * One reservation of AX_ZERO_SLOTS 16-byte slots, mapped PROT_NONE at the first call (address
 * space only: no memory, no commit charge), a whole segment's slot of address space aligned as
 * segments are: so no segment can start where realloc's and malloc_usable_size's fast tests
 * (the segment map at p's segment floor) look for one, and they hand the pointer on to ptr.c
 * (unaligned, a live segment's start below it in the same 4 MiB took it for its own: a bogus
 * page descriptor read, t_stress.32 with the profiler). Which slots are live is a bitmap here. A
 * slot is taken by setting its bit with one CAS (a plain load and store while single-threaded) and
 * given back by clearing it, so the module takes no lock, and a fork child inherits a
 * consistent map. The search starts where the last one ended, so a freed slot is not
 * handed out again at once. When every slot is live (262,144 zero-size blocks) or the
 * reservation cannot be made, the caller falls back to a block of 16 bytes (alloc.c).
 */
#include "zero.h"

#include "os.h"
#include "print.h"

_Static_assert(AX_ZERO_SIZE == AX_SEGMENT_SIZE, "the reservation is one segment's slot");

#define WORD_BITS (8 * sizeof(uintptr_t))
#define WORDS (AX_ZERO_SLOTS / WORD_BITS)

AXI_HIDDEN ax_atomic_word axi_zero_base; /* the reservation; 0 until the first call */
static ax_atomic_word live[WORDS];       /* bit i: slot i is handed out */
static ax_atomic_word next_word;         /* where the next search starts */

/* post: the reservation's address, made by this call or another; 0 when the OS refused. */
static uintptr_t reservation(void) {
  uintptr_t base = ax_atomic_load_acquire(&axi_zero_base), mine;
  if (base)
    return base;
  if (!(mine = (uintptr_t)axi_os_reserve_aligned(AX_ZERO_SIZE, AX_SEGMENT_SIZE, 0)))
    return 0;
  if (ax_atomic_cas_acq_rel(&axi_zero_base, &base, mine))
    return mine;
  axi_os_unmap((void *)mine, AX_ZERO_SIZE); /* another thread's came first: base is it */
  return base;
}

/* post: a free slot's bit set in word w, its index returned; AX_ZERO_SLOTS when w is full. */
static size_t take_in(size_t w) {
  uintptr_t seen = ax_atomic_load_relaxed(&live[w]);
  while (~seen) {
    unsigned bit = (unsigned)__builtin_ctzl(~seen);
    if (ax_atomic_cas_acq_rel(&live[w], &seen, seen | (uintptr_t)1 << bit))
      return w * WORD_BITS + bit;
  }
  return AX_ZERO_SLOTS;
}

void *axi_zero_alloc(void) {
  uintptr_t base = reservation();
  if (!base)
    return NULL;
  size_t start = ax_atomic_load_relaxed(&next_word) % WORDS;
  for (size_t k = 0; k < WORDS; k++) {
    size_t w = (start + k) % WORDS, i = take_in(w);
    if (i < AX_ZERO_SLOTS) {
      ax_atomic_store_relaxed(&next_word, w + 1);
      return (void *)(base + i * AX_ZERO_SLOT);
    }
  }
  return NULL;
}

void axi_zero_free(const char *fn, const void *p) {
  uintptr_t off = (uintptr_t)p - ax_atomic_load_relaxed(&axi_zero_base);
  if (off % AX_ZERO_SLOT)
    axi_invalid_free(fn, p);
  size_t i = off / AX_ZERO_SLOT;
  uintptr_t bit = (uintptr_t)1 << (i % WORD_BITS);
  if (!(ax_atomic_fetch_and_acq_rel(&live[i / WORD_BITS], ~bit) & bit))
    axi_double_free(fn, p);
}

size_t axi_zero_live(void) {
  size_t n = 0;
  for (size_t w = 0; w < WORDS; w++)
    n += (size_t)__builtin_popcountl(ax_atomic_load_relaxed(&live[w]));
  return n;
}
