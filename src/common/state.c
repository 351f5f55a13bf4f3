/* The process's shared state: the settings and flags every layer reads, and the thread's heap
 * slot. The bottom of the core: this file calls nothing of ours.
 *
 * Each flag is written once, by process init (lifecycle.c), before the first page exists,
 * and read on slow paths; the fast paths read only the thread's heap slot. Options come from
 * the environment without allocating (getenv neither allocates nor changes errno).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "internal.h"

#ifndef AX_CHECKED
#define AX_CHECKED 0
#endif

ax_options_t axi_options = {.purge_delay_ms = 10};
bool axi_force_mt; /* AXMALLOC_FORCE_MT=1: atomics even while single-threaded */
bool axi_forked;
bool axi_checked = AX_CHECKED;
bool axi_mte;
const char *axi_mte_state = "off";
bool axi_prof_on;
uint8_t axi_prof_unwind_mode;
uintptr_t axi_cookie_key = 0x5bd1e9955bd1e995u; /* randomised by process init */
size_t axi_os_page = 4096;                      /* set by process init */
ax_global_stats_t axi_stats;

ax_page_t axi_page_empty; /* free == NULL: the fast path always falls through */
ax_heap_t axi_heap_empty = {.direct = {[0 ... AX_DIRECT_N - 1] = &axi_page_empty},
                            .current = {[0 ... AX_CLASSES - 1] = &axi_page_empty}};
__thread ax_heap_t *axi_tls_heap __attribute__((tls_model("initial-exec"))) = &axi_heap_empty;
__thread bool axi_thread_exited __attribute__((tls_model("initial-exec")));

uint64_t axi_env_u64(const char *name, uint64_t dflt) {
  const char *s = getenv(name);
  if (!s || !*s)
    return dflt;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++)
    v = v * 10 + (uint64_t)(*s - '0');
  return v;
}

/* The options this file owns. pre: process init, alone; os_page is the kernel's. */
void axi_state_init(void) {
  /* AXMALLOC_PAGE_SIZE: behave as on a kernel with larger pages (AArch64 servers run 16 and
   * 64 KiB kernels); a power of two from the real page size up to 64 KiB. */
  uint64_t want = axi_env_u64("AXMALLOC_PAGE_SIZE", 0);
  if (want >= axi_os_page && want <= 65536 && (want & (want - 1)) == 0)
    axi_os_page = want;
  axi_options.stats = (int)axi_env_u64("AXMALLOC_STATS", 0);
  axi_options.verbose = (int)axi_env_u64("AXMALLOC_VERBOSE", 0);
  axi_options.purge_delay_ms = axi_env_u64("AXMALLOC_PURGE_DELAY_MS", 10);
  axi_force_mt = axi_env_u64("AXMALLOC_FORCE_MT", 0) != 0;
  /* checked mode can be switched on, never off (an AX_CHECKED build starts with it on) */
  if (axi_env_u64("AXMALLOC_CHECK", 0) != 0)
    axi_checked = true;
}
