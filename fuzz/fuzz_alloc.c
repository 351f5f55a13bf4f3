/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the input is a sequence of allocator calls (encoding: ops.h), run
 * against axmalloc itself (linked statically, so malloc *is* axmalloc, libFuzzer's own
 * allocations included) and checked step by step against the shadow model (shadow.h):
 * contents, calloc zeroing, realloc's kept prefix, alignment, usable sizes, overlap of
 * live blocks, errno on bad input. A second thread frees, reallocs and allocates blocks
 * handed to it; the main thread waits for it each time, so a run is deterministic.
 *
 * Built two ways: with -fsanitize=fuzzer (clang, fuzz_alloc) and with replay.c's main()
 * (any compiler, fuzz_replay), which runs corpus files without libFuzzer.
 */
#define _GNU_SOURCE
#include "fuzz_alloc.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <axmalloc.h>

#include "ops.h"
#include "shadow.h"

/* C23 names that glibc 2.36 does not declare; axmalloc defines them. */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

#define FZ_MAX_OPS 4096 /* operations per input, at most */
/* calloc is checked byte by byte: larger products (up to 16 x 9 MiB) cost an input tens of
 * milliseconds and teach nothing that 32 MiB does not. */
#define FZ_CALLOC_CAP ((size_t)32 << 20)
#define MIB ((size_t)1 << 20)
#define ERRNO_MARK 12345 /* errno value that a call must leave alone */
/* Alignments up to this succeed (the generated ones go up to 8 MiB); from 2^48 on no address
 * space holds them and they fail with ENOMEM (odd_align's 2^50 and 2^63). */
#define FZ_ALIGN_MAX ((size_t)1 << 47)

uint64_t fz_op_counts[FZ_NOPS];
static uint64_t n_calls, n_inputs; /* allocator calls made; inputs run */
static size_t page_size;
static unsigned small_classes; /* classes 1..small_classes hold blocks up to 8 KiB */
static int quiet;
static int trace; /* FUZZ_ALLOC_TRACE=1: print every operation and block to stderr */

#define TRACE(...)                                                                                 \
  do {                                                                                             \
    if (trace)                                                                                     \
      fprintf(stderr, "  " __VA_ARGS__);                                                           \
  } while (0)

/* Count one allocator call; the helper thread counts its own while main waits. */
#define CALL(expr) (__atomic_fetch_add(&n_calls, 1, __ATOMIC_RELAXED), (expr))

/* ---- input --------------------------------------------------------------------------- */

typedef struct reader {
  const uint8_t *p;
  size_t n, i;
} reader_t;

static unsigned u8(reader_t *r) { return r->i < r->n ? r->p[r->i++] : 0; }
static unsigned u16(reader_t *r) {
  unsigned lo = u8(r);
  return lo | u8(r) << 8;
}
static uint32_t u24(reader_t *r) {
  uint32_t lo = u16(r);
  return lo | (uint32_t)u8(r) << 16;
}

static int read_slot(reader_t *r) { return (int)(u8(r) % FZ_SLOTS); }

static const long class_delta[8] = {0, -1, 1, -16, 16, -8, 8, 0};
static const long mib_delta[8] = {0, -1, 1, -16, 16, -4096, 4096, 15};
static const size_t odd_align[16] = {0,
                                     3,
                                     24,
                                     48,
                                     100,
                                     4097,
                                     (size_t)3 << 20,
                                     (size_t)1 << 50, /* no address space holds it */
                                     SIZE_MAX,
                                     (SIZE_MAX >> 1) + 1,
                                     2,
                                     4,
                                     12,
                                     (size_t)2 << 20,
                                     ((size_t)2 << 20) + 16,
                                     8};

static size_t add_clamped(size_t v, long d) { return d < 0 && v < (size_t)-d ? 0 : v + d; }

/* Sizes biased to where the allocator changes behaviour (see ops.h). */
static size_t read_size(reader_t *r) {
  unsigned s = u8(r);
  switch (s >> 5) {
  case FZ_SZ_TINY:
    return s & 31;
  case FZ_SZ_SMALL:
    return u16(r) % 1025;
  case FZ_SZ_CLASS:
    return add_clamped(ax_class_size(1 + u8(r) % (AX_NUM_CLASSES - 1)), class_delta[s & 7]);
  case FZ_SZ_SMALL_CLASS:
    return add_clamped(ax_class_size(1 + u8(r) % small_classes), class_delta[s & 7]);
  case FZ_SZ_MEDIUM:
    return u24(r) % ((128 << 10) + 1);
  case FZ_SZ_LARGE:
    return u24(r) % (MIB + 1);
  case FZ_SZ_BIG:
    if (s & FZ_SZ_BIG_HUGE)
      return (1 + (s & 7)) * MIB + 16 * (size_t)u16(r);
    return add_clamped(MIB, s & FZ_SZ_BIG_U16 ? (int16_t)u16(r) : mib_delta[s & 7]);
  default: /* FZ_SZ_POW2 */
    return add_clamped((size_t)1 << ((s & 31) % 21), (long)(u8(r) % 5) - 2);
  }
}

static size_t read_align(reader_t *r) {
  unsigned a = u8(r);
  return a < 0xE0 ? (size_t)1 << (a % 24) : odd_align[a & 15];
}

static size_t read_count(reader_t *r) {
  unsigned c = u8(r);
  return c == 0xFF ? SIZE_MAX / 2 + 1 : c == 0xFE ? 0 : 1 + c % 16;
}

/* ---- helpers ------------------------------------------------------------------------- */

/* v, hidden from the compiler, which would otherwise warn about (or fold) the sizes past
 * PTRDIFF_MAX that OP_BAD passes on purpose. */
static size_t opaque(size_t v) {
  __asm__("" : "+r"(v));
  return v;
}

static bool pow2(size_t a) { return a && !(a & (a - 1)); }

/* post: true when n more bytes keep the live total under the cap. */
static bool room(size_t n) { return n <= FZ_LIVE_CAP - fz_live_bytes; }

/* Free a live block, checked first; free must leave errno alone.
 * how: 0 free, 1 sized free with the requested size, 2 with the usable size. */
static void free_slot(int slot, int how) {
  fz_block_t b = fz_release(slot, "free");
  TRACE("free slot %d %p (%zu bytes) how %d\n", slot, (void *)b.p, b.req, how);
  errno = ERRNO_MARK;
  if (how == 0 || b.kind == FZ_KIND_OTHER)
    CALL(free(b.p));
  else if (b.kind == FZ_KIND_ALIGNED)
    CALL(free_aligned_sized(b.p, b.align, how == 1 ? b.req : b.usable));
  else
    CALL(free_sized(b.p, how == 1 ? b.req : b.usable));
  if (fz_plant == FZ_PLANT_ERRNO)
    errno = 0;
  FZ_CHECK(errno == ERRNO_MARK, "free(%p) changed errno to %d", (void *)b.p, errno);
}

static void clear_slot(int slot) {
  if (fz_slots[slot].p)
    free_slot(slot, 0);
}

/* A fresh block from an allocation call into `slot` (empty): checked, then filled. */
static void adopt(int slot, void *p, size_t req, size_t align, int kind, bool zeroed) {
  if (fz_plant == FZ_PLANT_ALIGN)
    align <<= 12;
  fz_block_t b = {.p = p, .req = req, .align = align, .seed = fz_next_seed(), .kind = kind};
  TRACE("new slot %d %p (%zu bytes, align %zu%s)\n", slot, p, req, align, zeroed ? ", zeroed" : "");
  fz_adopt(slot, &b);
  if (zeroed && req && fz_plant == FZ_PLANT_CALLOC)
    ((unsigned char *)p)[req - 1] = 0x5A;
  if (zeroed) {
    size_t nz = fz_find_nonzero(p, req);
    if (nz != SIZE_MAX) {
      const unsigned char *c = (const unsigned char *)p + (nz & ~(size_t)15);
      fz_fail("calloc block %p (%zu bytes): byte %zu is %#x, not zero; bytes %zu..: "
              "%02x%02x%02x%02x%02x%02x%02x%02x %02x%02x%02x%02x%02x%02x%02x%02x",
              p, req, nz, ((unsigned char *)p)[nz], nz & ~(size_t)15, c[0], c[1], c[2], c[3], c[4],
              c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14], c[15]);
    }
  }
  const fz_block_t *s = &fz_slots[slot];
  fz_cover_fill(s->p, s->usable, s->req, s->seed, 0, s->usable);
  if (fz_plant == FZ_PLANT_CONTENT && s->usable)
    s->p[s->usable - 1] ^= 0x40;
}

/* A call that must fail: NULL with errno = want. */
static void expect_fail(const char *what, void *p, int err, int want) {
  FZ_CHECK(p == NULL, "%s returned %p, expected NULL", what, p);
  FZ_CHECK(err == want, "%s: errno %d, expected %d", what, err, want);
}

/* ---- the helper thread ------------------------------------------------------------- */

enum { JOB_FREE, JOB_REALLOC, JOB_MALLOC, JOB_CALLOC };
typedef struct job {
  int kind;
  void *p; /* in: block to free or realloc; out: the result */
  size_t n;
} job_t;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t tid;
  bool running;
  enum { H_IDLE, H_POSTED, H_DONE, H_EXIT } state;
  job_t jobs[FZ_SLOTS];
  int njobs;
} helper = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void run_job(job_t *j) {
  switch (j->kind) {
  case JOB_FREE:
    errno = ERRNO_MARK;
    CALL(free(j->p));
    FZ_CHECK(errno == ERRNO_MARK, "helper: free(%p) changed errno to %d", j->p, errno);
    j->p = NULL;
    break;
  case JOB_REALLOC:
    j->p = CALL(realloc(j->p, j->n));
    break;
  case JOB_MALLOC:
    j->p = CALL(malloc(j->n));
    break;
  default:
    j->p = CALL(calloc(1, j->n));
    break;
  }
}

static void *helper_main(void *arg) {
  pthread_mutex_lock(&helper.mu);
  for (;;) {
    while (helper.state != H_POSTED && helper.state != H_EXIT)
      pthread_cond_wait(&helper.cv, &helper.mu);
    if (helper.state == H_EXIT)
      break;
    pthread_mutex_unlock(&helper.mu);
    for (int i = 0; i < helper.njobs; i++)
      run_job(&helper.jobs[i]);
    pthread_mutex_lock(&helper.mu);
    helper.state = H_DONE;
    pthread_cond_broadcast(&helper.cv);
  }
  pthread_mutex_unlock(&helper.mu);
  return arg;
}

/* Run helper.jobs[0..njobs) on the helper thread (started on first use) and wait. */
static void helper_run(void) {
  if (!helper.running) {
    helper.state = H_IDLE;
    FZ_CHECK(pthread_create(&helper.tid, NULL, helper_main, NULL) == 0, "pthread_create failed");
    helper.running = true;
  }
  pthread_mutex_lock(&helper.mu);
  helper.state = H_POSTED;
  pthread_cond_broadcast(&helper.cv);
  while (helper.state != H_DONE)
    pthread_cond_wait(&helper.cv, &helper.mu);
  helper.state = H_IDLE;
  pthread_mutex_unlock(&helper.mu);
}

static void *helper_call(int kind, void *p, size_t n) {
  helper.jobs[0] = (job_t){kind, p, n};
  helper.njobs = 1;
  helper_run();
  return helper.jobs[0].p;
}

/* The helper exits: its heap's segments that still hold blocks are abandoned. */
static void helper_stop(void) {
  if (!helper.running)
    return;
  pthread_mutex_lock(&helper.mu);
  helper.state = H_EXIT;
  pthread_cond_broadcast(&helper.cv);
  pthread_mutex_unlock(&helper.mu);
  pthread_join(helper.tid, NULL);
  helper.running = false;
}

/* ---- operations ---------------------------------------------------------------------- */

static void op_malloc(reader_t *r) {
  int slot = read_slot(r);
  size_t n = read_size(r);
  if (!room(n))
    return;
  clear_slot(slot);
  adopt(slot, CALL(malloc(n)), n, 16, FZ_KIND_PLAIN, false);
}

/* count * size: ENOMEM when it overflows or passes PTRDIFF_MAX, else a zeroed block. */
static void op_calloc(reader_t *r) {
  int slot = read_slot(r);
  size_t count = read_count(r), size = read_size(r), total;
  if (__builtin_mul_overflow(count, size, &total) || total > PTRDIFF_MAX) {
    errno = 0;
    void *p = CALL(calloc(count, size));
    expect_fail("calloc (overflow)", p, errno, ENOMEM);
    return;
  }
  if (total > FZ_CALLOC_CAP || !room(total))
    return;
  clear_slot(slot);
  adopt(slot, CALL(calloc(count, size)), total, 16, FZ_KIND_PLAIN, true);
}

/* Before a realloc that keeps `keep` bytes: the last FZ_SAMPLE of them get the pattern
 * too (a big block's covered bytes are samples), so the end of the kept prefix is checked
 * however large the block. */
static void mark_kept_tail(const fz_block_t *old, size_t keep) {
  fz_range_fill(old->p, old->seed, keep > FZ_SAMPLE ? keep - FZ_SAMPLE : 0, keep);
}

/* post: SIZE_MAX when q[0, keep) holds old's pattern (covered bytes and the kept tail). */
static size_t kept_check(const void *q, const fz_block_t *old, size_t keep) {
  size_t bad = fz_cover_check(q, old->usable, old->req, old->seed, 0, keep);
  return bad != SIZE_MAX
             ? bad
             : fz_range_check(q, old->seed, keep > FZ_SAMPLE ? keep - FZ_SAMPLE : 0, keep);
}

/* realloc of the block in slot (main or helper thread): the first min(old, new) bytes
 * must come through; realloc(NULL, n) is malloc(n); realloc(p, 0) frees and gives NULL. */
static void realloc_slot(int slot, size_t n, bool on_helper) {
  fz_block_t *s = &fz_slots[slot];
  if (s->p == NULL) {
    if (!room(n))
      return;
    void *p = on_helper ? helper_call(JOB_REALLOC, NULL, n) : CALL(realloc(NULL, n));
    adopt(slot, p, n, 16, FZ_KIND_PLAIN, false);
    return;
  }
  if (n > s->usable && !room(n - s->usable))
    return;
  fz_block_t old = fz_release(slot, "realloc");
  size_t keep = n < old.req ? n : old.req;
  mark_kept_tail(&old, keep);
  uintptr_t was = (uintptr_t)old.p; /* for messages: old.p is gone after the call */
  void *q = on_helper ? helper_call(JOB_REALLOC, old.p, n) : CALL(realloc(old.p, n));
  if (n == 0) {
    FZ_CHECK(q == NULL, "realloc(%#lx, 0) returned %p, expected NULL", (unsigned long)was, q);
    return;
  }
  FZ_CHECK(q != NULL, "realloc(%#lx, %zu) returned NULL", (unsigned long)was, n);
  if (fz_plant == FZ_PLANT_REALLOC && keep)
    ((unsigned char *)q)[keep - 1] ^= 0x40;
  size_t bad = kept_check(q, &old, keep);
  FZ_CHECK(bad == SIZE_MAX,
           "realloc(%#lx [%zu bytes], %zu) = %p: kept byte %zu is %#04x, expected %#04x",
           (unsigned long)was, old.req, n, q, bad, ((unsigned char *)q)[bad],
           fz_pattern_byte(old.seed, bad));
  fz_block_t b = {.p = q, .req = n, .align = 16, .seed = old.seed, .kind = FZ_KIND_PLAIN};
  TRACE("realloc slot %d %#lx (%zu bytes) -> %p (%zu bytes)%s\n", slot, (unsigned long)was, old.req,
        q, n, on_helper ? " on the helper" : "");
  fz_adopt(slot, &b);
  /* covered bytes below keep - FZ_SAMPLE were checked above; refill the rest */
  fz_cover_fill(q, s->usable, n, s->seed, keep > FZ_SAMPLE ? keep - FZ_SAMPLE : 0, s->usable);
}

static void op_realloc(reader_t *r) {
  int slot = read_slot(r);
  realloc_slot(slot, read_size(r), false);
}

static void op_reallocarray(reader_t *r) {
  int slot = read_slot(r);
  size_t count = read_count(r), size = read_size(r), total;
  void *p = fz_slots[slot].p;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = 0;
    void *q = CALL(reallocarray(p, count, size));
    expect_fail("reallocarray (overflow)", q, errno, ENOMEM);
    if (p)
      fz_check_slot(slot, "failed reallocarray");
    return;
  }
  if (total > PTRDIFF_MAX)
    return; /* OP_BAD covers it */
  if (p == NULL || total == 0) {
    realloc_slot(slot, total, false); /* the same contract, as realloc */
    return;
  }
  if (total > fz_slots[slot].usable && !room(total - fz_slots[slot].usable))
    return;
  /* realloc_slot with reallocarray as the call */
  fz_block_t old = fz_release(slot, "reallocarray");
  size_t keep = total < old.req ? total : old.req;
  mark_kept_tail(&old, keep);
  uintptr_t was = (uintptr_t)old.p; /* for messages: old.p is gone after the call */
  void *q = CALL(reallocarray(old.p, count, size));
  FZ_CHECK(q != NULL, "reallocarray(%#lx, %zu, %zu) returned NULL", (unsigned long)was, count,
           size);
  size_t bad = kept_check(q, &old, keep);
  FZ_CHECK(bad == SIZE_MAX, "reallocarray(%#lx, %zu, %zu) = %p: kept byte %zu differs",
           (unsigned long)was, count, size, q, bad);
  fz_block_t b = {.p = q, .req = total, .align = 16, .seed = old.seed, .kind = FZ_KIND_PLAIN};
  fz_adopt(slot, &b);
  fz_cover_fill(q, fz_slots[slot].usable, total, b.seed, keep > FZ_SAMPLE ? keep - FZ_SAMPLE : 0,
                fz_slots[slot].usable);
}

static void op_free(reader_t *r) {
  int slot = read_slot(r);
  if (fz_slots[slot].p)
    free_slot(slot, 0);
}

static void op_free_sized(reader_t *r) {
  int slot = read_slot(r);
  unsigned how = u8(r);
  if (fz_slots[slot].p)
    free_slot(slot, 1 + (how & 1));
}

/* aligned_alloc: EINVAL for a non-power of two, ENOMEM for alignments no address space
 * holds. */
static void op_aligned_alloc(reader_t *r) {
  int slot = read_slot(r);
  size_t align = read_align(r), n = read_size(r);
  if (!pow2(align) || align > FZ_ALIGN_MAX) {
    errno = 0;
    void *p = CALL(aligned_alloc(align, n));
    expect_fail("aligned_alloc (bad alignment)", p, errno, pow2(align) ? ENOMEM : EINVAL);
    return;
  }
  if (!room(n))
    return;
  clear_slot(slot);
  adopt(slot, CALL(aligned_alloc(align, n)), n, align, FZ_KIND_ALIGNED, false);
}

/* posix_memalign: EINVAL for a non-power of two or a non-multiple of sizeof(void *),
 * ENOMEM above FZ_ALIGN_MAX; *out untouched on failure, errno set to ENOMEM after ENOMEM (as
 * glibc), untouched otherwise. */
static void op_posix_memalign(reader_t *r) {
  int slot = read_slot(r);
  size_t align = read_align(r), n = read_size(r);
  bool bad = !pow2(align) || align % sizeof(void *) || align > FZ_ALIGN_MAX;
  if (!bad && !room(n))
    return;
  if (!bad)
    clear_slot(slot);
  void *out = &out;
  errno = ERRNO_MARK;
  int rc = CALL(posix_memalign(&out, align, n));
  if (bad) { /* errno: glibc's, ENOMEM after ENOMEM, untouched after EINVAL */
    int want = !pow2(align) || align % sizeof(void *) ? EINVAL : ENOMEM;
    FZ_CHECK(rc == want && out == &out && errno == (want == ENOMEM ? ENOMEM : ERRNO_MARK),
             "posix_memalign(%zu, %zu): %d (out %p, errno %d), expected %d", align, n, rc, out,
             errno, want);
    return;
  }
  FZ_CHECK(errno == ERRNO_MARK, "posix_memalign(%zu, %zu) changed errno to %d", align, n, errno);
  FZ_CHECK(rc == 0, "posix_memalign(%zu, %zu) failed: %d", align, n, rc);
  adopt(slot, out, n, align, FZ_KIND_OTHER, false);
}

/* memalign rounds a non-power of two up; above FZ_ALIGN_MAX it fails with ENOMEM, or
 * EINVAL when no power of two that large exists (glibc's rule). */
static void op_memalign(reader_t *r) {
  int slot = read_slot(r);
  size_t align = read_align(r), n = read_size(r);
  if (align > FZ_ALIGN_MAX) {
    errno = 0;
    void *p = CALL(memalign(align, n));
    expect_fail("memalign (large alignment)", p, errno, align > SIZE_MAX / 2 + 1 ? EINVAL : ENOMEM);
    return;
  }
  size_t a = 1;
  while (a < align)
    a <<= 1;
  if (!room(n))
    return;
  clear_slot(slot);
  adopt(slot, CALL(memalign(align, n)), n, a, FZ_KIND_OTHER, false);
}

static void op_valloc(reader_t *r) {
  int slot = read_slot(r);
  bool pv = u8(r) & 1;
  size_t n = read_size(r);
  size_t req = pv ? (n ? (n + page_size - 1) & ~(page_size - 1) : page_size) : n;
  if (!room(req))
    return;
  clear_slot(slot);
  adopt(slot, pv ? CALL(pvalloc(n)) : CALL(valloc(n)), req, page_size, FZ_KIND_OTHER, false);
}

static void op_usable(reader_t *r) {
  int slot = read_slot(r);
  if (fz_slots[slot].p) {
    __atomic_fetch_add(&n_calls, 1, __ATOMIC_RELAXED);
    fz_check_slot(slot, "malloc_usable_size");
  }
}

/* The helper frees 1..8 live blocks, the first at or after slot. */
static void op_handoff_free(reader_t *r) {
  int slot = read_slot(r), want = 1 + (int)(u8(r) % 8), n = 0;
  for (int i = 0; i < FZ_SLOTS && n < want; i++) {
    int s = (slot + i) % FZ_SLOTS;
    if (fz_slots[s].p) {
      TRACE("helper frees slot %d %p\n", s, (void *)fz_slots[s].p);
      helper.jobs[n++] = (job_t){JOB_FREE, fz_release(s, "hand-off free").p, 0};
    }
  }
  if (n == 0)
    return;
  helper.njobs = n;
  helper_run();
}

static void op_handoff_realloc(reader_t *r) {
  int slot = read_slot(r);
  realloc_slot(slot, read_size(r), true);
}

/* The helper allocates; main keeps the block, so its free is a remote free. */
static void op_handoff_alloc(reader_t *r) {
  int slot = read_slot(r);
  bool zeroed = u8(r) & 1;
  size_t n = read_size(r);
  if (!room(n))
    return;
  clear_slot(slot);
  adopt(slot, helper_call(zeroed ? JOB_CALLOC : JOB_MALLOC, NULL, n), n, 16, FZ_KIND_PLAIN, zeroed);
}

static void op_thread_restart(reader_t *r) {
  helper_stop(); /* the next hand-off starts a new helper */
  fz_check_all("after the helper thread exited");
}

static void op_trim(reader_t *r) {
  CALL(malloc_trim(0));
  fz_check_all("malloc_trim");
}

/* Calls that must fail without touching anything: sizes past PTRDIFF_MAX, overflow. */
static void op_bad(reader_t *r) {
  unsigned kind = u8(r) % FZ_BAD_KINDS;
  int slot = read_slot(r);
  unsigned v = u16(r);
  size_t huge = opaque(v & 1 ? SIZE_MAX - (v >> 1) : (size_t)PTRDIFF_MAX + 1 + (v >> 1));
  size_t half = opaque(SIZE_MAX / 2);
  void *p = fz_slots[slot].p, *q = NULL;
  errno = 0;
  switch (kind) {
  case FZ_BAD_MALLOC:
    q = CALL(malloc(huge));
    break;
  case FZ_BAD_CALLOC:
    q = CALL(calloc(2 + v % 7, half));
    break;
  case FZ_BAD_REALLOC:
    q = CALL(realloc(p, huge));
    break;
  case FZ_BAD_REALLOCARRAY:
    q = CALL(reallocarray(p, half, 3 + v % 5));
    break;
  case FZ_BAD_ALIGNED:
    q = v & 2 ? CALL(memalign((size_t)64 << (v % 4), huge))
              : CALL(aligned_alloc((size_t)64 << (v % 4), huge));
    break;
  case FZ_BAD_POSIX_MEMALIGN: {
    void *out = &out;
    errno = ERRNO_MARK;
    int rc = CALL(posix_memalign(&out, 64, huge));
    FZ_CHECK(rc == ENOMEM && out == &out && errno == ENOMEM,
             "posix_memalign(64, %zu): %d, out %p, errno %d", huge, rc, out, errno);
    return;
  }
  case FZ_BAD_PVALLOC:
    q = CALL(pvalloc(SIZE_MAX - v % page_size));
    break;
  default: /* FZ_BAD_NULL */
    errno = ERRNO_MARK;
    CALL(free(NULL));
    FZ_CHECK(errno == ERRNO_MARK, "free(NULL) changed errno to %d", errno);
    FZ_CHECK(CALL(malloc_usable_size(NULL)) == 0, "malloc_usable_size(NULL) != 0");
    return;
  }
  expect_fail("allocation past PTRDIFF_MAX", q, errno, ENOMEM);
  if (p && (kind == FZ_BAD_REALLOC || kind == FZ_BAD_REALLOCARRAY))
    fz_check_slot(slot, "failed realloc");
}

static void (*const ops[FZ_NOPS])(reader_t *) = {
    [FZ_OP_MALLOC] = op_malloc,
    [FZ_OP_CALLOC] = op_calloc,
    [FZ_OP_REALLOC] = op_realloc,
    [FZ_OP_REALLOCARRAY] = op_reallocarray,
    [FZ_OP_FREE] = op_free,
    [FZ_OP_FREE_SIZED] = op_free_sized,
    [FZ_OP_ALIGNED_ALLOC] = op_aligned_alloc,
    [FZ_OP_POSIX_MEMALIGN] = op_posix_memalign,
    [FZ_OP_MEMALIGN] = op_memalign,
    [FZ_OP_VALLOC] = op_valloc,
    [FZ_OP_USABLE] = op_usable,
    [FZ_OP_HANDOFF_FREE] = op_handoff_free,
    [FZ_OP_HANDOFF_REALLOC] = op_handoff_realloc,
    [FZ_OP_HANDOFF_ALLOC] = op_handoff_alloc,
    [FZ_OP_THREAD_RESTART] = op_thread_restart,
    [FZ_OP_TRIM] = op_trim,
    [FZ_OP_BAD] = op_bad,
};

/* ---- set-up, report, entry points ------------------------------------------------------ */

void fz_report(void) {
  if (!quiet)
    fprintf(stderr, "fuzz_alloc: %llu inputs, %llu allocator operations\n",
            (unsigned long long)n_inputs, (unsigned long long)fz_allocator_calls());
}

uint64_t fz_allocator_calls(void) { return __atomic_load_n(&n_calls, __ATOMIC_RELAXED); }
uint64_t fz_inputs(void) { return n_inputs; }

/* Fuzzing some other malloc would prove nothing: check that a malloc lands in axmalloc's
 * per-class live counts (exact for the calling thread; in one class, which checked mode's
 * redzones make bigger than the size's). */
static uint64_t live_in_classes(const ax_stats_t *s) {
  uint64_t n = 0;
  for (unsigned c = 0; c < AX_NUM_CLASSES; c++)
    n += s->class_live[c];
  return n;
}
static void check_axmalloc_serves_malloc(void) {
  static ax_stats_t before, after; /* large: keep them off the stack */
  /* A block the heap profiler sampled lives in a slot of its own, in no class (about 1 malloc
   * of 100 B in 40 with AXMALLOC_PROF_SAMPLE=4096): the next one tries again, up to 8. */
  void *sampled[8], *p = NULL;
  unsigned tries = 0;
  for (; tries < 8; tries++) {
    ax_stats_get(&before);
    p = malloc(100);
    ax_stats_get(&after);
    if (!p || live_in_classes(&after) == live_in_classes(&before) + 1)
      break;
    sampled[tries] = p;
  }
  for (unsigned i = 0; i < tries && i < 8; i++)
    free(sampled[i]);
  FZ_CHECK(p != NULL && live_in_classes(&after) == live_in_classes(&before) + 1,
           "malloc() is not axmalloc's (blocks live in its classes %llu -> %llu): link axmalloc "
           "statically",
           (unsigned long long)live_in_classes(&before),
           (unsigned long long)live_in_classes(&after));
  FZ_CHECK(malloc_usable_size(p) == ax_usable_size(p), "malloc_usable_size is not axmalloc's");
  free(p);
}

void fz_init(int report_at_exit) {
  static bool done;
  if (done)
    return;
  done = true;
  check_axmalloc_serves_malloc();
  ax_info_t info;
  ax_info(&info);
  page_size = info.page_size;
  while (ax_class_size(small_classes + 1) && ax_class_size(small_classes + 1) <= (8 << 10))
    small_classes++;
  quiet = !report_at_exit;
  const char *t = getenv("FUZZ_ALLOC_TRACE");
  trace = t && *t == '1';
  atexit(fz_report);
  fz_fail_report = fz_report;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fz_init(1);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_init(1);
  reader_t r = {data, size, 0};
  fz_shadow_reset();
  for (int n = 0; r.i < r.n && n < FZ_MAX_OPS; n++) {
    unsigned op = u8(&r) % FZ_NOPS;
    fz_op_counts[op]++;
    if (trace)
      fprintf(stderr, "op %s (input offset %zu)\n", fz_op_name(op), r.i - 1);
    ops[op](&r);
  }
  for (int slot = 0; slot < FZ_SLOTS; slot++)
    clear_slot(slot);
  FZ_CHECK(fz_live_bytes == 0, "shadow: %zu live bytes after freeing everything", fz_live_bytes);
  n_inputs++;
  return 0;
}

const char *fz_op_name(unsigned op) {
  static const char *const names[FZ_NOPS] = {
#define FZ_NAME(name, args) #name,
      FZ_OPS(FZ_NAME)
#undef FZ_NAME
  };
  return op < FZ_NOPS ? names[op] : "?";
}
