/* SPDX-License-Identifier: MIT */
/* Guarded sampling's pool, as the reports read it (guard_report.c): the slots' layout and
 * records, which slot an address falls in, and the report of a misuse of a guarded block (a
 * fault on its pages, or a bad free of it). guard.c hands slots out and takes them back;
 * guard_fault.c catches the faults. Layer: modes (docs/design/09-modes-guard.md). */
#ifndef AX_GUARD_REPORT_H
#define AX_GUARD_REPORT_H

#include "atomic.h"
#include "types.h"

/* The pool: one mapping of 2 * slots + 1 pages of the allocator's page size (axi_os_page,
 * AXMALLOC_PAGE_SIZE), guard pages at even indexes, slot i's page at index 2 * i + 1. Every
 * page is inaccessible except a live block's. */
#define AX_GUARD_FRAMES 30 /* frames kept per stack, as the depot's (AX_STACK_KEEP) */

enum ax_guard_state {
  AX_GUARD_UNUSED,  /* never handed out */
  AX_GUARD_LIVE,    /* a live block: its page readable and writable */
  AX_GUARD_FREEING, /* free() under way (its stack taken, then the page closed) */
  AX_GUARD_FREED    /* freed: its page inaccessible, the block's record kept */
};

/* How a block sits in its page (AXMALLOC_GUARD_PLACE). END: its end at the page's end, rounded
 * down to 16 bytes (malloc's alignment, as glibc's), the 0-15 bytes between checked at free;
 * EXACT: its last byte the page's last (alignment 1 for sizes that are not multiples of 16);
 * START: at the page's start (underflows fault); ALTERNATE: END and START in turn. */
enum ax_guard_place { AX_GUARD_END, AX_GUARD_START, AX_GUARD_ALTERNATE, AX_GUARD_EXACT };

/* What went wrong, for the report. */
enum ax_guard_kind {
  AX_GUARD_USE_AFTER_FREE, /* a fault in a freed block's page */
  AX_GUARD_OVERFLOW,       /* a fault in the guard page after a block placed at its end */
  AX_GUARD_UNDERFLOW,      /* ... before a block placed at its start */
  AX_GUARD_OVERFLOW_FREE,  /* the bytes after a block, in its page, written (seen at free) */
  AX_GUARD_UNDERFLOW_FREE, /* the bytes before it, in its page, written (seen at free) */
  AX_GUARD_DOUBLE_FREE,    /* free() of a freed block */
  AX_GUARD_INVALID_FREE,   /* free() of an address inside a block, not its start */
  AX_GUARD_WILD,           /* a fault in the pool nothing explains (a page never used) */
};

typedef struct ax_guard_stack {
  uint32_t depth; /* frames in pc, the caller of the entry point first */
  int32_t tid;    /* the thread (gettid) */
  uintptr_t pc[AX_GUARD_FRAMES];
} ax_guard_stack_t;

typedef struct ax_guard_slot {
  ax_atomic_word state; /* enum ax_guard_state; LIVE is published last (release) */
  uintptr_t block;      /* the block's address */
  size_t size;          /* the bytes asked for (malloc_usable_size) */
  uint64_t serial;      /* the pool's count of samples when this one was taken (1 first) */
  ax_guard_stack_t alloc, free;
  uint32_t fifo_next; /* (guard.c: the freed slots' queue) */
} ax_guard_slot_t;

typedef struct ax_guard_pool {
  uintptr_t base;         /* the mapping; 0 until the first sample maps it */
  uintptr_t span;         /* its bytes: (2 * slots + 1) * page */
  size_t page;            /* the allocator's page size */
  uint32_t slots;         /* slots in the pool */
  ax_guard_slot_t *slot;  /* their records (a mapping of their own) */
  ax_atomic_word samples; /* blocks handed out so far */
} ax_guard_pool_t;

AXI_HIDDEN extern ax_guard_pool_t axi_guard_pool;

/* Is p in the pool (a block, a slot page or a guard page)? Two loads and a compare: ptr.c's
 * test for every pointer the fast paths did not take. */
static inline bool axi_guard_has(const void *p) {
  /* (acquire: the pool's fields were written before its base was published; span read as an
   * atomic too, and only then: another thread may be mapping the pool) */
  uintptr_t base = ax_peek_acquire(&axi_guard_pool.base);
  return base && (uintptr_t)p - base < ax_peek(&axi_guard_pool.span);
}
/* The page index of a (in the pool): even a guard page, odd slot (index - 1) / 2's page. */
static inline uintptr_t axi_guard_page_index(uintptr_t a) {
  return (a - axi_guard_pool.base) / axi_guard_pool.page;
}
static inline uintptr_t axi_guard_slot_page(uint32_t i) {
  return axi_guard_pool.base + (2 * (uintptr_t)i + 1) * axi_guard_pool.page;
}

/* The report of kind for slot s (addr: the address that faulted or was freed), under
 * "axmalloc: <kind> ..." lines: the address and its offset from the block, the block's size,
 * the stacks that allocated and freed it, symbolized; then the process is left to die (the
 * caller aborts, or returns from the fault so that it faults again with the original signal).
 * Async-signal-safe when in_signal (no allocation, no lock taken); otherwise it may allocate
 * (the demangler): pre, the caller holds no lock of the allocator's. s may be NULL (WILD). */
AXI_HIDDEN void axi_guard_report(enum ax_guard_kind kind, const ax_guard_slot_t *s, uintptr_t addr,
                                 const char *fn, bool in_signal);

#endif
