/* SPDX-License-Identifier: MIT */
/* The AXMALLOC_* options: one table, one parser, one message format.
 *
 * Process init (lifecycle.c) reads every option once, before anything else looks at one; the
 * settings of state.c are set here, and the other owners (thp.c, bulk.c, mte.c, the profiler)
 * take their values from here.
 * What a value may be, by kind:
 *   bool    1, 0, yes, no, true, false, on, off, in any case
 *   size    decimal digits with an optional k, m or g (K, M, G) suffix, x 1024 each: 64k, 1m
 *   number  decimal digits
 *   choice  one of a few words, in any case (AXMALLOC_THP=auto|never|always|large)
 *   string  any text (a path prefix; a word whose owner checks it, as bulk.c its kernels)
 *   signal  USR1, USR2, RTMIN to RTMAX (RTMIN+n, RTMAX-n), with or without SIG, in capitals,
 *           or its number: no other signal (parse_signal says why)
 * No sign, no spaces, no overflow; sizes and numbers are checked against their range. An empty
 * value is no value (VAR= prog), as it always was. A value that is not one of these says so
 * in one line and the default is used:
 *   axmalloc: AXMALLOC_PROF_SAMPLE=abc is not a size (digits with an optional k, m or g
 *   suffix): the default 512k is used
 * an AXMALLOC_* name that is no option gets one line with the nearest name, when one is near:
 *   axmalloc: AXMALLOC_STAT=1: no such option (did you mean AXMALLOC_STATS?)
 * and an option that does something only while another is on, given without it, one line
 * naming what to set (needs[], below):
 *   axmalloc: AXMALLOC_PROF_SAMPLE=64k does nothing without AXMALLOC_PROF=1
 * (jemalloc says "Invalid conf value", mimalloc warns; before this table every number was its
 * leading digits: "64k" was 64, "abc" was 0 and "yes" was off.)
 *
 * Runs inside process init, so: no allocation, no stdio (axi_write), errno untouched (getenv
 * and environ are plain reads), one thread.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

#include "hooks.h"
#include "print.h"
#include "state.h"

#ifndef AX_CHECKED
#define AX_CHECKED 0
#endif
/* guarded sampling's default mean interval (modes/guard.c): a sample costs a few system calls
 * and a stack walk, 2 to 4 us; at 64 MiB a program allocating 4 GB/s spends 0.02% on them */
#define AX_GUARD_DEFAULT ((uint64_t)64 << 20)

extern char **environ;

/* How a value is parsed (the view's kinds are coarser: axi_option_at). */
enum parse { P_BOOL, P_SIZE, P_UINT, P_CHOICE, P_STRING, P_SIGNAL };
/* a power of two; default and minimum: the OS page; a choice whose first two words are off and
 * on that takes every bool spelling for them (AXMALLOC_LEAKS=1|0|yes|...|all) */
enum { F_POW2 = 1, F_OS_PAGE = 2, F_BOOLS = 4 };

typedef struct option {
  const char *env;
  uint8_t parse, flags;
  uint64_t dflt, min, max;  /* sizes and numbers (max 0: no bound but overflow) */
  const char *const *words; /* a choice's words, in the order of its owner's enum */
  const char *text;         /* a string's or signal's default, as it is listed */
} option_t;

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Every option, indexed by enum axi_option (options.h), listed in that order.
 *
 * Adding one is a few lines: its id in enum axi_option (before AXI_OPTION_COUNT, where it
 * sorts), a row here, and axi_option_num/axi_option_str where it is used. A row names the
 * variable and its kind; a bool defaults to 0 unless .dflt says 1; a number or size gives
 * .dflt and its range .min..max; a choice its words (its default is word .dflt); a string
 * its default .text (the leak checker's three are one of each; a string's owner asks
 * axi_option_from_env whether one was given, and checks it: axi_option_reject). An option that
 * does something only while another is on gets a row in needs[] too, and every new option a
 * rule in tests/interface/t_optneeds.sh, which fails until it has one. */
static const option_t table[AXI_OPTION_COUNT] = {
    [AXI_OPTION_CHECK] = {"AXMALLOC_CHECK", P_BOOL, .dflt = AX_CHECKED},
    [AXI_OPTION_FORCE_ISA] = {"AXMALLOC_FORCE_ISA", P_STRING, .text = "none"},
    [AXI_OPTION_FORCE_MT] = {"AXMALLOC_FORCE_MT", P_BOOL},
    /* guarded sampling (modes/guard.c): the mean bytes between two guarded blocks, 0 none, 1
     * every block that fits a page (while the pool has a slot) */
    [AXI_OPTION_GUARD] = {"AXMALLOC_GUARD", P_SIZE, .dflt = AX_GUARD_DEFAULT,
                          .max = (uint64_t)1 << 40},
    /* what a fault on a guarded page does when the program installed a handler after ours
     * (modes/guard_fault.c) */
    [AXI_OPTION_GUARD_HANDLER] = {"AXMALLOC_GUARD_HANDLER", P_CHOICE,
                                  .words = WORDS("chain", "reinstall")},
    /* where a guarded block sits in its page (modes/guard_report.h, enum ax_guard_place) */
    [AXI_OPTION_GUARD_PLACE] = {"AXMALLOC_GUARD_PLACE", P_CHOICE,
                                .words = WORDS("end", "start", "alternate", "exact")},
    /* slots in the pool (0: as many as 256 KiB of pages hold, 8 to 64) */
    [AXI_OPTION_GUARD_SLOTS] = {"AXMALLOC_GUARD_SLOTS", P_UINT, .max = 4096},
    /* the exact leak checker (leak.c): a bool, or all (the still reachable blocks too) */
    [AXI_OPTION_LEAKS] = {"AXMALLOC_LEAKS", P_CHOICE, F_BOOLS, .words = WORDS("off", "on", "all")},
    [AXI_OPTION_LEAKS_EXITCODE] = {"AXMALLOC_LEAKS_EXITCODE", P_UINT, .dflt = 23, .max = 255},
    [AXI_OPTION_LEAKS_SUPPRESSIONS] = {"AXMALLOC_LEAKS_SUPPRESSIONS", P_STRING, .text = "none"},
    [AXI_OPTION_MTE] = {"AXMALLOC_MTE", P_BOOL},
    [AXI_OPTION_PAGE_SIZE] = {"AXMALLOC_PAGE_SIZE", P_SIZE, F_POW2 | F_OS_PAGE, .max = 65536},
    [AXI_OPTION_PROF] = {"AXMALLOC_PROF", P_BOOL},
    [AXI_OPTION_PROF_FILE] = {"AXMALLOC_PROF_FILE", P_STRING, .text = "axprof"},
    [AXI_OPTION_PROF_GDUMP] = {"AXMALLOC_PROF_GDUMP", P_BOOL},
    /* bytes allocated between profiles (0: none), up to 1 TiB as the sample interval */
    [AXI_OPTION_PROF_INTERVAL] = {"AXMALLOC_PROF_INTERVAL", P_SIZE, .max = (uint64_t)1 << 40},
    [AXI_OPTION_PROF_LEAKS] = {"AXMALLOC_PROF_LEAKS", P_BOOL},
    /* one byte (every allocation) to 1 TiB: a mean interval past that samples nothing */
    [AXI_OPTION_PROF_SAMPLE] = {"AXMALLOC_PROF_SAMPLE", P_SIZE, .dflt = 512 << 10, .min = 1,
                                .max = (uint64_t)1 << 40},
    [AXI_OPTION_PROF_SIGNAL] = {"AXMALLOC_PROF_SIGNAL", P_SIGNAL, .text = "none"},
    [AXI_OPTION_PROF_UNWIND] = {"AXMALLOC_PROF_UNWIND", P_CHOICE,
                                .words = WORDS("table", "libgcc", "check")},
    /* up to an hour: past that a page is as good as never purged */
    [AXI_OPTION_PURGE_DELAY_MS] = {"AXMALLOC_PURGE_DELAY_MS", P_UINT, .dflt = 10,
                                   .max = AX_PURGE_DELAY_MAX_MS},
    [AXI_OPTION_STATS] = {"AXMALLOC_STATS", P_BOOL},
    [AXI_OPTION_THP] = {"AXMALLOC_THP", P_CHOICE,
                        .words = WORDS("auto", "never", "always", "large")},
    [AXI_OPTION_VERBOSE] = {"AXMALLOC_VERBOSE", P_BOOL},
};

/* AXMALLOC_* names that are ours but no option of the library: never "no such option". */
static const char *const not_options[] = {
    "AXMALLOC_LIB",       /* the launcher's: the library to preload */
    "AXMALLOC_THP_SYSFS", /* a test hook: thp.c reads the kernel's settings there */
    "AXMALLOC_THP_PROBE", /* a test hook: the costs thp.c's probes report (thp.c) */
};

#define PREFIX_LEN 9 /* strlen("AXMALLOC_") */

typedef struct value {
  uint64_t num;    /* bools, sizes, numbers, a choice's index, a signal's number */
  const char *str; /* a choice's word, a string, a signal as given */
  bool from_env;
} value_t;

static value_t value[AXI_OPTION_COUNT];
static bool from_conf[AXI_OPTION_COUNT]; /* the value came from axmalloc_conf (below) */

/* ---- text ----------------------------------------------------------------------------- */

static char *put_u(char *o, uint64_t v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n)
    *o++ = tmp[--n];
  *o = 0;
  return o;
}

/* v with the largest suffix that divides it (512k, 1m), in buf (24 bytes). */
static const char *size_text(uint64_t v, char *buf) {
  unsigned s = 0;
  while (s < 3 && v && v % 1024 == 0)
    v /= 1024, s++;
  char *o = put_u(buf, v);
  if (s)
    *o++ = "kmg"[s - 1], *o = 0;
  return buf;
}

/* Option o's value (num, str) as it is listed and named in messages, in buf (24 bytes) or
 * str itself. */
static const char *value_text(const option_t *o, uint64_t num, const char *str, char *buf) {
  switch (o->parse) {
  case P_BOOL:
    return num ? "on" : "off";
  case P_SIZE:
    return size_text(num, buf);
  case P_UINT:
    put_u(buf, num);
    return buf;
  default:
    return str;
  }
}

static const char *default_text(const option_t *o, char *buf) {
  uint64_t d = o->flags & F_OS_PAGE ? axi_os_page : o->dflt;
  return value_text(o, d, o->words ? o->words[d] : o->text, buf);
}

#define SHOWN_MAX 80 /* bytes of a value a message shows */

/* s for a message: at most SHOWN_MAX bytes of it and "...", a control character as '?' (one
 * line), in buf (SHOWN_MAX + 4 bytes; t_optfuzz saw 84 when the buffer's size bounded it). */
static const char *shown(const char *s, char *buf) {
  size_t n = 0;
  for (; s[n] && n < SHOWN_MAX; n++)
    buf[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
  if (s[n])
    memcpy(buf + n, "...", 3), n += 3;
  buf[n] = 0;
  return buf;
}

static void set_default(enum axi_option i) {
  const option_t *o = &table[i];
  value[i].num = o->flags & F_OS_PAGE ? axi_os_page : o->dflt;
  value[i].str = o->words ? o->words[value[i].num] : o->text;
  value[i].from_env = false;
}

/* The one format of a bad value, and the default put in its place. */
static void reject(enum axi_option i, const char *given, const char *why, bool say) {
  char d[24], g[SHOWN_MAX + 4];
  if (say)
    axi_write("axmalloc: %s=%s %s: the default %s is used\n", table[i].env, shown(given, g), why,
              default_text(&table[i], d));
  set_default(i);
}

/* ---- the kinds -------------------------------------------------------------------------- */

enum verdict { OK, NOT_A, OUT_OF_RANGE, UNCATCHABLE };

/* ASCII's letters in the other case, every other byte as it is (c | 0x20 also made 0x11 a
 * '1' and 0x10 a '0': AXMALLOC_CHECK=$'\x11' was on, issue 38). */
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }
static char upper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }

static bool same_word(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if (lower(*a) != *b) /* (any case: b is lower case) */
      return false;
  return *a == *b;
}

static enum verdict parse_bool(const char *s, uint64_t *v) {
  static const char *const on[] = {"1", "yes", "true", "on"}, *const off[] = {"0", "no", "false",
                                                                              "off"};
  for (unsigned k = 0; k < 4; k++)
    if (same_word(s, on[k]) || same_word(s, off[k])) {
      *v = same_word(s, on[k]);
      return OK;
    }
  return NOT_A;
}

/* Digits, then (sizes) one suffix; a value past 2^64 is out of range, not wrapped. */
static enum verdict parse_number(const char *s, bool suffix, uint64_t *v) {
  uint64_t n = 0;
  bool over = false;
  if (*s < '0' || *s > '9')
    return NOT_A;
  for (; *s >= '0' && *s <= '9'; s++) {
    over |= n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10;
    n = n * 10 + (uint64_t)(*s - '0');
  }
  const char *units = "kmg", *u = suffix && *s ? strchr(units, lower(*s)) : NULL;
  if (u) {
    unsigned shift = 10 * (unsigned)(u - units + 1);
    over |= n > UINT64_MAX >> shift;
    n <<= shift;
    s++;
  }
  if (*s)
    return NOT_A;
  *v = n;
  return over ? OUT_OF_RANGE : OK;
}

static enum verdict parse_choice(const option_t *o, const char *s, uint64_t *v) {
  for (unsigned k = 0; o->words[k]; k++)
    if (same_word(s, o->words[k])) {
      *v = k;
      return OK;
    }
  return o->flags & F_BOOLS ? parse_bool(s, v) : NOT_A;
}

/* The signals a profile is written on: SIGUSR1, SIGUSR2 and the real-time signals the C
 * library leaves to programs (SIGRTMIN to SIGRTMAX: 34 to 64 with glibc, which keeps 32 and
 * 33), which mean nothing but what the program makes them mean. Every other signal means
 * something that a handler which writes a file and returns would take away (issue 38):
 *   SEGV BUS FPE ILL TRAP SYS  a fault: the instruction runs again and faults again, for ever
 *                              (29,080 profiles in 3 s before the program was killed)
 *   ABRT                       abort(): axmalloc's own fatal reports, assert
 *   HUP INT QUIT TERM          how a terminal, a user or a service manager stops the program
 *   PIPE XCPU XFSZ             how the kernel stops a writer to a closed pipe, a program past
 *                              its CPU time or file size
 *   ALRM VTALRM PROF           timers (alarm's watchdogs, CPU profilers: a profile a tick)
 *   CHLD CONT TSTP TTIN TTOU   job control and the kernel's news (a profile for every child
 *   WINCH URG IO PWR STKFLT    that exits; a ^Z that no longer stops the program)
 *   KILL STOP                  cannot be caught
 * A number and a name of one signal get the same answer. */
static bool profile_signal(uint64_t n) {
  return n == SIGUSR1 || n == SIGUSR2 || (n >= (uint64_t)SIGRTMIN && n <= (uint64_t)SIGRTMAX);
}

/* USR1, USR2, RTMIN, RTMIN+n, RTMAX or RTMAX-n (kill -l's names), with or without SIG, in
 * capitals; or the number of one of these. KILL and STOP, by name or number, are UNCATCHABLE:
 * "is not a signal" was wrong for them (issue 42), and no handler of any kind can have them. */
static enum verdict parse_signal(const char *s, uint64_t *v) {
  if (*s >= '0' && *s <= '9') {
    enum verdict r = parse_number(s, false, v);
    if (r == OK && (*v == SIGKILL || *v == SIGSTOP))
      return UNCATCHABLE;
    return r == OK && !profile_signal(*v) ? OUT_OF_RANGE : r;
  }
  if (strncmp(s, "SIG", 3) == 0)
    s += 3;
  if (strcmp(s, "KILL") == 0 || strcmp(s, "STOP") == 0)
    return UNCATCHABLE;
  if (strcmp(s, "USR1") == 0 || strcmp(s, "USR2") == 0) {
    *v = s[3] == '1' ? SIGUSR1 : SIGUSR2;
    return OK;
  }
  bool from_min = strncmp(s, "RTMIN", 5) == 0;
  if (!from_min && strncmp(s, "RTMAX", 5) != 0)
    return NOT_A;
  uint64_t n = 0;
  enum verdict r = OK;
  if (s[5]) {
    if (s[5] != (from_min ? '+' : '-'))
      return NOT_A;
    r = parse_number(s + 6, false, &n);
  }
  if (r == OK && n > (uint64_t)(SIGRTMAX - SIGRTMIN))
    r = OUT_OF_RANGE;
  *v = from_min ? (uint64_t)SIGRTMIN + n : (uint64_t)SIGRTMAX - n;
  return r;
}

/* What a bad value is not, for the message (buf: 128 bytes, for a range or a signal's). */
static const char *expected(const option_t *o, enum verdict r, char *buf) {
  static const char *const what[] = {
      [P_BOOL] = "is not a boolean (1, 0, yes, no, true, false, on or off)",
      [P_SIZE] = "is not a size (digits with an optional k, m or g suffix)",
      [P_UINT] = "is not a number (digits)"};
  if (o->parse == P_CHOICE) { /* "is not auto, never or always" */
    char *b = buf + strlen(strcpy(buf, o->flags & F_BOOLS ? what[P_BOOL] : "is not "));
    for (unsigned k = o->flags & F_BOOLS ? 2 : 0; o->words[k]; k++) {
      const char *sep = !k ? "" : o->words[k + 1] ? ", " : " or ";
      b = stpcpy(stpcpy(b, sep), o->words[k]);
    }
    return buf;
  }
  if (o->parse == P_SIGNAL) { /* (with this C library's numbers) */
    char *b = stpcpy(buf, r == UNCATCHABLE ? "cannot be caught (a signal for profiles is USR1, "
                                             "USR2 or RTMIN to RTMAX: "
                                           : "is not a signal for profiles (USR1, USR2, RTMIN "
                                             "to RTMAX: ");
    b = stpcpy(put_u(b, SIGUSR1), ", ");
    b = stpcpy(put_u(b, SIGUSR2), ", ");
    strcpy(put_u(stpcpy(put_u(b, (uint64_t)SIGRTMIN), " to "), (uint64_t)SIGRTMAX), ")");
    return buf;
  }
  if (r == NOT_A)
    return what[o->parse];
  char lo[24], hi[24];
  uint64_t min = o->flags & F_OS_PAGE ? axi_os_page : o->min;
  const char *l = o->parse == P_SIZE ? size_text(min, lo) : (put_u(lo, min), lo);
  const char *h = o->parse == P_SIZE ? size_text(o->max, hi) : (put_u(hi, o->max), hi);
  char *b = stpcpy(buf, o->flags & F_POW2 ? "is not a power of two from " : "is out of range (");
  b = stpcpy(stpcpy(stpcpy(b, l), o->flags & F_OS_PAGE ? " (the OS page)" : ""), " to ");
  strcpy(stpcpy(b, h), o->flags & F_POW2 ? "" : ")");
  return buf;
}

static enum verdict parse_value(const option_t *o, const char *s, uint64_t *v) {
  switch (o->parse) {
  case P_BOOL:
    return parse_bool(s, v);
  case P_SIZE:
  case P_UINT: {
    enum verdict r = parse_number(s, o->parse == P_SIZE, v);
    uint64_t min = o->flags & F_OS_PAGE ? axi_os_page : o->min;
    if (r == OK &&
        (*v < min || (o->max && *v > o->max) || (o->flags & F_POW2 && (*v & (*v - 1)) != 0)))
      r = OUT_OF_RANGE;
    return r;
  }
  case P_CHOICE:
    return parse_choice(o, s, v);
  case P_SIGNAL:
    return parse_signal(s, v);
  default:
    *v = 0;
    return OK;
  }
}

/* ---- names that are no option ---------------------------------------------------------- */

/* The edit distance of a and b (Damerau-Levenshtein, optimal string alignment: a swap of two
 * neighbours is one edit), on their first 32 characters, in any case (AXMALLOC_stats is
 * nearest to AXMALLOC_STATS). */
static unsigned distance(const char *a, size_t na, const char *b, size_t nb) {
  unsigned row[3][33]; /* rows i-2, i-1 and i of the table, cyclically */
  na = na < 32 ? na : 32;
  nb = nb < 32 ? nb : 32;
  for (size_t j = 0; j <= nb; j++)
    row[0][j] = (unsigned)j;
  for (size_t i = 1; i <= na; i++) {
    unsigned *cur = row[i % 3], *up = row[(i - 1) % 3], *up2 = row[(i + 1) % 3];
    cur[0] = (unsigned)i;
    for (size_t j = 1; j <= nb; j++) {
      char ai = upper(a[i - 1]), bj = upper(b[j - 1]);
      unsigned cost = ai != bj, best = up[j - 1] + cost;
      best = up[j] + 1 < best ? up[j] + 1 : best;
      best = cur[j - 1] + 1 < best ? cur[j - 1] + 1 : best;
      bool swap = i > 1 && j > 1 && ai == upper(b[j - 2]) && upper(a[i - 2]) == bj;
      if (swap && up2[j - 2] + 1 < best)
        best = up2[j - 2] + 1;
      cur[j] = best;
    }
  }
  return row[na % 3][nb];
}

/* Whether name (its first n characters) is an option or one of not_options; if not, *nearest
 * is the known name nearest to it, or NULL when none is near: at most one edit in three
 * characters of the longer of the two (after AXMALLOC_), so that a typo (STAT, PROFILE:
 * two edits in nine) gets its name and a name of our own does not get a stranger's
 * (issue 42: FOO, three edits from MTE, was asked whether it meant AXMALLOC_MTE). */
static bool known(const char *name, size_t n, const char **nearest) {
  unsigned best = ~0u;
  size_t all = AXI_OPTION_COUNT + sizeof not_options / sizeof *not_options, longer = 0;
  for (size_t k = 0; k < all; k++) {
    const char *e = k < AXI_OPTION_COUNT ? table[k].env : not_options[k - AXI_OPTION_COUNT];
    size_t ne = strlen(e);
    if (ne == n && memcmp(e, name, n) == 0)
      return true;
    unsigned d = distance(name + PREFIX_LEN, n - PREFIX_LEN, e + PREFIX_LEN, ne - PREFIX_LEN);
    if (d < best)
      best = d, *nearest = e, longer = (n > ne ? n : ne) - PREFIX_LEN;
  }
  if ((size_t)best * 3 > longer)
    *nearest = NULL;
  return false;
}

static void unknown_names(void) {
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "AXMALLOC_", PREFIX_LEN) != 0)
      continue;
    const char *eq = strchr(*e, '='), *nearest = NULL;
    size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
    char g[SHOWN_MAX + 4];
    if (known(*e, n, &nearest))
      continue;
    if (nearest)
      axi_write("axmalloc: %s: no such option (did you mean %s?)\n", shown(*e, g), nearest);
    else
      axi_write("axmalloc: %s: no such option (axmalloc(3) lists them)\n", shown(*e, g));
  }
}

/* ---- options that need another ---------------------------------------------------------- */

/* An option that does something only while another is on. Given alone it is said at start-up,
 * in one line naming what to set: without it AXMALLOC_PROF_SIGNAL=USR2 installed no handler,
 * and the signal killed the program without a word from the allocator (issue 42). The
 * profiler's options work with AXMALLOC_PROF or with AXMALLOC_PROF_LEAKS, which profiles too;
 * the line names the first. A mode asked for but refused (the profiler in checked mode, tagging
 * on a CPU without it) is said where it is refused (lifecycle.c, the modes). A value refused
 * here already had its line, and is no value: nothing more is said of it. The test walks every
 * option and every pair against its own copy of this list (tests/interface/t_optneeds.sh). */
static const struct need {
  uint8_t option, on, or_on; /* or_on: a second option that does as well (or on again) */
  const char *then;          /* what happens meanwhile, when that is worse than nothing */
} needs[] = {
    {AXI_OPTION_GUARD_HANDLER, AXI_OPTION_GUARD, AXI_OPTION_GUARD, NULL},
    {AXI_OPTION_GUARD_PLACE, AXI_OPTION_GUARD, AXI_OPTION_GUARD, NULL},
    {AXI_OPTION_GUARD_SLOTS, AXI_OPTION_GUARD, AXI_OPTION_GUARD, NULL},
    {AXI_OPTION_LEAKS_EXITCODE, AXI_OPTION_LEAKS, AXI_OPTION_LEAKS, NULL},
    {AXI_OPTION_LEAKS_SUPPRESSIONS, AXI_OPTION_LEAKS, AXI_OPTION_LEAKS, NULL},
    {AXI_OPTION_PROF_FILE, AXI_OPTION_PROF, AXI_OPTION_PROF_LEAKS, NULL},
    {AXI_OPTION_PROF_GDUMP, AXI_OPTION_PROF, AXI_OPTION_PROF_LEAKS, NULL},
    {AXI_OPTION_PROF_INTERVAL, AXI_OPTION_PROF, AXI_OPTION_PROF_LEAKS, NULL},
    {AXI_OPTION_PROF_SAMPLE, AXI_OPTION_PROF, AXI_OPTION_PROF_LEAKS, NULL},
    {AXI_OPTION_PROF_SIGNAL, AXI_OPTION_PROF, AXI_OPTION_PROF_LEAKS,
     "the signal will kill the program"},
    {AXI_OPTION_PROF_UNWIND, AXI_OPTION_PROF, AXI_OPTION_PROF_LEAKS, NULL},
};

static void say_needs(void) {
  for (size_t k = 0; k < sizeof needs / sizeof *needs; k++) {
    const struct need *d = &needs[k];
    if (!value[d->option].from_env || value[d->on].num || value[d->or_on].num)
      continue;
    char g[SHOWN_MAX + 4];
    const char *env = table[d->option].env, *given = shown(value[d->option].str, g),
               *on = table[d->on].env;
    if (table[d->on].parse == P_SIZE) /* (a rate: 0 is off) */
      axi_write("axmalloc: %s=%s does nothing with %s=0\n", env, given, on);
    else if (d->then)
      axi_write("axmalloc: %s=%s does nothing without %s=1 (%s: set %s=1)\n", env, given, on,
                d->then, on);
    else
      axi_write("axmalloc: %s=%s does nothing without %s=1\n", env, given, on);
  }
}

/* ---- reading and reading back ------------------------------------------------------------ */

/* The settings of state.c's that are options (state.c calls nothing: options.c sets them). */
static void set_state(void) {
  /* AXMALLOC_PAGE_SIZE: behave as on a kernel with larger pages (AArch64 servers run 16 and
   * 64 KiB kernels): a power of two from the real page size up to 64 KiB (the table). */
  axi_os_page = axi_option_num(AXI_OPTION_PAGE_SIZE);
  axi_options.stats = (int)axi_option_num(AXI_OPTION_STATS);
  axi_options.verbose = (int)axi_option_num(AXI_OPTION_VERBOSE);
  axi_options.purge_delay_ms = axi_option_num(AXI_OPTION_PURGE_DELAY_MS);
  axi_force_mt = axi_option_num(AXI_OPTION_FORCE_MT) != 0;
  /* checked mode can be switched on, never off (an AX_CHECKED build starts with it on) */
  if (axi_option_num(AXI_OPTION_CHECK))
    axi_checked = true;
  else if (axi_checked)
    axi_option_reject(AXI_OPTION_CHECK,
                      "cannot switch checked mode off in a build with -DAX_CHECKED=ON", true);
}

/* Option i from its text s (NULL or empty: not given): its value, or its default and the line
 * that says why. */
static void read_option(enum axi_option i, const char *s) {
  const option_t *o = &table[i];
  set_default(i);
  if (!s || !*s)
    return;
  uint64_t v = 0;
  char buf[128];
  enum verdict r = parse_value(o, s, &v);
  if (r != OK) {
    reject(i, s, expected(o, r, buf), true);
    return;
  }
  /* (str: a choice's own word; else the text given, which the owner's check may name) */
  value[i] = (value_t){v, o->words ? o->words[v] : s, true};
}

static void read_conf(void); /* axmalloc_conf, the program's defaults (below) */

void axi_options_read(void) {
  for (unsigned i = 0; i < AXI_OPTION_COUNT; i++) {
    if (!table[i].env) /* (an id without a row: caught by the first test that runs) */
      axi_fatal("axmalloc: options.c: option %d has no row in the table\n", (int)i);
    read_option(i, getenv(table[i].env));
  }
  unknown_names();
  read_conf();
  set_state();
  say_needs();
}

#if AX_TEST_HOOKS
/* The parser in process, for t_optfuzz (hooks.h): read_option on s, then option i as it was. */
int ax_test_option(unsigned i, const char *s, const char **env, uint64_t *num, const char **str) {
  if (i >= AXI_OPTION_COUNT)
    return -1;
  value_t kept = value[i];
  read_option(i, s);
  *env = table[i].env;
  *num = value[i].num;
  *str = value[i].str;
  int taken = value[i].from_env;
  value[i] = kept;
  return taken;
}
#endif

uint64_t axi_option_num(enum axi_option i) { return value[i].num; }
const char *axi_option_str(enum axi_option i) { return value[i].str; }
bool axi_option_from_env(enum axi_option i) { return value[i].from_env; }

void axi_option_reject(enum axi_option i, const char *why, bool say) {
  reject(i, value[i].str, why, say);
}

void axi_option_resolved(enum axi_option i, const char *str) { value[i].str = str; }

size_t axi_option_count(void) { return AXI_OPTION_COUNT; }

bool axi_option_at(size_t i, ax_option_view_t *out) {
  if (i >= AXI_OPTION_COUNT)
    return false;
  static const uint8_t kind[] = {
      [P_BOOL] = AXI_OPT_BOOL,   [P_SIZE] = AXI_OPT_SIZE,   [P_UINT] = AXI_OPT_UINT,
      [P_CHOICE] = AXI_OPT_WORD, [P_STRING] = AXI_OPT_WORD, [P_SIGNAL] = AXI_OPT_WORD};
  const option_t *o = &table[i];
  *out = (ax_option_view_t){.env = o->env,
                            .kind = kind[o->parse],
                            .num = value[i].num,
                            .str = kind[o->parse] == AXI_OPT_WORD ? value[i].str : NULL,
                            .from_env = value[i].from_env};
  size_t n = 0;
  for (const char *e = o->env + PREFIX_LEN; *e && n < sizeof out->name - 1; e++)
    out->name[n++] = lower(*e);
  out->name[n] = 0;
  return true;
}

/* AXMALLOC_VERBOSE=1: every option, its value and where that came from, in columns. */
void axi_options_print(void) {
  static const char spaces[] = "                                ";
  size_t wn = 0, wv = 0;
  char buf[24];
  for (unsigned i = 0; i < AXI_OPTION_COUNT; i++) {
    size_t n = strlen(value_text(&table[i], value[i].num, value[i].str, buf));
    wn = strlen(table[i].env) > wn ? strlen(table[i].env) : wn;
    wv = n > wv && n < sizeof spaces ? n : wv;
  }
  for (unsigned i = 0; i < AXI_OPTION_COUNT; i++) {
    const char *v = value_text(&table[i], value[i].num, value[i].str, buf);
    size_t pn = wn - strlen(table[i].env), pv = strlen(v) < wv ? wv - strlen(v) : 0;
    axi_write("axmalloc: option %s%s  %s%s  (%s)\n", table[i].env, spaces + sizeof spaces - 1 - pn,
              v, spaces + sizeof spaces - 1 - pv,
              from_conf[i]        ? "axmalloc_conf"
              : value[i].from_env ? "environment"
                                  : "default");
  }
}

/* ---- compiled-in defaults and run-time writes (issue 42) --------------------------------- */

/* A program's own defaults, compiled in (jemalloc's malloc_conf), for a static binary or a
 * service whose environment it does not control:
 *   const char *axmalloc_conf = "purge_delay_ms:50,stats:1";
 * Weak, so that a program without it links (the address is then NULL); default visibility, so
 * that libaxmalloc.so's reference finds the executable's definition (ld exports a symbol a
 * shared library of the link refers to; a program that only preloads the library needs
 * -rdynamic for it). */
extern const char *axmalloc_conf __attribute__((weak, visibility("default")));

#define CONF_MAX 1024 /* bytes of axmalloc_conf taken: values point into this copy */

/* Every name:value (or name=value) of axmalloc_conf, comma-separated, taken as the environment
 * variable AXMALLOC_<NAME> would be, with the same parser and the same messages; a name the
 * environment sets too is left to the environment. Names in any case, with or without
 * AXMALLOC_. pre: inside axi_options_read, after the environment, before set_state. */
static void read_conf(void) {
  static char text[CONF_MAX];
  const char *conf = &axmalloc_conf ? axmalloc_conf : NULL;
  if (!conf || !*conf)
    return;
  size_t len = strlen(conf);
  if (len >= CONF_MAX) {
    axi_write("axmalloc: axmalloc_conf is longer than %d bytes: the rest is not read\n",
              CONF_MAX - 1);
    len = CONF_MAX - 1;
  }
  memcpy(text, conf, len);
  text[len] = 0;
  for (char *item = text, *next; item; item = next) {
    next = strchr(item, ',');
    if (next)
      *next++ = 0;
    if (!*item)
      continue;
    char *sep = item + strcspn(item, ":="), env[PREFIX_LEN + 40], g[SHOWN_MAX + 4],
         h[SHOWN_MAX + 4];
    if (!*sep) {
      axi_write("axmalloc: axmalloc_conf: %s is not name:value\n", shown(item, g));
      continue;
    }
    *sep = 0;
    const char *name =
        strncmp(item, "AXMALLOC_", PREFIX_LEN) == 0 || strncmp(item, "axmalloc_", PREFIX_LEN) == 0
            ? item + PREFIX_LEN
            : item;
    size_t n = PREFIX_LEN;
    memcpy(env, "AXMALLOC_", PREFIX_LEN);
    for (; *name && n < sizeof env - 1; name++)
      env[n++] = upper(*name);
    env[n] = 0;
    enum axi_option i = 0;
    while (i < AXI_OPTION_COUNT && strcmp(table[i].env, env) != 0)
      i++;
    const char *nearest = NULL;
    if (i == AXI_OPTION_COUNT) {
      if (known(env, n, &nearest)) /* (AXMALLOC_LIB and the test hooks: silent, as there) */
        continue;
      if (nearest) /* (none when no name is near: unknown_names' two lines) */
        axi_write("axmalloc: %s=%s: no such option (did you mean %s?)\n", shown(env, g),
                  shown(sep + 1, h), nearest);
      else
        axi_write("axmalloc: %s=%s: no such option (axmalloc(3) lists them)\n", shown(env, g),
                  shown(sep + 1, h));
      continue;
    }
    const char *given = getenv(table[i].env);
    if (given && *given)
      continue; /* the environment overrides the program's defaults */
    read_option(i, sep + 1);
    from_conf[i] = value[i].from_env; /* (AXMALLOC_VERBOSE names where it came from) */
  }
}

bool axi_option_set(enum axi_option i, uint64_t num) {
  const option_t *o = &table[i];
  uint64_t min = o->flags & F_OS_PAGE ? axi_os_page : o->min;
  switch (o->parse) {
  case P_BOOL:
    num = num != 0;
    break;
  case P_CHOICE: {
    uint64_t k = 0;
    while (o->words[k])
      k++;
    if (num >= k)
      return false;
    ax_poke(&value[i].str, o->words[num]);
    break;
  }
  case P_SIZE:
  case P_UINT:
    if (num < min || (o->max && num > o->max) || (o->flags & F_POW2 && (num & (num - 1)) != 0))
      return false;
    break;
  default:
    return false;
  }
  ax_poke(&value[i].num, num);
  return true;
}

int axi_option_word(enum axi_option i, const char *word) {
  const option_t *o = &table[i];
  uint64_t k = 0;
  if (o->parse != P_CHOICE || parse_choice(o, word, &k) != OK)
    return -1;
  return (int)k;
}
