/* SPDX-License-Identifier: MIT */
/* Messages on stderr without stdio or allocation, and the reports that name a bad pointer
 * (print.c). Layer: base (docs/design/00-base.md). */
#ifndef AX_PRINT_H
#define AX_PRINT_H

#include "types.h"

/* print.c: a printf subset (%s %d %zu %llu %p %x) to stderr, without stdio or allocation,
 * not a cancellation point */
AXI_HIDDEN void axi_write(const char *fmt, ...);
AXI_HIDDEN void axi_write_keep_stderr(void);
AXI_HIDDEN void axi_write_to_saved_stderr(void);
AXI_HIDDEN __attribute__((noreturn)) void axi_fatal(const char *fmt, ...);
/* "s" unless n is 1, for a count's noun: "%llu block%s", n, axi_plural(n) ("1 blocks" said
 * nothing wrong, but read badly: issue 42). */
static inline const char *axi_plural(uint64_t n) { return n == 1 ? "" : "s"; }
/* err in words ("No such file or directory") for a message; "errno <n>" in buf (24 bytes)
 * for one without a name here. Without strerror: its translations may allocate. */
AXI_HIDDEN const char *axi_strerror(int err, char *buf);

AXI_HIDDEN __attribute__((noreturn)) void axi_invalid_free(const char *fn, const void *p);
AXI_HIDDEN __attribute__((noreturn)) void axi_double_free(const char *fn, const void *p);
AXI_HIDDEN __attribute__((noreturn)) void axi_bad_size(const char *fn, const void *p, size_t size,
                                                       size_t block);
AXI_HIDDEN void axi_say_invalid_free(const char *fn, const void *p);
AXI_HIDDEN void axi_say_double_free(const char *fn, const void *p);
AXI_HIDDEN void axi_say_bad_size(const char *fn, const void *p, size_t size, size_t block);
AXI_HIDDEN __attribute__((noreturn)) void axi_corrupted_transit(const void *b);
AXI_HIDDEN __attribute__((noreturn)) void axi_corrupted(const void *at);
AXI_HIDDEN __attribute__((noreturn)) void axi_corrupted_list(const ax_page_t *page,
                                                             const ax_block_t *b);

#endif
