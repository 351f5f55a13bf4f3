/* SPDX-License-Identifier: MIT */
/* The atomics src/common uses: each picks, per call, between the architecture's atomic
 * instruction and its single-threaded twin (plain loads and stores).
 *
 * While glibc's __libc_single_threaded is true no other thread exists, so nothing can race
 * with us: an RMW instruction would only cost time (on Zen 4 an unlocked cmpxchg costs the
 * same ~2.4 ns as a locked one; a plain load and store ~0.3 ns). pthread_create clears the
 * flag in the creating thread before the new thread exists, so a process that becomes
 * multi-threaded is consistent at once. AXMALLOC_FORCE_MT=1 forces the atomic side (tests).
 * Relaxed loads and stores are plain on every architecture we support and need no twin.
 */
#ifndef AX_ATOMIC_H
#define AX_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#include "arch.h"

#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define AXI_LIBC_SINGLE_THREADED() (__libc_single_threaded != 0)
#else /* no such flag in this C library: assume other threads */
#define AXI_LIBC_SINGLE_THREADED() false
#endif

/* atomic.c */
__attribute__((visibility("hidden"))) extern bool axi_force_mt;
__attribute__((visibility("hidden"))) extern bool axi_forked; /* we are a fork child */

static inline bool axi_single_threaded(void) { return AXI_LIBC_SINGLE_THREADED() && !axi_force_mt; }

/* No other thread exists and none ever did (a fork child may have inherited blocks that
 * its parent's threads pushed), so no thread_free list can hold anything. */
static inline bool axi_remote_frees_impossible(void) {
  return axi_single_threaded() && !axi_forked;
}

static inline uintptr_t ax_atomic_load_relaxed(const ax_atomic_word *p) {
  return ax_arch_load_relaxed(p);
}
static inline uintptr_t ax_atomic_load_acquire(const ax_atomic_word *p) {
  return axi_single_threaded() ? ax_arch_load_relaxed(p) : ax_arch_load_acquire(p);
}
static inline void ax_atomic_store_relaxed(ax_atomic_word *p, uintptr_t v) {
  ax_arch_store_relaxed(p, v);
}
static inline void ax_atomic_store_release(ax_atomic_word *p, uintptr_t v) {
  if (axi_single_threaded())
    ax_arch_store_relaxed(p, v);
  else
    ax_arch_store_release(p, v);
}

#define AXI_RMW(name, local, ...)                                                                  \
  (axi_single_threaded() ? ax_arch_##local(__VA_ARGS__) : ax_arch_##name(__VA_ARGS__))

static inline bool ax_atomic_cas_release(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  return AXI_RMW(cas_release, cas_local, p, expected, v);
}
static inline bool ax_atomic_cas_acq_rel(ax_atomic_word *p, uintptr_t *expected, uintptr_t v) {
  return AXI_RMW(cas_acq_rel, cas_local, p, expected, v);
}
static inline uintptr_t ax_atomic_xchg_acquire(ax_atomic_word *p, uintptr_t v) {
  return AXI_RMW(xchg_acquire, xchg_local, p, v);
}
static inline uintptr_t ax_atomic_xchg_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return AXI_RMW(xchg_acq_rel, xchg_local, p, v);
}
static inline uintptr_t ax_atomic_fetch_add_relaxed(ax_atomic_word *p, uintptr_t v) {
  return AXI_RMW(fetch_add_relaxed, fetch_add_local, p, v);
}
static inline uintptr_t ax_atomic_fetch_and_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return AXI_RMW(fetch_and_acq_rel, fetch_and_local, p, v);
}
static inline uintptr_t ax_atomic_fetch_or_acq_rel(ax_atomic_word *p, uintptr_t v) {
  return AXI_RMW(fetch_or_acq_rel, fetch_or_local, p, v);
}

/* Fields of other types (pointers, flags, counters) that other threads read or write while
 * they change: the double-free seek, statistics, the heap registry, the unwind table. The
 * compiler's atomics at these orders are plain loads and stores (relaxed) or LDAR/STLR
 * (acquire/release) on AArch64 and plain moves on x86-64; no twin, no read-modify-write. */
#define ax_peek(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define ax_poke(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define ax_peek_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ax_poke_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
/* The compiler keeps the stores before it before those after it, in program order (a signal
 * handler or a fork child on this thread sees them so); no instruction. */
static inline void ax_compiler_fence(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
static inline void ax_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
static inline void ax_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
/* A store before it is seen by every thread before a load after it runs (Dekker: the segment
 * walk's gate, segment.c). */
static inline void ax_fence_full(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

#endif
