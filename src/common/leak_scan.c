/* SPDX-License-Identifier: MIT */
/* The leak checker's scan at exit: which live blocks the program can still reach.
 *
 * As LeakSanitizer does: the roots are the writable segments of every loaded file (its data,
 * bss, GOT) but the allocator's own, the exiting thread's stack from its stack pointer up (its
 * registers spilled there first) and its static TLS; every aligned word in them that points
 * into a live block (its start or inside it) marks the block, and each block marked is scanned
 * in turn (a worklist, not recursion). The live blocks are the non-zero side words (leak.h);
 * a word is tested in two loads of the page map and a division, huge blocks by a binary search
 * of their few starts. What is not marked is lost. Other threads keep running and their stacks
 * are not roots (a block only another thread's stack holds is reported): the check runs when
 * the process exits, where LeakSanitizer would stop them.
 *
 * No allocation: the worklist and the huge blocks' list are mapped here, sized by a first
 * count of the live blocks.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>

#include "leak.h"

/* ---- the live blocks ------------------------------------------------------------------------- */

typedef void (*visit_fn)(uintptr_t b, ax_atomic_word *w, size_t extent);

/* The size of the huge block at b whose side word is v. */
static size_t huge_size(uintptr_t b, uint64_t v) {
  size_t size = (size_t)(v >> 32);
  if (size != AX_LEAK_BIG)
    return size;
  ax_segment_t *seg = axi_huge_segment_of((void *)b);
  return seg->map_size - (b - (uintptr_t)seg);
}

/* Every live block of the region at r: the carved blocks of a segment's pages in use, or a huge
 * block at index 0 or 16 (leak.h). */
static void visit_region(uintptr_t r, ax_atomic_word *side, visit_fn fn) {
  ax_segment_t *seg = (ax_segment_t *)r;
  if (axi_segmap_has(r) && seg->kind != AX_KIND_HUGE) {
    for (unsigned i = 0; i < seg->npages; i++) {
      ax_page_t *page = &seg->pages[i];
      if (!page->in_use || !page->block_size)
        continue;
      for (uint32_t k = 0; k < page->capacity; k++) {
        uintptr_t b = page->area + (uintptr_t)k * page->block_size;
        ax_atomic_word *w = side + ((b - r) >> 4);
        if (ax_atomic_load_relaxed(w))
          fn(b, w, page->block_size);
      }
    }
    return;
  }
  for (unsigned i = 0; i <= 16; i += 16) {
    uint64_t v = ax_atomic_load_relaxed(&side[i]);
    if (v)
      fn(r + i * 16, &side[i], huge_size(r + i * 16, v));
  }
}

/* fn on every live block, in address order. */
static void walk_live(visit_fn fn) {
  for (size_t i = 0; i < AX_LEAK_L1; i++) {
    ax_atomic_word *l2 = (ax_atomic_word *)ax_atomic_load_acquire(&axi_leak_dir[i]);
    for (size_t j = 0; l2 && j < AX_LEAK_L2; j++) {
      ax_atomic_word *side = (ax_atomic_word *)ax_atomic_load_acquire(&l2[j]);
      if (side)
        visit_region((uintptr_t)i << 36 | (uintptr_t)j << AX_SEGMENT_SHIFT, side, fn);
    }
  }
}

/* ---- marking ------------------------------------------------------------------------------ */

typedef struct work {
  uintptr_t b, len; /* a marked block, and the bytes of it to scan */
} work_t;

/* In memory of its own, not in our data: a static program's data is a root, and lo is the
 * lowest live block's address. */
static struct scan {
  uintptr_t lo, hi; /* the live blocks' span: a cheap first test */
  size_t live, huge_live;
  work_t *work;
  size_t nwork;
  work_t *huge; /* the huge blocks, start and size, in address order */
  size_t nhuge;
} * S;

static void count(uintptr_t b, ax_atomic_word *w, size_t extent) {
  S->live++;
  S->lo = S->lo && S->lo < b ? S->lo : b;
  S->hi = S->hi > b + extent ? S->hi : b + extent;
  if (!axi_segmap_has(b & ~AX_SEGMENT_MASK) || axi_segment_of((void *)b)->kind == AX_KIND_HUGE)
    S->huge_live++;
}

static void list_huge(uintptr_t b, ax_atomic_word *w, size_t extent) {
  if ((!axi_segmap_has(b & ~AX_SEGMENT_MASK) || axi_segment_of((void *)b)->kind == AX_KIND_HUGE) &&
      S->nhuge < S->huge_live)
    S->huge[S->nhuge++] = (work_t){b, extent};
}

/* The live block at b (side word w) is reached: marked, once, and queued to be scanned. */
static void reach(uintptr_t b, ax_atomic_word *w, uintptr_t len) {
  uintptr_t v = ax_atomic_load_relaxed(w);
  if (!v || (v & AX_LEAK_REACHED) || S->nwork == S->live)
    return;
  if (!ax_atomic_cas_acq_rel(w, &v, v | AX_LEAK_REACHED)) /* (freed meanwhile) */
    return;
  uintptr_t size = v >> 32;
  S->work[S->nwork++] = (work_t){b, size < len ? size : len};
}

/* The huge block v points into, if any (binary search). */
static void reach_huge(uintptr_t v) {
  size_t lo = 0, hi = S->nhuge;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (S->huge[mid].b <= v)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return;
  work_t *h = &S->huge[lo - 1];
  if (v < h->b + (h->len ? h->len : 1))
    reach(h->b, axi_leak_word(h->b), h->len);
}

/* A word of a root or of a reached block: does it point into a live block? */
static inline void consider(uintptr_t v) {
  if (v < S->lo || v >= S->hi)
    return;
  ax_page_t *page = axi_pagemap_get((void *)v);
  if (!page || axi_segment_of(page)->kind == AX_KIND_HUGE)
    return reach_huge(v);
  uint32_t bs = page->block_size;
  if (!page->in_use || !bs || v < page->area)
    return;
  uintptr_t k = (v - page->area) / bs;
  if (k >= page->capacity)
    return;
  uintptr_t b = page->area + k * bs;
  ax_atomic_word *w = axi_leak_word(b);
  if (w)
    reach(b, w, bs);
}

static void scan_range(uintptr_t lo, uintptr_t hi) {
  for (uintptr_t p = (lo + 7) & ~(uintptr_t)7; p + 8 <= hi; p += 8) {
    consider(*(const uintptr_t *)p);
  }
}

static void drain(void) {
  while (S->nwork) {
    work_t w = S->work[--S->nwork];
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

/* ---- the tally ---------------------------------------------------------------------------- */

static ax_leak_tally_t *tally_sum;

static void tally(uintptr_t b, ax_atomic_word *w, size_t extent) {
  uintptr_t v = ax_atomic_load_relaxed(w);
  if (!v)
    return;
  unsigned k = (v & AX_LEAK_REACHED) != 0;
  uint64_t size = v >> 32;
  if (size == AX_LEAK_BIG)
    size = extent;
  ax_leak_stack_t *s = axi_leak_stack((uint32_t)(v & AX_LEAK_ID));
  s->n[k]++;
  s->bytes[k] += size;
  tally_sum->n[k]++;
  tally_sum->bytes[k] += size;
}

bool axi_leak_scan(ax_leak_tally_t *sum) {
  if (!(S = axi_os_map(sizeof *S)))
    return false;
  walk_live(count);
  if (!S->live)
    return true;
  S->work = axi_os_map(S->live * sizeof *S->work);
  S->huge = S->huge_live ? axi_os_map(S->huge_live * sizeof *S->huge) : NULL;
  if (!S->work || (S->huge_live && !S->huge))
    return false;
  walk_live(list_huge);
  dl_iterate_phdr(scan_object, NULL);
  drain();
  scan_stack();
  drain();
  tally_sum = sum;
  walk_live(tally);
  return true;
}
