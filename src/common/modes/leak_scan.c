/* SPDX-License-Identifier: MIT */
/* The leak checker's scan at exit: which live blocks the program can still reach.
 *
 * As LeakSanitizer does: the roots are the writable segments of every loaded file (its data,
 * bss, GOT) but the allocator's own, the exiting thread's stack from its stack pointer up (its
 * registers spilled there first) and its static TLS; every aligned word in them that points
 * into a live block (its start or inside it) marks the block, and each block marked is scanned
 * in turn (a worklist, not recursion). The live blocks are the non-zero side words
 * (stacks/side.h); a word is tested in two loads of the page map and a division, a huge block
 * by its header, the first segment at or before the word's (the segment map). What is not
 * marked is lost. Then, as LeakSanitizer does, each lost block is read in turn for pointers to
 * other lost blocks, which are marked indirect (and read too): a direct leak is one nothing
 * points at, not even another lost block (a leaked std::string object), an indirect leak one
 * only lost blocks point at (its characters' buffer). A block's pointers to itself do not
 * count, so a lost block pointing at itself stays direct; a cycle that nothing else points
 * at is indirect throughout (LSan's too).
 *
 * Other threads may still run. The heap holds still for the scan all the same (leak_gate.c):
 * it closes the gate first, so that no free, huge realloc or unmap is under way or starts
 * before it opens it again. Every block live then keeps its memory and its word; a block
 * freed meanwhile is gone (followed, not counted), one made meanwhile new (followed, not
 * counted). A page or segment set up meanwhile may be half written as it is read: it holds no
 * block that counts, and every address taken from it is checked against its region before a
 * word is read there. A thread waiting at the gate is stopped: its stack is a root (a realloc
 * waiting in its free holds the new block in a register); of a thread that runs, only its last
 * blocks made before the gate closed are (leak_gate.c's ring): a block only its stack holds
 * otherwise is reported. The roots are read again before the count: what another thread
 * stored there meanwhile is found. dl_iterate_phdr's lock is held from before the gate closes
 * until it opens (a thread waiting at the gate cannot be holding it).
 *
 * No allocation: the worklist is mapped here, and grows by mapping.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>

#include "modes/leak_scan.h"

#include "hooks.h"
#include "huge.h"
#include "modes/guard_report.h"
#include "modes/leak_gate.h"
#include "modes/stacks/stacks.h"
#include "os.h"
#include "pagemap.h"
#include "segment.h"

/* ---- the live blocks ------------------------------------------------------------------------- */

typedef void (*visit_fn)(uintptr_t b, ax_atomic_word *w);

/* The bytes of the live block at b, side word v, the scan reads: what was asked for, or all of
 * its mapping for a huge block too big for the word (its header is mapped while it lives). */
static uintptr_t block_len(uintptr_t b, uintptr_t v) {
  uintptr_t size = v >> 32;
  if (size != AX_LEAK_BIG)
    return size;
  ax_segment_t *seg = axi_huge_segment_of((void *)b);
  return seg->map_size - (b - (uintptr_t)seg);
}

/* The carved blocks of a small, medium or large segment's pages in use. Each page's blocks
 * are taken within the page (a page being set up for another class may be half written). */
static void visit_pages(ax_segment_t *seg, ax_atomic_word *side, visit_fn fn) {
  uintptr_t r = (uintptr_t)seg;
  unsigned shift = seg->page_shift, n = seg->npages;
  if (shift < AX_SMALL_PAGE_SHIFT || shift > AX_SEGMENT_SHIFT)
    return;
  n = n < (1u << (AX_SEGMENT_SHIFT - shift)) ? n : 1u << (AX_SEGMENT_SHIFT - shift);
  for (unsigned i = 0; i < n; i++) {
    ax_page_t *page = &seg->pages[i];
    uintptr_t bs = page->block_size, b = page->area, lo = r + ((uintptr_t)i << shift);
    uintptr_t hi = lo + ((uintptr_t)1 << shift);
    if (!page->in_use || !bs || b < lo)
      continue;
    for (uint32_t k = 0, cap = page->capacity; k < cap && b + bs <= hi; k++, b += bs) {
      ax_atomic_word *w = side + ((b - r) >> 4);
      if (ax_atomic_load_relaxed(w))
        fn(b, w);
    }
  }
}

/* The heap profiler's sampled blocks (with AXMALLOC_PROF too): a slot segment is of the huge
 * kind, and each of its slots but the first (the slot table) may hold one block, at its start
 * (prof.c). */
#define SLOT_SHIFT 16 /* prof.c's AX_SLOT_SHIFT */
static void visit_slots(ax_segment_t *seg, ax_atomic_word *side, visit_fn fn) {
  for (uintptr_t b = (uintptr_t)seg + ((uintptr_t)1 << SLOT_SHIFT);
       b < (uintptr_t)seg + AX_SEGMENT_SIZE; b += (uintptr_t)1 << SLOT_SHIFT) {
    ax_atomic_word *w = side + ((b - (uintptr_t)seg) >> 4);
    if (ax_atomic_load_relaxed(w))
      fn(b, w);
  }
}

/* Every live block whose word is in the side array of the region at r: the carved blocks of
 * its segment, or the huge block starting in it (its header there, or the segment before for
 * one aligned to a segment). */
static void visit_region(uintptr_t r, ax_atomic_word *side, visit_fn fn) {
  ax_segment_t *seg = NULL;
  if (axi_segmap_has(r))
    seg = (ax_segment_t *)r;
  else if (r >= AX_SEGMENT_SIZE && axi_segmap_has(r - AX_SEGMENT_SIZE))
    seg = (ax_segment_t *)(r - AX_SEGMENT_SIZE);
  if (!seg)
    return;
  if (seg->kind != AX_KIND_HUGE || seg->prof_slots) {
    if ((uintptr_t)seg == r)
      (seg->prof_slots ? visit_slots : visit_pages)(seg, side, fn);
    return;
  }
  uintptr_t b = seg->pages[0].area;
  if (b >= r && b < r + AX_SEGMENT_SIZE && ax_atomic_load_relaxed(&side[(b - r) >> 4]))
    fn(b, &side[(b - r) >> 4]);
}

/* Guarded sampling's live blocks (guard.c): one in a slot page of its pool, outside the
 * segment map (with the leak checker on, malloc records them as any: alloc.c). */
static void visit_guarded(visit_fn fn) {
  if (!ax_peek(&axi_guard_pool.base))
    return;
  for (uint32_t i = 0; i < axi_guard_pool.slots; i++) {
    const ax_guard_slot_t *s = &axi_guard_pool.slot[i];
    ax_atomic_word *w =
        ax_atomic_load_acquire(&s->state) == AX_GUARD_LIVE ? axi_side_word(s->block) : NULL;
    if (w && ax_atomic_load_relaxed(w))
      fn(s->block, w);
  }
}

/* fn on every live block, in address order (guarded ones last). */
static void walk_live(visit_fn fn) {
  for (size_t i = 0; i < AX_SIDE_L1; i++) {
    ax_atomic_word *l2 = (ax_atomic_word *)ax_atomic_load_acquire(&axi_side_dir[i]);
    for (size_t j = 0; l2 && j < AX_SIDE_L2; j++) {
      ax_atomic_word *side = (ax_atomic_word *)ax_atomic_load_acquire(&l2[j]);
      if (side)
        visit_region((uintptr_t)i << 36 | (uintptr_t)j << AX_SEGMENT_SHIFT, side, fn);
    }
  }
  visit_guarded(fn);
}

/* ---- marking ------------------------------------------------------------------------------ */

typedef struct work {
  uintptr_t b, len; /* a marked block, and the bytes of it to scan */
} work_t;

/* In memory of its own, not in our data: a static program's data is a root. */
static struct scan {
  uintptr_t lo, hi; /* every recorded block's span (stacks/side.h): a cheap first test */
  uintptr_t back;   /* how many segments before a word a huge block's header may be */
  work_t *work;
  size_t nwork, cap;
  size_t old, new;      /* blocks reached, live when the gate closed and made since */
  bool short_of_memory; /* a block was marked and could not be queued */
  bool lost;            /* marking the lost blocks that lost blocks reach (AX_LEAK_INDIRECT) */
  uintptr_t self;       /* the block being read (lost: its pointers to itself do not count) */
} * S;

/* The recorded blocks' span and the largest, as they are now: new blocks may widen them. */
static void bounds(void) {
  S->lo = ~ax_atomic_load_relaxed(&axi_side_lo);
  S->hi = ~ax_atomic_load_relaxed(&axi_side_hi);
  S->back = (ax_atomic_load_relaxed(&axi_side_max) >> AX_SEGMENT_SHIFT) + 2;
}

static void push(uintptr_t b, uintptr_t len) {
  if (S->nwork == S->cap) {
    size_t cap = S->cap ? 2 * S->cap : 4096;
    work_t *w = axi_os_map(cap * sizeof *w);
    if (!w) {
      S->short_of_memory = true;
      return;
    }
    if (S->work) {
      __builtin_memcpy(w, S->work, S->nwork * sizeof *w);
      axi_os_unmap(S->work, S->cap * sizeof *w); /* (the gate lets its own thread pass) */
    }
    S->work = w;
    S->cap = cap;
  }
  S->work[S->nwork++] = (work_t){b, len};
}

/* New blocks followed past the old ones reached: threads that link new blocks faster than the
 * scan reads them cannot keep it going (the old blocks are as many as when the gate closed). */
#define NEW_SLACK 4096

/* The live block at b (side word w) is reached: marked, once, and queued to be scanned. A gone
 * block too, and a new one: what it points at is reached through it (a copy published before
 * its original is freed). */
static void reach(uintptr_t b, ax_atomic_word *w) {
  uintptr_t v = ax_atomic_load_relaxed(w);
  if (S->lost) {
    /* (new and gone blocks are not counted, and lead to nothing counted; a CAS: a thread
     * that frees a block at the closed gate marks it gone) */
    uintptr_t skip = AX_LEAK_REACHED | AX_LEAK_INDIRECT | AX_LEAK_NEW | AX_LEAK_GONE;
    while (b != S->self && v && !(v & skip))
      if (ax_atomic_cas_acq_rel(w, &v, v | AX_LEAK_INDIRECT)) {
        push(b, block_len(b, v));
        return;
      }
    return;
  }
  while (v && !(v & AX_LEAK_REACHED)) {
    bool fresh = (v & AX_LEAK_NEW) != 0;
    if (fresh && S->new > S->old + NEW_SLACK)
      return;
    if (ax_atomic_cas_acq_rel(w, &v, v | AX_LEAK_REACHED)) {
      *(fresh ? &S->new : &S->old) += 1;
      push(b, block_len(b, v));
      return;
    }
  }
}

/* The huge block v points into, if any: its header is the first segment at or before v's in
 * the segment map, no further back than the largest block recorded reaches. */
static void reach_huge(uintptr_t v) {
  uintptr_t r = v & ~AX_SEGMENT_MASK;
  for (uintptr_t n = 0; !axi_segmap_has(r); n++, r -= AX_SEGMENT_SIZE)
    if (n == S->back || r < AX_SEGMENT_SIZE)
      return;
  ax_segment_t *seg = (ax_segment_t *)r;
  uintptr_t b = seg->pages[0].area;
  if (seg->kind == AX_KIND_HUGE && seg->prof_slots && v - r < AX_SEGMENT_SIZE)
    b = v & ~(((uintptr_t)1 << SLOT_SHIFT) - 1); /* (a sampled block: its slot's start) */
  if (seg->kind != AX_KIND_HUGE || b < r || b > r + AX_SEGMENT_SIZE || v < b)
    return;
  ax_atomic_word *w = axi_side_word(b);
  uintptr_t word = w ? ax_atomic_load_relaxed(w) : 0;
  if (word && v - b < (block_len(b, word) ? block_len(b, word) : 1))
    reach(b, w);
}

/* v points into guarded sampling's pool: the live block of its slot page, if v is inside it
 * (the scan reads no more of it than was asked for: the guard page follows). */
static void reach_guarded(uintptr_t v) {
  uintptr_t k = axi_guard_page_index(v);
  if (!(k & 1))
    return;
  const ax_guard_slot_t *s = &axi_guard_pool.slot[(k - 1) / 2];
  if (ax_atomic_load_acquire(&s->state) != AX_GUARD_LIVE || v - s->block >= (s->size ? s->size : 1))
    return;
  ax_atomic_word *w = axi_side_word(s->block);
  if (w)
    reach(s->block, w);
}

/* A word of a root or of a reached block: does it point into a live block? */
static inline void consider(uintptr_t v) {
  if (v < S->lo || v >= S->hi)
    return;
  if (axi_guard_has((void *)v))
    return reach_guarded(v);
  ax_page_t *page = axi_pagemap_get((void *)v);
  if (!page || axi_segment_of(page)->kind == AX_KIND_HUGE)
    return reach_huge(v);
  uintptr_t bs = page->block_size, area = page->area;
  if (!page->in_use || !bs || v < area)
    return;
  uintptr_t k = (v - area) / bs;
  if (k >= page->capacity)
    return;
  ax_atomic_word *w = axi_side_word(area + k * bs);
  if (w)
    reach(area + k * bs, w);
}

static void scan_range(uintptr_t lo, uintptr_t hi) {
  for (uintptr_t p = (lo + 7) & ~(uintptr_t)7; p + 8 <= hi; p += 8) {
    consider(*(const uintptr_t *)p);
  }
}

static void drain(void) {
  while (S->nwork) {
    work_t w = S->work[--S->nwork];
    S->self = w.b;
    bounds();
    scan_range(w.b, w.b + w.len);
  }
}

/* ---- roots ------------------------------------------------------------------------------- */

/* A writable segment of every loaded file, and its static TLS block of this thread; not the
 * allocator's own data (a preloaded libaxmalloc.so: its tables name no block, and must never
 * hide one). In a static program the allocator is part of the program's file, which is
 * scanned: nothing of ours there points at a block (the side words hold sizes and stack ids). */
static int scan_object(struct dl_phdr_info *info, size_t size, void *arg) {
  uintptr_t self = (uintptr_t)&S;
  bool ours = false;
  for (unsigned i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && self >= start && self < start + ph->p_memsz)
      ours = info->dlpi_name && info->dlpi_name[0];
  }
  for (unsigned i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && !ours)
      scan_range(start, start + ph->p_memsz);
    if (ph->p_type == PT_TLS && info->dlpi_tls_data)
      scan_range((uintptr_t)info->dlpi_tls_data, (uintptr_t)info->dlpi_tls_data + ph->p_memsz);
  }
  return 0;
}

static uintptr_t hex(const char **s) {
  uintptr_t v = 0;
  for (;; (*s)++) {
    char c = **s;
    unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                                        : 16;
    if (d == 16)
      return v;
    v = v * 16 + d;
  }
}

/* The end of the mapping that holds sp (/proc/self/maps, read with the system calls alone);
 * 0 when not found. */
static char maps_buf[8192];
static uintptr_t stack_end(uintptr_t sp) {
  int fd = axi_os_open("/proc/self/maps", O_RDONLY, 0);
  if (fd < 0)
    return 0;
  size_t have = 0;
  uintptr_t end = 0;
  for (long r; !end && (r = axi_os_read(fd, maps_buf + have, sizeof maps_buf - 1 - have)) > 0;) {
    have += (size_t)r;
    maps_buf[have] = 0;
    char *line = maps_buf, *nl;
    while (!end && (nl = __builtin_strchr(line, '\n'))) {
      const char *s = line;
      uintptr_t lo = hex(&s);
      s++;
      uintptr_t hi = hex(&s);
      if (sp >= lo && sp < hi)
        end = hi;
      line = nl + 1;
    }
    have -= (size_t)(line - maps_buf);
    __builtin_memmove(maps_buf, line, have);
  }
  axi_os_close(fd);
  return end;
}

static void consider_held(uintptr_t p) { consider(p); }

/* The stacks of the threads waiting at the gate. */
static void scan_parked(void) {
  for (ax_leak_parked_t *t = (ax_leak_parked_t *)ax_atomic_load_acquire(&axi_leak_parked); t;
       t = t->next) {
    uintptr_t end = stack_end(t->sp);
    if (end)
      scan_range(t->sp, end);
  }
}

extern void *__libc_stack_end; /* (glibc's: the main thread's stack, at its start) */

/* From this frame up: the callee-saved registers are on the stack below the caller's frames
 * (scan_stack spilled them), so this frame's address is below them all. */
static AX_NOINLINE void scan_stack_from_here(void) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
  uintptr_t end = stack_end(sp);
  if (!end && sp < (uintptr_t)__libc_stack_end)
    end = (uintptr_t)__libc_stack_end + 4096;
  if (end)
    scan_range(sp, end);
}

static AX_NOINLINE void scan_stack(void) {
  __builtin_unwind_init(); /* every callee-saved register to this frame */
  scan_stack_from_here();
  __asm__ volatile("" ::: "memory"); /* (not a tail call: this frame stays) */
}

/* ---- direct and indirect --------------------------------------------------------------------- */

/* A lost block (live when the gate closed, not reached) not yet marked indirect: what it
 * points at, and what that points at, is lost indirectly. A block marked indirect was read
 * when it was marked. (New and gone blocks are never counted: not read here.) */
static void read_lost(uintptr_t b, ax_atomic_word *w) {
  uintptr_t v = ax_atomic_load_relaxed(w);
  if (!v || (v & (AX_LEAK_NEW | AX_LEAK_GONE | AX_LEAK_REACHED | AX_LEAK_INDIRECT)))
    return;
  push(b, block_len(b, v));
  drain();
}

/* ---- the tally ---------------------------------------------------------------------------- */

static ax_leak_tally_t *tally_sum;

/* A block live when the scan began (neither new nor gone) counts in its stack. */
static void tally(uintptr_t b, ax_atomic_word *w) {
  uintptr_t v = ax_atomic_load_relaxed(w);
  if (!v || (v & (AX_LEAK_NEW | AX_LEAK_GONE)))
    return;
  unsigned k = (v & AX_LEAK_REACHED) ? 1 : (v & AX_LEAK_INDIRECT) ? 2 : 0;
  uint64_t size = block_len(b, v);
  ax_depot_stack_t *s = axi_stack_of((uint32_t)(v & AX_LEAK_ID));
  s->n[k]++;
  s->bytes[k] += size;
  tally_sum->n[k]++;
  tally_sum->bytes[k] += size;
}

/* The scan, the gate closed: the roots, this stack, then the roots again (what other threads
 * stored there meanwhile), the stacks of the threads waiting at the gate by then and the last
 * blocks the others made; then the lost blocks, for the ones they point at. */
static const char *scan_closed(ax_leak_tally_t *sum) {
  if (!axi_leak_gate_close())
    return "other threads did not leave the allocator";
  bounds();
  dl_iterate_phdr(scan_object, NULL); /* (nested in scan_locked's: the lock is recursive) */
  drain();
  scan_stack();
  drain();
  AX_HOOK(AX_HOOK_LEAK_SCAN, NULL);
  bounds();
  dl_iterate_phdr(scan_object, NULL);
  scan_parked();
  axi_leak_held(consider_held);
  drain();
  S->lost = true;
  if (!S->short_of_memory)
    walk_live(read_lost);
  if (!S->short_of_memory) {
    tally_sum = sum;
    walk_live(tally);
  }
  axi_leak_gate_open();
  return S->short_of_memory ? "no memory to scan with" : NULL;
}

struct run {
  ax_leak_tally_t *sum;
  const char *why;
};

/* Called for the first loaded object: the whole scan, under dl_iterate_phdr's lock. */
static int scan_locked(struct dl_phdr_info *info, size_t size, void *arg) {
  struct run *run = arg;
  run->why = scan_closed(run->sum);
  return 1;
}

/* (signals blocked: the gate lets this thread pass, so a handler that frees would change the
 * heap under the scan) */
const char *axi_leak_scan(ax_leak_tally_t *sum) {
  if (!(S = axi_os_map(sizeof *S)))
    return "no memory to scan with";
  struct run run = {sum, "no loaded object"};
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  dl_iterate_phdr(scan_locked, &run);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return run.why;
}
