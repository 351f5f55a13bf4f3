/* SPDX-License-Identifier: MIT */
/* Guarded sampling's fault handler (guard_fault.c): a SIGSEGV or SIGBUS on the pool's pages is
 * reported (guard_report.c) and the process dies of it; any other goes to the handler the
 * program had installed before, or to the default action, untouched.
 * Layer: modes (docs/design/09-modes-guard.md). */
#ifndef AX_GUARD_FAULT_H
#define AX_GUARD_FAULT_H

#include "types.h"

/* Install the handler for SIGSEGV and SIGBUS, keeping the ones installed before to chain to.
 * Once (later calls return at once). pre: the pool is mapped (guard.c, at its first sample). */
AXI_HIDDEN void axi_guard_fault_install(void);
/* AXMALLOC_GUARD_HANDLER=reinstall: when the program replaced the handler since, install it
 * again, chaining to the program's. Called at each sample. */
AXI_HIDDEN void axi_guard_fault_recheck(void);

#endif
