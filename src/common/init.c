/* Process init and options: read once, by the first thread that allocates.
 *
 * Runs before constructors, inside dlsym, in a fork child's first malloc: no stdio, no
 * allocation (getenv neither allocates nor changes errno), errno restored.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "bulk.h"
#include "internal.h"

ax_options_t axi_options = {.purge_delay_ms = 10};
bool axi_force_mt; /* AXMALLOC_FORCE_MT=1: atomics even while single-threaded */
bool axi_forked;

/* ---- process init ------------------------------------------------------------------ */

uint64_t axi_env_u64(const char *name, uint64_t dflt) {
  const char *s = getenv(name); /* getenv neither allocates nor changes errno */
  if (!s || !*s)
    return dflt;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++)
    v = v * 10 + (uint64_t)(*s - '0');
  return v;
}

/* pre: called once, by the first thread that allocates, before any other thread can
 * (a second thread exists only after the first called pthread_create, which mallocs). */
void axi_init_process(void) {
  int saved = errno;
  unsigned long pg = getauxval(AT_PAGESZ);
  axi_os_page = pg ? pg : 4096;
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
  axi_cookie_key = (uintptr_t)axi_random();
  if (axi_options.stats)
    axi_write_keep_stderr(); /* the report at exit must find stderr (print.c) */
  ax_arch_cpu_detect();
  /* tagging: asked for, or checked mode (where the CPU has MTE) */
  axi_mte_init(axi_env_u64("AXMALLOC_MTE", 0) != 0 || axi_checked);
  axi_bulk_init();
  axi_prof_init(); /* after checked mode and tagging, which rule it out */
  if (axi_options.verbose)
    axi_write("axmalloc: version %d.%d, arch %s, cpu features: %s\n"
              "axmalloc: atomics %s, single-threaded twins %s%s\n"
              "axmalloc: bulk zero %s, bulk copy %s\n"
              "axmalloc: os page %zu B, segment %zu KiB, purge delay %zu ms%s, memory tagging %s, "
              "heap profiling %s\n",
              AX_VERSION_MAJOR, AX_VERSION_MINOR, AX_ARCH_NAME, ax_arch_cpu_features(),
              ax_arch_atomics_name(), axi_single_threaded() ? "on" : "off",
              axi_force_mt ? " (AXMALLOC_FORCE_MT)" : "", axi_bulk_zero_name(),
              axi_bulk_copy_name(), axi_os_page, (size_t)(AX_SEGMENT_SIZE >> 10),
              (size_t)axi_options.purge_delay_ms, axi_checked ? ", checked mode" : "",
              axi_mte_state, axi_prof_on ? "on" : "off");
  if (axi_options.verbose && axi_prof_on)
    axi_write(
        "axmalloc: heap profiling: one sample per %llu B on average, profiles %s.<pid>.*.heap\n",
        (unsigned long long)axi_prof_rate(), axi_prof_prefix());
  errno = saved;
}
