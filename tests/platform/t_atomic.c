/* SPDX-License-Identifier: MIT */
/* The architecture's atomics (src/arch/<arch>/arch_atomic.h), tested from their header.
 *
 *   t_atomic [iters]   every op's results, *expected after a failed CAS and the word after,
 *                      for the atomic ops and their _local twins; a 4-thread stress (counter,
 *                      CAS increment, xchg lock, xchg token hand-off, fetch_or/and bits, the
 *                      allocator's CAS-push / xchg-take list) with exact totals; and the mode
 *                      in use: ax_arch_atomics_name() after ax_arch_cpu_detect() and
 *                      ax_info().atomics equal the expected mode.
 *   t_atomic xfree     only malloc/free through libaxmalloc, across two threads (a remote
 *                      free runs the allocator's CAS): the program the SIGILL test runs.
 *
 * Expected mode: "x86-lock" on x86-64; on AArch64 the build mode (AX_AARCH64_ATOMICS_LSE
 * or _LLSC, the definitions the library is built with) or, in a runtime build, "lse" iff
 * getauxval(AT_HWCAP) has HWCAP_ATOMICS. AX_EXPECT_ATOMICS=<name> in the environment must
 * agree with it, so a CI variant proves the path it meant to take was taken.
 * On AArch64 the LL/SC and LSE families (axi_llsc_*, axi_lse_*) are also tested directly,
 * LSE only when the CPU has it, whatever the build mode.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"

#include "arch.h"
#if defined(__aarch64__)
#include <sys/auxv.h>

#include "atomic_llsc.h"
#include "atomic_lse.h"
#ifndef HWCAP_ATOMICS
#define HWCAP_ATOMICS (1 << 8)
#endif
#endif

/* ---- the ops under test, as a table ------------------------------------------------------ */

typedef struct ops {
  const char *name;
  bool (*cas_release)(ax_atomic_word *, uintptr_t *, uintptr_t);
  bool (*cas_acq_rel)(ax_atomic_word *, uintptr_t *, uintptr_t);
  uintptr_t (*xchg_acquire)(ax_atomic_word *, uintptr_t);
  uintptr_t (*xchg_acq_rel)(ax_atomic_word *, uintptr_t);
  uintptr_t (*fetch_add_relaxed)(ax_atomic_word *, uintptr_t);
  uintptr_t (*fetch_and_acq_rel)(ax_atomic_word *, uintptr_t);
  uintptr_t (*fetch_or_acq_rel)(ax_atomic_word *, uintptr_t);
} ops_t;

#define OPS(prefix, label)                                                                         \
  {                                                                                                \
    label, prefix##cas_release, prefix##cas_acq_rel, prefix##xchg_acquire, prefix##xchg_acq_rel,   \
        prefix##fetch_add_relaxed, prefix##fetch_and_acq_rel, prefix##fetch_or_acq_rel             \
  }

static const ops_t arch_ops = OPS(ax_arch_, "ax_arch");
static const ops_t local_ops = {"local",
                                ax_arch_cas_local,
                                ax_arch_cas_local,
                                ax_arch_xchg_local,
                                ax_arch_xchg_local,
                                ax_arch_fetch_add_local,
                                ax_arch_fetch_and_local,
                                ax_arch_fetch_or_local};
#if defined(__aarch64__)
static const ops_t llsc_ops = OPS(axi_llsc_, "axi_llsc");
static const ops_t lse_ops = OPS(axi_lse_, "axi_lse");
static bool cpu_has_lse(void) { return (getauxval(AT_HWCAP) & HWCAP_ATOMICS) != 0; }
#endif

/* The mode the library and this program must be using once CPU detection ran. */
static const char *expected_mode(void) {
#if defined(__x86_64__)
  return "x86-lock";
#elif defined(AX_AARCH64_ATOMICS_LSE)
  return "lse";
#elif defined(AX_AARCH64_ATOMICS_LLSC)
  return "llsc";
#else
  return cpu_has_lse() ? "lse" : "llsc";
#endif
}

/* ---- single-threaded semantics ------------------------------------------------------------ */

static const uintptr_t vals[] = {0,
                                 1,
                                 2,
                                 0x7f,
                                 0xff00,
                                 (uintptr_t)1 << 63,
                                 ~(uintptr_t)0,
                                 ~(uintptr_t)0 - 15,
                                 (uintptr_t)0x123456789abcdef0ull,
                                 (uintptr_t)0x0f0f0f0f0f0f0f0full};
#define NVALS (sizeof vals / sizeof vals[0])

typedef bool (*cas_fn)(ax_atomic_word *, uintptr_t *, uintptr_t);
typedef uintptr_t (*rmw_fn)(ax_atomic_word *, uintptr_t);

static void check_cas(const char *name, const char *op, cas_fn cas, uintptr_t a, uintptr_t b) {
  ax_atomic_word w = a;
  uintptr_t e = a;
  CHECKF(cas(&w, &e, b) && w == b && e == a, "%s %s success: a=%#lx b=%#lx -> w=%#lx e=%#lx", name,
         op, (unsigned long)a, (unsigned long)b, (unsigned long)w, (unsigned long)e);
  /* failure: expected differs from the word in one bit, in the high half, or entirely */
  const uintptr_t wrong[] = {a ^ 1, a ^ ((uintptr_t)1 << 40), ~a};
  for (unsigned k = 0; k < 3; k++) {
    w = a;
    e = wrong[k];
    CHECKF(!cas(&w, &e, b) && w == a && e == a, "%s %s failure: a=%#lx e0=%#lx -> w=%#lx e=%#lx",
           name, op, (unsigned long)a, (unsigned long)wrong[k], (unsigned long)w, (unsigned long)e);
  }
}

static void check_rmw(const char *name, const char *op, rmw_fn f, uintptr_t a, uintptr_t b,
                      uintptr_t want) {
  ax_atomic_word w = a;
  uintptr_t old = f(&w, b);
  CHECKF(old == a && w == want, "%s %s: a=%#lx b=%#lx -> old=%#lx w=%#lx (want %#lx)", name, op,
         (unsigned long)a, (unsigned long)b, (unsigned long)old, (unsigned long)w,
         (unsigned long)want);
}

static void check_semantics(const ops_t *o) {
  for (unsigned i = 0; i < NVALS; i++)
    for (unsigned j = 0; j < NVALS; j++) {
      uintptr_t a = vals[i], b = vals[j];
      check_cas(o->name, "cas_release", o->cas_release, a, b);
      check_cas(o->name, "cas_acq_rel", o->cas_acq_rel, a, b);
      check_rmw(o->name, "xchg_acquire", o->xchg_acquire, a, b, b);
      check_rmw(o->name, "xchg_acq_rel", o->xchg_acq_rel, a, b, b);
      check_rmw(o->name, "fetch_add_relaxed", o->fetch_add_relaxed, a, b, a + b);
      check_rmw(o->name, "fetch_and_acq_rel", o->fetch_and_acq_rel, a, b, a & b);
      check_rmw(o->name, "fetch_or_acq_rel", o->fetch_or_acq_rel, a, b, a | b);
    }
  /* neighbours untouched: each op writes exactly its own word */
  ax_atomic_word w3[3] = {0x5555, 7, 0xaaaa};
  uintptr_t e = 7;
  CHECK(o->cas_acq_rel(&w3[1], &e, 9) && o->fetch_add_relaxed(&w3[1], 1) == 9);
  CHECK(o->xchg_acq_rel(&w3[1], 3) == 10 && o->fetch_or_acq_rel(&w3[1], 4) == 3);
  CHECK(o->fetch_and_acq_rel(&w3[1], 6) == 7 && w3[1] == 6);
  CHECK(w3[0] == 0x5555 && w3[2] == 0xaaaa);
}

/* Loads and stores, all orders. */
static void check_load_store(void) {
  for (unsigned i = 0; i < NVALS; i++) {
    ax_atomic_word w3[3] = {1, 0, 2};
    ax_arch_store_relaxed(&w3[1], vals[i]);
    CHECK(ax_arch_load_relaxed(&w3[1]) == vals[i] && ax_arch_load_acquire(&w3[1]) == vals[i]);
    ax_arch_store_release(&w3[1], ~vals[i]);
    CHECK(ax_arch_load_relaxed(&w3[1]) == ~vals[i] && ax_arch_load_acquire(&w3[1]) == ~vals[i]);
    CHECK(w3[0] == 1 && w3[2] == 2);
  }
}

/* A failed CAS writes nothing: on a read-only page a write would fault. Only for CAS forms
 * that promise it at the instruction level: the _local twin and the LL/SC loop (x86
 * LOCK CMPXCHG and LSE CAS are checked for write permission even when they fail). */
static void check_failed_cas_no_write(const char *name, cas_fn cas) {
  ax_atomic_word *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(w != MAP_FAILED);
  *w = 42;
  CHECK(mprotect(w, 4096, PROT_READ) == 0);
  uintptr_t e = 41;
  CHECKF(!cas(w, &e, 7) && e == 42 && *w == 42, "%s failed CAS", name);
  munmap(w, 4096);
}

/* ---- multi-threaded stress ---------------------------------------------------------------- */

#define NTHREADS 4

typedef struct node {
  ax_atomic_word next; /* struct node * */
  uintptr_t val;       /* written before the push; read after the take (release/acquire) */
} node_t;

static struct shared {
  const ops_t *o;
  size_t iters;
  ax_atomic_word counter, cas_counter, lock, token, bits, stack;
  uintptr_t locked_counter; /* plain: only under lock */
  pthread_barrier_t start;
} S;

typedef struct worker {
  int id;
  node_t *nodes;
  uintptr_t token;            /* the token this thread holds at the end */
  uintptr_t taken, taken_sum; /* nodes this thread took off the stack */
  uintptr_t retries;          /* failed CASes: evidence that the threads really contended */
} worker_t;

static void lock(void) {
  unsigned spins = 0;
  /* alternate the two xchg orders; both are acquire */
  while ((spins & 1 ? S.o->xchg_acq_rel : S.o->xchg_acquire)(&S.lock, 1) != 0) {
    while (ax_arch_load_relaxed(&S.lock))
      if (++spins % 64 == 0)
        sched_yield(); /* 4 threads on fewer cores (qemu): let the holder run */
      else
        ax_arch_pause();
    spins++;
  }
}
static void unlock(void) { ax_arch_store_release(&S.lock, 0); }

static void take_all(worker_t *w) {
  node_t *n = (node_t *)S.o->xchg_acquire(&S.stack, 0);
  for (; n; n = (node_t *)ax_arch_load_relaxed(&n->next)) {
    w->taken++;
    w->taken_sum += n->val;
  }
}

static void *worker(void *arg) {
  worker_t *w = arg;
  const ops_t *o = S.o;
  uintptr_t mine = (uintptr_t)1 << w->id, bit = mine | (mine << 32);
  pthread_barrier_wait(&S.start);
  for (size_t i = 0; i < S.iters; i++) {
    o->fetch_add_relaxed(&S.counter, 1);

    uintptr_t e = ax_arch_load_relaxed(&S.cas_counter); /* a failed CAS refreshes e */
    if (i & 1)
      while (!o->cas_acq_rel(&S.cas_counter, &e, e + 1))
        w->retries++;
    else
      while (!o->cas_release(&S.cas_counter, &e, e + 1))
        w->retries++;

    lock();
    S.locked_counter++;
    unlock();

    mine = (i & 1 ? o->xchg_acq_rel : o->xchg_acquire)(&S.token, mine);

    uintptr_t old = o->fetch_or_acq_rel(&S.bits, bit);
    CHECKF((old & bit) == 0, "%s: fetch_or: own bits already set in %#lx", o->name,
           (unsigned long)old);
    old = o->fetch_and_acq_rel(&S.bits, ~bit);
    CHECKF((old & bit) == bit, "%s: fetch_and: own bits lost from %#lx", o->name,
           (unsigned long)old);

    /* the allocator's remote-free list: CAS-release push, xchg-acquire take-all */
    node_t *n = &w->nodes[i];
    n->val = (uintptr_t)w->id * S.iters + i + 1;
    uintptr_t head = ax_arch_load_relaxed(&S.stack);
    ax_arch_store_relaxed(&n->next, head);
    while (!o->cas_release(&S.stack, &head, (uintptr_t)n)) {
      ax_arch_store_relaxed(&n->next, head);
      w->retries++;
    }
    if (i % 64 == 63)
      take_all(w);
  }
  w->token = mine;
  return NULL;
}

static void stress(const ops_t *o, size_t iters) {
  memset(&S, 0, sizeof S);
  S.o = o;
  S.iters = iters;
  S.token = (uintptr_t)1 << NTHREADS; /* tokens: one bit per thread plus this one */
  pthread_barrier_init(&S.start, NULL, NTHREADS);
  pthread_t th[NTHREADS];
  worker_t w[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    w[t] = (worker_t){.id = t, .nodes = malloc(iters * sizeof(node_t))};
    CHECK(w[t].nodes != NULL);
    CHECK(pthread_create(&th[t], NULL, worker, &w[t]) == 0);
  }
  uintptr_t taken = 0, taken_sum = 0, tokens = 0, token_sum = 0, retries = 0;
  for (int t = 0; t < NTHREADS; t++) {
    CHECK(pthread_join(th[t], NULL) == 0);
    taken += w[t].taken;
    taken_sum += w[t].taken_sum;
    tokens |= w[t].token;
    token_sum += w[t].token;
    retries += w[t].retries;
  }
  worker_t rest = {.id = -1};
  take_all(&rest);
  taken += rest.taken;
  taken_sum += rest.taken_sum;
  tokens |= S.token;
  token_sum += S.token;

  uintptr_t total = NTHREADS * iters, all = ((uintptr_t)1 << (NTHREADS + 1)) - 1;
  CHECKF(S.counter == total, "%s: fetch_add counter %lu, want %lu", o->name,
         (unsigned long)S.counter, (unsigned long)total);
  CHECKF(S.cas_counter == total, "%s: CAS counter %lu, want %lu", o->name,
         (unsigned long)S.cas_counter, (unsigned long)total);
  CHECKF(S.locked_counter == total, "%s: xchg-lock counter %lu, want %lu", o->name,
         (unsigned long)S.locked_counter, (unsigned long)total);
  CHECKF(tokens == all && token_sum == all, "%s: xchg tokens %#lx (sum %#lx), want %#lx", o->name,
         (unsigned long)tokens, (unsigned long)token_sum, (unsigned long)all);
  CHECKF(S.bits == 0 && S.lock == 0, "%s: bits %#lx lock %lu", o->name, (unsigned long)S.bits,
         (unsigned long)S.lock);
  CHECKF(taken == total && taken_sum == total * (total + 1) / 2,
         "%s: list took %lu nodes (sum %lu), want %lu", o->name, (unsigned long)taken,
         (unsigned long)taken_sum, (unsigned long)total);
  for (int t = 0; t < NTHREADS; t++)
    free(w[t].nodes);
  pthread_barrier_destroy(&S.start);
  printf("t_atomic: %s: %d threads x %zu iterations: totals exact (%lu CAS retries)\n", o->name,
         NTHREADS, iters, (unsigned long)retries);
}

static void check_all(const ops_t *o, size_t iters) {
  check_semantics(o);
  stress(o, iters);
}

/* ---- the mode in use ---------------------------------------------------------------------- */

static void check_mode(const char *want) {
  const char *env = getenv("AX_EXPECT_ATOMICS");
  if (env && *env)
    CHECKF(strcmp(env, want) == 0, "AX_EXPECT_ATOMICS=%s but this build on this CPU must use %s",
           env, want);
  ax_info_t info;
  ax_info(&info);
  CHECKF(strcmp(info.atomics, want) == 0, "ax_info().atomics = %s, want %s", info.atomics, want);
  CHECKF(strcmp(info.arch, AX_ARCH_NAME) == 0, "ax_info().arch = %s", info.arch);
}

/* malloc in one thread, free in another and back: remote frees through the allocator's
 * CAS, and nothing else atomic in this program. */
#define XFREE_N 1000
static void *xfree_peer(void *arg) {
  void **blocks = arg;
  for (int i = 0; i < XFREE_N; i++) {
    free(blocks[i]); /* a remote free: the page belongs to main's heap */
    blocks[i] = malloc(16 + (size_t)i % 200);
    CHECK(blocks[i] != NULL);
  }
  return NULL;
}
static int xfree(void) {
  static void *blocks[XFREE_N];
  for (int i = 0; i < XFREE_N; i++)
    CHECK((blocks[i] = malloc(16 + (size_t)i % 200)) != NULL);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, xfree_peer, blocks) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  for (int i = 0; i < XFREE_N; i++)
    free(blocks[i]); /* remote again: the peer's heap */
  check_mode(expected_mode());
  printf("t_atomic xfree: OK (atomics %s)\n", expected_mode());
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "xfree") == 0)
    return xfree();
  size_t iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
  CHECK(iters > 0);
  check_axmalloc_active();
  const char *want = expected_mode();

#if defined(__aarch64__) && !defined(AX_AARCH64_ATOMICS_LSE) && !defined(AX_AARCH64_ATOMICS_LLSC)
  /* runtime build: before detection the dispatcher must be on the LL/SC side */
  CHECKF(strcmp(ax_arch_atomics_name(), "llsc") == 0, "before ax_arch_cpu_detect: %s",
         ax_arch_atomics_name());
  check_all(&arch_ops, iters); /* ... and it works there */
#endif
  ax_arch_cpu_detect();
  CHECKF(strcmp(ax_arch_atomics_name(), want) == 0, "ax_arch_atomics_name() = %s, want %s",
         ax_arch_atomics_name(), want);
  check_load_store();
  check_all(&arch_ops, iters);
  check_semantics(&local_ops);
  check_failed_cas_no_write("ax_arch_cas_local", ax_arch_cas_local);

#if defined(__aarch64__)
  check_all(&llsc_ops, iters);
  check_failed_cas_no_write("axi_llsc_cas_release", axi_llsc_cas_release);
  check_failed_cas_no_write("axi_llsc_cas_acq_rel", axi_llsc_cas_acq_rel);
  if (cpu_has_lse())
    check_all(&lse_ops, iters);
  else
    printf("t_atomic: no HWCAP_ATOMICS: LSE family not run\n");
  size_t zva = ax_arch_dczva_size();
  CHECKF(zva == 0 || (zva >= 4 && (zva & (zva - 1)) == 0), "dczva size %zu", zva);
  CHECKF((strstr(ax_arch_cpu_features(), "lse") != NULL) == cpu_has_lse(), "features: %s",
         ax_arch_cpu_features());
#endif

  check_mode(want);
  printf("t_atomic: OK (atomics %s, cpu: %s)\n", want, ax_arch_cpu_features());
  return 0;
}
