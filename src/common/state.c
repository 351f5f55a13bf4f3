/* SPDX-License-Identifier: MIT */
/* The process's shared state: the settings and flags every layer reads, and the thread's heap
 * slot. The bottom of the core: this file calls nothing of ours.
 *
 * Each flag is written once, by process init (lifecycle.c), before the first page exists,
 * and read on slow paths; the fast paths read only the thread's heap slot. The options among
 * them are set by options.c, which parses the environment (a layer above, in the base layer:
 * it calls print.c, which calls os.c, which reads this file).
 */
#define _GNU_SOURCE
#include "state.h"

#ifndef AX_CHECKED
#define AX_CHECKED 0
#endif

ax_options_t axi_options = {.purge_delay_ms = 10};
bool axi_checked = AX_CHECKED;
bool axi_mte;
const char *axi_mte_state = "off";
bool axi_prof_on;
uint8_t axi_leaks;
bool axi_check_stacks;
bool axi_malloc_hooked;
uint64_t axi_guard_mean;
bool axi_guard_every;
uint8_t axi_prof_unwind_mode;
uintptr_t axi_cookie_key = 0x5bd1e9955bd1e995u; /* randomised by process init */
size_t axi_os_page = 4096;                      /* set by process init */
ax_global_stats_t axi_stats;
axi_seams_t axi_seams;

ax_page_t axi_page_empty; /* free == NULL: the fast path always falls through */
ax_heap_t axi_heap_empty = {.direct = {[0 ... AX_DIRECT_N - 1] = &axi_page_empty},
                            .current = {[0 ... AX_CLASSES - 1] = &axi_page_empty},
                            .steal = AX_STEAL_EXITING}; /* (in no registry: never stolen) */
__thread ax_heap_t *axi_tls_heap __attribute__((tls_model("initial-exec"))) = &axi_heap_empty;
__thread bool axi_thread_exited __attribute__((tls_model("initial-exec")));
__thread const char *axi_freeing_for __attribute__((tls_model("initial-exec")));
