/* SPDX-License-Identifier: MIT */
/* The fuzz harness's shadow model: what every live block must look like.
 *
 * Each live block has a slot (the input names blocks by slot), the size that was asked
 * for, the usable size the allocator reported, the alignment it promised and a pattern
 * seed. The block is filled with the seed's pattern up to its usable size (the bytes past
 * the request are the program's to use too, glibc's contract). Every check that fails
 * prints what it found to stderr and traps, which libFuzzer reports as a crash.
 */
#ifndef FZ_SHADOW_H
#define FZ_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FZ_SLOTS 64                      /* blocks one input can keep live at once */
#define FZ_LIVE_CAP ((size_t)256 << 20)  /* usable bytes live at once, at most */
#define FZ_FULL_CHECK ((size_t)64 << 10) /* checked byte by byte up to here, then ... */
#define FZ_STRIDE 4096                   /* ... FZ_SAMPLE bytes every FZ_STRIDE, and */
#define FZ_SAMPLE                                                                                  \
  64 /* the last FZ_SAMPLE bytes of the block and of                                               \
      * the request */

typedef struct fz_block {
  unsigned char *p; /* NULL: the slot is empty */
  size_t req;       /* bytes asked for */
  size_t usable;    /* malloc_usable_size when it was allocated: must never change */
  size_t align;     /* alignment the call promised (16 for the plain calls) */
  uint64_t seed;    /* pattern seed, kept across realloc */
  int kind;         /* FZ_KIND_*: which sized free may release it */
} fz_block_t;

enum {
  FZ_KIND_PLAIN,   /* malloc, calloc, realloc: free_sized(p, requested size) */
  FZ_KIND_ALIGNED, /* aligned_alloc: free_aligned_sized(p, align, requested size) */
  FZ_KIND_OTHER    /* posix_memalign, memalign, valloc, pvalloc: plain free only */
};

/* Planted faults: each makes the harness itself misbehave in one way that a check must
 * catch (fuzz_replay --expect-traps runs the corpus once per fault and wants a trap).
 * FZ_PLANT_NONE in every real run. */
enum {
  FZ_PLANT_NONE,
  FZ_PLANT_CONTENT, /* a byte of every new block flipped after the fill */
  FZ_PLANT_REALLOC, /* the last kept byte flipped after realloc */
  FZ_PLANT_CALLOC,  /* a calloc'ed byte set before the zero check */
  FZ_PLANT_OVERLAP, /* blocks claim 16 bytes more than they have */
  FZ_PLANT_ERRNO,   /* free "changes" errno */
  FZ_PLANT_ALIGN,   /* calls "promise" 4 KiB more alignment than they do */
  FZ_PLANT_USABLE,  /* the usable size "changes" while the block is live */
  FZ_NPLANTS
};
extern int fz_plant;

extern fz_block_t fz_slots[FZ_SLOTS];
extern size_t fz_live_bytes;

/* Print "fuzz_alloc: <message>" to stderr, then the harness's totals (fz_fail_report, which the
 * harness sets: the model calls nothing above it), and trap. Never returns. */
__attribute__((noreturn, format(printf, 1, 2))) void fz_fail(const char *fmt, ...);
extern void (*fz_fail_report)(void);
#define FZ_CHECK(cond, ...)                                                                        \
  do {                                                                                             \
    if (__builtin_expect(!(cond), 0))                                                              \
      fz_fail(__VA_ARGS__);                                                                        \
  } while (0)

/* Forget every block without touching memory (start of an input). */
void fz_shadow_reset(void);
/* The next pattern seed; the sequence restarts with every input, so a crash replays. */
uint64_t fz_next_seed(void);

/* Byte i of the pattern of `seed` (little-endian words of a mixed counter). */
unsigned char fz_pattern_byte(uint64_t seed, size_t i);
/* Write or check the pattern over the covered bytes of a block of `len` usable bytes, `req`
 * of them requested, that lie in [lo, hi): every byte below FZ_FULL_CHECK, then samples
 * (see above). fz_cover_check: post: SIZE_MAX when intact, else the first bad offset. */
void fz_cover_fill(unsigned char *p, size_t len, size_t req, uint64_t seed, size_t lo, size_t hi);
size_t fz_cover_check(const unsigned char *p, size_t len, size_t req, uint64_t seed, size_t lo,
                      size_t hi);
/* Write or check the pattern over every byte of p[lo, hi) (post as above). */
void fz_range_fill(unsigned char *p, uint64_t seed, size_t lo, size_t hi);
size_t fz_range_check(const unsigned char *p, uint64_t seed, size_t lo, size_t hi);
/* post: SIZE_MAX when p[0..n) is all zero, else the first non-zero offset. */
size_t fz_find_nonzero(const unsigned char *p, size_t n);

/* A new live block in `slot` (which must be empty): checks alignment (16 and b->align),
 * usable size (>= req, malloc_usable_size == ax_usable_size), that it overlaps no other
 * live block, and records it. */
void fz_adopt(int slot, const fz_block_t *b);
/* The block in `slot` is about to leave the shadow (free, realloc, hand-off): checks its
 * usable size did not change and its pattern is intact, removes it, returns a copy. */
fz_block_t fz_release(int slot, const char *why);
/* Check one live block's usable size and pattern. */
void fz_check_slot(int slot, const char *why);
/* Check every live block's pattern and usable size (after trim or a thread exit). */
void fz_check_all(const char *why);

#endif
