/* SPDX-License-Identifier: MIT */
/* Locks and once (lock.c).
 * Layer: base (docs/design/00-base.md). */
#ifndef AX_LOCK_H
#define AX_LOCK_H

#include "atomic.h"
#include "hooks.h"
#include "types.h"

/* lock.c: locks (ax_lock_t, types.h). An uncontended lock is one compare-and-swap, its
 * unlock one exchange and no system call; a waiter spins AX_LOCK_SPINS times, then sleeps on
 * the word (counted in axi_stats.sleeps), and an unlock that finds AX_LOCK_WAITERS wakes one. */
#define AX_LOCK_SPINS 128u
AXI_HIDDEN void axi_lock_wait(ax_lock_t *l);
AXI_HIDDEN void axi_lock_wake(ax_lock_t *l);
/* Something done once, by the first thread to ask (axi_once_enter true: it does it, then
 * calls axi_once_done); the others return false once it is done, waiting for it as for a
 * lock. Its word starts 0; a caller tests axi_once_is_done first. */
AXI_HIDDEN bool axi_once_enter(ax_atomic_word *once);
AXI_HIDDEN void axi_once_done(ax_atomic_word *once);
static inline bool axi_once_is_done(ax_atomic_word *once) {
  return ax_atomic_load_acquire(once) == 2;
}
static inline uintptr_t axi_lock_holder(void) { return ax_arch_thread_id() | AX_LOCK_HELD; }
static inline bool axi_trylock(ax_lock_t *l) {
  uintptr_t expect = 0;
  bool ok = ax_atomic_load_relaxed(&l->word) == 0 &&
            ax_atomic_cas_acq_rel(&l->word, &expect, axi_lock_holder());
  if (ok)
    AX_HOOK(AX_HOOK_LOCKED, l);
  return ok;
}
static inline void axi_lock(ax_lock_t *l) {
  if (!axi_trylock(l))
    axi_lock_wait(l);
}
static inline void axi_unlock(ax_lock_t *l) {
  if (ax_atomic_xchg_acq_rel(&l->word, 0) & AX_LOCK_WAITERS)
    axi_lock_wake(l);
}
/* fork's prepare handler: take l, marked as held for the fork, unless this thread holds it
 * already (see above: then it stays with the interrupted section). glibc's own fork skips
 * its malloc locks in a single-threaded process for the same reason (tst-mallocfork2). */
static inline void axi_lock_for_fork(ax_lock_t *l) {
  if ((ax_atomic_load_relaxed(&l->word) & ~AX_LOCK_WAITERS) == axi_lock_holder())
    return;
  axi_lock(l);
  ax_atomic_fetch_or_acq_rel(&l->word, AX_LOCK_FORK);
}
/* fork's parent and child handlers: release what axi_lock_for_fork took, nothing else. */
static inline void axi_unlock_after_fork(ax_lock_t *l) {
  if ((ax_atomic_load_relaxed(&l->word) & ~AX_LOCK_WAITERS) == (axi_lock_holder() | AX_LOCK_FORK))
    axi_unlock(l);
}

#endif
