/* SPDX-License-Identifier: MIT */
/* Checked mode (AXMALLOC_CHECK=1, or an AX_CHECKED=ON build): each bad action must abort
 * with its exact message naming the right block:
 *
 *   axmalloc: heap buffer overflow after block <p> (size <n>)
 *   axmalloc: heap buffer underflow before block <p> (size <n>, written at offset <k>)
 *   axmalloc: heap buffer underflow before block <p> (its header at offset -32 was overwritten)
 *   axmalloc: free(): double free <p>
 *   axmalloc: use after free: block <p> was written after free (at offset <k>)
 *   axmalloc: corrupted free list in page <area> (block <b>)
 *
 * or, for a write into a freed block of a large class (its memory inaccessible while the
 * block waits in the quarantine), die of SIGSEGV at the write. Besides, it checks what
 * correct programs see: a freed block is not handed out again at once, and reads as zero.
 *
 * With AXMALLOC_PROF=1 as well (t_check.stacks) each report must go on with the stacks
 * checked mode then keeps: where the error was found, and, where the block's side word still
 * holds them, the stacks that allocated it (through alloc_here) and freed it (free_here).
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
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define SEG ((uintptr_t)4 * MIB)

static char *volatile blk; /* the block the message must name */
static void *volatile sink;
static char msg[256]; /* the message the child must print */

/* malloc and free from frames of their own, which the reports' stacks must name (noinline,
 * and no tail call: the frame stays on the stack) */
static __attribute__((noinline)) char *alloc_here(size_t n) {
  char *p = malloc(n);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}
static __attribute__((noinline)) void free_here(void *p) {
  free(p);
  __asm__ volatile("" : : : "memory");
}

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
  blk = alloc_here(n);
  want("axmalloc: heap buffer overflow after block %p (size %zu)", (void *)blk, n);
  memset(blk, 1, n);
  blk[n] = 0x55; /* one byte past the end: inside the class's slack */
  if (how == 0)
    free_here(blk);
  else
    sink = realloc(blk, n * 4);
}
static void act_overflow_small(void) { overflow(24, 0); }
static void act_overflow_exact(void) { overflow(48 - 9, 0); } /* class 48: 1 canary byte */
static void act_overflow_medium(void) { overflow(20000, 0); }
static void act_overflow_large(void) { overflow(300 * KIB, 0); }
static void act_overflow_huge(void) { overflow(3 * MIB + 5, 0); }
static void act_overflow_realloc(void) { overflow(100, 1); }
static void act_overflow_32(void) { /* a 32-byte overflow lands in the block's own canary */
  blk = alloc_here(8);
  want("axmalloc: heap buffer overflow after block %p (size 8)", (void *)blk);
  blk[8 + 31] ^= 0x41;
  free(blk);
}

static void underflow(size_t n, int at) {
  blk = alloc_here(n);
  want("axmalloc: heap buffer underflow before block %p (size %zu, written at offset %d)",
       (void *)blk, n, at);
  blk[at] ^= 0x41;
  free(blk);
}
static void act_underflow_small(void) { underflow(8, -1); }
static void act_underflow_medium(void) { underflow(4096, -24); }
static void act_underflow_large(void) { underflow(300 * KIB, -7); }
static void act_underflow_header(void) {
  blk = alloc_here(8);
  want("axmalloc: heap buffer underflow before block %p (its header at offset -32 was "
       "overwritten)",
       (void *)blk);
  blk[-32] ^= 0x41;
  free(blk);
}

static void *free_it(void *p) {
  free(p);
  return NULL;
}
static void act_overflow_remote(void) {
  blk = alloc_here(40);
  want("axmalloc: heap buffer overflow after block %p (size 40)", (void *)blk);
  blk[41] = 1;
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_it, blk) == 0);
  pthread_join(t, NULL);
}

static void dbl(size_t n) {
  blk = alloc_here(n);
  want("axmalloc: free(): double free %p", (void *)blk);
  void *other[8];
  free_here(blk);
  for (int i = 0; i < 8; i++) /* blk is no longer at the head of any list */
    other[i] = malloc(n);
  for (int i = 0; i < 8; i++)
    free(other[i]);
  free(blk);
}
static void act_double_small(void) { dbl(64); }
static void act_double_medium(void) { dbl(40 * KIB); }
static void act_double_large(void) { dbl(600 * KIB); }
static void act_double_huge(void) {
  /* the freed mapping must stay cached (a double free of one unmapped meanwhile is an invalid
   * pointer): no purge for a minute (qemu is slow enough to pass 10 ms in between) */
  uint64_t minute = 60000;
  CHECK(ax_ctl("purge.delay_ms", NULL, NULL, &minute, sizeof minute) == 0);
  dbl(2 * MIB);
}
static void act_double_remote(void) {
  blk = malloc(200);
  want("axmalloc: free(): double free %p", (void *)blk);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_it, blk) == 0);
  pthread_join(t, NULL);
  free(blk);
}

/* Change a byte of a freed block, then free others until it leaves the quarantine (checked). */
static void uaf(size_t n, int at) {
  blk = alloc_here(n);
  want("axmalloc: use after free: block %p was written after free (at offset %d)", (void *)blk, at);
  free_here(blk);
  blk[at] ^= 0x11; /* (a flip: a held header's bytes are its page's random key's, 0x11 at 1/256) */
  for (int i = 0; i < 100000; i++)
    free(malloc(n));
}
static void act_uaf_small(void) { uaf(64, 20); }
static void act_uaf_medium(void) { uaf(20000, 200); }
static void act_uaf_large(void) { uaf(200 * KIB, 8); } /* (in the OS page of its header) */
static void act_uaf_header(void) { uaf(100, -32); }
/* the rest of a large class's block is inaccessible while it is held: the write faults */
static void act_uaf_large_fault(void) {
  blk = malloc(300 * KIB);
  want("SIGSEGV");
  free(blk);
  blk[100 * KIB] = 0x11;
}
static void act_uaf_remote(void) {
  blk = malloc(64);
  want("axmalloc: use after free: block %p was written after free (at offset 9)", (void *)blk);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, free_it, blk) == 0);
  pthread_join(t, NULL); /* (its quarantine went back to our page at its exit) */
  blk[9] = 0x22;
  for (int i = 0; i < 100000; i++)
    sink = malloc(64); /* (malloc checks a block's first bytes when it hands it out) */
}

/* Overwrite the link of a freed 64-byte block on its page's free list (its header word, 32
 * bytes before the pointer, once it has left the quarantine): its page is p & ~64 KiB, or
 * starts 16 KiB into the segment (page 0 follows the segment header). */
static void act_corrupt_list(void) {
  blk = malloc(64);
  uintptr_t b = (uintptr_t)blk - 32, area = b & ~(uintptr_t)0xffff;
  if ((area & (SEG - 1)) == 0)
    area += 16 * KIB;
  want("axmalloc: corrupted free list in page %p (block %p)", (void *)area, (void *)b);
  free(blk);
  void *other[1024];
  for (int i = 0; i < 1024; i++) /* other blocks push it out of the quarantine */
    other[i] = malloc(64);
  for (int i = 0; i < 1024; i++)
    free(other[i]);
  memset(blk - 32, 0x41, 8);
  for (int i = 0; i < 100000; i++)
    sink = malloc(64);
}

/* The stacks a report must show when they are kept (t_check.stacks): where it was found (every
 * report of check.c), who allocated the block (alloc_here) and who freed it (free_here): not
 * once the block went back to its page (a remote free's, at the thread's exit; a large one's,
 * pushed out of the quarantine by 1 MiB of others; a huge block's mapping) */
enum { FOUND = 1, ALLOC = 2, FREED = 4 };
struct mode {
  const char *name;
  void (*act)(void);
  unsigned stacks;
};
static const struct mode modes[] = {
    {"overflow_small", act_overflow_small, FOUND | ALLOC},
    {"overflow_exact", act_overflow_exact, FOUND | ALLOC},
    {"overflow_medium", act_overflow_medium, FOUND | ALLOC},
    {"overflow_large", act_overflow_large, FOUND | ALLOC},
    {"overflow_huge", act_overflow_huge, FOUND | ALLOC},
    {"overflow_realloc", act_overflow_realloc, FOUND | ALLOC},
    {"overflow_remote", act_overflow_remote, FOUND | ALLOC},
    {"overflow_32", act_overflow_32, FOUND | ALLOC},
    {"underflow_small", act_underflow_small, FOUND | ALLOC},
    {"underflow_medium", act_underflow_medium, FOUND | ALLOC},
    {"underflow_large", act_underflow_large, FOUND | ALLOC},
    {"underflow_header", act_underflow_header, FOUND | ALLOC},
    {"double_small", act_double_small, FOUND | ALLOC | FREED},
    {"double_medium", act_double_medium, FOUND | ALLOC | FREED},
    {"double_large", act_double_large, FOUND}, /* (the others' 1 MiB pushed it out) */
    {"double_huge", act_double_huge, FOUND},
    {"double_remote", act_double_remote, FOUND},
    {"uaf_small", act_uaf_small, FOUND | ALLOC | FREED},
    {"uaf_medium", act_uaf_medium, FOUND | ALLOC | FREED},
    {"uaf_large", act_uaf_large, FOUND | ALLOC | FREED},
    {"uaf_remote", act_uaf_remote, FOUND},
    {"uaf_header", act_uaf_header, FOUND | ALLOC | FREED},
    {"uaf_large_fault", act_uaf_large_fault, 0},
    {"corrupt_list", act_corrupt_list, 0},
};
#define NMODES (sizeof modes / sizeof modes[0])

/* ---- what correct programs see ------------------------------------------------------------ */

/* A freed block waits in the quarantine: the next malloc of its size gets another, and the
 * stale bytes read as zero (all of a block up to 8 KiB, the start of a larger one; a large
 * class's block cannot be read past its first OS page at all). A freed block comes back once
 * enough others were freed. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
static void correct_programs(void) {
  static const size_t sizes[] = {8, 100, 4096, 20000, 300 * KIB};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i], seen = n <= 4096 ? n : 200; /* (blocks over 8 KiB: their start) */
    unsigned char *p = malloc(n);
    memset(p, 0x5a, n);
    free(p);
    unsigned char *volatile stale = p;
    for (size_t k = 0; k < seen; k++)
      CHECKF(stale[k] == 0, "%zu-byte block: byte %zu of a freed block is %d", n, k, stale[k]);
    void *q = malloc(n);
    CHECKF(q != p, "%zu-byte block: handed out again at once", n);
    int back = 0;
    for (int k = 0; k < 4096 && !back; k++) {
      void *r = malloc(n);
      back = r == p;
      free(r);
    }
    CHECKF(back, "%zu-byte block: never handed out again", n);
    free(q);
  }
}
#pragma GCC diagnostic pop

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

/* The stack titled `title` ("  allocated at:") in out: absent (want == NULL), or present with
 * its first frame in function want. */
static int stack_ok(const char *name, const char *out, const char *title, const char *want) {
  const char *t = strstr(out, title);
  if (!want) {
    if (t)
      fprintf(stderr, "t_check %s: a stack \"%s\" that should not be there:\n%s\n", name, title,
              out);
    return t == NULL;
  }
  if (!t) {
    fprintf(stderr, "t_check %s: no stack \"%s\":\n%s\n", name, title, out);
    return 0;
  }
  const char *f = t + strlen(title), *eol = strchr(f, '\n');
  size_t len = eol ? (size_t)(eol - f) : strlen(f);
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)len, f);
  char fn[64];
  snprintf(fn, sizeof fn, " %s+0x", want);
  if (strncmp(line, "    #0 0x", 9) == 0 && (!*want || strstr(line, fn)))
    return 1;
  fprintf(stderr, "t_check %s: the stack \"%s\" does not start in %s:\n%s\n", name, title,
          *want ? want : "a frame", out);
  return 0;
}

/* Whether checked mode keeps the stacks (AXMALLOC_PROF=1 set: t_check.stacks). */
static int stacks_kept(void) {
  const char *v = getenv("AXMALLOC_PROF");
  return v && strcmp(v, "1") == 0;
}

/* The child performs the action; it reports the expected message through a second pipe
 * (the address is known only once the child allocated). */
static int run_mode(const struct mode *m) {
  int err[2];
  CHECK(pipe(err) == 0);
  pid_t pid = fork_to_die();
  if (pid == 0) {
    dup2(err[1], 2);
    close(err[0]);
    close(err[1]);
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
  if (strcmp(expect, "SIGSEGV") == 0) {
    ok = WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
    if (!ok)
      fprintf(stderr, "t_check %s: child did not die of SIGSEGV:\n%s\n", m->name, out);
    printf("t_check %-18s %s\n", m->name, ok ? "ok" : "FAILED");
    return ok;
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
  if (stacks_kept()) { /* the found-at stack's first frame: the program's, any function */
    ok &= stack_ok(m->name, out, "\n  found at:\n", m->stacks & FOUND ? "" : NULL);
    ok &= stack_ok(m->name, out, "\n  allocated at:\n", m->stacks & ALLOC ? "alloc_here" : NULL);
    ok &= stack_ok(m->name, out, "\n  freed at:\n", m->stacks & FREED ? "free_here" : NULL);
  } else if (strstr(out, "  found at:")) {
    fprintf(stderr, "t_check %s: stacks printed, but they are not kept:\n%s\n", m->name, out);
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
  CHECKF(strcmp(info.mte, "on") != 0, "memory tagging is on in checked mode");
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
  correct_programs();
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
