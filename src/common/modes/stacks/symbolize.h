/* SPDX-License-Identifier: MIT */
/* The name of the code at a return address (symbolize.c): the leak report's frames and checked
 * mode's stacks (depot.c, axi_stack_print) are printed by it.
 * Layer: stacks, the floor of the modes (docs/design/09-modes.md). */
#ifndef AX_STACKS_SYMBOLIZE_H
#define AX_STACKS_SYMBOLIZE_H

#include "types.h"

typedef struct ax_sym {
  const char *name;     /* the enclosing function's symbol, NULL when none is known */
  uintptr_t off;        /* pc - the function's start */
  const char *module;   /* the loaded file's path, "" when not known */
  uintptr_t module_off; /* pc - the file's load address */
} ax_sym_t;
/* The function and the file of the code at pc, from the symbol tables of the loaded files
 * (.symtab, else .dynsym), read through read-only mappings: no allocation. The strings stay
 * valid until the process ends. pre: one thread at a time. */
AXI_HIDDEN void axi_symbolize(uintptr_t pc, ax_sym_t *out);

#endif
