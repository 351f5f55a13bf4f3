/* SPDX-License-Identifier: MIT */
/* The exact leak checker: every live block and the stack that allocated it, and at exit the
 * blocks no root reaches, reported by stack.
 *
 *   AXMALLOC_LEAKS=1|all  AXMALLOC_LEAKS_EXITCODE=<0-255, 23>  AXMALLOC_LEAKS_SUPPRESSIONS=<file>
 *
 * While it runs every malloc and free takes the slow paths (axi_slow_only, as in checked
 * mode): malloc's records the block's size and stack in the block's side word (stacks/side.h,
 * in the format of leak_gate.h), free's clears it, so the live set at exit is exact, not a
 * sample. Stacks are walked by the stacks' unwinder (its rules per return address and its memo
 * of the thread's last walks: a walk from the same place re-reads a few words) and kept once
 * each in the stack depot (stacks/depot.c). At exit (leak_at_exit) leak_scan.c marks what the
 * roots reach, then what lost blocks reach (indirect leaks); the rest is reported as
 * LeakSanitizer does, direct leaks first, then indirect ones, each biggest stack first, its
 * frames named by stacks/symbolize.c (C++ names demangled, source lines from addr2line, once
 * the count is done); then the process exits with the exit code when any leak is not
 * suppressed. Other threads may still run then: the scan closes a gate that every free and
 * unmap of leak mode passes (leak_gate.c). Off, nothing here runs: every entry is behind
 * axi_leaks, on a slow path.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modes/leak.h"

#include "cache.h"
#include "list.h"
#include "modes/leak_gate.h"
#include "modes/leak_scan.h"
#include "modes/stacks/stacks.h"
#include "options.h"
#include "os.h"
#include "print.h"
#include "state.h"

static unsigned exit_code = 23;
static const char *suppressions; /* the file's path, NULL: none */
static bool ready;               /* constructors ran: the check at exit may run */
static pid_t leak_pid;           /* the process the check runs in: not a fork child */

/* ---- options --------------------------------------------------------------------------- */

/* The checker's three options (options.c's table: AXMALLOC_LEAKS a bool or all, the exit code
 * 0-255, the suppression file's path). */
static void leak_options(void) {
  axi_leaks = (uint8_t)axi_option_num(AXI_OPTION_LEAKS); /* off, on, all: 0, 1, 2 */
  exit_code = (unsigned)axi_option_num(AXI_OPTION_LEAKS_EXITCODE);
  if (axi_option_from_env(AXI_OPTION_LEAKS_SUPPRESSIONS))
    suppressions = axi_option_str(AXI_OPTION_LEAKS_SUPPRESSIONS);
}

/* ---- recording ----------------------------------------------------------------------------- */

/* A block the program now holds, of size bytes (its request), allocated from the caller's
 * stack (this frame and the entry points' are dropped: AX_API). A malloc before constructors
 * ran, or from inside a walk (libgcc's first lookup allocates), gets the unknown stack. While
 * the scan's gate is closed the block is new: never counted (the program may store it where
 * the scan has read already); before, it goes in the thread's ring (leak_gate.c). pre:
 * axi_leaks; p is a block no other thread can free yet. */
AX_NOINLINE AX_API void axi_leak_new(void *p, size_t size) {
  uint32_t id = axi_stack_here();
  ax_atomic_word *w = axi_side_made((uintptr_t)p);
  if (!w)
    return;
  if (size > AX_LARGE_MAX) /* (a huge block: past its region) */
    axi_side_span_add((uintptr_t)p, size);
  axi_leak_gate_made(p, w, (uintptr_t)(size < AX_LEAK_BIG ? size : AX_LEAK_BIG) << 32 | id);
}

/* free (or realloc) of the block at p, any thread: it is no longer live. A block whose word is
 * already clear was not live: when it also looks free (its link), it is looked for on its
 * page's lists, and reported as a double free if there (free's own owner path does not look).
 * page: NULL for a huge block. */
void axi_leak_forget(ax_page_t *page, void *p) {
  ax_atomic_word *w = axi_side_word((uintptr_t)p);
  if (w && ax_atomic_load_relaxed(w)) {
    ax_atomic_store_relaxed(w, 0);
    return;
  }
  if (page && axi_looks_free(page, p))
    axi_double_free_check(page, p);
}

/* realloc kept the block at p for size bytes: its stack stays, its size follows (a CAS: the
 * scan may mark it meanwhile; the bytes past the new size stay the block's). */
void axi_leak_resize(void *p, size_t size) {
  ax_atomic_word *w = axi_side_word((uintptr_t)p);
  uintptr_t v = w ? ax_atomic_load_relaxed(w) : 0;
  uintptr_t s = (uintptr_t)(size < AX_LEAK_BIG ? size : AX_LEAK_BIG) << 32;
  while (v && !ax_atomic_cas_acq_rel(w, &v, s | (v & 0xffffffffu)))
    ;
  if (v && size > AX_LARGE_MAX)
    axi_side_span_add((uintptr_t)p, size);
}

/* ---- init ---------------------------------------------------------------------------------- */

/* pre: process init, after checked mode and tagging are decided, before the profiler's. */
void axi_leak_init(void) {
  leak_options();
  if (!axi_leaks)
    return;
  if (axi_checked || axi_mte) {
    axi_write("axmalloc: the leak checker is not available with checked mode or memory "
              "tagging: off\n");
    axi_leaks = 0;
    return;
  }
  if (!axi_stack_depot_map()) {
    axi_write("axmalloc: no memory for the leak checker: off\n");
    axi_leaks = 0;
    return;
  }
  axi_leak_gate_init();
  axi_seams.unmap_hold = axi_leak_hold; /* (os.c) */
  axi_seams.unmap_release = axi_leak_release;
  axi_write_keep_stderr(); /* the report at exit must find stderr (print.c) */
}

/* Constructors run: the check at exit may run, in this process (not in a fork child). pre:
 * axi_leaks. */
void axi_leak_ready(void) {
  ready = true;
  leak_pid = getpid();
}

/* ---- suppressions ---------------------------------------------------------------------------- */

/* LeakSanitizer's patterns: '*' any characters; matched anywhere in the name unless it starts
 * with '^' (at the start) or ends with '$' (at the end). */
static bool glob(const char *p, const char *pend, const char *s, bool anchored_end) {
  while (p < pend && *p != '*') {
    if (!*s || *s != *p)
      return false;
    p++, s++;
  }
  if (p == pend)
    return !anchored_end || !*s;
  for (; *s; s++)
    if (glob(p + 1, pend, s, anchored_end))
      return true;
  return glob(p + 1, pend, s, anchored_end);
}

static bool pattern_match(const char *pat, const char *s) {
  size_t n = strlen(pat);
  bool start = n && pat[0] == '^', end = n > 1 && pat[n - 1] == '$';
  const char *p = pat + start, *pend = pat + n - end;
  if (start)
    return glob(p, pend, s, end);
  for (; *s; s++)
    if (glob(p, pend, s, end))
      return true;
  return glob(p, pend, s, end);
}

#define MAX_PATTERNS 256
static const char *pattern[MAX_PATTERNS];
static unsigned npatterns;
static uint64_t pattern_hits[MAX_PATTERNS][2]; /* blocks, bytes */

/* The suppression file, read into memory of its own: lines "leak:<pattern>", '#' comments. */
static void read_suppressions(void) {
  int fd = axi_os_open(suppressions, 0, 0);
  long size = fd >= 0 ? axi_os_file_size(fd) : -1;
  char *buf = size >= 0 ? axi_os_map((size_t)size + 1) : NULL;
  long got = 0, r;
  while (buf && got < size && (r = axi_os_read(fd, buf + got, (size_t)(size - got))) > 0)
    got += r;
  if (fd >= 0)
    axi_os_close(fd);
  if (!buf) {
    axi_write("axmalloc: AXMALLOC_LEAKS_SUPPRESSIONS=%s: cannot be read\n", suppressions);
    return;
  }
  for (char *line = buf, *next; line < buf + got; line = next) {
    next = line;
    while (next < buf + got && *next != '\n')
      next++;
    *next++ = 0;
    while (*line == ' ' || *line == '\t')
      line++;
    for (char *e = line + strlen(line);
         e > line && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r');)
      *--e = 0;
    if (!*line || *line == '#')
      continue;
    if (strncmp(line, "leak:", 5) != 0 || !line[5])
      axi_write("axmalloc: %s: not a suppression (leak:<pattern>): %s\n", suppressions, line);
    else if (npatterns < MAX_PATTERNS)
      pattern[npatterns++] = line + 5;
  }
}

static bool matches(const char *pat, const char *s) { return s && pattern_match(pat, s); }

/* The pattern (+ 1) that matches a frame of s, 0: none. As LeakSanitizer's: a frame's
 * function (demangled, leak:leak_in_thread(int), and also as in the file, _Z14leak_in_threadi),
 * its file (the module) and its source file, the inlined calls at it too. */
static uint32_t suppressed_by(const ax_depot_stack_t *s) {
  for (unsigned f = 0; f < s->depth; f++) {
    ax_sym_t sym;
    const ax_sym_line_t *ln;
    axi_symbolize(s->pc[f], &sym);
    unsigned nl = axi_symbolize_lines(s->pc[f], &ln);
    for (unsigned i = 0; i < npatterns; i++) {
      if (matches(pattern[i], sym.name) || matches(pattern[i], sym.mangled) ||
          matches(pattern[i], sym.module))
        return i + 1;
      for (unsigned k = 0; k < nl; k++)
        if (matches(pattern[i], ln[k].func) || matches(pattern[i], ln[k].file))
          return i + 1;
    }
  }
  return 0;
}

/* Blocks the dynamic linker allocated (a thread's TLS, its DTV) are held through structures
 * the scan does not read (the TLS of threads gone, kept with their cached stacks): counted
 * as still reachable, as LeakSanitizer ignores the linker's allocations. */
static bool by_linker(const ax_depot_stack_t *s) {
  for (unsigned f = 0; f < s->depth; f++) {
    ax_sym_t sym;
    axi_symbolize(s->pc[f], &sym);
    const char *base = strrchr(sym.module, '/');
    base = base ? base + 1 : sym.module;
    if (!strncmp(base, "ld-linux", 8) || (sym.name && !strncmp(sym.name, "_dl_allocate_tls", 16)))
      return true;
  }
  return false;
}

static void linker_blocks(ax_leak_tally_t *sum) {
  size_t top = axi_stack_depot_used();
  for (size_t at = 0; at < top;) {
    ax_depot_stack_t *s = (ax_depot_stack_t *)(axi_stack_depot + at);
    for (unsigned k = 0; k < 3; k += 2) /* (lost directly, indirectly) */
      if (s->n[k] && by_linker(s)) {
        sum->n[k] -= s->n[k];
        sum->bytes[k] -= s->bytes[k];
        sum->n[1] += s->n[k];
        sum->bytes[1] += s->bytes[k];
        s->n[1] += s->n[k];
        s->bytes[1] += s->bytes[k];
        s->n[k] = s->bytes[k] = 0;
      }
    at += axi_stack_bytes(s);
  }
}

/* ---- the report ------------------------------------------------------------------------------ */

/* The stacks with blocks of kind k (0 lost directly, 1 still reachable, 2 lost indirectly),
 * biggest first: a heap sort of their ids (no allocation, no recursion). */
static bool bigger(uint32_t a, uint32_t b, unsigned k) {
  return axi_stack_of(a)->bytes[k] > axi_stack_of(b)->bytes[k];
}
static void sift(uint32_t *v, size_t i, size_t n, unsigned k) {
  for (size_t c; (c = 2 * i + 1) < n; i = c) {
    if (c + 1 < n && bigger(v[c], v[c + 1], k))
      c++;
    if (!bigger(v[i], v[c], k))
      return;
    uint32_t t = v[i];
    v[i] = v[c];
    v[c] = t;
  }
}
static void sort_smallest_last(uint32_t *v, size_t n, unsigned k) { /* a min-heap, popped */
  for (size_t i = n / 2; i-- > 0;)
    sift(v, i, n, k);
  for (size_t end = n; end-- > 1;) {
    uint32_t t = v[0];
    v[0] = v[end];
    v[end] = t;
    sift(v, 0, end, k);
  }
}

static void print_stack(const ax_depot_stack_t *s) {
  if (s->depth == 0)
    axi_write("    (no stack: allocated before constructors ran, or by the unwinder)\n");
  axi_stack_print_frames(s);
  axi_write("\n");
}

/* The ids of the stacks with blocks of kind k and not suppressed, in memory of their own. */
static size_t groups_of(unsigned k, uint32_t **out) {
  size_t top = axi_stack_depot_used(), n = 0;
  for (size_t at = 0; at < top; at += axi_stack_bytes((ax_depot_stack_t *)(axi_stack_depot + at)))
    n += ((ax_depot_stack_t *)(axi_stack_depot + at))->n[k] != 0;
  uint32_t *v = n ? axi_os_map(n * sizeof *v) : NULL;
  n = 0;
  for (size_t at = 0; v && at < top;) {
    ax_depot_stack_t *s = (ax_depot_stack_t *)(axi_stack_depot + at);
    if (s->n[k] && !(k != 1 && s->suppressed))
      v[n++] = axi_stack_id_at(at);
    at += axi_stack_bytes(s);
  }
  *out = v;
  return v ? n : 0;
}

/* LeakSanitizer's lines: "Direct leak of 4096 byte(s) in 1 object(s) allocated from:". */
static void print_groups(unsigned k) {
  uint32_t *v;
  size_t n = groups_of(k, &v);
  sort_smallest_last(v, n, k);
  for (size_t i = 0; i < n; i++) {
    ax_depot_stack_t *s = axi_stack_of(v[i]);
    if (k == 1)
      axi_write("%llu byte%s in %llu block%s still reachable, allocated from:\n",
                (unsigned long long)s->bytes[k], axi_plural(s->bytes[k]),
                (unsigned long long)s->n[k], axi_plural(s->n[k]));
    else
      axi_write("%s leak of %llu byte(s) in %llu object(s) allocated from:\n",
                k ? "Indirect" : "Direct", (unsigned long long)s->bytes[k],
                (unsigned long long)s->n[k]);
    print_stack(s);
  }
}

/* The frames of the stacks the report may print (lost; still reachable with all) get their
 * source lines and C++ names: after the count, so the blocks this makes count nowhere. */
static void names_for_report(void) {
  size_t top = axi_stack_depot_used();
  for (size_t at = 0; at < top;) {
    ax_depot_stack_t *s = (ax_depot_stack_t *)(axi_stack_depot + at);
    if (s->n[0] || s->n[2] || (axi_leaks == 2 && s->n[1]))
      for (unsigned f = 0; f < s->depth; f++)
        axi_symbolize_want(s->pc[f]);
    at += axi_stack_bytes(s);
  }
  axi_symbolize_external();
}

/* Suppressed stacks: their blocks, direct and indirect, move out of the lost counts, into
 * their pattern's. */
static void suppress(ax_leak_tally_t *sum) {
  read_suppressions();
  size_t top = axi_stack_depot_used();
  for (size_t at = 0; npatterns && at < top;) {
    ax_depot_stack_t *s = (ax_depot_stack_t *)(axi_stack_depot + at);
    if ((s->n[0] || s->n[2]) && (s->suppressed = suppressed_by(s)))
      for (unsigned k = 0; k < 3; k += 2) {
        pattern_hits[s->suppressed - 1][0] += s->n[k];
        pattern_hits[s->suppressed - 1][1] += s->bytes[k];
        sum->n[k] -= s->n[k];
        sum->bytes[k] -= s->bytes[k];
      }
    at += axi_stack_bytes(s);
  }
}

/* Direct leaks first, then indirect ones (LeakSanitizer's order), each biggest first. */
static void report(const ax_leak_tally_t *sum) {
  uint64_t lost = sum->n[0] + sum->n[2], lost_bytes = sum->bytes[0] + sum->bytes[2];
  if (lost || axi_leaks == 2)
    axi_write("axmalloc: leak check: %llu byte%s in %llu block%s lost (directly: %llu byte%s in "
              "%llu block%s, indirectly: %llu byte%s in %llu block%s), %llu block%s (%llu byte%s) "
              "still reachable\n",
              (unsigned long long)lost_bytes, axi_plural(lost_bytes), (unsigned long long)lost,
              axi_plural(lost), (unsigned long long)sum->bytes[0], axi_plural(sum->bytes[0]),
              (unsigned long long)sum->n[0], axi_plural(sum->n[0]),
              (unsigned long long)sum->bytes[2], axi_plural(sum->bytes[2]),
              (unsigned long long)sum->n[2], axi_plural(sum->n[2]), (unsigned long long)sum->n[1],
              axi_plural(sum->n[1]), (unsigned long long)sum->bytes[1], axi_plural(sum->bytes[1]));
  if (lost) {
    axi_write("\n");
    print_groups(0);
    print_groups(2);
  }
  if (axi_leaks == 2 && sum->n[1]) {
    axi_write("axmalloc: still reachable:\n\n");
    print_groups(1);
  }
  for (unsigned i = 0; i < npatterns; i++)
    if (pattern_hits[i][0])
      axi_write("axmalloc: suppressed: %llu byte%s in %llu block%s (leak:%s)\n",
                (unsigned long long)pattern_hits[i][1], axi_plural(pattern_hits[i][1]),
                (unsigned long long)pattern_hits[i][0], axi_plural(pattern_hits[i][0]), pattern[i]);
  if (lost)
    axi_write("SUMMARY: axmalloc: %llu bytes leaked in %llu allocations.\n",
              (unsigned long long)lost_bytes, (unsigned long long)lost);
}

/* The check, after the program's own exit work: its atexit handlers and static destructors
 * run first (they were registered after this library's destructors list was, or belong to a
 * file finalized before us: a preloaded library is finalized after the program), and the
 * lowest priority runs this after the other destructors of its own file (a static link).
 * Not in a fork child (getpid: its parent's blocks are no leaks of its own), and not when
 * the process ends by _exit (no destructor runs). With leaks, the program's buffered output
 * is flushed (cancellation off: the process is ending), then _exit with the code. */
__attribute__((destructor(101))) static void leak_at_exit(void) {
  if (!axi_leaks || !ready || getpid() != leak_pid)
    return;
  axi_write_to_saved_stderr();
  ax_leak_tally_t sum = {0};
  const char *why = axi_leak_scan(&sum);
  if (why) {
    axi_write("axmalloc: leak check: %s: not checked\n", why);
    return;
  }
  if (sum.n[0] || sum.n[2])
    linker_blocks(&sum);
  if (sum.n[0] || sum.n[2] || (axi_leaks == 2 && sum.n[1]))
    names_for_report();
  if (suppressions && (sum.n[0] || sum.n[2]))
    suppress(&sum);
  report(&sum);
  if (!(sum.n[0] || sum.n[2]) || !exit_code)
    return;
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  fflush(NULL);
  _exit((int)exit_code);
}
