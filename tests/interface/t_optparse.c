/* SPDX-License-Identifier: MIT */
/* The options as the library took them, for tests/interface/t_optparse.sh, which sets them and
 * reads what came of it here and in the library's own lines on stderr.
 *
 *   t_optparse              "t_optparse: started" on stderr once the library runs (every
 *                           start-up line of the library comes before it), then on stdout
 *                           page_size, prof_sample (0: profiling off), thp and mte
 *   t_optparse chdir <dir>  the same, then into <dir> and a profile (ax_prof_dump(NULL)),
 *                           which must go where the prefix named at start-up
 */
#define _GNU_SOURCE
#include <unistd.h>

#include "testutil.h"

int main(int argc, char **argv) {
  check_axmalloc_active(); /* (process init ran: every start-up line is out) */
  fprintf(stderr, "t_optparse: started\n");
  ax_info_t info;
  ax_info(&info);
  ax_thp_info_t thp;
  ax_thp_info(&thp);
  printf("page_size %zu\nprof_sample %zu\nthp %s\nmte %s\n", info.page_size, info.prof_sample,
         thp.option, info.mte);
  if (argc == 3 && strcmp(argv[1], "chdir") == 0) {
    CHECKF(chdir(argv[2]) == 0, "chdir %s", argv[2]);
    int err = ax_prof_dump(NULL);
    CHECKF(err == 0, "ax_prof_dump(NULL) after chdir %s: %s", argv[2], strerror(err));
  } else if (argc != 1) {
    fprintf(stderr, "usage: t_optparse [chdir <dir>]\n");
    return 2;
  }
  fflush(stdout);
  return 0;
}
