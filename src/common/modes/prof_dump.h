/* SPDX-License-Identifier: MIT */
/* The heap profiler's table of stacks and its profiles (prof_dump.c): prof.c fills the table,
 * prof_dump.c writes it out in gperftools' heap-profile text format, which google-pprof reads.
 * Layer: modes (docs/design/09-modes-profiler.md). */
#ifndef AX_PROF_DUMP_H
#define AX_PROF_DUMP_H

#include "types.h"

/* A stack and a block size, with the samples taken there. Never freed (a profile of a long
 * run names each stack once); allocs and frees only grow. */
typedef struct ax_prof_bucket {
  struct ax_prof_bucket *next; /* hash chain */
  uint64_t hash;
  size_t size; /* the block size the sampling used (its class size; huge: the request) */
  ax_atomic_word allocs, frees;
  uint32_t depth;
  uintptr_t pc[]; /* return addresses */
} ax_prof_bucket_t;

#define AX_PROF_TABLE 4096 /* hash heads */

typedef struct ax_prof_state {
  ax_lock_t lock; /* the table; held while a dump walks it */
  uint64_t rate;  /* mean bytes between samples */
  const char *prefix;
  int leaks;                   /* AXMALLOC_PROF_LEAKS=1: the leak report at exit */
  int signal;                  /* AXMALLOC_PROF_SIGNAL: dump on it (0: none) */
  ax_atomic_word dump_pending; /* the signal came while the table was locked */
  ax_atomic_word seq;          /* numbers the dumps of this process */
  uint64_t interval;           /* AXMALLOC_PROF_INTERVAL: bytes between dumps (0: none) */
  ax_atomic_word allocated;    /* bytes allocated, as the samples estimate them (interval) */
  bool gdump;                  /* AXMALLOC_PROF_GDUMP: a dump at each new peak of mapped */
  ax_atomic_word gdump_mapped; /* ... the peak the last one saw */
  ax_prof_bucket_t *table[AX_PROF_TABLE];
} ax_prof_state_t;

AXI_HIDDEN extern ax_prof_state_t axi_prof;

AXI_HIDDEN void axi_prof_dump_init(void);
/* Unlock the profile's lock, then write the dump the signal asked for meanwhile, if any. */
AXI_HIDDEN void axi_prof_unlock(void);
AXI_HIDDEN double axi_prof_exp(double x);
/* A sample of size bytes was just recorded (prof.c): writes the profile when
 * AXMALLOC_PROF_INTERVAL's bytes were allocated since the last such one, or (AXMALLOC_PROF_GDUMP)
 * the bytes mapped passed their highest mark. pre: the profile's lock is not held. No
 * allocation; errno kept. */
AXI_HIDDEN void axi_prof_dump_due(size_t size);

#endif
