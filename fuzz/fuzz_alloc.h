/* SPDX-License-Identifier: MIT */
/* The allocator fuzz harness's entry points, for replay.c and corpus.c. */
#ifndef FZ_FUZZ_ALLOC_H
#define FZ_FUZZ_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

/* Check that malloc is axmalloc's (traps if not); report the totals at exit unless
 * report_at_exit is 0. Idempotent; the first call decides. */
void fz_init(int report_at_exit);
/* Run one input (libFuzzer's entry point). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Print "fuzz_alloc: N inputs, M allocator operations" to stderr (unless quiet); at exit,
 * and before a failed check traps. */
void fz_report(void);
uint64_t fz_allocator_calls(void);     /* allocator calls made so far, both threads */
uint64_t fz_inputs(void);              /* inputs run so far */
extern uint64_t fz_op_counts[FZ_NOPS]; /* operations decoded, by opcode */
const char *fz_op_name(unsigned op);

#endif
