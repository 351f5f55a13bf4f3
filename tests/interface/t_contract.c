/* SPDX-License-Identifier: MIT */
/* t_contract: every entry point of the malloc family over edge inputs, one line per call,
 * so that two runs can be compared: glibc's malloc against axmalloc's (differential test).
 *
 * This program does NOT link axmalloc. It calls the standard names (malloc, calloc, realloc,
 * reallocarray, free, aligned_alloc, posix_memalign, memalign, valloc, pvalloc,
 * malloc_usable_size; free_sized and free_aligned_sized through dlsym, since glibc 2.36 has
 * neither; the C++ operators new and delete in t_contract_cxx.cc), so it runs on glibc's
 * allocator, or on axmalloc's when libaxmalloc.so is preloaded. tests/interface/contract.cmake runs
 * it both ways and compares the outputs line by line (tests/interface/contract_expected.txt lists
 * the deliberate differences).
 *
 * Output. Lines starting with '#' are headers (which allocator runs, the limit); every other
 * line is one call, "<call> -> <result>". The result is made of these tokens:
 *   ptr, NULL, nullptr, ok, rc=<0|EINVAL|ENOMEM|n>, throws=bad_alloc, throws=other, absent
 *                       what came back (absent: the function does not exist)
 *   errno=<ENOMEM|EINVAL|n|->  errno after the call; it is set to 12345 before each call,
 *                       and '-' means unchanged
 *   align=ok|BAD        the pointer is a multiple of the requested alignment (a power of two)
 *   align=up-ok|up-BAD  the same for an alignment that is not a power of two, rounded up to one
 *   nat=<1|2|4|8|16>    the pointer's natural alignment, min(2^ctz(p), 16)
 *   usable=ok|short     malloc_usable_size(p) >= the request
 *   zero=ok|BAD         calloc: the first and last 4 KiB of the request read as zero
 *   kept=ok|BAD         realloc: the old contents are in the new block (success) or still in
 *                       the old one (failure)
 *   out=kept|changed    posix_memalign failure: *out was left alone
 * No address is printed, so the output is deterministic.
 *
 * Memory. So that success does not depend on the machine, the address space is limited:
 * natively this program sets RLIMIT_AS itself; qemu-user ignores a guest's setrlimit, so
 * under qemu the driver runs qemu inside `ulimit -v`. A start-up probe checks that the limit
 * is where the model expects it. Model "large" (the default): calls that need up to
 * 2.25 GiB must succeed, calls that need 3.9 GiB or more cannot. Model "small" (argument
 * `small`, used under qemu): 80 MiB and 900 MiB. A call whose need (its size, plus the
 * alignment rounded up to a power of two) could fall between the two is left out, and
 * counted on the last line. Successful huge blocks are mmaps of untouched memory: nothing
 * is written to them beyond a realloc's old contents, and calloc's first and last 4 KiB are
 * read.
 *
 *   t_contract [large|small]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define SENTINEL 12345
#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* The C++ operators (t_contract_cxx.cc). */
enum { CX_PTR, CX_BAD_ALLOC, CX_OTHER, CX_NULLPTR };
int contract_cxx_new(int form, size_t n, size_t al, void **out);
void contract_cxx_delete(int form, void *p, size_t n, size_t al);
extern const char *const contract_cxx_new_name[8];
extern const char *const contract_cxx_delete_name[12];
const char *contract_cxx_new_origin(void);

/* Calls go through volatile pointers: the compiler may neither fold nor remove them. */
static void *(*volatile f_malloc)(size_t) = malloc;
static void *(*volatile f_calloc)(size_t, size_t) = calloc;
static void *(*volatile f_realloc)(void *, size_t) = realloc;
static void *(*volatile f_reallocarray)(void *, size_t, size_t) = reallocarray;
static void (*volatile f_free)(void *) = free;
static void *(*volatile f_aligned_alloc)(size_t, size_t) = aligned_alloc;
static int (*volatile f_posix_memalign)(void **, size_t, size_t) = posix_memalign;
static void *(*volatile f_memalign)(size_t, size_t) = memalign;
static void *(*volatile f_valloc)(size_t) = valloc;
static void *(*volatile f_pvalloc)(size_t) = pvalloc;
static size_t (*volatile f_usable)(void *) = malloc_usable_size;
static void (*f_free_sized)(void *, size_t);                 /* dlsym: NULL when absent */
static void (*f_free_aligned_sized)(void *, size_t, size_t); /* dlsym: NULL when absent */

static size_t page_size;
static unsigned long ncalls;

static int pow2(size_t a) { return a && !(a & (a - 1)); }

/* ---- output ------------------------------------------------------------------------------ */

static char line[512];
static size_t len;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line + len, sizeof line - len, fmt, ap);
  va_end(ap);
  CHECK(n >= 0 && (size_t)n < sizeof line - len);
  len += (size_t)n;
}

static void end_line(void) {
  line[len++] = '\n';
  fwrite(line, 1, len, stdout);
  len = 0;
  ncalls++;
}

/* A size or alignment the way a reader thinks of it: decimal below 64 Ki, otherwise
 * relative to SIZE_MAX, PTRDIFF_MAX, PTRDIFF_MAX/2 or the nearest power of two. */
static const char *num(size_t v) {
  static char bufs[8][48];
  static unsigned next;
  char *b = bufs[next++ % 8];
  const size_t near = 4096;
  if (v < 65536) {
    snprintf(b, 48, "%zu", v);
  } else if (v >= SIZE_MAX - near) {
    if (v == SIZE_MAX)
      snprintf(b, 48, "SIZE_MAX");
    else
      snprintf(b, 48, "SIZE_MAX-%zu", SIZE_MAX - v);
  } else if (v > (size_t)PTRDIFF_MAX + near) { /* SIZE_MAX-(2^31-2) */
    snprintf(b, 48, "SIZE_MAX-(%s)", num(SIZE_MAX - v));
  } else if (v >= (size_t)PTRDIFF_MAX - near && v <= (size_t)PTRDIFF_MAX + near) {
    if (v == (size_t)PTRDIFF_MAX)
      snprintf(b, 48, "PTRDIFF_MAX");
    else if (v > (size_t)PTRDIFF_MAX)
      snprintf(b, 48, "PTRDIFF_MAX+%zu", v - (size_t)PTRDIFF_MAX);
    else
      snprintf(b, 48, "PTRDIFF_MAX-%zu", (size_t)PTRDIFF_MAX - v);
  } else if (v >= (size_t)PTRDIFF_MAX / 2 - near && v <= (size_t)PTRDIFF_MAX / 2 + near) {
    size_t h = (size_t)PTRDIFF_MAX / 2;
    if (v == h)
      snprintf(b, 48, "PTRDIFF_MAX/2");
    else if (v > h)
      snprintf(b, 48, "PTRDIFF_MAX/2+%zu", v - h);
    else
      snprintf(b, 48, "PTRDIFF_MAX/2-%zu", h - v);
  } else {
    unsigned k = 63 - (unsigned)__builtin_clzl(v); /* 2^k <= v < 2^(k+1) */
    size_t lo = (size_t)1 << k;
    if (v - lo <= near)
      snprintf(b, 48, v == lo ? "2^%u" : "2^%u+%zu", k, v - lo);
    else if (k < 63 && ((size_t)2 << k) - v <= near)
      snprintf(b, 48, "2^%u-%zu", k + 1, ((size_t)2 << k) - v);
    else
      snprintf(b, 48, "%zu", v);
  }
  return b;
}

static const char *err_name(int e) {
  static char b[24];
  switch (e) {
  case SENTINEL:
    return "-";
  case ENOMEM:
    return "ENOMEM";
  case EINVAL:
    return "EINVAL";
  default:
    snprintf(b, sizeof b, "%d", e);
    return b;
  }
}

/* After a call whose alignment is not a power of two: says so, for the expected list. */
static const char *tag(size_t align) { return pow2(align) ? "" : " [align not 2^k]"; }

/* ---- memory planning ------------------------------------------------------------------------ */

/* Address-space models: "large" natively (sizes up to 2 GiB succeed), "small" under qemu-user,
 * where every guest mapping costs qemu bookkeeping that it never frees (qemu 7.2 places each
 * new mapping above the last: a run of the large model took qemu to 1 GiB RSS and minutes). */
typedef struct {
  const char *name;
  size_t fits;                 /* a call that needs at most this must succeed */
  size_t never;                /* a call that needs at least this cannot */
  size_t headroom;             /* natively, RLIMIT_AS = the current size + this */
  size_t probe_ok, probe_fail; /* at start-up these must map / must not */
} model_t;
static const model_t models[] = {
    {"large", GIB * 9 / 4, GIB * 39 / 10, 3 * GIB, GIB * 5 / 2, GIB * 7 / 2},
    {"small", 80 * MIB, 900 * MIB, 640 * MIB, 512 * MIB, 768 * MIB},
};
static const model_t *model = &models[0];
static unsigned long nskipped;

/* The smallest power of two >= a; 0 when there is none (a > 2^63). */
static size_t pow2_up(size_t a) {
  if (a <= 1)
    return 1;
  if (a > ((size_t)1 << 63))
    return 0;
  return (size_t)1 << (64 - __builtin_clzl(a - 1));
}

static size_t sat_add(size_t a, size_t b) { return a + b < a ? SIZE_MAX : a + b; }

/* True (and the call is left out) when a call needs between need_min and need_max bytes of
 * address space and that range meets the band where the outcome would depend on the
 * machine, on qemu's own memory or on the allocator's overheads. */
static int skip(size_t need_min, size_t need_max) {
  if (need_max <= model->fits || need_min >= model->never)
    return 0;
  nskipped++;
  return 1;
}

/* The need of n bytes aligned to `align` (<= 16: none); cxx: libstdc++ also rounds n up to
 * a multiple of the alignment. An allocator must reserve n + A - page to be sure of an
 * alignment A above the page, and glibc takes n + A + a little; but one that first maps n
 * bytes and finds them aligned by luck (axmalloc does: mappings tend to land next to each
 * other) needs only n, so the band starts there (under qemu, posix_memalign(2^29, 2^29)
 * succeeded in some runs and not in others). */
static int skip_aligned(size_t n, size_t align, int cxx) {
  size_t A = align > 16 ? pow2_up(align) : 0;
  if (align > 16 && A == 0)
    return 0; /* no such alignment: fails everywhere */
  size_t lo = n;
  size_t hi = cxx && A ? sat_add(sat_add(n, A - 1) & ~(A - 1), A) : sat_add(n, A);
  if (cxx && A && n > SIZE_MAX - (A - 1))
    return 0; /* the rounding overflows: libstdc++ then asks for a tiny block */
  return skip(lo, sat_add(hi, 64 * KIB));
}

/* Natively, limit the address space; in any case check that the limit is where the model
 * expects it (under qemu-user the driver's `ulimit -v` sets it). */
static void limit_address_space(void) {
  struct rlimit rl;
  CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f) {
    if (fscanf(f, "%lu", &pages) != 1)
      pages = 0;
    fclose(f);
  }
  rlim_t want = (rlim_t)pages * page_size + model->headroom;
  if (pages && rl.rlim_cur > want && (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want)) {
    rl.rlim_cur = want;
    setrlimit(RLIMIT_AS, &rl); /* ignored (and the limit checked below) under qemu-user */
  }
  void *p = mmap(NULL, model->probe_ok, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void *q = mmap(NULL, model->probe_fail, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int ok = p != MAP_FAILED, fail = q == MAP_FAILED;
  if (ok)
    munmap(p, model->probe_ok);
  if (!fail)
    munmap(q, model->probe_fail);
  if (!ok || !fail) {
    fprintf(stderr,
            "t_contract: model %s: the address space must have room for %zu MiB and not for "
            "%zu MiB (found: %s, %s). Under qemu-user, run qemu inside `ulimit -v` "
            "(tests/interface/contract.cmake does).\n",
            model->name, model->probe_ok >> 20, model->probe_fail >> 20,
            ok ? "maps" : "does not map", fail ? "does not map" : "maps");
    exit(2);
  }
  printf("# model %s: needs up to %zu MiB fit, from %zu MiB on cannot; calls in between are "
         "left out\n",
         model->name, model->fits >> 20, model->never >> 20);
}

/* ---- result checks -------------------------------------------------------------------------- */

static void set_errno(void) { errno = SENTINEL; }

/* Tokens for a non-NULL result p of a request of n bytes, and of alignment `align` when
 * check_align. */
static void put_block(void *p, size_t n, int check_align, size_t align) {
  uintptr_t u = (uintptr_t)p;
  if (check_align) {
    if (pow2(align))
      put(" align=%s", u % align == 0 ? "ok" : "BAD");
    else if (pow2_up(align))
      put(" align=%s", u % pow2_up(align) == 0 ? "up-ok" : "up-BAD");
  }
  unsigned tz = (unsigned)__builtin_ctzl(u);
  put(" nat=%u", tz >= 4 ? 16u : 1u << tz);
  put(" usable=%s", f_usable(p) >= n ? "ok" : "short");
}

static int all_zero_ends(const void *p, size_t n) {
  size_t k = n < 4 * KIB ? n : 4 * KIB;
  return all_zero(p, k) && all_zero((const char *)p + (n - k), k);
}

/* The result of a call that returns a pointer: "ptr errno=.. <block tokens>" or "NULL errno=..". */
static void put_ptr(void *p, int err, size_t n, int check_align, size_t align) {
  if (!p) {
    put(" -> NULL errno=%s", err_name(err));
    return;
  }
  put(" -> ptr errno=%s", err_name(err));
  put_block(p, n, check_align, align);
}

/* ---- the inputs -------------------------------------------------------------------------------
 */

#define MAXV 256
static size_t sizes[MAXV], aligns[MAXV];
static unsigned nsizes, naligns;

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

static void add(size_t *v, unsigned *n, size_t x) {
  for (unsigned i = 0; i < *n; i++)
    if (v[i] == x)
      return;
  CHECK(*n < MAXV);
  v[(*n)++] = x;
}

/* 0, 1, every 2^k and its neighbours, SIZE_MAX and PTRDIFF_MAX and PTRDIFF_MAX/2 and around. */
static void add_edges(size_t *v, unsigned *n) {
  add(v, n, 0);
  add(v, n, 1);
  for (unsigned k = 0; k < 64; k++) {
    size_t p = (size_t)1 << k;
    add(v, n, p - 1);
    add(v, n, p);
    add(v, n, p + 1);
  }
  const size_t pm = PTRDIFF_MAX;
  size_t extra[] = {SIZE_MAX,   SIZE_MAX - 1, SIZE_MAX - 15, SIZE_MAX - 16, SIZE_MAX - 4096,
                    pm - 1,     pm,           pm + 1,        pm + 2,        pm - 4096,
                    pm / 2 - 1, pm / 2,       pm / 2 + 1,    pm / 2 + 2};
  for (unsigned i = 0; i < sizeof extra / sizeof *extra; i++)
    add(v, n, extra[i]);
}

static void make_inputs(void) {
  add_edges(sizes, &nsizes);
  qsort(sizes, nsizes, sizeof *sizes, cmp_size);
  /* alignments: the same edges, plus small ones that are not powers of two or not multiples
   * of sizeof(void *) */
  size_t small[] = {3, 5, 6, 7, 9, 12, 24, 48, 96, 100, 4000, 12288};
  add_edges(aligns, &naligns);
  for (unsigned i = 0; i < sizeof small / sizeof *small; i++)
    add(aligns, &naligns, small[i]);
  qsort(aligns, naligns, sizeof *aligns, cmp_size);
}

/* The sizes tried with each alignment: small ones, the alignment and its neighbours (so sizes
 * that are not multiples of it), and ones whose rounding up to the alignment overflows. */
static unsigned sizes_for(size_t a, size_t *v) {
  unsigned n = 0;
  add(v, &n, 0);
  add(v, &n, 1);
  add(v, &n, 24);
  add(v, &n, a ? a - 1 : 0);
  add(v, &n, a);
  add(v, &n, a + 1);
  add(v, &n, SIZE_MAX - a + 2);
  add(v, &n, PTRDIFF_MAX);
  add(v, &n, (size_t)PTRDIFF_MAX + 1);
  add(v, &n, SIZE_MAX);
  return n;
}

/* ---- C ------------------------------------------------------------------------------------------
 */

static void t_malloc(size_t n) {
  if (skip(n, sat_add(n, 64 * KIB)))
    return;
  put("malloc(%s)", num(n));
  set_errno();
  void *p = f_malloc(n);
  put_ptr(p, errno, n, 0, 0);
  end_line();
  f_free(p);
}

static void t_free(void) {
  put("free(NULL)");
  set_errno();
  f_free(NULL);
  put(" -> ok errno=%s", err_name(errno));
  end_line();
  size_t v[] = {0, 1, 16, 100, 1024, 8192, 131073, MIB + 1, 3 * MIB, 64 * MIB};
  for (unsigned i = 0; i < sizeof v / sizeof *v; i++) {
    void *p = f_malloc(v[i]);
    CHECK(p != NULL);
    put("free(malloc(%s))", num(v[i]));
    set_errno();
    f_free(p);
    put(" -> ok errno=%s", err_name(errno));
    end_line();
  }
  put("malloc_usable_size(NULL)");
  set_errno();
  size_t u = f_usable(NULL);
  put(" -> %zu errno=%s", u, err_name(errno));
  end_line();
}

static void t_calloc(size_t c, size_t n) {
  size_t total;
  int ovf = __builtin_mul_overflow(c, n, &total);
  if (!ovf && skip(total, sat_add(total, 64 * KIB)))
    return;
  put("calloc(%s, %s)", num(c), num(n));
  set_errno();
  void *p = f_calloc(c, n);
  put_ptr(p, errno, ovf ? SIZE_MAX : total, 0, 0);
  if (p)
    put(" zero=%s", all_zero_ends(p, total) ? "ok" : "BAD");
  end_line();
  f_free(p);
}

/* Pairs whose product overflows, just does not, lands above PTRDIFF_MAX, or is 0. */
static const size_t pairs[][2] = {
    {0, 0},
    {1, 0},
    {0, 1},
    {0, SIZE_MAX},
    {SIZE_MAX, 0},
    {1, SIZE_MAX},
    {SIZE_MAX, 1},
    {2, SIZE_MAX / 2},
    {2, SIZE_MAX / 2 + 1},
    {SIZE_MAX / 2 + 1, 2},
    {3, SIZE_MAX / 3},
    {3, SIZE_MAX / 3 + 1},
    {SIZE_MAX, SIZE_MAX},
    {(size_t)1 << 32, (size_t)1 << 32},
    {((size_t)1 << 32) + 1, ((size_t)1 << 32) - 1},
    {(size_t)1 << 31, (size_t)1 << 32},
    {(size_t)1 << 31, ((size_t)1 << 32) - 1},
    {16, (size_t)1 << 59},
    {16, (size_t)1 << 60},
    {PTRDIFF_MAX, 2},
    {PTRDIFF_MAX, 3},
    {(size_t)PTRDIFF_MAX / 2 + 1, 2},
    {(size_t)PTRDIFF_MAX / 2 + 1, 4},
    {(size_t)1 << 16, (size_t)1 << 16},
    {(size_t)1 << 15, (size_t)1 << 16},
    {(size_t)1 << 10, (size_t)1 << 20},
    {7, 9},
    {1000, 1000},
    {4096, 4097},
    {65537, 17},
};
#define NPAIRS (sizeof pairs / sizeof *pairs)

/* The blocks realloc starts from: a small, a medium and a huge one (over 1 MiB: a mapping
 * of its own in axmalloc, glibc's mmap threshold at first), filled with a pattern. */
static const size_t olds[] = {16, 100000, 3 * MIB};

/* The pattern covers the first and the last 64 KiB of the old block. */
#define PAT_SPAN (64 * KIB)
static void *old_block(size_t old) {
  void *p = f_malloc(old);
  CHECK(p != NULL);
  pat_fill(p, 0, old < PAT_SPAN ? old : PAT_SPAN, (uint32_t)old);
  if (old > PAT_SPAN)
    pat_fill(p, old - PAT_SPAN, old, (uint32_t)old);
  return p;
}

/* The pattern of a block of `old` bytes is intact in the first min(n, old) bytes at p. */
static int kept(const void *p, size_t n, size_t old) {
  size_t k = n < old ? n : old, head = k < PAT_SPAN ? k : PAT_SPAN;
  if (pat_find_bad(p, 0, head, (uint32_t)old) != PAT_OK)
    return 0;
  size_t from = old > PAT_SPAN ? old - PAT_SPAN : old; /* the tail pattern's start */
  if (k > from && pat_find_bad(p, from > head ? from : head, k, (uint32_t)old) != PAT_OK)
    return 0;
  return 1;
}

/* realloc(p, n) or reallocarray(p, c, n) (c != 0 or ra) of a block of `old` bytes (0: NULL). */
static void t_realloc(int ra, size_t old, size_t c, size_t n) {
  size_t total = n;
  int ovf = ra && __builtin_mul_overflow(c, n, &total);
  if (!ovf && skip(total, sat_add(sat_add(total, old), 64 * KIB)))
    return;
  void *p = old ? old_block(old) : NULL;
  char from[48] = "NULL";
  if (old)
    snprintf(from, sizeof from, "malloc(%s)", num(old));
  if (ra)
    put("reallocarray(%s, %s, %s)", from, num(c), num(n));
  else
    put("realloc(%s, %s)", from, num(n));
  set_errno();
  void *q = ra ? f_reallocarray(p, c, n) : f_realloc(p, n);
  int err = errno;
  put_ptr(q, err, ovf ? SIZE_MAX : total, 0, 0);
  if (q && old)
    put(" kept=%s", kept(q, total, old) ? "ok" : "BAD");
  else if (!q && old && !ovf && total == 0)
    ; /* realloc(p, 0): p was freed */
  else if (!q && old)
    put(" kept=%s", kept(p, old, old) ? "ok" : "BAD");
  end_line();
  if (q)
    f_free(q);
  else if (old && (ovf || total != 0))
    f_free(p);
}

/* ---- calls that may crash the allocator ------------------------------------------------------ */

/* The aligned calls, performed by do_call() (here, or in a worker process). */
enum { K_ALIGNED_ALLOC, K_POSIX_MEMALIGN, K_MEMALIGN, K_NEW /* + form */ };

static void do_call(int kind, size_t n, size_t a) {
  if (kind == K_POSIX_MEMALIGN) {
    void *const untouched = (void *)(uintptr_t)0x5a5a5a50;
    void *p = untouched;
    set_errno();
    int rc = f_posix_memalign(&p, a, n);
    int err = errno;
    put(" -> rc=%s errno=%s", rc ? err_name(rc) : "0", err_name(err));
    if (rc == 0) {
      put_block(p, n, 1, a);
      f_free(p);
    } else {
      put(" out=%s", p == untouched ? "kept" : "changed");
    }
  } else if (kind < K_NEW) {
    set_errno();
    void *p = kind == K_ALIGNED_ALLOC ? f_aligned_alloc(a, n) : f_memalign(a, n);
    put_ptr(p, errno, n, 1, a);
    f_free(p);
  } else {
    int form = kind - K_NEW;
    void *p = NULL;
    set_errno();
    int r = contract_cxx_new(form, n, a, &p);
    int err = errno;
    if (r == CX_PTR) {
      put(" -> ptr errno=%s", err_name(err));
      put_block(p, n, form >= 4, a);
      /* the matching delete: sized for new, plain for new[] and the nothrow forms */
      contract_cxx_delete(form >= 4 ? (form & 1 ? 7 : 10) : (form & 1 ? 1 : 4), p, n, a);
    } else {
      put(" -> %s errno=%s",
          r == CX_BAD_ALLOC ? "throws=bad_alloc"
          : r == CX_NULLPTR ? "nullptr"
                            : "throws=other",
          err_name(err));
    }
  }
}

/* A valid size whose sum with the alignment overflows: an allocator's padding arithmetic can
 * wrap there. (glibc 2.36-8's memalign, in Debian's arm64 cross libc, then writes a chunk
 * header near 2^63 and dies.) Such calls run in a worker process, and a crash is a result. */
static int risky(size_t n, size_t align) {
  size_t A = pow2_up(align);
  return align > 16 && n <= (size_t)PTRDIFF_MAX &&
         (A == 0 || sat_add(sat_add(n, A), 64 * KIB) == SIZE_MAX);
}

/* Workers are forked by a zygote that is itself forked at start-up, while the process is
 * small: under qemu-user a fork of the grown process costs 0.15 s, of the zygote 7 ms. */
typedef struct {
  int kind;
  size_t n, a;
} request_t;
static char *shared; /* one MAP_SHARED page: a worker's result text */
static int to_zygote = -1, from_zygote = -1;
static pid_t zygote_pid;

static void on_crash(int sig) { _exit(100 + sig); } /* no core dump, no message from qemu */

static void worker(const request_t *r) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_crash;
  int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
  for (unsigned i = 0; i < sizeof sigs / sizeof *sigs; i++)
    sigaction(sigs[i], &sa, NULL);
  len = 0;
  do_call(r->kind, r->n, r->a);
  line[len] = 0;
  memcpy(shared, line, len + 1);
  _exit(0);
}

static void start_zygote(void) {
  int req[2], resp[2];
  CHECK(pipe(req) == 0 && pipe(resp) == 0);
  fflush(stdout);
  zygote_pid = fork();
  CHECK(zygote_pid >= 0);
  if (zygote_pid == 0) {
    close(req[1]);
    close(resp[0]);
    request_t r;
    while (read(req[0], &r, sizeof r) == (ssize_t)sizeof r) {
      pid_t pid = fork();
      if (pid == 0)
        worker(&r);
      int st = -1;
      if (pid < 0 || waitpid(pid, &st, 0) != pid)
        st = -1;
      if (write(resp[1], &st, sizeof st) != (ssize_t)sizeof st)
        break;
    }
    _exit(0);
  }
  close(req[0]);
  close(resp[1]);
  to_zygote = req[1];
  from_zygote = resp[0];
}

static void stop_zygote(void) {
  close(to_zygote);
  close(from_zygote);
  int st;
  CHECK(waitpid(zygote_pid, &st, 0) == zygote_pid);
}

static const char *sig_name(int sig) {
  static char b[16];
  switch (sig) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGBUS:
    return "SIGBUS";
  case SIGABRT:
    return "SIGABRT";
  case SIGILL:
    return "SIGILL";
  case SIGFPE:
    return "SIGFPE";
  default:
    snprintf(b, sizeof b, "signal%d", sig);
    return b;
  }
}

/* do_call(), in a worker when the call is risky; the result goes on the line either way. */
static void call(int kind, size_t n, size_t a, int is_risky) {
  if (!is_risky) {
    do_call(kind, n, a);
    return;
  }
  request_t r = {kind, n, a};
  int st;
  CHECK(write(to_zygote, &r, sizeof r) == (ssize_t)sizeof r);
  CHECK(read(from_zygote, &st, sizeof st) == (ssize_t)sizeof st);
  CHECKF(st != -1, "the zygote could not fork a worker");
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    put("%s", shared);
  else if (WIFEXITED(st) && WEXITSTATUS(st) > 100)
    put(" -> crash=%s", sig_name(WEXITSTATUS(st) - 100));
  else if (WIFSIGNALED(st))
    put(" -> crash=%s", sig_name(WTERMSIG(st)));
  else
    put(" -> crash=exit%d", WEXITSTATUS(st));
}

/* ---- the aligned functions ------------------------------------------------------------------ */

static void t_aligned(int kind, size_t a, size_t n) {
  if (skip_aligned(n, a, 0))
    return;
  if (kind == K_POSIX_MEMALIGN)
    put("posix_memalign(&p, %s, %s)%s", num(a), num(n), tag(a));
  else
    put("%s(%s, %s)%s", kind == K_ALIGNED_ALLOC ? "aligned_alloc" : "memalign", num(a), num(n),
        tag(a));
  call(kind, n, a, risky(n, a));
  end_line();
}

static void t_valloc(int pv, size_t n) {
  size_t req = n;
  if (pv) { /* pvalloc: the size rounded up to whole pages */
    size_t r = (n + page_size - 1) & ~(page_size - 1);
    req = r >= n ? r : n;
  }
  if (skip_aligned(req, page_size, 0))
    return;
  put("%s(%s)", pv ? "pvalloc" : "valloc", num(n));
  set_errno();
  void *p = pv ? f_pvalloc(n) : f_valloc(n);
  put_ptr(p, errno, req, 1, page_size);
  end_line();
  f_free(p);
}

/* C23 free_sized / free_aligned_sized: looked up at run time (glibc 2.36 has neither). */
static void t_free_sized(size_t n, int null) {
  put("free_sized(%s, %s)", null ? "NULL" : "malloc(n)", num(n));
  if (!f_free_sized) {
    put(" -> absent");
  } else {
    void *p = null ? NULL : f_malloc(n);
    CHECK(p || null);
    set_errno();
    f_free_sized(p, n);
    put(" -> ok errno=%s", err_name(errno));
  }
  end_line();
}

static void t_free_aligned_sized(size_t a, size_t n, int null) {
  put("free_aligned_sized(%s, %s, %s)", null ? "NULL" : "aligned_alloc(a, n)", num(a), num(n));
  if (!f_free_aligned_sized) {
    put(" -> absent");
  } else {
    void *p = null ? NULL : f_aligned_alloc(a, n);
    CHECK(p || null);
    set_errno();
    f_free_aligned_sized(p, a, n);
    put(" -> ok errno=%s", err_name(errno));
  }
  end_line();
}

/* ---- C++ ------------------------------------------------------------------------------------ */

static void t_new(int form, size_t n, size_t al) {
  if (skip_aligned(n, form >= 4 ? al : 0, 1))
    return;
  if (form < 4)
    put("%s(%s%s)", contract_cxx_new_name[form], num(n), form >= 2 ? ", nothrow" : "");
  else
    put("%s(%s, align_val_t(%s)%s)%s", contract_cxx_new_name[form], num(n), num(al),
        form >= 6 ? ", nothrow" : "", tag(al));
  call(K_NEW + form, n, al, form >= 4 && risky(n, al));
  end_line();
}

/* Every delete form, on nullptr and on a block from the matching new. */
static void t_delete(int form, size_t n, size_t al, int null) {
  int aligned = form >= 6; /* forms 6..11 take an alignment */
  int sized = form == 4 || form == 5 || form == 10 || form == 11;
  void *p = NULL;
  if (!null)
    CHECK(contract_cxx_new(aligned ? 4 + (form & 1) : form & 1, n, al, &p) == CX_PTR);
  char from[64] = "nullptr";
  if (!null && aligned)
    snprintf(from, sizeof from, "new%s(%s, align_val_t(%s))", form & 1 ? "[]" : "", num(n),
             num(al));
  else if (!null)
    snprintf(from, sizeof from, "new%s(%s)", form & 1 ? "[]" : "", num(n));
  put("%s(%s", contract_cxx_delete_name[form], from);
  if (sized)
    put(", %s", num(n));
  if (aligned)
    put(", align_val_t(%s)", num(al));
  if (form == 2 || form == 3 || form == 8 || form == 9)
    put(", nothrow");
  put(")");
  set_errno();
  contract_cxx_delete(form, p, n, al);
  put(" -> ok errno=%s", err_name(errno));
  end_line();
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "small") == 0)
    model = &models[1];
  else if (argc > 1 && strcmp(argv[1], "large") != 0) {
    fprintf(stderr, "usage: t_contract [large|small]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* a crash shows after its last line */
  page_size = (size_t)sysconf(_SC_PAGESIZE);
  void *ax = dlsym(RTLD_DEFAULT, "ax_malloc"), *m = dlsym(RTLD_DEFAULT, "malloc");
  printf("# allocator: %s\n", ax && ax == m ? "axmalloc" : ax ? "mixed" : "glibc");
  printf("# operator new: %s\n", contract_cxx_new_origin());
#if defined(__x86_64__)
  printf("# arch: x86_64\n");
#elif defined(__aarch64__)
  printf("# arch: aarch64\n");
#else
  printf("# arch: other\n");
#endif
  *(void **)&f_free_sized = dlsym(RTLD_DEFAULT, "free_sized");
  *(void **)&f_free_aligned_sized = dlsym(RTLD_DEFAULT, "free_aligned_sized");
  shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(shared != MAP_FAILED);
  limit_address_space();
  start_zygote();
  make_inputs();

  for (unsigned i = 0; i < nsizes; i++)
    t_malloc(sizes[i]);
  t_free();

  for (unsigned i = 0; i < nsizes; i++) {
    t_calloc(1, sizes[i]);
    t_calloc(sizes[i], 1);
    t_calloc(sizes[i], sizes[i]);
  }
  for (unsigned i = 0; i < NPAIRS; i++)
    t_calloc(pairs[i][0], pairs[i][1]);

  for (unsigned i = 0; i < nsizes; i++) {
    t_realloc(0, 0, 0, sizes[i]);
    for (unsigned o = 0; o < sizeof olds / sizeof *olds; o++)
      t_realloc(0, olds[o], 0, sizes[i]);
  }
  for (unsigned i = 0; i < nsizes; i++) {
    t_realloc(1, 0, sizes[i], 1);
    t_realloc(1, 0, 1, sizes[i]);
    t_realloc(1, 16, sizes[i], 1);
  }
  for (unsigned i = 0; i < NPAIRS; i++) {
    t_realloc(1, 0, pairs[i][0], pairs[i][1]);
    t_realloc(1, 16, pairs[i][0], pairs[i][1]);
    t_realloc(1, 3 * MIB, pairs[i][0], pairs[i][1]);
  }

  /* the aligned functions: every size with a few alignments ... */
  static const size_t sweep_aligns[] = {8, 16, 32, 64, 4096, 65536, 2 * MIB};
  for (unsigned j = 0; j < sizeof sweep_aligns / sizeof *sweep_aligns; j++)
    for (unsigned i = 0; i < nsizes; i++) {
      t_aligned(K_ALIGNED_ALLOC, sweep_aligns[j], sizes[i]);
      t_aligned(K_POSIX_MEMALIGN, sweep_aligns[j], sizes[i]);
      t_aligned(K_MEMALIGN, sweep_aligns[j], sizes[i]);
    }
  /* ... and every alignment with a few sizes */
  for (unsigned j = 0; j < naligns; j++) {
    size_t v[16];
    unsigned nv = sizes_for(aligns[j], v);
    for (unsigned i = 0; i < nv; i++) {
      t_aligned(K_ALIGNED_ALLOC, aligns[j], v[i]);
      t_aligned(K_POSIX_MEMALIGN, aligns[j], v[i]);
      t_aligned(K_MEMALIGN, aligns[j], v[i]);
    }
  }
  for (unsigned i = 0; i < nsizes; i++) {
    t_valloc(0, sizes[i]);
    t_valloc(1, sizes[i]);
  }

  static const size_t fs[] = {0,    1,      16,     17,  1024,    8192,
                              8193, 131072, 131073, MIB, MIB + 1, 3 * MIB};
  for (unsigned i = 0; i < sizeof fs / sizeof *fs; i++)
    t_free_sized(fs[i], 0);
  t_free_sized(16, 1);
  static const size_t fas[][2] = {{16, 16},  {32, 1},        {64, 100},          {4096, 4096},
                                  {4096, 1}, {65536, 65537}, {2 * MIB, 2 * MIB}, {2 * MIB, 1}};
  for (unsigned i = 0; i < sizeof fas / sizeof *fas; i++)
    t_free_aligned_sized(fas[i][0], fas[i][1], 0);
  t_free_aligned_sized(64, 64, 1);

  /* C++: the plain forms with every size, the aligned forms with every size at 64 and with
   * every power-of-two alignment (and a few others) at a few sizes */
  for (unsigned i = 0; i < nsizes; i++)
    for (int form = 0; form < 4; form++)
      t_new(form, sizes[i], 0);
  for (unsigned i = 0; i < nsizes; i++)
    for (int form = 4; form < 8; form++)
      t_new(form, sizes[i], 64);
  for (unsigned j = 0; j < naligns; j++) {
    size_t a = aligns[j];
    if (!pow2(a) && a != 0 && a != 3 && a != 24 && a != 4097 && a != SIZE_MAX)
      continue;
    size_t v[] = {0, 1, a, a + 1, SIZE_MAX - a + 2, SIZE_MAX};
    size_t seen[8];
    unsigned ns = 0;
    for (unsigned i = 0; i < sizeof v / sizeof *v; i++)
      add(seen, &ns, v[i]);
    for (unsigned i = 0; i < ns; i++)
      for (int form = 4; form < 8; form++)
        t_new(form, seen[i], a);
  }
  static const size_t dn[] = {0, 1, 100, 4096, MIB + 1}, dal[] = {32, 8192, 2 * MIB};
  for (int form = 0; form < 12; form++) {
    int aligned = form >= 6;
    t_delete(form, 0, aligned ? 64 : 0, 1);
    for (unsigned i = 0; i < sizeof dn / sizeof *dn; i++)
      for (unsigned j = 0; j < (aligned ? sizeof dal / sizeof *dal : 1); j++)
        t_delete(form, dn[i], aligned ? dal[j] : 0, 0);
  }

  stop_zygote();
  printf("# end: %lu calls, %lu left out near the address-space limit\n", ncalls, nskipped);
  return 0;
}
