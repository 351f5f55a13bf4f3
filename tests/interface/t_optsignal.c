/* SPDX-License-Identifier: MIT */
/* AXMALLOC_PROF_SIGNAL as the profiler takes it, end to end (issue 38, defect 4): a signal that
 * is no signal for profiles is refused at start-up and keeps its default action; one that is
 * gets the dump handler, and raising it writes a profile.
 *
 *   t_optsignal refused SIG  (AXMALLOC_PROF=1, AXMALLOC_PROF_SIGNAL a spelling of SIG) the
 *                            option reads back as none, SIG's action is the default, and a
 *                            child dies of it: SIGSEGV from a store to a PROT_NONE page (with
 *                            the dump handler the store faulted again after every profile, for
 *                            ever), any other from raise (the handler returned, the child
 *                            lived)
 *   t_optsignal dump SIG     (AXMALLOC_PROF=1, AXMALLOC_PROF_SIGNAL a spelling of SIG,
 *                            AXMALLOC_PROF_FILE a prefix) SIG has a handler, and raising it
 *                            writes <prefix>.<pid>.0.heap (removed again); the program lives
 * SIG is a number or RTMIN+<n>. The refusal's line on stderr is ctest's to match
 * (tests/interface/interface.cmake). Exits 77 (skipped) in dump mode where there is no profiler
 * (checked mode, memory tagging).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "testutil.h"

static int signal_arg(const char *s) {
  char *end;
  long n = strncmp(s, "RTMIN+", 6) == 0 ? SIGRTMIN + strtol(s + 6, &end, 10) : strtol(s, &end, 10);
  if (*end || n <= 0 || n >= NSIG) {
    fprintf(stderr, "t_optsignal: %s is not a signal number or RTMIN+<n>\n", s);
    exit(2);
  }
  return (int)n;
}

static void refused(int sig) {
  struct sigaction sa; /* (first: with a handler, the child's SIGSEGV would never end) */
  CHECK(sigaction(sig, NULL, &sa) == 0);
  CHECKF(sa.sa_handler == SIG_DFL, "signal %d (%s) has a handler", sig, strsignal(sig));
  void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(none != MAP_FAILED);
  pid_t pid = fork_to_die();
  if (pid == 0) {
    if (sig == SIGSEGV)
      *(volatile int *)none = 1;
    else
      raise(sig);
    _exit(0);
  }
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECKF(WIFSIGNALED(st) && WTERMSIG(st) == sig, "the child of signal %d (%s): status 0x%x", sig,
         strsignal(sig), st);
  const char *v = NULL;
  size_t len = sizeof v;
  CHECK(ax_ctl("opt.prof_signal", &v, &len, NULL, 0) == 0);
  CHECKF(strcmp(v, "none") == 0, "AXMALLOC_PROF_SIGNAL=%s was taken (opt.prof_signal %s)",
         getenv("AXMALLOC_PROF_SIGNAL"), v);
}

static void dump(int sig) {
  ax_info_t info;
  ax_info(&info);
  if (!info.prof_sample) {
    printf("t_optsignal dump: skipped: no profiler (checked mode or memory tagging)\n");
    exit(77);
  }
  struct sigaction sa;
  CHECK(sigaction(sig, NULL, &sa) == 0);
  CHECKF(sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN, "signal %d (%s) has no handler", sig,
         strsignal(sig));
  const char *prefix = getenv("AXMALLOC_PROF_FILE");
  CHECK(prefix && prefix[0] == '/');
  char path[4096];
  snprintf(path, sizeof path, "%s.%d.0.heap", prefix, (int)getpid());
  unlink(path);
  CHECK(raise(sig) == 0);
  CHECKF(access(path, F_OK) == 0, "no profile %s after signal %d (%s)", path, sig, strsignal(sig));
  unlink(path);
}

int main(int argc, char **argv) {
  check_axmalloc_active(); /* (process init ran: the option was read) */
  if (argc != 3 || (strcmp(argv[1], "refused") != 0 && strcmp(argv[1], "dump") != 0)) {
    fprintf(stderr, "usage: t_optsignal refused|dump SIG\n");
    return 2;
  }
  int sig = signal_arg(argv[2]);
  if (argv[1][0] == 'r')
    refused(sig);
  else
    dump(sig);
  fprintf(stderr, "t_optsignal %s %s: OK\n", argv[1], argv[2]);
  /* (_exit: the profile at exit is not this test's, and would only pile up in the build tree) */
  fflush(NULL);
  _exit(0);
}
