/* SPDX-License-Identifier: MIT */
/* Guarded sampling's fault handler: a SIGSEGV or SIGBUS on a page of the pool is a misuse of a
 * guarded block (or of its guard pages). The handler names it (guard_report.c), puts back the
 * handler the program had before ours (or the default action) and returns: the access faults
 * again, and the process dies of the original signal at the faulting instruction, where core
 * dumps, debuggers and crash reporters see it as they would without us.
 *
 * Any other SIGSEGV or SIGBUS (a fault outside the pool, or a signal sent by kill, raise or
 * sigqueue) goes to the handler installed before ours, as the kernel would have delivered it:
 * its mask, SA_NODEFER and SA_RESETHAND honoured; SIG_DFL and SIG_IGN as the kernel treats
 * them (a fault cannot be ignored: the default action).
 *
 * A program that installs its own handler after our first sample replaces ours, and then sees
 * every fault, ours included. AXMALLOC_GUARD_HANDLER=reinstall has each sample check for that
 * (axi_guard_fault_recheck) and put ours back in front of it.
 *
 * The handler allocates nothing and takes no lock: it reads the pool's records, writes with
 * system calls, and changes dispositions with sigaction. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <ucontext.h>

#include "modes/guard_fault.h"

#include "lock.h"
#include "modes/guard_report.h"
#include "options.h"

enum { HANDLER_CHAIN, HANDLER_REINSTALL }; /* AXMALLOC_GUARD_HANDLER's words */

static const int caught[2] = {SIGSEGV, SIGBUS};

/* The handler installed before ours, per signal: two copies, the one in use named by `now`
 * (recheck writes the other, then switches), so a handler running on another thread meanwhile
 * reads one whole. */
static struct sigaction before[2][2];
static ax_atomic_word now[2];
static ax_atomic_word installed;     /* axi_once_enter's word */
static ax_atomic_word rechecking;    /* one recheck at a time (others skip theirs) */
static ax_atomic_word fault_handled; /* a fault of the pool reported: no more rechecks */

static int which(int sig) { return sig == SIGBUS; }
static const struct sigaction *previous(int sig) {
  int i = which(sig);
  return &before[i][ax_atomic_load_acquire(&now[i])];
}

/* ---- what a fault in the pool was ---------------------------------------------------------- */

static const ax_guard_slot_t *slot_at(uintptr_t i) {
  return i < axi_guard_pool.slots ? &axi_guard_pool.slot[i] : NULL;
}
static uintptr_t state_of(const ax_guard_slot_t *s) {
  return s ? ax_atomic_load_acquire(&s->state) : AX_GUARD_UNUSED;
}

/* GWP-ASan's reading: the block nearest the address (on a guard page, the neighbour whose
 * bytes are closer, of those ever handed out) says what happened; freed: a use after free,
 * else an overflow past its end or an underflow before its start. A slot page whose block is
 * live or was never handed out should not fault: nothing explains it (WILD). */
static enum ax_guard_kind classify(uintptr_t a, const ax_guard_slot_t **out) {
  uintptr_t k = axi_guard_page_index(a);
  const ax_guard_slot_t *s = NULL;
  if (k & 1) {
    s = slot_at((k - 1) / 2);
    uintptr_t st = state_of(s);
    if (st != AX_GUARD_FREED && st != AX_GUARD_FREEING)
      s = NULL;
  } else {
    const ax_guard_slot_t *lo = k ? slot_at(k / 2 - 1) : NULL, *hi = slot_at(k / 2);
    lo = state_of(lo) != AX_GUARD_UNUSED ? lo : NULL;
    hi = state_of(hi) != AX_GUARD_UNUSED ? hi : NULL;
    uintptr_t lo_gap = lo ? a - (lo->block + lo->size) : UINTPTR_MAX;
    uintptr_t hi_gap = hi ? hi->block - a : UINTPTR_MAX;
    s = lo_gap <= hi_gap ? lo : hi;
  }
  *out = s;
  if (!s)
    return AX_GUARD_WILD;
  uintptr_t st = state_of(s);
  if (st == AX_GUARD_FREED || st == AX_GUARD_FREEING)
    return AX_GUARD_USE_AFTER_FREE;
  return a < s->block ? AX_GUARD_UNDERFLOW : AX_GUARD_OVERFLOW;
}

/* ---- the handler ---------------------------------------------------------------------------- */

static void set_default(int sig) {
  struct sigaction dfl;
  __builtin_memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(sig, &dfl, NULL);
}

/* The signal this thread passed on to the handler before ours, and our frame then. A handler
 * that chains back to ours (it took ours as its previous one, and we took it as ours when
 * reinstalled) would go round for ever: called again with the same siginfo from deeper on
 * the stack, we take the default action instead. A handler that siglongjmps out leaves them
 * set; a new signal has a siginfo of its own, or the same place on the stack and our frame
 * no deeper than before. */
static __thread const siginfo_t *chained_info;
static __thread uintptr_t chained_frame;

/* The signal given to the handler installed before ours, as the kernel would have given it. A
 * fault (si_code > 0) that meets the default action (or SIG_IGN, which a fault overrides)
 * comes back at the same instruction once we return; a sent signal is sent again (raise),
 * pending until we return, as our mask blocks it. */
static AX_NOINLINE void chain(int sig, siginfo_t *info, void *uc) {
  struct sigaction p = *previous(sig);
  bool fault = info->si_code > 0;
  uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
  if (info == chained_info && frame < chained_frame)
    p.sa_handler = SIG_DFL, p.sa_flags = 0;
  if (p.sa_handler == SIG_IGN && !fault)
    return;
  if (p.sa_handler == SIG_DFL || p.sa_handler == SIG_IGN) {
    set_default(sig);
    if (!fault)
      raise(sig);
    return;
  }
  /* SA_RESETHAND: the kernel would have put the default back as it called that handler; ours
   * stays installed (the pool's faults are still ours), and chains to the default from now. */
  if (p.sa_flags & SA_RESETHAND) {
    struct sigaction *was = (struct sigaction *)previous(sig);
    was->sa_handler = SIG_DFL;
    was->sa_flags = 0;
  }
  /* The mask its handler would have run with: the interrupted code's, its sa_mask, and the
   * signal itself unless SA_NODEFER. */
  sigset_t mask = ((const ucontext_t *)uc)->uc_sigmask;
  sigorset(&mask, &mask, &p.sa_mask);
  if (p.sa_flags & SA_NODEFER)
    sigdelset(&mask, sig);
  else
    sigaddset(&mask, sig);
  pthread_sigmask(SIG_SETMASK, &mask, NULL);
  chained_info = info;
  chained_frame = frame;
  if (p.sa_flags & SA_SIGINFO)
    p.sa_sigaction(sig, info, uc);
  else
    p.sa_handler(sig);
  chained_info = NULL;
}

static void on_fault(int sig, siginfo_t *info, void *uc) {
  int saved = errno;
  uintptr_t a = (uintptr_t)info->si_addr;
  if (info->si_code <= 0 || !axi_guard_has((const void *)a)) {
    chain(sig, info, uc);
    errno = saved;
    return;
  }
  const ax_guard_slot_t *s;
  enum ax_guard_kind kind = classify(a, &s);
  ax_atomic_store_release(&fault_handled, 1);
  axi_guard_report(kind, s, a, NULL, true);
  /* The handler before ours back (SIG_IGN cannot hold a fault: the default), for both signals,
   * and the access again: it faults with nothing of ours in the way. */
  for (int i = 0; i < 2; i++) {
    const struct sigaction *p = previous(caught[i]);
    if (p->sa_handler == SIG_IGN)
      set_default(caught[i]);
    else
      sigaction(caught[i], p, NULL);
  }
  errno = saved;
}

/* Ours: SA_ONSTACK, so that a program that runs its handlers on an alternate stack runs ours
 * there too; both signals blocked while it runs (a fault inside it meets the default action,
 * not a second report waiting for the first). */
static void ours(struct sigaction *sa) {
  __builtin_memset(sa, 0, sizeof *sa);
  sa->sa_sigaction = on_fault;
  sa->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa->sa_mask);
  sigaddset(&sa->sa_mask, SIGSEGV);
  sigaddset(&sa->sa_mask, SIGBUS);
}

void axi_guard_fault_install(void) {
  if (axi_once_is_done(&installed) || !axi_once_enter(&installed))
    return;
  struct sigaction sa;
  ours(&sa);
  for (int i = 0; i < 2; i++)
    sigaction(caught[i], &sa, &before[i][0]);
  axi_once_done(&installed);
}

static bool is_ours(const struct sigaction *sa) {
  return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_fault;
}

/* One system call per signal when nothing changed. The program's handler becomes the one we
 * chain to; a recheck on another thread at the same time skips its own (this one does it). */
void axi_guard_fault_recheck(void) {
  if (axi_option_num(AXI_OPTION_GUARD_HANDLER) != HANDLER_REINSTALL ||
      !axi_once_is_done(&installed) || ax_atomic_load_relaxed(&fault_handled))
    return;
  uintptr_t idle = 0;
  if (!ax_atomic_cas_acq_rel(&rechecking, &idle, 1))
    return;
  struct sigaction sa, cur;
  ours(&sa);
  for (int i = 0; i < 2; i++) {
    if (sigaction(caught[i], NULL, &cur) != 0 || is_ours(&cur))
      continue;
    uintptr_t next = ax_atomic_load_relaxed(&now[i]) ^ 1;
    if (sigaction(caught[i], &sa, &before[i][next]) != 0)
      continue;
    if (is_ours(&before[i][next])) /* (put back between our two calls: keep the old one) */
      continue;
    ax_atomic_store_release(&now[i], next);
  }
  ax_atomic_store_release(&rechecking, 0);
}
