/* SPDX-License-Identifier: MIT */
/* The AXMALLOC_* options' parser against a model of the documented grammar (issue 38, class
 * check 4).
 *
 * Every option gets the edges of its values and random byte strings: control bytes, UTF-8 and
 * stray high bytes, signs, whitespace, huge and tiny numbers, units, the words of every kind,
 * and valid values with a byte flipped (bit 5: case, and 0x11 for '1'), added or dropped.
 * options.c's parser, in process (ax_test_option, hooks.h: what process init runs on one
 * variable), and the model below, written from axmalloc(3) and options.c's header comment,
 * must agree on each: taken, with the same value, or refused with the one line
 *
 *   axmalloc: NAME=VALUE WHY: the default D is used
 *
 * (VALUE at most 80 bytes of it and "...", a control byte as '?'). Then every signal, by its
 * number and by each of its names (with and without SIG, RTMIN+n, RTMAX-n), gets one answer,
 * and a fault's (SEGV BUS FPE ILL TRAP SYS), ABRT's, CHLD's, KILL's and STOP's is no.
 *
 *   t_optfuzz [SEED [CASES]]   CASES random values per option (default 1500) from SEED
 *                              (default 0x38); a failure names the seed, the option and the
 *                              value, and the run stops after 10
 *
 * Deterministic: one seed, one sequence of values. The library's lines are read from a pipe
 * on fd 2. Skipped (77) with AXMALLOC_PAGE_SIZE set, which makes itself the page size's floor.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "testutil.h"

#include "hooks.h"

/* ---- the model: axmalloc(3)'s Values and Options --------------------------------------------- */

enum kind { BOOL, SIZE, NUMBER, WORD, PATH, SIGNAL };
enum verdict { UNSET, TAKEN, NOT_A, OUT_OF_RANGE };

typedef struct model {
  const char *env;
  enum kind kind;
  uint64_t min, max;    /* a size's or number's range */
  bool pow2;            /* AXMALLOC_PAGE_SIZE: a power of two (min: the OS page) */
  const char *words[5]; /* a word's, in order (NULL after): the number taken is the index */
  bool bools;           /* AXMALLOC_LEAKS: a boolean for off and on too */
  const char *dflt;     /* the default as the line names it */
  const char *not_a;    /* why a value that is not of the kind is refused */
  const char *range;    /* why one out of range is */
} model_t;

#define IS_BOOL "is not a boolean (1, 0, yes, no, true, false, on or off)"
#define IS_SIZE "is not a size (digits with an optional k, m or g suffix)"
#define IS_NUMBER "is not a number (digits)"

static char page_dflt[24], page_range[96], signal_why[96], uncaught_why[128]; /* (made in main) */

static model_t models[] = {
    {"AXMALLOC_CHECK", BOOL, .dflt = "off", .not_a = IS_BOOL}, /* (-DAX_CHECKED=ON: on, main) */
    {"AXMALLOC_FORCE_ISA", PATH, .dflt = "none"},
    {"AXMALLOC_FORCE_MT", BOOL, .dflt = "off", .not_a = IS_BOOL},
    {"AXMALLOC_GUARD", SIZE, 0, (uint64_t)1 << 40, .dflt = "64m", .not_a = IS_SIZE,
     .range = "is out of range (0 to 1024g)"},
    {"AXMALLOC_GUARD_HANDLER", WORD, .words = {"chain", "reinstall"}, .dflt = "chain",
     .not_a = "is not chain or reinstall"},
    {"AXMALLOC_GUARD_PLACE", WORD, .words = {"end", "start", "alternate", "exact"}, .dflt = "end",
     .not_a = "is not end, start, alternate or exact"},
    {"AXMALLOC_GUARD_SLOTS", NUMBER, 0, 4096, .dflt = "0", .not_a = IS_NUMBER,
     .range = "is out of range (0 to 4096)"},
    {"AXMALLOC_LEAKS", WORD, .words = {"off", "on", "all"}, .bools = true, .dflt = "off",
     .not_a = IS_BOOL " or all"},
    {"AXMALLOC_LEAKS_EXITCODE", NUMBER, 0, 255, .dflt = "23", .not_a = IS_NUMBER,
     .range = "is out of range (0 to 255)"},
    {"AXMALLOC_LEAKS_SUPPRESSIONS", PATH, .dflt = "none"},
    {"AXMALLOC_MTE", BOOL, .dflt = "off", .not_a = IS_BOOL},
    {"AXMALLOC_PAGE_SIZE", SIZE, 0, 65536, .pow2 = true, .dflt = page_dflt, .not_a = IS_SIZE,
     .range = page_range},
    {"AXMALLOC_PROF", BOOL, .dflt = "off", .not_a = IS_BOOL},
    {"AXMALLOC_PROF_FILE", PATH, .dflt = "axprof"},
    {"AXMALLOC_PROF_GDUMP", BOOL, .dflt = "off", .not_a = IS_BOOL},
    {"AXMALLOC_PROF_INTERVAL", SIZE, 0, (uint64_t)1 << 40, .dflt = "0", .not_a = IS_SIZE,
     .range = "is out of range (0 to 1024g)"},
    {"AXMALLOC_PROF_LEAKS", BOOL, .dflt = "off", .not_a = IS_BOOL},
    {"AXMALLOC_PROF_SAMPLE", SIZE, 1, (uint64_t)1 << 40, .dflt = "512k", .not_a = IS_SIZE,
     .range = "is out of range (1 to 1024g)"},
    {"AXMALLOC_PROF_SIGNAL", SIGNAL, .dflt = "none", .not_a = signal_why, .range = uncaught_why},
    {"AXMALLOC_PROF_UNWIND", WORD, .words = {"table", "libgcc", "check"}, .dflt = "table",
     .not_a = "is not table, libgcc or check"},
    {"AXMALLOC_PURGE_DELAY_MS", NUMBER, 0, 3600000, .dflt = "10", .not_a = IS_NUMBER,
     .range = "is out of range (0 to 3600000)"},
    {"AXMALLOC_STATS", BOOL, .dflt = "off", .not_a = IS_BOOL},
    {"AXMALLOC_THP", WORD, .words = {"auto", "never", "always", "large"}, .dflt = "auto",
     .not_a = "is not auto, never, always or large"},
    {"AXMALLOC_VERBOSE", BOOL, .dflt = "off", .not_a = IS_BOOL},
};
#define MODELS (sizeof models / sizeof *models)

typedef struct answer {
  enum verdict verdict;
  uint64_t num;
  const char *str; /* a word's word; a path or signal: the text itself */
} answer_t;

typedef unsigned __int128 u128;
#define TWO_64 ((u128)1 << 64)

static bool digits(const char *s, size_t n) {
  if (n == 0)
    return false;
  for (size_t k = 0; k < n; k++)
    if (s[k] < '0' || s[k] > '9')
      return false;
  return true;
}

/* The decimal number s[0..n), or 2^64 for any that large. */
static u128 decimal(const char *s, size_t n) {
  u128 v = 0;
  for (size_t k = 0; k < n; k++) {
    v = v * 10 + (unsigned)(s[k] - '0');
    if (v > TWO_64)
      v = TWO_64;
  }
  return v;
}

static answer_t in_range(const model_t *m, u128 v) {
  if (v >= TWO_64 || v < m->min || v > m->max || (m->pow2 && (v & (v - 1)) != 0))
    return (answer_t){OUT_OF_RANGE, 0, NULL};
  return (answer_t){TAKEN, (uint64_t)v, NULL};
}

static int boolean(const char *s) { /* 1, 0, or -1: none (strcasecmp: ASCII, the C locale) */
  static const char *const on[] = {"1", "yes", "true", "on"}, *const off[] = {"0", "no", "false",
                                                                              "off"};
  for (int k = 0; k < 4; k++)
    if (strcasecmp(s, on[k]) == 0 || strcasecmp(s, off[k]) == 0)
      return strcasecmp(s, on[k]) == 0;
  return -1;
}

/* The profile's signals: the two user signals and the real-time ones (axmalloc(3)). */
static bool profile_signal(u128 n) {
  return n == SIGUSR1 || n == SIGUSR2 || (n >= (u128)SIGRTMIN && n <= (u128)SIGRTMAX);
}

static answer_t signal_model(const char *s) {
  answer_t no = {NOT_A, 0, NULL};
  u128 n;
  size_t len = strlen(s);
  if (digits(s, len)) {
    n = decimal(s, len);
  } else {
    if (strncmp(s, "SIG", 3) == 0)
      s += 3, len -= 3;
    if (strcmp(s, "USR1") == 0 || strcmp(s, "USR2") == 0)
      n = s[3] == '1' ? SIGUSR1 : SIGUSR2;
    else if (strcmp(s, "KILL") == 0 || strcmp(s, "STOP") == 0)
      n = s[0] == 'K' ? SIGKILL : SIGSTOP;
    else if (strcmp(s, "RTMIN") == 0)
      n = (u128)SIGRTMIN;
    else if (strcmp(s, "RTMAX") == 0)
      n = (u128)SIGRTMAX;
    else if (strncmp(s, "RTMIN+", 6) == 0 && digits(s + 6, len - 6))
      n = (u128)SIGRTMIN + decimal(s + 6, len - 6);
    else if (strncmp(s, "RTMAX-", 6) == 0 && digits(s + 6, len - 6))
      n = decimal(s + 6, len - 6) > (u128)SIGRTMAX ? 0 : (u128)SIGRTMAX - decimal(s + 6, len - 6);
    else
      return no;
  }
  if (n == SIGKILL || n == SIGSTOP) /* (a signal, but one nothing can catch: its own line) */
    return (answer_t){OUT_OF_RANGE, 0, NULL};
  return profile_signal(n) ? (answer_t){TAKEN, (uint64_t)n, NULL} : no;
}

/* What the documented grammar makes of s for option m. */
static answer_t model(const model_t *m, const char *s) {
  size_t len = strlen(s);
  if (len == 0)
    return (answer_t){UNSET, 0, NULL}; /* (VAR= prog: no value) */
  answer_t no = {NOT_A, 0, NULL};
  switch (m->kind) {
  case BOOL: {
    int b = boolean(s);
    return b < 0 ? no : (answer_t){TAKEN, (uint64_t)b, NULL};
  }
  case SIZE: {
    const char *unit = strchr("kKmMgG", s[len - 1]);
    unsigned shift = unit && *unit ? 10 * (unsigned)(1 + (unit - "kKmMgG") / 2) : 0;
    size_t n = len - (shift != 0);
    return digits(s, n) ? in_range(m, decimal(s, n) << shift) : no;
  }
  case NUMBER:
    return digits(s, len) ? in_range(m, decimal(s, len)) : no;
  case WORD:
    for (unsigned k = 0; m->words[k]; k++)
      if (strcasecmp(s, m->words[k]) == 0)
        return (answer_t){TAKEN, k, m->words[k]};
    if (m->bools && boolean(s) >= 0)
      return (answer_t){TAKEN, (uint64_t)boolean(s), m->words[boolean(s)]};
    return no;
  case PATH:
    return (answer_t){TAKEN, 0, s};
  case SIGNAL: {
    answer_t a = signal_model(s);
    a.str = s;
    return a;
  }
  }
  return no;
}

/* s as the line shows it: 80 bytes at most, then "...", a control byte as '?'. */
static void shown(const char *s, char *out) {
  size_t n = 0;
  for (; s[n] && n < 80; n++)
    out[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
  strcpy(out + n, s[n] ? "..." : "");
}

/* ---- the library: its parser in process, its lines through a pipe on fd 2 -------------------- */

static int lines_fd = -1, pipe_fd = -1, stderr_fd = -1;

/* fd 2 to the pipe (pipe: true) or back to stderr */
static void fd2(bool pipe) {
  fflush(stderr);
  CHECK(dup2(pipe ? pipe_fd : stderr_fd, 2) == 2);
}

typedef struct got {
  int taken;
  uint64_t num;
  const char *str;
  char line[512];
} got_t;

static void library(unsigned i, const char *s, got_t *g) {
  const char *env;
  g->taken = ax_test_option(i, s, &env, &g->num, &g->str);
  size_t n = 0;
  ssize_t r;
  while (n < sizeof g->line - 1 && (r = read(lines_fd, g->line + n, sizeof g->line - 1 - n)) > 0)
    n += (size_t)r;
  g->line[n] = 0;
}

/* ---- comparing ------------------------------------------------------------------------------- */

static uint64_t seed;
static unsigned failures;

/* s with its bytes outside printable ASCII as \xNN (and ' and \ too: quoted, for bash's $'') */
static void escaped(FILE *f, const char *s, bool quoted) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f ||
        (quoted && (*s == '\\' || *s == '\'')))
      fprintf(f, "\\x%02x", (unsigned char)*s);
    else
      fputc(*s, f);
}

static void failed(const model_t *m, const char *s, const char *what, const char *got,
                   const char *want) {
  fd2(false);
  fprintf(stderr, "t_optfuzz: FAIL (seed %#llx) %s=$'", (unsigned long long)seed, m->env);
  escaped(stderr, s, true);
  fprintf(stderr, "': %s\n  library: ", what);
  escaped(stderr, got, false);
  fprintf(stderr, "\n  model:   ");
  escaped(stderr, want, false);
  fprintf(stderr, "\n");
  if (++failures == 10) {
    fprintf(stderr, "t_optfuzz: 10 failures, stopping (seed %#llx)\n", (unsigned long long)seed);
    exit(1);
  }
  fd2(true);
}

static unsigned cases_run, taken[MODELS], refused[MODELS]; /* (by the model) */

/* One value for option i: the library and the model agree, or a failure is said. */
static void check(unsigned i, const char *s) {
  const model_t *m = &models[i];
  got_t g;
  library(i, s, &g);
  answer_t a = model(m, s);
  cases_run++;
  taken[i] += a.verdict == TAKEN;
  refused[i] += a.verdict == NOT_A || a.verdict == OUT_OF_RANGE;
  char got[600], want[600];
  snprintf(got, sizeof got, "%s %llu '%s' line '%s'", g.taken ? "taken" : "not taken",
           (unsigned long long)g.num, g.str ? g.str : "(null)", g.line);
  if (a.verdict == TAKEN) {
    snprintf(want, sizeof want, "taken %llu '%s' no line", (unsigned long long)a.num,
             a.str ? a.str : "");
    bool same_str = !a.str || (g.str && strcmp(g.str, a.str) == 0);
    if (g.taken != 1 || g.num != a.num || !same_str || g.line[0])
      failed(m, s, "taken by the model", got, want);
  } else if (a.verdict == UNSET) {
    if (g.taken != 0 || g.line[0])
      failed(m, s, "no value: the default, no line", got, "not taken, no line");
  } else {
    char v[100];
    shown(s, v);
    snprintf(want, sizeof want, "axmalloc: %s=%s %s: the default %s is used\n", m->env, v,
             a.verdict == NOT_A ? m->not_a : m->range, m->dflt);
    if (g.taken != 0 || strcmp(g.line, want) != 0)
      failed(m, s, "refused by the model", got, want);
  }
}

/* ---- values ---------------------------------------------------------------------------------- */

static uint64_t rng;
static uint64_t next(void) { /* splitmix64 */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static unsigned below(unsigned n) { return (unsigned)(next() % n); }

/* Pieces a value is made of; each is also every option's value once. */
static const char *const pieces[] = {
    /* the words of every kind, in some cases */
    "1", "0", "yes", "no", "true", "false", "on", "off", "all", "auto", "never", "always", "table",
    "libgcc", "check", "none", "YES", "oN", "TRUE", "Never", "ALL",
    /* signals' names, the profile's and others */
    "SIG", "USR1", "USR2", "RTMIN", "RTMAX", "RTMIN+", "RTMAX-", "SEGV", "BUS", "FPE", "ILL",
    "TRAP", "SYS", "ABRT", "CHLD", "TERM", "INT", "HUP", "QUIT", "KILL", "STOP", "PROF", "ALRM",
    "WINCH", "usr1", "Sig",
    /* numbers at the edges of the ranges, of 2^64, of a unit's overflow */
    "00", "4096", "16384", "65536", "65535", "65537", "32768", "2048", "1023", "1024", "1025",
    "255", "256", "3600000", "3600001", "23", "10", "12", "34", "64", "65", "31", "32", "33", "7",
    "11", "18446744073709551615", "18446744073709551616", "99999999999999999999999", "17179869183",
    "17179869184", "16777216", "1099511627776", "1099511627777", "4294967296",
    "0000000000000000000001",
    /* units and what looks like a number */
    "k", "K", "m", "M", "g", "G", "t", "T", "b", "B", "kb", "KiB", "e", "e6", ".", ".5", "x", "0x",
    "_", ",",
    /* signs, whitespace */
    "+", "-", " ", "\t", "\n", "\r", "\v", "\f",
    /* control bytes (0x10 and 0x11: '0' and '1' less bit 5), DEL */
    "\x01", "\x10", "\x11", "\x1b", "\x7f",
    /* UTF-8: a fullwidth 1, the Kelvin sign (k in Unicode's case folding), dotted I, dotless i,
     * long s (s in Unicode's), no-break space, e acute, a BOM; stray bytes */
    "\xef\xbc\x91", "\xe2\x84\xaa", "\xc4\xb0", "\xc4\xb1", "\xc5\xbf", "\xc2\xa0", "\xc3\xa9",
    "\xef\xbb\xbf", "\x80", "\xff", "\xc3"};
#define PIECES (sizeof pieces / sizeof *pieces)

#define VALUE_MAX 160

static void append(char *v, const char *p) {
  size_t n = strlen(v), k = strlen(p);
  if (n + k < VALUE_MAX) {
    memcpy(v + n, p, k + 1);
  }
}

static void random_case(char *v) {
  for (; *v; v++)
    if (((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z')) && below(2))
      *v ^= 0x20;
}

/* A value option m takes (most of the time: the range's edges and a little past them). */
static void valid(const model_t *m, char *v) {
  static const char *const bools[] = {"1", "0", "yes", "no", "true", "false", "on", "off"};
  v[0] = 0;
  switch (m->kind) {
  case BOOL:
    append(v, bools[below(8)]);
    random_case(v);
    break;
  case WORD:
    append(v, m->bools && below(3) == 0 ? bools[below(8)] : m->words[below(m->words[2] ? 3 : 2)]);
    random_case(v);
    break;
  case SIZE: { /* a page size: 1 to 128k, in bytes or k; a sample: bytes, or 0 to 1099 k, m, g */
    unsigned unit = below(4);
    uint64_t n = m->pow2 ? (uint64_t)1 << (below(2) ? 12 + below(5) : below(18))
                 : unit  ? next() % 1100
                         : next() % (1 << 22);
    if (m->pow2)
      unit = n >= 1024 && below(2), n >>= 10 * unit;
    snprintf(v, VALUE_MAX, "%s%llu", below(8) ? "" : "0", (unsigned long long)n);
    if (unit)
      append(v, (const char *[]){"k", "m", "g"}[unit - 1]), random_case(v);
    break;
  }
  case NUMBER:
    snprintf(v, VALUE_MAX, "%s%llu", below(8) ? "" : "00",
             (unsigned long long)(below(2) ? next() % (m->max + 3) : m->max + 1 - below(3)));
    break;
  case PATH:
    for (unsigned k = 1 + below(3); k; k--)
      append(v, pieces[below(PIECES)]);
    break;
  case SIGNAL: {
    int rt = SIGRTMAX - SIGRTMIN, pick = (int)below(6), other = 1 + (int)below(31);
    const char *sig = below(2) ? "SIG" : "";
    if (pick == 0)
      snprintf(v, VALUE_MAX, "%u", 1 + below(NSIG + 2));
    else if (pick == 1)
      snprintf(v, VALUE_MAX, "%s%s", sig, below(2) ? "USR1" : "USR2");
    else if (pick == 2)
      snprintf(v, VALUE_MAX, "%sRTMIN+%u", sig, below((unsigned)rt + 3));
    else if (pick == 3)
      snprintf(v, VALUE_MAX, "%sRTMAX-%u", sig, below((unsigned)rt + 3));
    else if (pick == 4)
      snprintf(v, VALUE_MAX, "%s%s", sig, below(2) ? "RTMIN" : "RTMAX");
    else if (sigabbrev_np(other))
      snprintf(v, VALUE_MAX, "%s%s", sig, sigabbrev_np(other));
    break;
  }
  }
}

/* One change: a bit flipped (bit 5 half the time: case, 0x11 for '1'), a byte replaced,
 * dropped or added, a piece put before or after. */
static void mutate(char *v) {
  size_t n = strlen(v);
  unsigned how = below(6);
  if (n == 0 || how == 5) {
    char tmp[VALUE_MAX] = "";
    const char *p = pieces[below(PIECES)];
    if (below(2)) {
      append(tmp, p);
      append(tmp, v);
      strcpy(v, tmp);
    } else {
      append(v, p);
    }
    return;
  }
  size_t at = below((unsigned)n);
  if (how == 0 || how == 1) {
    char c = (char)(v[at] ^ (how == 0 ? 0x20 : 1 << below(8)));
    if (c)
      v[at] = c;
  } else if (how == 2) {
    v[at] = (char)(1 + below(255));
  } else if (how == 3) {
    memmove(v + at, v + at + 1, n - at);
  } else if (n + 1 < VALUE_MAX) {
    memmove(v + at + 1, v + at, n - at + 1);
    v[at] = (char)(1 + below(255));
  }
}

/* A random value for option m. */
static void value(const model_t *m, char *v) {
  unsigned how = below(8);
  v[0] = 0;
  if (how < 3) { /* a valid one, as it is or changed 1 to 3 times */
    valid(m, v);
    for (unsigned k = below(2) ? 0 : 1 + below(3); k; k--)
      mutate(v);
  } else if (how < 6) { /* pieces */
    for (unsigned k = 1 + below(5); k; k--)
      append(v, pieces[below(PIECES)]);
    if (below(2))
      random_case(v);
  } else if (how == 6) { /* bytes, up to past the 80 a line shows */
    size_t n = 1 + below(120);
    for (size_t k = 0; k < n; k++)
      v[k] = (char)(1 + below(255));
    v[n] = 0;
  } else { /* a number: a sign, up to 30 digits, a unit */
    append(v, (const char *[]){"", "", "+", "-", " "}[below(5)]);
    size_t n = strlen(v);
    for (unsigned k = 1 + below(below(2) ? 30 : 7); k; k--)
      v[n++] = (char)('0' + below(10));
    v[n] = 0;
    if (below(2))
      append(v, (const char *[]){"k", "M", "g", "t", "b", " ", "kb"}[below(7)]);
  }
}

/* ---- signals: a number and its names, one answer --------------------------------------------- */

static void signals_agree(unsigned i) {
  /* a fault's (the handler returns to the instruction), abort's, the children's, and the two
   * that cannot be caught: never a profile's (issue 38) */
  static const int never[] = {SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGTRAP,
                              SIGSYS,  SIGABRT, SIGCHLD, SIGKILL, SIGSTOP};
  static const struct {
    const char *name;
    int sig;
  } aliases[] = {{"IOT", SIGIOT}, {"CLD", SIGCHLD}, {"POLL", SIGPOLL}};
  const model_t *m = &models[i];
  for (int n = 1; n < NSIG; n++) {
    char num[16], name[32];
    snprintf(num, sizeof num, "%d", n);
    check(i, num);
    got_t by_number;
    library(i, num, &by_number);
    for (unsigned k = 0; k < sizeof never / sizeof *never; k++)
      if (never[k] == n && by_number.taken)
        failed(m, num, "a signal a dump handler cannot stand for", "taken", "refused");
    const char *names[8];
    unsigned nn = 0;
    char rt_min[32], rt_max[32];
    if (sigabbrev_np(n))
      names[nn++] = sigabbrev_np(n);
    for (unsigned k = 0; k < sizeof aliases / sizeof *aliases; k++)
      if (aliases[k].sig == n)
        names[nn++] = aliases[k].name;
    if (n >= SIGRTMIN && n <= SIGRTMAX) {
      snprintf(rt_min, sizeof rt_min, "RTMIN+%d", n - SIGRTMIN);
      snprintf(rt_max, sizeof rt_max, "RTMAX-%d", SIGRTMAX - n);
      names[nn++] = rt_min;
      names[nn++] = rt_max;
      if (n == SIGRTMIN)
        names[nn++] = "RTMIN";
      if (n == SIGRTMAX)
        names[nn++] = "RTMAX";
    }
    for (unsigned k = 0; k < 2 * nn; k++) {
      snprintf(name, sizeof name, "%s%s", k % 2 ? "SIG" : "", names[k / 2]);
      check(i, name);
      got_t by_name;
      library(i, name, &by_name);
      if (by_name.taken != by_number.taken || (by_name.taken && by_name.num != (uint64_t)n)) {
        char got[64], want[64];
        snprintf(got, sizeof got, "%s %llu", by_name.taken ? "taken" : "refused",
                 (unsigned long long)by_name.num);
        snprintf(want, sizeof want, "%s %d, as %s", by_number.taken ? "taken" : "refused", n, num);
        failed(m, name, "a name and its number disagree", got, want);
      }
    }
  }
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  const char *ps = getenv("AXMALLOC_PAGE_SIZE");
  if (ps && *ps) {
    printf("t_optfuzz: skipped: AXMALLOC_PAGE_SIZE=%s is the page size's floor now\n", ps);
    return 77;
  }
  seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x38;
  unsigned cases = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 1500;
  /* the model's texts that depend on the machine and the build */
  unsigned long os_page = getauxval(AT_PAGESZ);
  snprintf(page_dflt, sizeof page_dflt, "%luk", os_page >> 10);
  snprintf(page_range, sizeof page_range, "is not a power of two from %s (the OS page) to 64k",
           page_dflt);
  for (unsigned k = 0; k < MODELS; k++)
    if (models[k].pow2)
      models[k].min = os_page;
  snprintf(signal_why, sizeof signal_why,
           "is not a signal for profiles (USR1, USR2, RTMIN to RTMAX: %d, %d, %d to %d)", SIGUSR1,
           SIGUSR2, SIGRTMIN, SIGRTMAX);
  snprintf(uncaught_why, sizeof uncaught_why,
           "cannot be caught (a signal for profiles is USR1, USR2 or RTMIN to RTMAX: %d, %d, %d to "
           "%d)",
           SIGUSR1, SIGUSR2, SIGRTMIN, SIGRTMAX);

  int p[2];
  CHECK(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
  lines_fd = p[0], pipe_fd = p[1], stderr_fd = dup(2);
  CHECK(stderr_fd >= 0);
  fd2(true);
  /* every option of the library has its model, in the same order */
  unsigned i;
  for (i = 0;; i++) {
    const char *env, *str;
    uint64_t num;
    int r = ax_test_option(i, NULL, &env, &num, &str);
    if (r < 0)
      break;
    if (i >= MODELS || strcmp(env, models[i].env) != 0) {
      fd2(false);
      fprintf(stderr, "t_optfuzz: option %u is %s, the model's %s: write its row\n", i, env,
              i < MODELS ? models[i].env : "(none)");
      return 1;
    }
    if (strcmp(env, "AXMALLOC_CHECK") == 0 && num) /* (on in a -DAX_CHECKED=ON build) */
      models[i].dflt = "on";
  }
  if (i != MODELS) {
    fd2(false);
    fprintf(stderr, "t_optfuzz: the library has %u options, the model %zu\n", i, MODELS);
    return 1;
  }

  char v[VALUE_MAX + 8];
  for (i = 0; i < MODELS; i++) {
    check(i, "");
    for (unsigned k = 0; k < PIECES; k++)
      check(i, pieces[k]);
    rng = seed * 0x100000001b3ull + i;
    for (unsigned k = 0; k < cases; k++) {
      value(&models[i], v);
      check(i, v);
    }
    if (models[i].kind == SIGNAL)
      signals_agree(i);
    /* (values that reach both answers, or the comparison proves little) */
    if (taken[i] < cases / 20 || (models[i].kind != PATH && refused[i] < cases / 4)) {
      fd2(false);
      fprintf(stderr, "t_optfuzz: %s: %u values taken and %u refused of %u: the values miss\n",
              models[i].env, taken[i], refused[i], cases);
      return 1;
    }
  }
  fd2(false);
  if (failures) {
    fprintf(stderr, "t_optfuzz: %u failures (seed %#llx)\n", failures, (unsigned long long)seed);
    return 1;
  }
  printf("t_optfuzz: %zu options, %u random values each (seed %#llx): %u checks, parser and "
         "model agree\n",
         MODELS, cases, (unsigned long long)seed, cases_run);
  for (i = 0; i < MODELS; i++)
    printf("  %-28s %5u taken, %5u refused\n", models[i].env, taken[i], refused[i]);
  return 0;
}
