/* SPDX-License-Identifier: MIT */
/* The AXMALLOC_* options (options.c): parsed once by process init, read back by their owners and by
 * ax_ctl. Layer: base (docs/design/00-base.md). */
#ifndef AX_OPTIONS_H
#define AX_OPTIONS_H

#include "types.h"

/* The AXMALLOC_* options, read once by process init (what each kind accepts and the message
 * format are at the top of options.c). One id each, in the order AXMALLOC_VERBOSE=1 lists
 * them; a new option is an id here and a row in options.c's table (how: above the table). */
enum axi_option {
  AXI_OPTION_CHECK,
  AXI_OPTION_FORCE_ISA,
  AXI_OPTION_FORCE_MT,
  AXI_OPTION_GUARD,
  AXI_OPTION_GUARD_HANDLER,
  AXI_OPTION_GUARD_PLACE,
  AXI_OPTION_GUARD_SLOTS,
  AXI_OPTION_LEAKS,
  AXI_OPTION_LEAKS_EXITCODE,
  AXI_OPTION_LEAKS_SUPPRESSIONS,
  AXI_OPTION_MTE,
  AXI_OPTION_PAGE_SIZE,
  AXI_OPTION_PROF,
  AXI_OPTION_PROF_FILE,
  AXI_OPTION_PROF_GDUMP,
  AXI_OPTION_PROF_INTERVAL,
  AXI_OPTION_PROF_LEAKS,
  AXI_OPTION_PROF_SAMPLE,
  AXI_OPTION_PROF_SIGNAL,
  AXI_OPTION_PROF_UNWIND,
  AXI_OPTION_PURGE_DELAY_MS,
  AXI_OPTION_STATS,
  AXI_OPTION_THP,
  AXI_OPTION_VERBOSE,
  AXI_OPTION_COUNT
};
/* Every option parsed, a bad value, an unknown AXMALLOC_* name or an option given without the
 * one it needs reported in one line each, and state.c's settings set (the page size, stats,
 * verbose, the purge delay, forced multi-threading, checked mode). pre: process init, alone,
 * axi_os_page the kernel's. No allocation; errno kept. */
AXI_HIDDEN void axi_options_read(void);
/* AXMALLOC_PURGE_DELAY_MS's bound, and ax_ctl's purge.delay_ms's (an hour) */
#define AX_PURGE_DELAY_MAX_MS 3600000u
/* An option's value: a bool's 0 or 1, a size or number, a choice's index (the order of its
 * words in the table, which is its owner's enum's), a signal's number. pre: options read. */
AXI_HIDDEN uint64_t axi_option_num(enum axi_option o);
/* A choice's word, a string, a signal as given (never NULL for these). pre: options read. */
AXI_HIDDEN const char *axi_option_str(enum axi_option o);
/* Whether the value came from the environment (not the default, not a rejected value). */
AXI_HIDDEN bool axi_option_from_env(enum axi_option o);
/* An owner's own check failed (a kernel bulk.c does not know, a signal that cannot be
 * caught): "axmalloc: <NAME>=<value> <why>: the default <d> is used" when say, and the default
 * from now on. pre: process init, alone. */
AXI_HIDDEN void axi_option_reject(enum axi_option o, const char *why, bool say);
/* The owner's form of a string (the absolute profile prefix), listed and read from now on.
 * pre: process init, alone; str lives as long as the process. */
AXI_HIDDEN void axi_option_resolved(enum axi_option o, const char *str);
/* AXMALLOC_VERBOSE=1: one line per option, its value and "(environment)" or "(default)". */
AXI_HIDDEN void axi_options_print(void);

/* The options read back (ax_ctl's "opt.<name>": env + 9, lower case), one view each. */
enum { AXI_OPT_BOOL, AXI_OPT_SIZE, AXI_OPT_UINT, AXI_OPT_WORD };
typedef struct ax_option_view {
  const char *env; /* "AXMALLOC_PROF_SAMPLE" */
  uint8_t kind;    /* AXI_OPT_BOOL, AXI_OPT_SIZE, AXI_OPT_UINT, AXI_OPT_WORD (string/enum) */
  uint64_t num;    /* bool and numbers (a choice's index, a signal's number too) */
  const char *str; /* words and strings, else NULL */
  bool from_env;
  char name[40]; /* "prof_sample": the part after AXMALLOC_, in lower case (ax_ctl's opt.<name>) */
} ax_option_view_t;
/* pre: process init ran (axi_heap_get). Any thread. */
AXI_HIDDEN size_t axi_option_count(void);
AXI_HIDDEN bool axi_option_at(size_t i, ax_option_view_t *out); /* false past the end */

/* ax_ctl's writes of the options it lets programs change (ctl.c says which and why): option
 * i takes num (a bool's 0 or 1, a size or number in its range, a choice's index), and its
 * view and listing say so. false, and nothing changed, for a value out of range or an option
 * of another kind. Any thread; the owner's setting is the caller's to change. */
AXI_HIDDEN bool axi_option_set(enum axi_option i, uint64_t num);
/* A choice's word (any case) as its index, -1 if it is none of option i's words. */
AXI_HIDDEN int axi_option_word(enum axi_option i, const char *word);

#endif
