/* SPDX-License-Identifier: MIT */
/* The stack depot: every stack recorded is kept once, append-only, and named by its offset (an
 * id of 32 bits, which fits in half a block's side word). The leak checker records each live
 * block's allocating stack (leak.c), checked mode with AXMALLOC_PROF=1 each block's allocating
 * and freeing stacks (check.c); both walk them here (axi_stack_here: the unwinder's capture,
 * unwind.h) and print them by name (symbolize.c). Nothing here runs unless one of them is on.
 */
#include <string.h>

#include "modes/stacks/depot.h"

#include "modes/stacks/symbolize.h"
#include "modes/stacks/unwind.h"
#include "os.h"
#include "print.h"
#include "state.h"

char *axi_stack_depot;
ax_atomic_word axi_stack_depot_top;

#define DEPOT_SLOTS ((size_t)1 << 20) /* stack ids by hash: open addressing */
static ax_atomic_word *depot_slot;

static bool same_stack(const ax_depot_stack_t *s, uint64_t h, const uintptr_t *pc, unsigned depth) {
  if (s->hash != h || s->depth != depth)
    return false;
  for (unsigned i = 0; i < depth; i++)
    if (s->pc[i] != pc[i])
      return false;
  return true;
}

/* A new stack at the depot's end; 0 when it is full. */
static uint32_t depot_add(uint64_t h, const uintptr_t *pc, unsigned depth) {
  size_t need = sizeof(ax_depot_stack_t) + depth * sizeof *pc;
  size_t at = ax_atomic_fetch_add_relaxed(&axi_stack_depot_top, need);
  if (at + need > AX_STACK_DEPOT_BYTES)
    return 0;
  ax_depot_stack_t *s = (ax_depot_stack_t *)(axi_stack_depot + at);
  s->hash = h;
  s->depth = depth;
  memcpy(s->pc, pc, depth * sizeof *pc);
  return axi_stack_id_at(at);
}

/* The id of the stack pc[0..depth) with hash h, added if need be. Lock-free: a slot goes from
 * 0 to (the hash's top half, the id) once (CAS), the stack written before it is published;
 * the top half tells most other stacks' slots apart without reading their stacks (a probe
 * that read each stack cost a cache miss a probe: wl_binarytrees, whose recursion makes a
 * stack of every path into its trees, ran 29 times as long). Two threads adding the same
 * stack at once both write it, one wins the slot, the loser's copy stays unused. Once the
 * depot is full, a new stack is the unknown one. */
static bool depot_full;
static uint32_t depot_id(uint64_t h, const uintptr_t *pc, unsigned depth) {
  uintptr_t tag = (uintptr_t)(h >> 32) << 32;
  for (size_t i = h, probes = 0; probes < 16; i++, probes++) {
    ax_atomic_word *slot = &depot_slot[i & (DEPOT_SLOTS - 1)];
    uintptr_t v = ax_atomic_load_acquire(slot);
    if (!v) {
      uint32_t mine = depot_full ? 0 : depot_add(h, pc, depth);
      if (!mine) {
        depot_full = true;
        return AX_STACK_UNKNOWN;
      }
      if (ax_atomic_cas_acq_rel(slot, &v, tag | mine))
        return mine;
    }
    if ((v & ~(uintptr_t)0xffffffffu) == tag && same_stack(axi_stack_of((uint32_t)v), h, pc, depth))
      return (uint32_t)v;
  }
  return AX_STACK_UNKNOWN;
}

static uint64_t frames_hash(const uintptr_t *pc, unsigned depth) {
  uint64_t h = 0x84222325cbf29ce4ull;
  for (unsigned i = 0; i < depth; i++)
    h = (h ^ pc[i]) * 0x100000001b3ull;
  return h ^ h >> 31;
}

/* The depot id of the stack the capture took: the program's frames, the first
 * AX_STACK_KEEP of them (the walk hashed them already when there are no more). */
static uint32_t stack_id(const ax_stack_t *st) {
  if (st->n == 0)
    return AX_STACK_UNKNOWN;
  const uintptr_t *pc = st->pc + st->first;
  unsigned depth = st->depth < AX_STACK_KEEP ? st->depth : AX_STACK_KEEP;
  uint64_t h = st->depth <= AX_STACK_KEEP ? st->hash : frames_hash(pc, depth);
  return depot_id(h, pc, depth);
}

/* The depot id of the caller's stack (the allocator's frames dropped: AX_API): the unknown
 * stack before constructors ran (axi_stack_walkable), on a thread without a heap, or from
 * inside a walk. pre: the depot is mapped (axi_leaks or axi_check_stacks). */
AX_NOINLINE AX_API uint32_t axi_stack_here(void) {
  ax_heap_t *heap = axi_tls_heap;
  if (!axi_stack_walkable || heap == &axi_heap_empty || heap->prof.busy)
    return AX_STACK_UNKNOWN;
  ax_stack_t st;
  axi_stack_capture(heap, &st);
  return stack_id(&st);
}

/* pre: process init, after checked mode and tagging are decided, before the profiler's. */
bool axi_stack_depot_map(void) {
  depot_slot = axi_os_map(DEPOT_SLOTS * sizeof *depot_slot);
  axi_stack_depot = axi_os_map(AX_STACK_DEPOT_BYTES);
  axi_stack_depot_top = sizeof(ax_depot_stack_t); /* id 1: the stack not known, no frames */
  return depot_slot && axi_stack_depot;
}

/* ---- printing ------------------------------------------------------------------------------ */

/* One line a frame: "#n <pc> <function>+<off> (<file>+<off>)", and the source line where
 * it is known (axi_symbolize_external); the calls inlined at the frame first, each a line of
 * its own with the same pc, innermost first, as LeakSanitizer prints them. */
void axi_stack_print_frames(const ax_depot_stack_t *s) {
  int n = 0;
  for (unsigned f = 0; f < s->depth; f++) {
    ax_sym_t sym;
    const ax_sym_line_t *ln;
    axi_symbolize(s->pc[f], &sym);
    unsigned nl = axi_symbolize_lines(s->pc[f], &ln);
    for (unsigned i = 0; i + 1 < nl; i++)
      axi_write("    #%d %p %s (%s+0x%llx) %s\n", n++, (void *)s->pc[f],
                ln[i].func ? ln[i].func : "??", sym.module, (unsigned long long)sym.module_off,
                ln[i].file ? ln[i].file : "");
    const char *where = nl && ln[nl - 1].file ? ln[nl - 1].file : "";
    const char *sep = *where ? " " : "";
    if (sym.name)
      axi_write("    #%d %p %s+0x%llx (%s+0x%llx)%s%s\n", n++, (void *)s->pc[f], sym.name,
                (unsigned long long)sym.off, sym.module, (unsigned long long)sym.module_off, sep,
                where);
    else if (nl && ln[nl - 1].func)
      axi_write("    #%d %p %s (%s+0x%llx)%s%s\n", n++, (void *)s->pc[f], ln[nl - 1].func,
                sym.module, (unsigned long long)sym.module_off, sep, where);
    else
      axi_write("    #%d %p (%s+0x%llx)%s%s\n", n++, (void *)s->pc[f], sym.module,
                (unsigned long long)sym.module_off, sep, where);
  }
}

void axi_stack_print(const char *title, uint32_t id) {
  const ax_depot_stack_t *s = axi_stack_of(id);
  axi_write("  %s:\n", title);
  if (s->depth == 0)
    axi_write("    (not known: before constructors ran, or inside the unwinder)\n");
  axi_stack_print_frames(s);
}
