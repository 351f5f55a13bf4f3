/* SPDX-License-Identifier: MIT */
/* The name of the code at a return address (symbolize.c): the leak report's frames and checked
 * mode's stacks (depot.c, axi_stack_print) are printed by it.
 * Layer: stacks, the floor of the modes (docs/design/09-modes.md). */
#ifndef AX_STACKS_SYMBOLIZE_H
#define AX_STACKS_SYMBOLIZE_H

#include "types.h"

typedef struct ax_sym {
  const char *name;     /* the enclosing function's name, NULL when none is known */
  const char *mangled;  /* ... its symbol as in the file (name: demangled, once external) */
  uintptr_t off;        /* pc - the function's start */
  const char *module;   /* the loaded file's path, "" when not known */
  uintptr_t module_off; /* pc - the file's load address */
} ax_sym_t;
/* The function and the file of the code at pc, from the symbol tables of the loaded files
 * (.symtab, else .dynsym), read through read-only mappings: no allocation. The strings stay
 * valid until the process ends. pre: one thread at a time. */
AXI_HIDDEN void axi_symbolize(uintptr_t pc, ax_sym_t *out);

/* The leak report's names, LeakSanitizer's: axi_symbolize_want each return address to be
 * printed, then axi_symbolize_external looks up their source lines, running addr2line once per
 * loaded file with debug information for all of its addresses, and from then on axi_symbolize
 * demangles C++ names (the C++ runtime's __cxa_demangle, when the program has it). Both
 * allocate (malloc, a child process): pre: the caller's mallocs cannot lead back here (not
 * inside malloc or free: checked mode's reports never call it), one thread. Nothing found (no
 * addr2line, no debug information): no lines, names as before. */
typedef struct ax_sym_line {
  const char *func; /* a function (inlined, or the frame's own), NULL when not known */
  const char *file; /* "<path>:<line>", NULL when not known */
} ax_sym_line_t;
AXI_HIDDEN void axi_symbolize_want(uintptr_t pc);
AXI_HIDDEN void axi_symbolize_external(void);
/* The frames at pc (a return address wanted before axi_symbolize_external): the inlined calls
 * there, innermost first, then its function's own; *out points at them. 0: none known. */
AXI_HIDDEN unsigned axi_symbolize_lines(uintptr_t pc, const ax_sym_line_t **out);

#endif
