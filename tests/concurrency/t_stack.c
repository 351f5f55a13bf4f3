/* SPDX-License-Identifier: MIT */
/* The stack the allocator needs, where stacks are small: a PTHREAD_STACK_MIN thread, a signal
 * handler on it, a minimal sigaltstack. With the heap profiler on (AXMALLOC_PROF=1,
 * AXMALLOC_PROF_SAMPLE=4096, AXMALLOC_PROF_SIGNAL=USR1), sampled mallocs, their stack walks
 * and dumps are among what is measured; without it, malloc and free alone.
 *
 * On a thread whose stack the test maps (PTHREAD_STACK_MIN bytes, a guard page below), each
 * operation runs with the unused part of the stack painted; the deepest byte it changed gives
 * its stack use, held to the budgets given (docs/design/10-lifecycle.md, "Cancellation and small
 * stacks"): malloc and free, any size, sampled or not          <malloc budget> a dump:
 * ax_prof_dump, or the dump signal's handler <dump budget> (the handler's own use: what it takes
 * beyond a trivial one's) Then both again from a handler on an alternate signal stack of the
 * system's minimum (sysconf(_SC_MINSIGSTKSZ)) plus the budget, in a child: an overflow there is a
 * death. Before the dump's buffers were static, the dump signal's handler took about 10 KiB: a
 * PTHREAD_STACK_MIN thread that took the signal died of SIGSEGV.
 *
 *   t_stack <malloc budget> <dump budget>
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define PAINT 0xa5
static size_t budget_malloc, budget_dump;
static int profiling;

static char *stack_lo;

/* Paint the stack from its bottom up to a little below the caller's frame. */
static __attribute__((noinline)) void paint(void) {
  char *top = (char *)__builtin_frame_address(0) - 256;
  for (char *p = stack_lo; p < top; p++)
    *(volatile char *)p = (char)PAINT;
}

/* The bytes below sp that were written since paint(). */
static size_t used_below(const char *sp) {
  const char *p = stack_lo;
  while (p < sp && *(const volatile char *)p == (char)PAINT)
    p++;
  return (size_t)(sp - p);
}

static volatile sig_atomic_t trivial_hits;
static void trivial(int sig) {
  (void)sig;
  trivial_hits++;
}

typedef struct {
  size_t malloc_free, sampled_max, dump, dump_signal, trivial_signal;
} uses_t;
static uses_t uses;

static __attribute__((noinline)) void do_mallocs(void) {
  static const size_t sizes[] = {16, 100, 1000, 4096, 20000, 100000, 700000, 3 << 20};
  for (unsigned i = 0; i < 3000; i++) { /* (4 KiB sampling: many are sampled) */
    void *p = malloc(sizes[i % 8]);
    CHECK(p != NULL);
    free(p);
  }
}

static __attribute__((noinline)) size_t measure(void (*op)(void)) {
  paint();
  char here;
  op();
  return used_below(&here);
}

static void op_dump(void) { CHECK(ax_prof_dump(NULL) == 0 || 1); }
static void op_signal(void) { raise(SIGUSR1); }
static void op_trivial(void) { raise(SIGUSR2); }

static void *small_thread(void *arg) {
  (void)arg;
  size_t m = measure(do_mallocs);
  uses.malloc_free = m > uses.malloc_free ? m : uses.malloc_free;
  if (profiling) {
    uses.dump = measure(op_dump);
    uses.trivial_signal = measure(op_trivial);
    uses.dump_signal = measure(op_signal);
    CHECK(trivial_hits == 1);
  }
  return NULL;
}

/* ---- a minimal alternate signal stack ---------------------------------------------------- */

static void on_alt(int sig) {
  (void)sig;
  do_mallocs();
  if (profiling)
    ax_prof_dump(NULL);
}

static int on_altstack(size_t extra) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    long min = sysconf(_SC_MINSIGSTKSZ);
    size_t size = (size_t)(min > MINSIGSTKSZ ? min : MINSIGSTKSZ) + extra;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (size + pg - 1) / pg * pg;
    char *m = mmap(NULL, len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED && mprotect(m, pg, PROT_NONE) == 0); /* a guard below */
    stack_t ss = {.ss_sp = m + pg + len - size, .ss_size = size};
    CHECK(sigaltstack(&ss, NULL) == 0);
    struct sigaction sa = {.sa_handler = on_alt, .sa_flags = SA_ONSTACK};
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
    for (int i = 0; i < 20; i++)
      raise(SIGUSR2);
    _exit(0);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  CHECKF(argc == 3, "usage: t_stack <malloc budget> <dump budget>");
  budget_malloc = (size_t)atol(argv[1]);
  budget_dump = (size_t)atol(argv[2]);
  ax_info_t info;
  ax_info(&info);
  struct sigaction dump_sig;
  CHECK(sigaction(SIGUSR1, NULL, &dump_sig) == 0); /* (the dump signal: AXMALLOC_PROF_SIGNAL) */
  profiling = info.prof_sample != 0 && dump_sig.sa_handler != SIG_DFL;
  signal(SIGUSR2, trivial);
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), size = PTHREAD_STACK_MIN;
  size = (size + pg - 1) / pg * pg;
  char *m = mmap(NULL, size + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(m != MAP_FAILED && mprotect(m, pg, PROT_NONE) == 0);
  stack_lo = m + pg;
  pthread_attr_t attr;
  CHECK(pthread_attr_init(&attr) == 0 && pthread_attr_setstack(&attr, stack_lo, size) == 0);
  for (int round = 0; round < 3; round++) { /* (the first walks fill the unwind table) */
    pthread_t t;
    CHECK(pthread_create(&t, &attr, small_thread, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    trivial_hits = 0;
  }
  size_t handler =
      uses.dump_signal > uses.trivial_signal ? uses.dump_signal - uses.trivial_signal : 0;
  printf("t_stack: on a %zu-byte stack: malloc/free %zu B (budget %zu)", size, uses.malloc_free,
         budget_malloc);
  if (profiling)
    printf(", ax_prof_dump %zu B, the dump signal's handler %zu B beyond a trivial one's %zu "
           "(budget %zu)",
           uses.dump, handler, uses.trivial_signal, budget_dump);
  printf("\n");
  CHECKF(uses.malloc_free <= budget_malloc, "malloc/free took %zu bytes of stack",
         uses.malloc_free);
  CHECKF(uses.dump <= budget_dump, "ax_prof_dump took %zu bytes of stack", uses.dump);
  CHECKF(handler <= budget_dump,
         "the dump signal's handler took %zu bytes more than a trivial handler", handler);
  CHECKF(on_altstack(budget_malloc + budget_dump),
         "malloc, free and a dump on a minimal alternate signal stack died");
  printf("t_stack: malloc, free%s on a minimal sigaltstack (+%zu B): ok\n",
         profiling ? " and a dump" : "", budget_malloc + budget_dump);
  return 0;
}
