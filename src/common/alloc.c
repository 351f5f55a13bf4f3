/* SPDX-License-Identifier: MIT */
/* The malloc family but free: fast paths and the API contracts (glibc's).
 *
 *   malloc(n <= 1 KiB): page = heap->direct[n]; pop page->free; used++.
 * No lock and no atomic read-modify-write on the fast path. Checked mode (check.c) and the
 * valgrind hooks (track.h, AX_VALGRIND builds only) leave it as it is: in checked mode the
 * direct table holds only the empty page, so malloc falls through to a branch that exists
 * anyway. free is in free.c.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "bulk.h"
#include "cache.h"
#include "heap.h"
#include "huge.h"
#include "lifecycle.h"
#include "list.h"
#include "modes/check.h"
#include "modes/guard.h"
#include "modes/leak.h"
#include "modes/leak_gate.h"
#include "modes/mte.h"
#include "modes/prof.h"
#include "modes/stacks/unwind.h"
#include "page.h"
#include "pagemap.h"
#include "ptr.h"
#include "remote.h"
#include "segment.h"
#include "state.h"
#include "zero.h"

/* ---- malloc ------------------------------------------------------------------------- */

static void *malloc_zero(ax_heap_t *heap, bool zero); /* (below) */

/* The common part of malloc's slow paths (below): the current page of size's class first (the
 * tests for rarer cases after it cost its refills nothing: wl_oneblock's 1 KiB pairs refill
 * every fourth). */
static inline void *malloc_common(ax_heap_t *heap, size_t size, bool zero) {
  void *p;
  if (ax_peek(&heap->rb.open)) /* our chains of remote frees wait two refills at most (remote.c) */
    axi_remote_age(heap);
  if (ax_likely(size <= AX_LARGE_MAX) && (p = axi_page_malloc_current(heap, size, zero)))
    return p;
  if (ax_unlikely(size == 0)) /* (the direct table's entry 0 is always the empty page) */
    return malloc_zero(heap, zero);
  if (ax_unlikely(heap == &axi_heap_empty) && !(heap = axi_thread_start())) {
    errno = ENOMEM;
    return NULL;
  }
  if (ax_unlikely(axi_checked)) /* (every malloc: the direct tables hold only the empty page) */
    return axi_check_malloc(heap, size, 16, zero);
  return axi_heap_malloc(heap, size, zero);
}

/* malloc's slow path while the heap profiler samples (prof.c), first the common case of a
 * size the direct table serves (page.c), in a frame of its own: the profiler's general way
 * saves registers for all its ways (wl_rounds, 800,000 slow paths: 49 instructions in it
 * each). The heap comes first, so that a thread's first malloc counts too. */
static AX_NOINLINE AX_API void *malloc_prof_slow(ax_heap_t *heap, size_t size, bool zero) {
  void *p;
  if (size <= AX_DIRECT_MAX && heap->prof.started && !heap->prof.busy &&
      (p = axi_prof_malloc_granted(heap, size, zero)))
    return p;
  if (ax_unlikely(heap == &axi_heap_empty) && !(heap = axi_thread_start())) {
    errno = ENOMEM;
    return NULL;
  }
  return axi_prof_malloc(heap, size, zero);
}

/* malloc's slow path while the leak checker runs (leak.c): every malloc comes here (the
 * direct tables hold only the empty page), and each block is recorded with its stack. */
static AX_NOINLINE AX_API void *malloc_leak_slow(ax_heap_t *heap, size_t size, bool zero) {
  void *p = malloc_common(heap, size, zero);
  if (p && !axi_zero_has(p)) /* (a zero-size block holds no memory) */
    axi_leak_new(p, size);
  return p;
}

/* malloc(0), calloc(0, n) and their kin: an address nothing may touch (zero.c), or a block of 16
 * bytes when there is none to be had. */
static AX_NOINLINE AX_API void *malloc_zero(ax_heap_t *heap, bool zero) {
  void *p = axi_zero_alloc();
  return p ? p : malloc_common(heap, 1, zero);
}

/* The malloc slow path: first call of a thread, sizes 0 and above 1 KiB, empty free lists; every
 * malloc in checked mode (the direct table then holds only the empty page). Sizes up to
 * 1 MiB first look at their class's current page, which has a block most of the time, or
 * has the blocks freed since the last refill waiting on local_free. Its heap is read again, not
 * passed: the fast path keeps size where the call left it. post: a block of at least size bytes
 * (zeroed if zero), or NULL with errno = ENOMEM. */
/* The profiler's or the leak checker's slow path, or both at once (the profiler's first, then
 * the block recorded): in a frame of its own, so that malloc_slow's calls stay tail calls (the
 * test after a call cost every refill a register save: pair_1024 +0.3 instructions). */
static AX_NOINLINE AX_API void *malloc_hooked(ax_heap_t *heap, size_t size, bool zero) {
  void *p;
  if ((heap->hooked & AX_HOOKED_GUARD) && (p = axi_guard_malloc(heap, size, zero))) {
    if (ax_unlikely(axi_leaks)) /* (recorded as any block: leak_scan.c reads it while live) */
      axi_leak_new(p, size);
    return p;
  }
  if (!axi_malloc_hooked) { /* (malloc_slow's own way: guarded sampling's short intervals) */
    p = malloc_common(heap, size, zero);
    return ax_unlikely(axi_mte) ? axi_mte_tag(p) : p;
  }
  if (!axi_prof_on)
    return malloc_leak_slow(heap, size, zero);
  p = size ? malloc_prof_slow(heap, size, zero) : malloc_zero(heap, zero);
  if (ax_unlikely(axi_leaks) && p && !axi_zero_has(p)) /* (both: the sample recorded too) */
    axi_leak_new(p, size);
  return p;
}

static AX_NOINLINE AX_API void *malloc_slow(size_t size, bool zero) {
  ax_heap_t *heap = axi_tls_heap;
  if (ax_unlikely(heap->hooked)) /* (the modes and a guarded sample due: one test per refill) */
    return malloc_hooked(heap, size, zero);
  void *p = malloc_common(heap, size, zero);
  return ax_unlikely(axi_mte) ? axi_mte_tag(p) : p; /* last: after the zeroing (mte.c) */
}

static AX_NOINLINE AX_API void *zeroed(void *b, size_t size) {
  axi_bulk_zero(b, (size + 15) & ~(size_t)15);
  return b;
}

/* Sizes above the direct table: the heap's cache first (cache.c), for its sizes; every
 * call below is a tail call, so a block from the cache costs no register save. calloc has
 * its own copy, so that malloc's tests no flag. pre: size > AX_DIRECT_MAX. */
static AX_NOINLINE AX_API void *malloc_mid(size_t size) {
  ax_block_t *b;
  if (size <= AX_CACHE_MAX && (b = axi_cache_pop(axi_tls_heap, size)))
    return b;
  return malloc_slow(size, false);
}
static AX_NOINLINE AX_API void *calloc_mid(size_t size) {
  ax_block_t *b;
  if (size <= AX_CACHE_MAX && (b = axi_cache_pop(axi_tls_heap, size)))
    return zeroed(b, size);
  return malloc_slow(size, true);
}

static inline void *heap_malloc(ax_heap_t *heap, size_t n) {
  if (ax_likely(n <= AX_DIRECT_MAX)) {
    ax_page_t *page = heap->direct[n];
    ax_block_t *b = page->free;
    uintptr_t key = page->okey; /* with free: one ldp on AArch64, no cost on x86-64 */
    if (ax_likely(b != NULL)) {
      page->free = axi_link_key(key, b);
      page->used++;
      AX_TRACK_UNDEFINED(b, sizeof *b);
      b->next_enc = 0; /* a live block must not look free to free()'s double-free check */
      AX_TRACK_MALLOC(b, page->block_size, 0);
      return b;
    }
    return malloc_slow(n, false);
  }
  return malloc_mid(n);
}

AX_API void *ax_malloc(size_t n) { return heap_malloc(axi_tls_heap, n); }

AX_API void *ax_calloc(size_t count, size_t size) {
  size_t n;
  if (ax_unlikely(__builtin_mul_overflow(count, size, &n) || n > PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  ax_heap_t *heap = axi_tls_heap;
  if (ax_likely(n <= AX_DIRECT_MAX)) {
    ax_page_t *page = heap->direct[n];
    ax_block_t *b = page->free;
    uintptr_t key = page->okey;
    if (ax_likely(b != NULL)) {
      page->free = axi_link_key(key, b);
      page->used++;
      AX_TRACK_UNDEFINED(b, sizeof *b);
      b->next_enc = 0; /* the rest of a never-used block is still the kernel's zeroes */
      AX_TRACK_MALLOC(b, page->block_size, page->is_zero);
      if (!page->is_zero)
        axi_bulk_zero(b, (n + 15) & ~(size_t)15);
      return b;
    }
    return malloc_slow(n, true);
  }
  return calloc_mid(n);
}

/* ---- sizes -------------------------------------------------------------------------- */

/* malloc_usable_size of a pointer the block-start test did not take (ptr.c): a tagged block,
 * checked mode's (the size the program asked for), a profiler slot, a huge block. */
static AX_NOINLINE AX_API size_t usable_irregular(const char *fn, const void *p) {
  ax_ptr_t x;
  axi_ptr_classify(fn, (void *)p, true, &x);
  switch (x.kind) {
  case AX_PTR_TAGGED:
  case AX_PTR_LEAK:
    return x.page->block_size;
  case AX_PTR_CHECKED:
    return axi_check_usable(&x, p);
  case AX_PTR_SLOT:
    return axi_prof_slot_size(fn, x.seg, p);
  case AX_PTR_ZERO:
    return 0;
  case AX_PTR_GUARD:
    return axi_guard_usable(fn, p);
  case AX_PTR_HUGE:
    break;
  }
  return x.seg->map_size - ((uintptr_t)p - (uintptr_t)x.seg);
}

/* post: usable bytes of the block at p; 0 for NULL. Aborts on a pointer not ours. */
static size_t usable_size(const char *fn, const void *p) {
  if (ax_unlikely(ax_arch_ptr_tag(p) != 0) && axi_mte) /* (a constant 0 on x86-64) */
    return usable_irregular(fn, p);
  ax_segment_t *seg = axi_segment_of(p);
  if (!axi_segmap_has((uintptr_t)seg))
    return p == NULL ? 0 : usable_irregular(fn, p);
  ax_page_t *page = axi_page_of(seg, p);
  if (axi_is_block(page, p))
    return page->block_size;
  return usable_irregular(fn, p);
}

size_t ax_usable_size(const void *p) { return usable_size("malloc_usable_size", p); }

size_t ax_class_size(unsigned c) { return c >= 1 && c < AX_CLASSES ? axi_class_size(c) : 0; }

/* ---- realloc ------------------------------------------------------------------------ */

#ifndef AX_REALLOC_SLACK_SHIFT
#define AX_REALLOC_SLACK_SHIFT 1
#endif

/* A block that outgrows its class by realloc moves to one at least 1.5 times as big (up to
 * the largest class), so a buffer grown in small steps is copied a few times, not once
 * per class. */
static size_t grow_target(size_t old, size_t n) {
  size_t want = old + (old >> AX_REALLOC_SLACK_SHIFT);
  want = want < AX_LARGE_MAX ? want : AX_LARGE_MAX;
  return n > want ? n : want;
}

/* realloc's free of the block it moved from (or of p, for realloc(p, 0)): its reports name
 * realloc (print.c). */
static void realloc_free(void *p) {
  axi_freeing_for = "realloc";
  ax_free(p);
  axi_freeing_for = NULL;
}

/* realloc within a block: move when it does not fit or would waste more than half. */
static AX_API void *realloc_move(void *p, size_t old, size_t n) {
  /* (a shrink asks for whole 16 bytes: the copy below writes them, and a guarded block,
   * modes/guard.c, has exactly what it asks for; a class holds both sizes) */
  void *q = ax_malloc(n > old ? grow_target(old, n) : (n + 15) & ~(size_t)15);
  if (!q)
    return NULL;
  size_t keep = n < old ? n : old;
  axi_bulk_copy(q, p, (keep + 15) & ~(size_t)15); /* usable sizes are multiples of 16 */
  realloc_free(p);
  return q;
}

/* realloc of a guarded block (modes/guard.c): it always moves, copying exactly the bytes it
 * has (the page ends right after it; realloc_move copies in 16-byte steps), so that a block
 * grown or shrunk in place does not lose the guard page at its end. */
static AX_NOINLINE AX_API void *realloc_guarded(void *p, size_t n) {
  size_t old = axi_guard_usable("realloc", p);
  void *q = ax_malloc(n);
  if (!q)
    return NULL;
  memcpy(q, p, n < old ? n : old);
  realloc_free(p);
  return q;
}

/* realloc of a pointer the block-start test did not take (ptr.c): a tagged block (it keeps
 * its tag when it stays; a move goes through malloc, tagged, and free, retagged), checked
 * mode's, a profiler slot (moves as a small block does), a huge block. */
static AX_NOINLINE AX_API void *realloc_irregular(void *p, size_t n) {
  ax_ptr_t x;
  axi_ptr_classify("realloc", p, true, &x);
  ax_segment_t *seg = x.seg;
  if (x.kind == AX_PTR_CHECKED) {
    ax_heap_t *heap = axi_heap_get();
    return heap ? axi_check_realloc(heap, &x, p, n) : NULL;
  }
  if (ax_unlikely(n > PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  if (x.kind == AX_PTR_ZERO) /* nothing to keep */
    return realloc_move(p, 0, n);
  if (x.kind == AX_PTR_GUARD)
    return realloc_guarded(p, n);
  size_t old = x.kind == AX_PTR_TAGGED || x.kind == AX_PTR_LEAK ? x.page->block_size
               : x.kind == AX_PTR_SLOT ? axi_prof_slot_size("realloc", seg, p)
                                       : seg->map_size - ((uintptr_t)p - (uintptr_t)seg);
  /* a sampled huge block's profile names its size: it moves (prof.c; a cached mapping may
   * have room for much more than the block it was sampled as) */
  if (n <= old && n >= old / 2 && !seg->prof) {
    if (ax_unlikely(axi_leaks))
      axi_leak_resize(p, n);
    return p;
  }
  if (n > AX_LARGE_MAX && x.kind == AX_PTR_HUGE) {
    if (ax_unlikely(axi_leaks)) /* (leak_gate.c: while the scan at exit runs, it waits) */
      axi_leak_hold(p);
    axi_page_purge_tick(axi_tls_heap); /* (the empty heap has nothing due) */
    void *q = axi_huge_realloc(seg, p, n);
    if (q && ax_unlikely(axi_prof_on))
      axi_prof_huge(q, n); /* a new allocation to the profile */
    if (ax_unlikely(axi_leaks)) {
      if (q) {
        axi_leak_forget(NULL, p);
        axi_leak_new(q, n);
      }
      axi_leak_release();
    }
    if (q)
      return q;
  }
  return realloc_move(p, old, n);
}

AX_API void *ax_realloc(void *p, size_t n) {
  if (p == NULL)
    return ax_malloc(n);
  if (n == 0) { /* glibc: realloc(p, 0) frees p and returns NULL */
    realloc_free(p);
    return NULL;
  }
  if (ax_unlikely(ax_arch_ptr_tag(p) != 0) && axi_mte) /* (a constant 0 on x86-64) */
    return realloc_irregular(p, n);
  ax_segment_t *seg = axi_segment_of(p);
  if (ax_unlikely(!axi_segmap_has((uintptr_t)seg)))
    return realloc_irregular(p, n);
  ax_page_t *page = axi_page_of(seg, p);
  if (ax_unlikely(!axi_is_block(page, p)))
    return realloc_irregular(p, n);
  size_t old = page->block_size;
  if (ax_unlikely(n > PTRDIFF_MAX)) {
    errno = ENOMEM;
    return NULL;
  }
  if (n <= old && n >= old / 2)
    return p; /* fits, and a shrink to no less than half is not worth a copy */
  return realloc_move(p, old, n);
}

AX_API void *ax_reallocarray(void *p, size_t count, size_t size) {
  size_t n;
  if (__builtin_mul_overflow(count, size, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  return ax_realloc(p, n);
}

/* ---- aligned allocation -------------------------------------------------------------- */

static AX_NOINLINE AX_API void *checked_aligned(size_t align, size_t n) {
  ax_heap_t *heap = axi_heap_get();
  return heap ? axi_check_malloc(heap, n, align, false) : NULL;
}

/* Blocks of a class are aligned to `align` when the class size is a multiple of it and
 * every page of the class starts at such a multiple (page 0 starts after the header);
 * larger alignments get a huge block of their own (huge.c places it).
 * pre: align is a power of two > 16. */
static AX_API void *aligned_malloc(size_t align, size_t n) {
  if (n > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  if (ax_unlikely(axi_checked))
    return checked_aligned(align, n);
  size_t want = n < align ? align : (n + align - 1) & ~(align - 1);
  for (unsigned c = axi_class_of(want); want <= AX_LARGE_MAX && c < AX_CLASSES; c++) {
    size_t sz = axi_class_size(c), page_align = sz <= AX_SMALL_MAX ? AX_SMALL_META : AX_OTHER_META;
    if (align > page_align || sz >= 2 * want)
      break;
    if (sz % align == 0)
      return ax_malloc(sz);
  }
  ax_heap_t *heap = axi_heap_get();
  void *p = heap ? axi_heap_huge_alloc(heap, n, align, false) : NULL;
  if (p && ax_unlikely(axi_prof_on))
    axi_prof_huge(p, n);
  if (p && ax_unlikely(axi_leaks))
    axi_leak_new(p, n);
  return p;
}

static bool pow2(size_t a) { return a && !(a & (a - 1)); }

AX_API void *ax_aligned_alloc(size_t align, size_t n) {
  if (!pow2(align)) {
    errno = EINVAL;
    return NULL;
  }
  return align <= 16 ? ax_malloc(n) : aligned_malloc(align, n);
}

/* As glibc's: errno is ENOMEM after a failure for lack of memory (its tst-malloc-thread-fail
 * relies on it), untouched after EINVAL and after success. */
AX_API int ax_posix_memalign(void **out, size_t align, size_t n) {
  if (!pow2(align) || align % sizeof(void *) != 0)
    return EINVAL;
  int saved = errno;
  void *p = align <= 16 ? ax_malloc(n) : aligned_malloc(align, n);
  if (!p)
    return errno = ENOMEM;
  errno = saved;
  *out = p;
  return 0;
}

/* glibc's memalign rounds an alignment that is not a power of two up to one; above
 * SIZE_MAX / 2 + 1 there is none to round to (EINVAL, as glibc). */
AX_API void *ax_memalign(size_t align, size_t n) {
  if (align > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return NULL;
  }
  size_t a = 1;
  while (a < align)
    a <<= 1;
  return a <= 16 ? ax_malloc(n) : aligned_malloc(a, n);
}

/* operator new[] (new_delete.cc): checked mode remembers that delete[] must free the block. */
static AX_NOINLINE AX_API void *checked_new_array(size_t n) {
  ax_heap_t *heap = axi_heap_get();
  return heap ? axi_check_new_array(heap, n) : NULL;
}
void *axi_new_array(size_t n) {
  return ax_unlikely(axi_checked) ? checked_new_array(n) : ax_malloc(n);
}

/* ---- constructors run ---------------------------------------------------------------- */

/* Constructors run: the modes may walk stacks from now on (stacks/unwind.c). The options are
 * read first (a static program's first malloc may come later than this). */
__attribute__((constructor)) static void process_ready(void) {
  axi_heap_get();
  /* (they walk with the same unwinder; guarded sampling's is on by default) */
  if (axi_prof_on || axi_leaks || axi_check_stacks || axi_guard_rate())
    axi_stack_ready();
  axi_prof_ready();
  if (axi_leaks)
    axi_leak_ready();
  /* checked mode's stacks: the walk from a free (and a malloc) looked up once here, so that a
   * free inside libgcc's registry of unwind tables, which holds the lock a lookup takes, finds
   * its frames known (stacks/unwind.c, in_registry) */
  if (axi_check_stacks)
    ax_free(ax_malloc(16));
}

/* ---- the standard names ------------------------------------------------------------- */
/* Aliases, not wrappers: malloc *is* ax_malloc, with no extra call or jump. free and cfree
 * are in free.c, the rest of the family (valloc, mallinfo2, malloc_trim, ...) in override.c. */
const char axi_link_alloc_o; /* (linkage.h: every object refers to it) */

#define AX_ALIAS(target) __attribute__((alias(#target), visibility("default"), used))
void *malloc(size_t n) AX_ALIAS(ax_malloc);
void *calloc(size_t count, size_t size) AX_ALIAS(ax_calloc);
void *realloc(void *p, size_t n) AX_ALIAS(ax_realloc);
void *reallocarray(void *p, size_t count, size_t size) AX_ALIAS(ax_reallocarray);
void *aligned_alloc(size_t align, size_t n) AX_ALIAS(ax_aligned_alloc);
int posix_memalign(void **out, size_t align, size_t n) AX_ALIAS(ax_posix_memalign);
void *memalign(size_t align, size_t n) AX_ALIAS(ax_memalign);
size_t malloc_usable_size(void *p) AX_ALIAS(ax_usable_size);
