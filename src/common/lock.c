/* SPDX-License-Identifier: MIT */
/* Locks (ax_lock_t): the slow paths. A lock guards a rare global list (the profiler's table,
 * a cache's trim, fork's handlers); no malloc or free fast path takes one.
 *
 * A waiter spins AX_LOCK_SPINS times, then sleeps on the lock word in the kernel (a futex
 * on its low half: the holder's thread id's low bits and the flags). Before it sleeps it
 * sets AX_LOCK_WAITERS, and it takes the lock with that bit set once it wakes (another may
 * still sleep), so every unlock that can leave a sleeper behind finds the bit and wakes one
 * (Drepper, "Futexes are tricky", mutex 3). A sleep also ends after a second at most: a
 * bound, not a part of the protocol. So a holder that the kernel preempted costs the other
 * threads a short spin, not their time slices (issue 39: 1,024 threads on two cores, 92% of
 * the time spinning).
 */
#include "lock.h"

#include "hooks.h"
#include "os.h"

void axi_lock_wait(ax_lock_t *l) {
  for (unsigned spins = 0; spins < AX_LOCK_SPINS; spins++) {
    ax_arch_pause();
    if (axi_trylock(l))
      return;
  }
  const uintptr_t me = axi_lock_holder() | AX_LOCK_WAITERS;
  for (;;) {
    uintptr_t v = ax_atomic_load_relaxed(&l->word);
    if (v == 0) {
      if (ax_atomic_cas_acq_rel(&l->word, &v, me)) {
        AX_HOOK(AX_HOOK_LOCKED, l);
        return;
      }
      continue;
    }
    if (!(v & AX_LOCK_WAITERS)) {
      if (!ax_atomic_cas_acq_rel(&l->word, &v, v | AX_LOCK_WAITERS))
        continue;
      v |= AX_LOCK_WAITERS;
    }
    axi_os_wait(&l->word, (uint32_t)v, 1000);
  }
}

void axi_lock_wake(ax_lock_t *l) { axi_os_wake(&l->word, 1); }

/* ---- once ------------------------------------------------------------------------------- */

/* once's word: 0 not yet, ONCE_RUNNING, ONCE_SLEPT (running, and a thread sleeps on it),
 * ONCE_DONE. */
enum { ONCE_RUNNING = 1, ONCE_DONE = 2, ONCE_SLEPT = 3 };

bool axi_once_enter(ax_atomic_word *once) {
  uintptr_t s = 0;
  if (ax_atomic_cas_acq_rel(once, &s, ONCE_RUNNING))
    return true;
  for (unsigned spins = 0;; spins++) {
    s = ax_atomic_load_acquire(once);
    if (s == ONCE_DONE)
      return false;
    if (spins < AX_LOCK_SPINS) {
      ax_arch_pause();
      continue;
    }
    if (s == ONCE_RUNNING && !ax_atomic_cas_acq_rel(once, &s, ONCE_SLEPT))
      continue;
    axi_os_wait(once, ONCE_SLEPT, 1000);
  }
}

void axi_once_done(ax_atomic_word *once) {
  if (ax_atomic_xchg_acq_rel(once, ONCE_DONE) ==
      ONCE_SLEPT) /* (no system call unless one sleeps) */
    axi_os_wake(once, UINT32_MAX);
}
