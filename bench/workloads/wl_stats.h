/* SPDX-License-Identifier: MIT */
/* wl_stats.h -- the remote-free counts and the huge pages advised, when axmalloc is the
 * allocator; the page faults, under any.
 *
 * The workloads are plain libc programs run under every malloc; ax_stats_get is a weak
 * reference, bound when axmalloc is preloaded or linked in (the _static variants) and NULL
 * under any other allocator, which then prints nothing. The counts are deterministic for a
 * fixed interleaving and bounded for any: remote frees (blocks freed by a thread that does
 * not own their page) and publications (the CASes that handed them over), so
 * publications / remote frees is the freeing side's atomic read-modify-writes per remote free;
 * and the owners' exchanges that took their inboxes (their only atomic for those blocks).
 * stderr, one line: stdout carries the checksum alone. */
#ifndef WL_STATS_H
#define WL_STATS_H

#include <stdio.h>
#include <sys/resource.h>

#include <axmalloc.h>

#pragma weak ax_stats_get
#pragma weak ax_thp_info

static inline void wl_print_remote_stats(const char *name) {
  if (!ax_stats_get)
    return;
  ax_stats_t s;
  ax_stats_get(&s);
  double per = s.remote_publishes ? (double)s.remote_frees / (double)s.remote_publishes : 0;
  fprintf(stderr,
          "%s: axmalloc remote frees %llu, publications %llu: %.1f blocks each; inboxes taken "
          "%llu\n",
          name, (unsigned long long)s.remote_frees, (unsigned long long)s.remote_publishes, per,
          (unsigned long long)s.remote_drains);
}

/* The process's page faults so far (getrusage: minor ones are those served without I/O, a
 * page the kernel zeroes or maps at first touch: the cost of large-buffer setup), and under
 * axmalloc the peak of bytes it advised for transparent huge pages (AXMALLOC_THP). */
static inline void wl_print_faults(const char *name) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return;
  fprintf(stderr, "%s: page faults: minor %ld, major %ld", name, ru.ru_minflt, ru.ru_majflt);
  if (ax_thp_info) {
    ax_thp_info_t t;
    ax_thp_info(&t);
    fprintf(stderr, "; axmalloc advised huge pages for %.1f MiB at most (AXMALLOC_THP=%s)",
            (double)t.advised_peak / (1 << 20), t.option);
  }
  fputc('\n', stderr);
}

#endif
