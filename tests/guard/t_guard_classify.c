/* SPDX-License-Identifier: MIT */
/* The fault handler's reading of a fault in guarded sampling's pool (guard_fault.c), on a pool
 * this test maps and fills itself, so that every arrangement of neighbours is reached: a freed
 * slot's page, a guard page between two blocks (the nearer one decides), beside freed, live
 * and never used slots, the pool's first and last guard pages, a slot's page never used
 * (nothing explains it). Each fault in a forked child whose stderr comes through a pipe:
 * the child must die of SIGSEGV and the report's first two lines say the kind and where the
 * address lies. Linked -static with libaxmalloc.a, whose hidden names it uses; sampling off
 * (AXMALLOC_GUARD=0), so the pool is this test's alone. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "modes/guard_fault.h"
#include "modes/guard_report.h"
#include "testutil.h"

#define SLOTS 6u
static ax_guard_slot_t rec[SLOTS];
static size_t page;

/* slot i: a block of size bytes at offset off of its page, in state st */
static void put(uint32_t i, enum ax_guard_state st, size_t off, size_t size) {
  rec[i].state = st;
  rec[i].block = axi_guard_slot_page(i) + off;
  rec[i].size = size;
  rec[i].serial = i + 1;
  rec[i].alloc.depth = rec[i].free.depth = 0;
  if (st == AX_GUARD_LIVE)
    CHECK(mprotect((void *)axi_guard_slot_page(i), page, PROT_READ | PROT_WRITE) == 0);
}

/* The child faults at a; the parent reads its report. */
static void expect(const char *what, uintptr_t a, const char *line1, const char *line2) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  pid_t pid = fork_to_die();
  if (pid == 0) {
    dup2(fds[1], 2);
    *(volatile char *)a = 1;
    _exit(3);
  }
  close(fds[1]);
  char out[4096];
  size_t n = 0;
  for (ssize_t r; n + 1 < sizeof out && (r = read(fds[0], out + n, sizeof out - 1 - n)) > 0;)
    n += (size_t)r;
  out[n] = 0;
  close(fds[0]);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "%s: status %#x, report:\n%s", what,
         status, out);
  CHECKF(strstr(out, line1), "%s: no '%s' in:\n%s", what, line1, out);
  CHECKF(!line2 || strstr(out, line2), "%s: no '%s' in:\n%s", what, line2, out);
}

static char l1[256], l2[256];
/* the kind's line at a, and "a is <where> the <freed >size-byte block at b" */
static void fault(const char *what, uintptr_t a, const char *kind, const char *where, uint32_t i) {
  snprintf(l1, sizeof l1, "axmalloc: %s at %p by thread ", kind, (void *)a);
  if (where)
    snprintf(l2, sizeof l2, "  %p is %s the %s%zu-byte block at %p", (void *)a, where,
             rec[i].state == AX_GUARD_LIVE ? "" : "freed ", rec[i].size, (void *)rec[i].block);
  expect(what, a, l1, where ? l2 : NULL);
}

int main(void) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  size_t span = (2 * SLOTS + 1) * page;
  char *base = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(base != MAP_FAILED);
  axi_guard_pool.base = (uintptr_t)base;
  axi_guard_pool.span = span;
  axi_guard_pool.page = page;
  axi_guard_pool.slots = SLOTS;
  axi_guard_pool.slot = rec;
  /* slot 0 freed (at its page's end), 1 live at the end, 2 live at the start, 3 never used,
   * 4 live at the start, 5 freed at the start */
  put(0, AX_GUARD_FREED, page - 16, 13);
  put(1, AX_GUARD_LIVE, page - 32, 32);
  put(2, AX_GUARD_LIVE, 0, 24);
  put(3, AX_GUARD_UNUSED, 0, 0);
  put(4, AX_GUARD_LIVE, 0, 100);
  put(5, AX_GUARD_FREED, 0, 64);
  axi_guard_fault_install();
  uintptr_t b0 = rec[0].block, b2 = rec[2].block, b4 = rec[4].block;
  uintptr_t b5 = rec[5].block;

  fault("freed page", b0 + 8, "use after free", "8 bytes inside", 0);
  fault("freed page, past the block", b0 + 14, "use after free", "1 byte after", 0);
  char before[32];
  snprintf(before, sizeof before, "%zu bytes before", (size_t)(b0 - ((uintptr_t)base + 5)));
  fault("first guard page", (uintptr_t)base + 5, "use after free", before, 0);
  /* guard page 4, between slot 1 (live, at its end) and slot 2 (live, at its start) */
  uintptr_t g4 = (uintptr_t)base + 4 * page;
  fault("just past slot 1", g4, "heap buffer overflow", "0 bytes after", 1);
  fault("nearer slot 1", g4 + page / 2 - 1, "heap buffer overflow", NULL, 1);
  fault("nearer slot 2", g4 + page / 2 + 1, "heap buffer underflow", NULL, 2);
  fault("just before slot 2", b2 - 1, "heap buffer underflow", "1 byte before", 2);
  /* guard page 6 between slot 2 and slot 3 (never used): only slot 2 counts */
  fault("past slot 2", (uintptr_t)base + 7 * page - 1, "heap buffer overflow", NULL, 2);
  /* guard page 8 between slot 3 (never used) and slot 4 */
  fault("before slot 4", b4 - page, "heap buffer underflow", NULL, 4);
  /* guard page 10 between slot 4 (live) and slot 5 (freed): the nearer decides */
  fault("past slot 4", b4 + page, "heap buffer overflow", NULL, 4);
  fault("before slot 5", b5 - 2, "use after free", "2 bytes before", 5);
  /* the last guard page: slot 5 alone */
  fault("last guard page", (uintptr_t)base + span - 1, "use after free", NULL, 5);
  /* nothing explains a fault on a page never handed out */
  snprintf(l1, sizeof l1, "axmalloc: wild access at %p", (void *)axi_guard_slot_page(3));
  expect("unused slot page", axi_guard_slot_page(3), l1, NULL);
  printf("t_guard_classify: all passed\n");
  return 0;
}
