/* SPDX-License-Identifier: MIT */
/* The report of a misuse of a guarded block (guarded sampling, docs/design/09-modes-guard.md):
 * what went wrong in ASan's and GWP-ASan's words, where the address lies against the block,
 * and the stacks that allocated and freed it, printed by the stacks floor's
 * axi_stack_print_frames. guard.c calls it for a bad free (then aborts), guard_fault.c from its
 * SIGSEGV/SIGBUS handler (then returns, and the access faults again).
 *
 *   axmalloc: use after free at 0x7f2a5c405008 by thread 4711
 *     0x7f2a5c405008 is 8 bytes inside the freed 64-byte block at 0x7f2a5c405000 (sample 3)
 *     allocated by thread 4711 here:
 *       #0 0x55d0c1a0 alloc_site+0x1c (/tmp/prog+0x11a0) /tmp/prog.c:12
 *     freed by thread 4711 here:
 *       #0 ...
 *   axmalloc: guarded sampling caught this (AXMALLOC_GUARD=1: ...); see axmalloc(3)
 *
 * Source lines and demangled names (the leak checker's: axi_symbolize_external) only outside a
 * signal handler; the reasons are at report_names below. */
#include "modes/guard_report.h"

#include "arch.h"
#include "modes/stacks/depot.h"
#include "modes/stacks/symbolize.h"
#include "options.h"
#include "os.h"
#include "print.h"

ax_guard_pool_t axi_guard_pool;

/* ---- one report at a time --------------------------------------------------------------- */

/* The names (symbolize.c) are one thread's at a time, and two reports' lines would mix: the
 * thread that holds `reporting` (its ax_arch_thread_id) reports, the others wait for it. A
 * report that comes back to its own thread (a handler of the program's, run inside ours,
 * touched a guarded page) is left out rather than waited for. */
static ax_atomic_word reporting;

static bool report_begin(void) {
  uintptr_t me = ax_arch_thread_id(), v = 0;
  while (!ax_atomic_cas_acq_rel(&reporting, &v, me)) {
    if (v == me)
      return false;
    axi_os_wait(&reporting, (uint32_t)v, 10); /* (a futex: async-signal-safe) */
    v = 0;
  }
  return true;
}
static void report_end(void) {
  ax_atomic_store_release(&reporting, 0);
  axi_os_wake(&reporting, ~0u);
}

/* ---- the lines ------------------------------------------------------------------------------ */

static const char *kind_words(enum ax_guard_kind k) {
  switch (k) {
  case AX_GUARD_USE_AFTER_FREE:
    return "use after free";
  case AX_GUARD_OVERFLOW:
  case AX_GUARD_OVERFLOW_FREE:
    return "heap buffer overflow";
  case AX_GUARD_UNDERFLOW:
  case AX_GUARD_UNDERFLOW_FREE:
    return "heap buffer underflow";
  case AX_GUARD_DOUBLE_FREE:
    return "double free";
  case AX_GUARD_INVALID_FREE:
    return "invalid free";
  case AX_GUARD_WILD:
    break;
  }
  return "wild access";
}

/* The first line. A bad free names its function as glibc's messages do ("free(): double free
 * of guarded block 0x..."), realloc's frees "realloc", malloc_usable_size's look at a freed
 * block "malloc_usable_size"; a fault names none (fn NULL). */
static void first_line(enum ax_guard_kind k, const ax_guard_slot_t *s, uintptr_t addr,
                       const char *fn) {
  const char *what = kind_words(k), *f = fn ? fn : "free";
  void *a = (void *)addr;
  switch (k) {
  case AX_GUARD_DOUBLE_FREE:
    axi_write("axmalloc: %s(): double free of guarded block %p\n", f, a);
    return;
  case AX_GUARD_INVALID_FREE:
    if (s)
      axi_write("axmalloc: %s(): invalid free of %p, inside guarded block %p\n", f, a,
                (void *)s->block);
    else
      axi_write("axmalloc: %s(): invalid free of %p, in guarded sampling's pool but in no block\n",
                f, a);
    return;
  case AX_GUARD_OVERFLOW_FREE:
  case AX_GUARD_UNDERFLOW_FREE:
    axi_write("axmalloc: %s(): %s of guarded block %p (seen at free: the bytes %s the block "
              "were written)\n",
              f, what, s ? (void *)s->block : a, k == AX_GUARD_OVERFLOW_FREE ? "after" : "before");
    return;
  case AX_GUARD_WILD:
    axi_write("axmalloc: %s at %p by thread %d, in a page of guarded sampling's pool no block "
              "explains\n",
              what, a, axi_os_gettid());
    return;
  default:
    if (fn)
      axi_write("axmalloc: %s(): %s of guarded block %p\n", fn, what, a);
    else /* (the access's own stack is the faulting thread's: in the core dump) */
      axi_write("axmalloc: %s at %p by thread %d\n", what, a, axi_os_gettid());
  }
}

/* Where addr lies against s's block, in valgrind's and ASan's measure: "0 bytes after" is the
 * first byte past the end, "1 byte before" the last one before the start. A free (or another
 * call) given the block's own address names the block. */
static void where_line(const ax_guard_slot_t *s, uintptr_t addr, bool freed, bool named) {
  uintptr_t b = s->block;
  size_t size = s->size;
  const char *state = freed ? "freed " : "";
  unsigned long long serial = (unsigned long long)s->serial;
  if (addr == b && named)
    axi_write("  %p is the %s%zu-byte block (sample %llu)\n", (void *)b, state, size, serial);
  else if (addr < b)
    axi_write("  %p is %zu byte%s before the %s%zu-byte block at %p (sample %llu)\n", (void *)addr,
              (size_t)(b - addr), axi_plural(b - addr), state, size, (void *)b, serial);
  else if (addr - b >= size)
    axi_write("  %p is %zu byte%s after the %s%zu-byte block at %p (sample %llu)\n", (void *)addr,
              (size_t)(addr - b - size), axi_plural(addr - b - size), state, size, (void *)b,
              serial);
  else
    axi_write("  %p is %zu byte%s inside the %s%zu-byte block at %p (sample %llu)\n", (void *)addr,
              (size_t)(addr - b), axi_plural(addr - b), state, size, (void *)b, serial);
}

/* A stack kept in a slot, as the depot keeps its stacks: the frames printer takes those. */
typedef union frames {
  ax_depot_stack_t s;
  char room[sizeof(ax_depot_stack_t) + AX_GUARD_FRAMES * sizeof(uintptr_t)];
} frames_t;

static void print_stack(const char *what, const ax_guard_stack_t *g) {
  frames_t f;
  __builtin_memset(&f.s, 0, sizeof f.s);
  f.s.depth = g->depth < AX_GUARD_FRAMES ? g->depth : AX_GUARD_FRAMES;
  for (unsigned i = 0; i < f.s.depth; i++)
    f.s.pc[i] = g->pc[i];
  axi_write("  %s by thread %d here:\n", what, (int)g->tid);
  if (f.s.depth == 0)
    axi_write("    (no stack: taken before constructors ran, or inside the unwinder)\n");
  axi_stack_print_frames(&f.s);
}

/* Source lines and demangled names, as the leak report has them, only when the report is not
 * made in a signal handler. The look-up runs addr2line (pipe2, vfork, execve: each safe in a
 * handler on Linux) and the demangler, which allocates through malloc; and it takes about
 * 10 KiB of stack in symbolize.c's frames. In a handler each of these can go wrong:
 * - malloc: the fault may come from inside the allocator (a scan or a copy of ours reading a
 *   guarded page), or from a thread inside libc holding a lock our slow paths need (the
 *   loader's, stdio's through a program's handler): a deadlock or a heap half updated.
 *   Telling those apart needs the faulting pc from the ucontext, which src/common cannot read
 *   without an architecture's register names (no seam for it yet);
 * - the stack: SA_ONSTACK runs us on the program's alternate stack when it has one, and
 *   SIGSTKSZ (8 KiB on x86-64) is less than the look-up needs: a second fault, and the report
 *   lost with it.
 * So a fault's report names frames from the symbol tables alone (axi_symbolize: no
 * allocation, no lock but the loader's recursive one on the first call), with each frame's
 * file+offset, which `addr2line -e <file> <offset>` turns into a line afterwards. A bad free's
 * report is made by free() before it touches the heap, holding no lock of ours (guard.c), so
 * there the demangler's malloc is an ordinary call, as in the leak report at exit. */
static void report_names(const ax_guard_slot_t *s, bool freed) {
  ax_sym_t sym; /* (the loaded files listed first: axi_symbolize_external looks in those) */
  axi_symbolize(s->alloc.depth ? s->alloc.pc[0] : (uintptr_t)report_names, &sym);
  for (unsigned i = 0; i < s->alloc.depth && i < AX_GUARD_FRAMES; i++)
    axi_symbolize_want(s->alloc.pc[i]);
  for (unsigned i = 0; freed && i < s->free.depth && i < AX_GUARD_FRAMES; i++)
    axi_symbolize_want(s->free.pc[i]);
  axi_symbolize_external();
}

/* How to catch more, and where the words are explained: the interval as the option takes it
 * (64m) and in words (64 MiB). */
static void last_line(void) {
  static const struct {
    unsigned shift;
    const char *suffix, *unit;
  } units[] = {{30, "g", "GiB"}, {20, "m", "MiB"}, {10, "k", "KiB"}, {0, "", "bytes"}};
  uint64_t every = axi_option_num(AXI_OPTION_GUARD);
  if (every <= 1) {
    axi_write("axmalloc: guarded sampling caught this (AXMALLOC_GUARD=%llu: every block that "
              "fits a page, while the pool has a free slot); see axmalloc(3)\n",
              (unsigned long long)every);
    return;
  }
  unsigned u = 0;
  while (every & (((uint64_t)1 << units[u].shift) - 1))
    u++;
  unsigned long long n = (unsigned long long)(every >> units[u].shift);
  axi_write("axmalloc: guarded sampling caught this (AXMALLOC_GUARD=%llu%s: one block in about "
            "every %llu %s allocated; a smaller interval catches more, 1 every block that fits a "
            "page); see axmalloc(3)\n",
            n, units[u].suffix, n, units[u].unit);
}

void axi_guard_report(enum ax_guard_kind kind, const ax_guard_slot_t *s, uintptr_t addr,
                      const char *fn, bool in_signal) {
  if (!report_begin())
    return;
  uintptr_t state = s ? ax_atomic_load_acquire(&s->state) : AX_GUARD_UNUSED;
  /* (FREEING: the page is closed before FREED is published; but a free that finds the bytes
   * around the block written reports it before it frees anything) */
  bool at_free = kind == AX_GUARD_OVERFLOW_FREE || kind == AX_GUARD_UNDERFLOW_FREE;
  bool freed = state == AX_GUARD_FREED || (state == AX_GUARD_FREEING && !at_free);
  if (s && !in_signal)
    report_names(s, freed);
  first_line(kind, s, addr, fn);
  if (s && state != AX_GUARD_UNUSED) {
    where_line(s, addr, freed, fn != NULL);
    print_stack("allocated", &s->alloc);
    if (freed && s->free.depth)
      print_stack("freed", &s->free);
  }
  last_line();
  report_end();
}
