/* SPDX-License-Identifier: MIT */
/* t_oom: out of memory. Every failure is NULL with errno ENOMEM (posix_memalign: returns
 * ENOMEM and sets errno to it too, as glibc), nothing crashes, live blocks stay intact, and after
 * freeing everything the same allocations succeed again.
 *
 * usage: t_oom huge              requests no machine can satisfy (no limit is set):
 *                                1 << 46, 1 << 47, PTRDIFF_MAX, SIZE_MAX, in every function
 *        t_oom limit [MiB=256]   under RLIMIT_AS = current size + MiB: allocate until failure
 *                                small, medium, large and huge blocks, calloc, aligned_alloc,
 *                                posix_memalign, memalign, realloc growth, a random mix
 *        t_oom threads [MiB=256] [threads=4]   the same limit, threads allocating at once
 *        t_oom refused           requests no address space holds fail without a system call
 *        t_oom refused_limit [MiB=256]   under the limit, a request the kernel refuses costs
 *                                the next malloc(16) no system call
 *
 * The limit modes use an RLIMIT_AS already in force (`ulimit -v` around the program, or
 * around qemu-user, which ignores a guest's setrlimit of RLIMIT_AS) or set one. A limit that
 * is not enforced exits 77 (ctest: SKIP_RETURN_CODE) with the reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "testutil.h"

#include "oom_limit.h"

/* ---- blocks: an intrusive list, so keeping millions of blocks needs no memory ---------- */

typedef struct blk {
  struct blk *next;
  size_t size;
  uint64_t tag;
} blk_t;

/* Touch every OS page of the block (a mapping that only pretended to succeed faults here)
 * with bytes derived from the tag, and the last byte. */
static void blk_fill(blk_t *b, size_t size, uint64_t tag) {
  b->size = size;
  b->tag = tag;
  uint8_t *p = (uint8_t *)b;
  for (size_t off = 4096; off < size; off += 4096)
    p[off] = (uint8_t)(tag + (off >> 12));
  p[size - 1] = (uint8_t)(tag ^ 0x5a);
}

static void blk_verify(const blk_t *b, const char *what) {
  const uint8_t *p = (const uint8_t *)b;
  size_t size = b->size;
  CHECKF(size >= sizeof(blk_t) && malloc_usable_size((void *)b) >= size,
         "%s: block %p: size field %zu (usable %zu)", what, (void *)b, size,
         malloc_usable_size((void *)b));
  for (size_t off = 4096; off < size; off += 4096)
    CHECKF(p[off] == (uint8_t)(b->tag + (off >> 12)), "%s: block %p (size %zu) byte %zu lost", what,
           (void *)b, size, off);
  CHECKF(p[size - 1] == (uint8_t)(b->tag ^ 0x5a), "%s: block %p (size %zu) last byte lost", what,
         (void *)b, size);
}

typedef struct {
  blk_t *head;
  size_t count, bytes;
} list_t;

static void list_push(list_t *l, blk_t *b) {
  b->next = l->head;
  l->head = b;
  l->count++;
  l->bytes += b->size;
}

static void list_verify(const list_t *l, const char *what) {
  for (const blk_t *b = l->head; b; b = b->next)
    blk_verify(b, what);
}

static void list_free(list_t *l, const char *what) {
  while (l->head) {
    blk_t *b = l->head;
    l->head = b->next;
    blk_verify(b, what);
    free(b);
  }
  l->count = l->bytes = 0;
}

/* ---- the allocation functions, with their failure contracts ---------------------------- */

enum how { MALLOC, CALLOC, ALIGNED_ALLOC, POSIX_MEMALIGN, MEMALIGN, VALLOC, PVALLOC, NHOW };
static const char *how_name[] = {"malloc",   "calloc", "aligned_alloc", "posix_memalign",
                                 "memalign", "valloc", "pvalloc"};

/* One allocation; a failure must follow the contract (checked here).
 * post: the block (aligned and, for calloc, zero at every page sampled), or NULL. */
static void *alloc_how(enum how how, size_t size, size_t align) {
  void *p = NULL;
  errno = 0;
  switch (how) {
  case MALLOC:
    p = malloc(size);
    break;
  case CALLOC:
    p = calloc(1, size);
    break;
  case ALIGNED_ALLOC:
    p = aligned_alloc(align, size);
    break;
  case POSIX_MEMALIGN: {
    errno = EDOM; /* survives a success; a failure sets ENOMEM too, as glibc's */
    void *out = (void *)0x1;
    int rc = posix_memalign(&out, align, size);
    CHECKF(errno == (rc ? ENOMEM : EDOM), "posix_memalign(%zu, %zu) = %d set errno to %d", align,
           size, rc, errno);
    if (rc) {
      CHECKF(rc == ENOMEM, "posix_memalign(%zu, %zu) returned %d, not ENOMEM", align, size, rc);
      CHECKF(out == (void *)0x1, "posix_memalign failed but wrote its result");
      return NULL;
    }
    p = out;
    CHECK(p != NULL);
    break;
  }
  case MEMALIGN:
    p = memalign(align, size);
    break;
  case VALLOC:
    p = valloc(size);
    break;
  default:
    p = pvalloc(size);
  }
  if (!p) {
    CHECKF(errno == ENOMEM, "%s(%zu, align %zu) = NULL with errno %d, not ENOMEM", how_name[how],
           size, align, errno);
    return NULL;
  }
  CHECKF(align <= 1 || ((uintptr_t)p & (align - 1)) == 0, "%s(%zu, align %zu) = %p misaligned",
         how_name[how], size, align, p);
  if (how == CALLOC)
    for (size_t off = 0; off < size; off += off < 65536 ? 8 : 4096) /* dense, then sampled */
      CHECKF(((uint8_t *)p)[off] == 0, "calloc(1, %zu) = %p: byte %zu not zero", size, p, off);
  return p;
}

/* realloc and reallocarray through pointers: after a *failed* call the block is still
 * valid and checked, which GCC's -Wuse-after-free cannot know. */
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static void *(*volatile reallocarray_fn)(void *, size_t, size_t) = reallocarray;

/* ---- no limit: impossible sizes ------------------------------------------------------- */

static void expect_enomem(void *p, const char *what, size_t size) {
  CHECKF(p == NULL, "%s(%#zx) = %p, expected NULL", what, size, p);
  CHECKF(errno == ENOMEM, "%s(%#zx): errno %d, expected ENOMEM", what, size, errno);
}

static int mode_huge(void) {
  const size_t sizes[] = {(size_t)1 << 46,
                          (size_t)1 << 47,
                          ((size_t)1 << 47) + 4096,
                          PTRDIFF_MAX - 4096,
                          PTRDIFF_MAX,
                          (size_t)PTRDIFF_MAX + 1,
                          SIZE_MAX};
  blk_t *keep = malloc(3 * MiB); /* a huge block that realloc must leave alone */
  blk_t *small = malloc(100);
  CHECK(keep && small);
  blk_fill(keep, 3 * MiB, 11);
  blk_fill(small, 100, 12);
  for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i];
    for (enum how h = MALLOC; h < NHOW; h++) {
      void *p = alloc_how(h, n, h == MALLOC || h == CALLOC || h >= VALLOC ? 1 : 4096);
      CHECKF(p == NULL,
             "%s(%#zx) = %p: the kernel gave address space that cannot be backed "
             "(MAP_NORESERVE?)",
             how_name[h], n, p);
      free(p);
    }
    errno = 0;
    expect_enomem(calloc(n / 4 + 1, 4), "calloc(n/4+1, 4) of", n);
    errno = 0;
    expect_enomem(realloc_fn(keep, n), "realloc(huge block)", n);
    errno = 0;
    expect_enomem(realloc_fn(small, n), "realloc(small block)", n);
    errno = 0;
    expect_enomem(reallocarray_fn(small, 2, n / 2 + 1), "reallocarray(small, 2, n/2+1)", n);
    blk_verify(keep, "huge block after failed realloc");
    blk_verify(small, "small block after failed realloc");
  }
  free(keep);
  free(small);
  printf("t_oom huge: OK\n");
  return 0;
}

/* ---- the limit -------------------------------------------------------------------------- */

/* Blocks that live through every phase: all sizes, patterns checked after each phase. */
static list_t keepers;

static void keepers_make(void) {
  static const size_t sizes[] = {16 * 1024, 100, 2000, 40000, 300000, 3 * MiB};
  for (unsigned i = 0; i < 240; i++) {
    size_t sz = sizes[i % 6] + i;
    if (sz >= MiB && i >= 6)
      continue; /* one huge keeper is enough */
    blk_t *b = malloc(sz);
    CHECK(b != NULL);
    blk_fill(b, sz, i);
    list_push(&keepers, b);
  }
}

struct kind {
  const char *name;
  enum how how;
  size_t size, align;
};

/* Allocate blocks of one kind until the first failure (checked against the contract).
 * pre: cap bytes is more than the limit: reaching it means the limit does not hold. */
static list_t exhaust(const struct kind *k, size_t cap) {
  list_t l = {0};
  for (;;) {
    blk_t *b = alloc_how(k->how, k->size, k->align);
    if (!b)
      break;
    blk_fill(b, k->size, l.count * 7 + 3);
    list_push(&l, b);
    CHECKF(l.bytes < cap, "%s: %zu MiB allocated under the limit", k->name, l.bytes >> 20);
  }
  return l;
}

/* While memory is exhausted: small requests either fail by contract or work. */
static void poke_while_exhausted(void) {
  for (enum how h = MALLOC; h < NHOW; h++) {
    void *p = alloc_how(h, 64, h == MALLOC || h == CALLOC || h >= VALLOC ? 1 : 64);
    if (p)
      memset(p, 1, 64);
    free(p);
  }
  char *r = malloc(32);
  if (r) {
    memset(r, 'r', 32);
    errno = 0;
    char *q = realloc_fn(r, 64 * MiB);
    if (q) {
      r = q;
    } else {
      CHECKF(errno == ENOMEM, "realloc to 64 MiB: NULL with errno %d", errno);
      for (int i = 0; i < 32; i++)
        CHECK(r[i] == 'r');
    }
    free(r);
  }
}

/* oom_outside() at the last exhaustion (or the limit's setup): where a recovery's page-map
 * tables are counted from (oom_limit.h). */
static size_t outside_before;

static void phase(const struct kind *k, size_t cap) {
  size_t before = outside_before;
  list_t l = exhaust(k, cap);
  outside_before = oom_outside(); /* (just refused: exact) */
  poke_while_exhausted();
  list_verify(&keepers, "keeper, while memory is exhausted");
  list_verify(&l, k->name);
  size_t n = l.count, bytes = l.bytes;
  /* Everything else was freed before this phase: memory freed as other sizes must be
   * usable again, not stay held by empty pages and caches while mmap fails. (A fifth: every
   * 4 MiB segment has 1 MiB of guard below it, and valloc's 20,000 bytes take 64 KiB blocks
   * on 64 KiB pages: 22% of the address space as requested bytes.) */
  CHECKF(bytes >= oom_avail / 5,
         "%s: only %zu blocks (%zu MiB) before ENOMEM, with %zu MiB free under the limit "
         "when the test began and everything since freed",
         k->name, n, bytes >> 20, oom_avail >> 20);
  list_free(&l, k->name);
  /* Recovery: the same allocations succeed again, unless a page-map table was mapped since
   * the last exhaustion (oom_limit.h). */
  for (size_t i = 0; i < oom_recovery(n); i++) {
    blk_t *b = alloc_how(k->how, k->size, k->align);
    if (!b) {
      size_t now = oom_outside(), want = oom_recovery_after(n, before, now);
      CHECKF(i >= want,
             "%s: after freeing %zu blocks, allocation %zu of them again failed (address space "
             "outside axmalloc's count: %lld KiB more)",
             k->name, n, i, ((long long)now - (long long)before) / 1024);
      printf("t_oom: %s: the page map gained a table (8 MiB) since: %zu blocks again\n", k->name,
             i);
      break;
    }
    blk_fill(b, k->size, i);
    list_push(&l, b);
  }
  list_free(&l, k->name);
  list_verify(&keepers, "keeper");
  printf("t_oom: %-34s %8zu blocks, %4zu MiB until ENOMEM; recovered\n", k->name, n, bytes >> 20);
  fflush(stdout);
}

/* realloc growth until failure: the failed realloc leaves the block whole. */
static void phase_realloc(size_t start, size_t cap) {
  size_t size = start;
  blk_t *b = malloc(size);
  CHECK(b != NULL);
  blk_fill(b, size, 99);
  for (;;) {
    size_t next = size + size / 2;
    errno = 0;
    blk_t *q = realloc_fn(b, next);
    if (!q) {
      CHECKF(errno == ENOMEM, "realloc(%zu -> %zu) = NULL with errno %d", size, next, errno);
      blk_verify(b, "block after failed realloc");
      break;
    }
    b = q;
    CHECKF(b->size == size && b->tag == 99, "realloc(%zu -> %zu) lost the header", size, next);
    for (size_t off = 4096; off < size; off += 4096)
      CHECKF(((uint8_t *)b)[off] == (uint8_t)(99 + (off >> 12)),
             "realloc(%zu -> %zu): byte %zu lost", size, next, off);
    blk_fill(b, next, 99);
    size = next;
    CHECKF(size < cap, "realloc grew to %zu MiB under the limit", size >> 20);
  }
  free(b);
  printf("t_oom: realloc growth from %-18zu reached %zu MiB before ENOMEM\n", start, size >> 20);
  /* growing by moving page tables needs the old and the new size mapped at once */
  CHECKF(size >= oom_avail / 8, "realloc growth from %zu stopped at %zu MiB of %zu MiB free", start,
         size >> 20, oom_avail >> 20);
}

/* Random kinds until three failures in a row; free a random half, check the rest, fill up
 * again; free all. */
static void phase_mixed(size_t cap) {
  uint64_t rng = 12345;
  list_t l = {0};
  for (int round = 0; round < 2; round++) {
    for (int fails = 0; fails < 3;) {
      uint64_t r = rnd_next(&rng);
      size_t size = (r & 3) == 0   ? 24 + r % 200
                    : (r & 3) == 1 ? 1000 + r % 100000
                    : (r & 3) == 2 ? 200000 + r % 800000
                                   : MiB + r % (12 * MiB);
      enum how h = (enum how)((r >> 40) % NHOW);
      blk_t *b = alloc_how(h, size, h == MALLOC || h == CALLOC || h >= VALLOC ? 1 : 256);
      if (!b) {
        fails++;
        continue;
      }
      fails = 0;
      blk_fill(b, size, r);
      list_push(&l, b);
      CHECKF(l.bytes < cap, "mixed: %zu MiB allocated under the limit", l.bytes >> 20);
    }
    list_verify(&keepers, "keeper");
    printf("t_oom: mixed round %d: %zu blocks, %zu MiB\n", round, l.count, l.bytes >> 20);
    CHECKF(round > 0 || l.bytes >= oom_avail / 4, "mixed: %zu MiB of %zu MiB free", l.bytes >> 20,
           oom_avail >> 20);
    list_t kept = {0};
    while (l.head) {
      blk_t *b = l.head;
      l.head = b->next;
      if (rnd_next(&rng) & 1) {
        blk_verify(b, "mixed");
        free(b);
      } else {
        list_push(&kept, b);
      }
    }
    l = kept;
    list_verify(&l, "mixed, the half kept");
  }
  list_free(&l, "mixed");
}

static int mode_limit(size_t headroom) {
  keepers_make();
  size_t limit = oom_limit_setup(headroom);
  if (!limit)
    return OOM_SKIP;
  outside_before = oom_outside(); /* (nothing freed yet: exact) */
  const struct kind kinds[] = {
      {"malloc 64 B", MALLOC, 64, 1},
      {"malloc 3000 B", MALLOC, 3000, 1},
      {"malloc 40 KiB (medium)", MALLOC, 40000, 1},
      {"malloc 600 KiB (large)", MALLOC, 600000, 1},
      {"malloc 8 MiB (huge)", MALLOC, 8 * MiB, 1},
      {"calloc 200 B", CALLOC, 200, 1},
      {"calloc 256 KiB", CALLOC, 256 * 1024, 1},
      {"calloc 5 MiB", CALLOC, 5 * MiB, 1},
      {"aligned_alloc 4096, 64 KiB", ALIGNED_ALLOC, 64 * 1024, 4096},
      {"aligned_alloc 64, 1000 B", ALIGNED_ALLOC, 1024, 64},
      {"posix_memalign 1 MiB, 1.5 MiB", POSIX_MEMALIGN, 3 * MiB / 2, MiB},
      {"posix_memalign 256, 10000 B", POSIX_MEMALIGN, 10000, 256},
      {"memalign 64 KiB, 100 KiB", MEMALIGN, 100 * 1024, 65536},
      {"valloc 20000 B", VALLOC, 20000, 4096},
  };
  for (unsigned i = 0; i < sizeof kinds / sizeof *kinds; i++)
    phase(&kinds[i], limit);
  phase_realloc(100, limit);
  phase_realloc(3 * MiB, limit);
  phase_mixed(limit);
  list_free(&keepers, "keeper at the end");
  printf("t_oom limit: OK\n");
  return 0;
}

/* ---- threads under the limit ----------------------------------------------------------- */

static pthread_barrier_t barrier, start;
static size_t thread_cap;

struct tres {
  unsigned id;
  size_t count[2], bytes[2];
};

/* Each thread: fill up (random sizes) until three failures in a row, wait for the others,
 * verify and free, then again. */
static void *oom_thread(void *arg) {
  struct tres *t = arg;
  for (int round = 0; round < 2; round++) {
    uint64_t rng = 777 + t->id; /* the same sizes both rounds */
    list_t l = {0};
    if (round == 0)
      pthread_barrier_wait(&start);
    pthread_barrier_wait(&barrier);
    for (int fails = 0; fails < 3;) {
      uint64_t r = rnd_next(&rng);
      size_t size = (r & 3) == 0   ? 24 + r % 500
                    : (r & 3) == 1 ? 1000 + r % 60000
                    : (r & 3) == 2 ? 100000 + r % 900000
                                   : MiB + r % (6 * MiB);
      blk_t *b = alloc_how((r >> 40) & 1 ? CALLOC : MALLOC, size, 1);
      if (!b) {
        fails++;
        continue;
      }
      fails = 0;
      blk_fill(b, size, r);
      list_push(&l, b);
      CHECKF(l.bytes < thread_cap, "thread %u: %zu MiB under the limit", t->id, l.bytes >> 20);
    }
    pthread_barrier_wait(&barrier); /* everybody is out of memory now */
    list_verify(&l, "thread's block");
    t->count[round] = l.count;
    t->bytes[round] = l.bytes;
    list_free(&l, "thread's block");
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

static int mode_threads(size_t headroom, unsigned nthreads) {
  keepers_make();
  size_t limit = oom_limit_setup(headroom);
  if (!limit)
    return OOM_SKIP;
  thread_cap = limit;
  pthread_t th[64];
  struct tres res[64] = {{0}};
  CHECK(nthreads >= 1 && nthreads <= 64);
  CHECK(pthread_barrier_init(&barrier, NULL, nthreads) == 0);
  CHECK(pthread_barrier_init(&start, NULL, nthreads + 1) == 0);
  pthread_attr_t attr;
  CHECK(pthread_attr_init(&attr) == 0);
  CHECK(pthread_attr_setstacksize(&attr, 256 << 10) == 0);
  for (unsigned i = 0; i < nthreads; i++) {
    res[i].id = i;
    int rc = pthread_create(&th[i], &attr, oom_thread, &res[i]);
    CHECKF(rc == 0, "pthread_create under the limit: %s", strerror(rc));
  }
  /* What is left once the threads exist (under qemu each costs qemu memory too). */
  size_t used = oom_vm_size();
  oom_avail = limit > used ? limit - used : 0;
  printf("t_oom: %u threads started, %zu MiB free\n", nthreads, oom_avail >> 20);
  pthread_barrier_wait(&start);
  size_t total[2] = {0, 0};
  for (unsigned i = 0; i < nthreads; i++) {
    CHECK(pthread_join(th[i], NULL) == 0);
    for (int r = 0; r < 2; r++)
      total[r] += res[i].bytes[r];
    printf("t_oom: thread %u: %zu blocks %zu MiB, then %zu blocks %zu MiB\n", i, res[i].count[0],
           res[i].bytes[0] >> 20, res[i].count[1], res[i].bytes[1] >> 20);
  }
  list_verify(&keepers, "keeper after the threads");
  CHECKF(total[0] >= oom_avail / 4, "threads: %zu MiB of %zu MiB free", total[0] >> 20,
         oom_avail >> 20);
  /* Recovery, as a whole: who gets what depends on timing, the sum must not shrink much.
   * A refused thread can only give back its own empty pages; another thread's wait out the
   * purge delay, so the second round may get 10-15% less (measured: 136 of 153 MiB). */
  CHECKF(total[1] >= oom_recovery(total[0] / 4 * 3),
         "threads: %zu MiB the first time, %zu MiB the second", total[0] >> 20, total[1] >> 20);
  list_free(&keepers, "keeper at the end");
  printf("t_oom threads: %u threads, %zu MiB then %zu MiB: OK\n", nthreads, total[0] >> 20,
         total[1] >> 20);
  return 0;
}

/* ---- refused requests cost the next small malloc nothing (issue 10, defect 7) ------------ */
/* Each runs in a thread of its own, whose heap holds nothing but the one small block: before
 * the fix, the release after a refused mapping unmapped that block's segment, and the next
 * malloc(16) mapped it again (glibc's tst-malloc-too-large: 24 s instead of glibc's 2). */

static void *refuse_no_syscall(void *arg) {
  free(malloc(16));
  ax_stats_t a, b;
  ax_stats_get(&a);
  size_t big = (size_t)1 << 50;
  for (int i = 0; i < 100; i++) {
    errno = 0;
    CHECK(malloc(big) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(big >> 10, 1024) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(memalign(4096, big) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(aligned_alloc((size_t)8 << 20, big) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(aligned_alloc((size_t)1 << 48, 64) == NULL && errno == ENOMEM);
    void *q = malloc(16);
    CHECK(q != NULL);
    errno = 0;
    CHECK(realloc(q, big) == NULL && errno == ENOMEM);
    free(q);
  }
  ax_stats_get(&b);
  CHECKF(b.os_mmap_calls == a.os_mmap_calls && b.os_munmap_calls == a.os_munmap_calls,
         "600 impossible requests made %llu mmap and %llu munmap calls",
         (unsigned long long)(b.os_mmap_calls - a.os_mmap_calls),
         (unsigned long long)(b.os_munmap_calls - a.os_munmap_calls));
  return NULL;
}

static void *refuse_kernel(void *arg) {
  size_t too_big = *(size_t *)arg;
  free(malloc(16));
  ax_stats_t a, b, c;
  unsigned long long small_maps = 0, later_unmaps = 0;
  for (int i = 0; i < 100; i++) {
    errno = 0;
    CHECK(malloc(too_big) == NULL && errno == ENOMEM);
    ax_stats_get(&a);
    void *p = malloc(16); /* the page it needs is still there */
    ax_stats_get(&b);
    CHECK(p != NULL);
    free(p);
    small_maps += b.os_mmap_calls - a.os_mmap_calls;
    if (i > 0)
      later_unmaps += a.os_munmap_calls - c.os_munmap_calls;
    c = b;
  }
  CHECKF(small_maps == 0, "malloc(16) after a refused request mapped memory %llu times of 100",
         small_maps);
  CHECKF(later_unmaps == 0, "refused requests unmapped memory %llu times after the first",
         later_unmaps);
  return NULL;
}

static int mode_refused(bool limit, size_t headroom) {
  pthread_t t;
  if (!limit) {
    CHECK(pthread_create(&t, NULL, refuse_no_syscall, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    printf("t_oom refused: 600 impossible requests, no system call: OK\n");
    return 0;
  }
  if (!oom_limit_setup(headroom))
    return OOM_SKIP;
  size_t too_big = oom_avail + 64 * MiB;
  CHECK(pthread_create(&t, NULL, refuse_kernel, &too_big) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  printf("t_oom refused_limit: 100 refused requests of %zu MiB, malloc(16) after each mapped "
         "nothing: OK\n",
         too_big >> 20);
  return 0;
}

int main(int argc, char **argv) {
  check_axmalloc_active();
  const char *mode = argc > 1 ? argv[1] : "huge";
  size_t headroom = (argc > 2 ? strtoull(argv[2], NULL, 10) : 256) * MiB;
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("t_oom %s\n", mode); /* stdio allocates its buffer now, not out of memory */
  if (!strcmp(mode, "huge"))
    return mode_huge();
  if (!strcmp(mode, "limit"))
    return mode_limit(headroom);
  if (!strcmp(mode, "threads"))
    return mode_threads(headroom, argc > 3 ? (unsigned)atoi(argv[3]) : 4);
  if (!strcmp(mode, "refused") || !strcmp(mode, "refused_limit"))
    return mode_refused(!strcmp(mode, "refused_limit"), headroom);
  fprintf(stderr, "usage: t_oom huge | limit [MiB] | threads [MiB] [threads] | refused | "
                  "refused_limit [MiB]\n");
  return 2;
}
