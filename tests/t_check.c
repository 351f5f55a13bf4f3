/* SPDX-License-Identifier: MIT */
/* Checked mode (AXMALLOC_CHECK=1, or an AX_CHECKED=ON build): each bad action must abort
 * with its exact message naming the right block:
 *
 *   axmalloc: heap buffer overflow after block <p> (size <n>)
 *   axmalloc: free(): double free <p>
 *   axmalloc: use after free: block <p> was written after free (at offset <k>)
 *   axmalloc: corrupted free list in page <area> (block <p>)
 *
 * Each runs in a forked child (qemu-user has no exec of foreign binaries) whose stderr is
 * captured through a pipe; the parent checks the child died of SIGABRT with that message.
 * The program refuses to run when checked mode is off (malloc_usable_size then reports the
 * class size, not the requested one).
 *
 *   t_check          run every mode
 *   t_check <mode>   perform one bad action in this process (manual runs) */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define SEG ((uintptr_t)4 * MIB)

static char *volatile blk; /* the block the message must name */
static void *volatile sink;
static char msg[256]; /* the message the child must print */

static void want(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "expect: <message>" on stderr before the bad action: the parent learns the
 * addresses from it (they are known only once the child allocated). */
static void want(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
  va_end(ap);
  char line[300];
  n = snprintf(line, sizeof line, "expect: %s\n", msg);
  (void)!write(2, line, (size_t)n);
}

/* ---- the bad actions (each sets up, says what it expects, then misbehaves) ------------ */

static void overflow(size_t n, int how) {
  blk = malloc(n);
  want("axmalloc: heap buffer overflow after block %p (size %zu)", (void *)blk, n);
  memset(blk, 1, n);
  blk[n] = 0x55; /* one byte past the end: inside the class's slack */
  if (how == 0)
    free(blk);
  else
    sink = realloc(blk, n * 4);
}
static void act_overflow_small(void) { overflow(24, 0); }
static void act_overflow_exact(void) { overflow(48 - 9, 0); } /* class 48: 1 canary byte */
static void act_overflow_medium(void) { overflow(20000, 0); }
static void act_overflow_large(void) { overflow(300 * KIB, 0); }
static void act_overflow_huge(void) { overflow(3 * MIB + 5, 0); }
static void act_overflow_realloc(void) { overflow(100, 1); }

static void *free_it(void *p) {
  free(p);
  return NULL;
}
static void act_overflow_remote(void) {
  blk = malloc(40);
  want("axmalloc: heap buffer overflow after block %p (size 40)", (void *)blk);
  blk[41] = 1;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_it, blk) == 0);
  pthread_join(t, NULL);
}

static void dbl(size_t n) {
  blk = malloc(n);
  want("axmalloc: free(): double free %p", (void *)blk);
  void *other[8];
  free(blk);
  for (int i = 0; i < 8; i++) /* blk is no longer at the head of any list */
    other[i] = malloc(n);
  for (int i = 0; i < 8; i++)
    free(other[i]);
  free(blk);
}
static void act_double_small(void) { dbl(64); }
static void act_double_medium(void) { dbl(40 * KIB); }
static void act_double_large(void) { dbl(600 * KIB); }
static void act_double_huge(void) { dbl(2 * MIB); }
static void act_double_remote(void) {
  blk = malloc(200);
  want("axmalloc: free(): double free %p", (void *)blk);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_it, blk) == 0);
  pthread_join(t, NULL);
  free(blk);
}

/* Write into a freed block, then allocate the same size until the block comes back. */
static void uaf(size_t n, size_t at) {
  blk = malloc(n);
  want("axmalloc: use after free: block %p was written after free (at offset %zu)", (void *)blk,
       at);
  free(blk);
  blk[at] = 0x11;
  for (int i = 0; i < 100000; i++)
    sink = malloc(n);
}
static void act_uaf_small(void) { uaf(64, 20); }
static void act_uaf_medium(void) { uaf(20000, 1000); }
static void act_uaf_large(void) { uaf(200 * KIB, 8); }
static void act_uaf_remote(void) {
  blk = malloc(64);
  want("axmalloc: use after free: block %p was written after free (at offset 9)", (void *)blk);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_it, blk) == 0);
  pthread_join(t, NULL);
  blk[9] = 0x22;
  for (int i = 0; i < 100000; i++)
    sink = malloc(64);
}

/* Overwrite the link of a freed 64-byte block: its page is p & ~64 KiB, or starts 16 KiB
 * into the segment (page 0 follows the segment header). */
static void act_corrupt_list(void) {
  blk = malloc(64);
  /* a free block has no memory tag (AArch64 MTE): the message names it without one */
  uintptr_t b = (uintptr_t)blk & (((uintptr_t)1 << 56) - 1), area = b & ~(uintptr_t)0xffff;
  if ((area & (SEG - 1)) == 0)
    area += 16 * KIB;
  want("axmalloc: corrupted free list in page %p (block %p)", (void *)area, (void *)b);
  free(blk);
  memset(blk, 0x41, 8);
  for (int i = 0; i < 100000; i++)
    sink = malloc(64);
}

struct mode {
  const char *name;
  void (*act)(void);
};
static const struct mode modes[] = {
    {"overflow_small", act_overflow_small},
    {"overflow_exact", act_overflow_exact},
    {"overflow_medium", act_overflow_medium},
    {"overflow_large", act_overflow_large},
    {"overflow_huge", act_overflow_huge},
    {"overflow_realloc", act_overflow_realloc},
    {"overflow_remote", act_overflow_remote},
    {"double_small", act_double_small},
    {"double_medium", act_double_medium},
    {"double_large", act_double_large},
    {"double_huge", act_double_huge},
    {"double_remote", act_double_remote},
    {"uaf_small", act_uaf_small},
    {"uaf_medium", act_uaf_medium},
    {"uaf_large", act_uaf_large},
    {"uaf_remote", act_uaf_remote},
    {"corrupt_list", act_corrupt_list},
};
#define NMODES (sizeof modes / sizeof modes[0])

/* ---- the harness ------------------------------------------------------------------------ */

/* msg in out, as a whole line (not followed by more of an address or number, and not the
 * child's own "expect: <msg>" line). */
static int has_line(const char *out, const char *m) {
  size_t ml = strlen(m);
  for (const char *hit = strstr(out, m); hit; hit = strstr(hit + 1, m))
    if ((hit == out || hit[-1] == '\n') && (hit[ml] == '\n' || hit[ml] == 0))
      return 1;
  return 0;
}

#ifndef SEGV_MTESERR
#define SEGV_MTESERR 9
#endif
/* With memory tagging on (checked mode on a CPU with MTE, mte.c), a write into a freed
 * block traps at the write itself: SIGSEGV with SEGV_MTESERR, before any software check
 * (or, where the write is not tag-checked, as through glibc's SVE memset under qemu 7.2, the
 * software check reports it as usual). */
static int tagging;
static int caught_by_tags(const char *name) {
  return tagging && (strncmp(name, "uaf_", 4) == 0 || strcmp(name, "corrupt_list") == 0);
}
static void on_segv(int sig, siginfo_t *si, void *ctx) {
  (void)sig, (void)ctx;
  _exit(si->si_code == SEGV_MTESERR ? 42 : 43);
}

/* The child performs the action; it reports the expected message through a second pipe
 * (the address is known only once the child allocated). */
static int run_mode(const struct mode *m) {
  int err[2];
  CHECK(pipe(err) == 0);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    dup2(err[1], 2);
    close(err[0]);
    close(err[1]);
    if (caught_by_tags(m->name)) {
      struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO};
      sigaction(SIGSEGV, &sa, NULL);
    }
    m->act();
    _exit(0); /* survived: the parent reports it */
  }
  close(err[1]);
  static char out[65536];
  size_t len = 0;
  ssize_t r;
  while ((r = read(err[0], out + len, sizeof out - 1 - len)) > 0)
    len += (size_t)r;
  out[len] = 0;
  close(err[0]);
  int st;
  CHECK(waitpid(pid, &st, 0) == pid);
  const char *e = strstr(out, "expect: ");
  char expect[256] = "";
  if (e) {
    size_t n = strcspn(e + 8, "\n");
    snprintf(expect, sizeof expect, "%.*s", (int)n, e + 8);
  }
  int ok = 1;
  if (caught_by_tags(m->name) && WIFEXITED(st) && WEXITSTATUS(st) == 42) {
    printf("t_check %-18s ok (memory tagging: SEGV_MTESERR at the write)\n", m->name);
    return 1;
  }
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
    fprintf(stderr, "t_check %s: child did not die of SIGABRT (%s %d)\n", m->name,
            WIFSIGNALED(st) ? "signal" : "exit status",
            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    ok = 0;
  }
  if (!*expect || !has_line(out, expect)) {
    fprintf(stderr, "t_check %s: stderr lacks \"%s\"; it was:\n%s\n", m->name, expect, out);
    ok = 0;
  }
  printf("t_check %-18s %s\n", m->name, ok ? "ok" : "FAILED");
  return ok;
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  char *probe = malloc(20);
  CHECKF(malloc_usable_size(probe) == 20,
         "checked mode is off (usable size %zu): run with AXMALLOC_CHECK=1",
         malloc_usable_size(probe));
  free(probe);
  ax_info_t info;
  ax_info(&info);
  tagging = strcmp(info.mte, "on") == 0;
  if (argc > 1) {
    for (size_t i = 0; i < NMODES; i++)
      if (strcmp(argv[1], modes[i].name) == 0) {
        modes[i].act();
        fprintf(stderr, "t_check %s: the bad action did not abort\n", argv[1]);
        return 1;
      }
    fprintf(stderr, "t_check: unknown mode %s\n", argv[1]);
    return 2;
  }
  int failed = 0;
  for (size_t i = 0; i < NMODES; i++)
    failed += !run_mode(&modes[i]);
  if (failed) {
    fprintf(stderr, "t_check: %d of %zu modes failed\n", failed, NMODES);
    return 1;
  }
  printf("t_check: OK\n");
  return 0;
}
