/* SPDX-License-Identifier: MIT */
/* Guarded sampling's reports (src/common/modes/guard_report.c, guard_fault.c): one misuse of a
 * guarded block per run, named by argv[1]; t_guard_report.sh runs each with AXMALLOC_GUARD=1
 * (every block that fits a page is guarded) and checks the report, and that the process died
 * of the signal the misuse raises. Built -O0 -g with frame pointers, so that each misuse
 * stays in the program and the stacks name alloc_site and free_site.
 *
 * Before the misuse the program prints "t_guard_report: block <p>" on stderr (%p, as the
 * report prints it), so the driver knows the addresses the report must name.
 *
 *   uaf_read, uaf_write  a read or a write 8 bytes into a freed 64-byte block
 *   uaf_thread           ... freed by another thread
 *   overflow <n>         a write of byte n of an n-byte block (its first byte past the end)
 *   underflow            a write 3 bytes before a 24-byte block
 *   double_free          free() twice
 *   invalid_free         free() of the block's address + 8
 *   slack <n>            a write past an n-byte block, then free()
 *   wild                 a write to address 8 (no handler of the program's)
 *   kill                 raise(SIGSEGV) (no handler of the program's)
 *   handler_before       the program's SIGSEGV handler installed before the first sample
 *                        (a constructor): writes to address 8 reach it, twice, and so does
 *                        a use after free, after the report; exit 0
 *   handler_after        ... installed after the first sample, then one more sample; a use
 *                        after free: its handler runs, exit 0
 *   handler_once         ... installed before, with SA_RESETHAND: the first write to address 8
 *                        reaches it, the second meets the default action
 *   handler_loop         a handler installed after ours that calls ours for every signal,
 *                        with ours put back in front (reinstall): a write to address 8 goes
 *                        round once, then meets the default action
 *   realloc_into_guard   realloc of an ordinary block to a smaller guarded one: no report
 *
 * Each takes guarded blocks (guarded_site), whatever the program and libc allocated before. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Wuse-after-free"

static __attribute__((noinline)) char *alloc_site(size_t n) {
  char *p = malloc(n);
  if (!p) {
    fprintf(stderr, "t_guard_report: malloc(%zu) failed\n", n);
    exit(2);
  }
  memset(p, 'a', n);
  return p;
}

static __attribute__((noinline)) void free_site(void *p) { free(p); }

/* Whether p is a guarded block: the readable memory around it is one page of the pool's size
 * (AXMALLOC_PAGE_SIZE, else the kernel's), inaccessible on either side. write(2) from an
 * address says whether it is readable (EFAULT) without a fault. */
static int probe[2] = {-1, -1};
static bool readable(uintptr_t a) {
  char c;
  if (probe[0] < 0 && pipe(probe) != 0)
    exit(2);
  if (write(probe[1], (const void *)a, 1) != 1)
    return false;
  return read(probe[0], &c, 1) == 1;
}
static bool is_guarded(const void *p) {
  const char *env = getenv("AXMALLOC_PAGE_SIZE");
  uintptr_t os = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t size = env ? strtoul(env, NULL, 10) : os;
  uintptr_t lo = (uintptr_t)p & ~(os - 1), hi = lo + os; /* [lo, hi) readable */
  while (hi - lo <= size && readable(hi))
    hi += os;
  while (hi - lo <= size && readable(lo - 1))
    lo -= os;
  return hi - lo == size;
}

/* A guarded block of n bytes. AXMALLOC_GUARD=1 samples a class at each refill of its list: the
 * blocks of a list a program (or libc) started before are handed out first, and held here. */
static char *guarded_site(size_t n) {
  for (int i = 0; i < 100000; i++) {
    char *p = alloc_site(n);
    if (is_guarded(p))
      return p;
  }
  fprintf(stderr, "t_guard_report: no guarded block of %zu bytes\n", n);
  exit(2);
}

static __attribute__((noinline)) void say_block(const char *p) {
  fprintf(stderr, "t_guard_report: block %p\n", (const void *)p);
}

static __attribute__((noinline)) char read_site(volatile char *p) { return *p; }
static __attribute__((noinline)) void write_site(volatile char *p) { *p = 'x'; }

/* uaf_thread: freed by another thread, used after by the one that allocated it */
static void *free_thread(void *p) {
  free_site(p);
  return NULL;
}

static int uaf_thread(void) {
  char *p = guarded_site(64);
  say_block(p);
  pthread_t t;
  if (pthread_create(&t, NULL, free_thread, p) != 0 || pthread_join(t, NULL) != 0)
    return 1;
  write_site(p + 8);
  return 3;
}

/* ---- the program's own handler ------------------------------------------------------------ */

static sigjmp_buf back;
static volatile sig_atomic_t own_runs;

static void own_handler(int sig, siginfo_t *info, void *uc) {
  own_runs++;
  siglongjmp(back, 1);
}

static void install_own(bool once) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = own_handler;
  sa.sa_flags = SA_SIGINFO | (once ? SA_RESETHAND : 0);
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
}

static bool own_in_front(void) {
  struct sigaction cur;
  sigaction(SIGSEGV, NULL, &cur);
  return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == own_handler;
}

/* A write to p that the program's handler survives: true when it ran. */
static bool survive_write(volatile char *p) {
  int before = own_runs;
  if (sigsetjmp(back, 1) == 0)
    write_site(p);
  return own_runs == before + 1;
}

static int handler_before(void) {
  /* the first sample (of the program's, if not one of libc's before main) installs ours, in
   * front of the program's */
  free_site(guarded_site(16));
  fprintf(stderr, "t_guard_report: in front: %s\n", own_in_front() ? "program" : "axmalloc");
  for (int i = 0; i < 2; i++)
    if (!survive_write((volatile char *)8)) {
      fprintf(stderr, "t_guard_report: the program's handler did not run\n");
      return 1;
    }
  char *p = guarded_site(64);
  say_block(p);
  free_site(p);
  if (!survive_write(p + 8)) { /* (reported: ours put the program's back, which runs) */
    fprintf(stderr, "t_guard_report: the program's handler did not run after the report\n");
    return 1;
  }
  fprintf(stderr, "t_guard_report: the program's handler ran %d times\n", (int)own_runs);
  return 0;
}

static int handler_after(void) {
  free_site(guarded_site(16)); /* (a sample: ours installed) */
  install_own(false);
  char *p = guarded_site(64); /* (a sample: with reinstall, ours in front again) */
  say_block(p);
  fprintf(stderr, "t_guard_report: in front: %s\n", own_in_front() ? "program" : "axmalloc");
  free_site(p);
  if (!survive_write(p + 8)) {
    fprintf(stderr, "t_guard_report: the program's handler did not run\n");
    return 1;
  }
  fprintf(stderr, "t_guard_report: the program's handler ran %d times\n", (int)own_runs);
  return 0;
}

/* SA_RESETHAND: the program's handler runs for the first fault, the default action for the
 * next (as the kernel would do without ours in front) */
static int handler_once(void) {
  free_site(guarded_site(16));
  if (!survive_write((volatile char *)8)) {
    fprintf(stderr, "t_guard_report: the program's handler did not run\n");
    return 1;
  }
  fprintf(stderr, "t_guard_report: the program's handler ran %d times\n", (int)own_runs);
  write_site((volatile char *)8);
  return 3;
}

/* A crash handler that calls the one it replaced (ours) for every signal: with reinstall ours
 * is in front again and calls it, and it calls ours back. Once round, then the default. */
static struct sigaction replaced;

static void chaining_handler(int sig, siginfo_t *info, void *uc) {
  static const char line[] = "t_guard_report: the chaining handler ran\n";
  if (write(2, line, sizeof line - 1) < 0)
    _exit(5);
  if ((replaced.sa_flags & SA_SIGINFO) && replaced.sa_sigaction)
    replaced.sa_sigaction(sig, info, uc);
}

static int handler_loop(void) {
  free_site(guarded_site(16)); /* (a sample: ours installed) */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = chaining_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &replaced);
  free_site(guarded_site(16)); /* (a sample: ours in front again) */
  write_site((volatile char *)8);
  return 3;
}

/* realloc of an ordinary block into a guarded one: it copies no byte past the new block (a
 * copy rounded up to 16 bytes wrote into the bytes around it, which free() then reported).
 * The pool is filled first (guarded blocks until an ordinary one comes), then one guarded
 * block freed, whose slot the block realloc moves to takes. */
static char *held[100000];
static int realloc_into_guard(void) {
  int n = 0, guarded = 0;
  char *p = NULL;
  while (n < 100000) {
    p = alloc_site(120);
    if (!is_guarded(p) && guarded)
      break;
    guarded += is_guarded(p);
    held[n++] = p;
  }
  for (int i = n - 1; i >= 0; i--) /* (a slot free again) */
    if (is_guarded(held[i])) {
      free_site(held[i]);
      held[i] = held[--n];
      break;
    }
  char *q = realloc(p, 50); /* (under half: it moves) */
  if (!is_guarded(q)) {
    fprintf(stderr, "t_guard_report: realloc's block is not guarded (%d guarded before)\n",
            guarded);
    return 1;
  }
  free_site(q);
  while (n > 0)
    free_site(held[--n]);
  fprintf(stderr, "t_guard_report: realloc into a guarded block: ok\n");
  return 0;
}

/* T_GUARD_OWN_EARLY=1: the program's handler installed before any sample; =once: with
 * SA_RESETHAND */
static __attribute__((constructor)) void early(void) {
  const char *m = getenv("T_GUARD_OWN_EARLY");
  if (m && (*m == '1' || !strcmp(m, "once")))
    install_own(*m == 'o');
}

int main(int argc, char **argv) {
  const char *m = argc > 1 ? argv[1] : "";
  size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
  char *p;
  if (!strcmp(m, "uaf_read") || !strcmp(m, "uaf_write")) {
    p = guarded_site(64);
    say_block(p);
    free_site(p);
    if (m[4] == 'r')
      return read_site(p + 8) == 'a' ? 3 : 4;
    write_site(p + 8);
    return 3;
  }
  if (!strcmp(m, "uaf_thread"))
    return uaf_thread();
  if (!strcmp(m, "overflow") && n) {
    p = guarded_site(n);
    say_block(p);
    write_site(p + n);
    return 3;
  }
  if (!strcmp(m, "underflow")) {
    p = guarded_site(24);
    say_block(p);
    write_site(p - 3);
    return 3;
  }
  if (!strcmp(m, "double_free")) {
    p = guarded_site(48);
    say_block(p);
    free_site(p);
    free_site(p);
    return 3;
  }
  if (!strcmp(m, "invalid_free")) {
    p = guarded_site(48);
    say_block(p);
    free_site(p + 8);
    return 3;
  }
  if (!strcmp(m, "slack") && n) {
    p = guarded_site(n);
    say_block(p);
    write_site(p + n);
    free_site(p);
    return 3;
  }
  if (!strcmp(m, "wild")) {
    free_site(guarded_site(16)); /* (a sample: ours installed) */
    write_site((volatile char *)8);
    return 3;
  }
  if (!strcmp(m, "kill")) {
    free_site(guarded_site(16));
    raise(SIGSEGV);
    return 3;
  }
  if (!strcmp(m, "handler_before"))
    return handler_before();
  if (!strcmp(m, "handler_after"))
    return handler_after();
  if (!strcmp(m, "handler_once"))
    return handler_once();
  if (!strcmp(m, "handler_loop"))
    return handler_loop();
  if (!strcmp(m, "realloc_into_guard"))
    return realloc_into_guard();
  fprintf(stderr, "usage: t_guard_report <misuse> [size]\n");
  return 2;
}
