/* SPDX-License-Identifier: MIT */
/* axmalloc_conf: a program's compiled-in defaults, read at start-up as the environment is,
 * the environment overriding them; linked dynamically (t_conf*) and -static
 * (t_conf_static*). With -DCONF_BAD (t_conf_bad) the conf holds mistakes, which are said in
 * the environment's words (ctest matches the lines) while the good entries are taken.
 *
 *   t_conf [conf|env]   conf: every value from the conf; env: ctest sets
 *                       AXMALLOC_PURGE_DELAY_MS=30 and AXMALLOC_THP=always, which win
 */
#include <stdbool.h>

#include "testutil.h"

#ifdef CONF_BAD
const char *axmalloc_conf = "stat:1,prof_sample:abc,purge_delay_ms:7,nonsense,zzzzz:1,thp=NEVER";
#else
const char *axmalloc_conf = "purge_delay_ms:50,Stats:0,thp:never,AXMALLOC_prof_sample:64k,"
                            "leaks_exitcode=3";
#endif

static const char *get_str(const char *name) {
  const char *v = NULL;
  size_t len = sizeof v;
  int rc = ax_ctl(name, &v, &len, NULL, 0);
  CHECKF(rc == 0 && v, "ax_ctl(%s) = %d", name, rc);
  return v;
}

static size_t get_size(const char *name) {
  size_t v = 0, len = sizeof v;
  int rc = ax_ctl(name, &v, &len, NULL, 0);
  CHECKF(rc == 0, "ax_ctl(%s) = %d", name, rc);
  return v;
}

int main(int argc, char **argv) {
  free(malloc(1)); /* (a static program's allocations are axmalloc's by construction) */
  const char *mode = argc > 1 ? argv[1] : "conf";
#ifdef CONF_BAD
  /* the good entries are taken, the bad ones leave their defaults */
  CHECKF(ctl_u64("opt.purge_delay_ms") == 7, "purge_delay_ms %llu",
         (unsigned long long)ctl_u64("opt.purge_delay_ms"));
  CHECK(get_size("opt.prof_sample") == 512 << 10);
  CHECK(strcmp(get_str("opt.thp"), "never") == 0);
  printf("t_conf_bad: OK\n");
  return 0;
#endif
  bool env = strcmp(mode, "env") == 0;
  uint64_t ms = ctl_u64("opt.purge_delay_ms");
  CHECKF(ms == (env ? 30u : 50u), "%s: opt.purge_delay_ms %llu", mode, (unsigned long long)ms);
  CHECK(ctl_u64("purge.delay_ms") == ms); /* the setting itself, not only its view */
  const char *thp = get_str("opt.thp");
  CHECKF(strcmp(thp, env ? "always" : "never") == 0, "%s: opt.thp %s", mode, thp);
  ax_thp_info_t t;
  ax_thp_info(&t);
  CHECK(strcmp(t.option, thp) == 0);
  CHECKF(get_size("opt.prof_sample") == 64 << 10, "opt.prof_sample %zu",
         get_size("opt.prof_sample"));
  CHECK(ctl_u64("opt.leaks_exitcode") == 3);
  printf("t_conf %s: OK\n", mode);
  return 0;
}
