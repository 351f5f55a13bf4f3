/* SPDX-License-Identifier: MIT */
/* The stack walk: libgcc's unwind tables, read once per return address. The heap profiler's
 * samples, the leak checker's blocks and checked mode's blocks all take their stacks here
 * (axi_stack_capture, unwind.h).
 *
 * libgcc's _Unwind_Backtrace finds each frame's FDE and runs its CIE's and FDE's call-frame
 * programs again for every frame of every walk: about 1,500 instructions a frame. Yet what a
 * walk needs of a frame depends only on its return address: where the CFA is (the stack
 * pointer or the frame pointer, plus an offset), where the return address and the caller's
 * frame pointer were saved (offsets from the CFA). So the first walk through an address runs
 * its programs here, as libgcc would, and keeps that rule in a table; later walks look it up
 * (a few dozen instructions a frame).
 *
 * What a rule cannot say (a CFA or register given by an expression or held in another
 * register, a signal frame, return-address signing) is kept as "slow": a stack through it is
 * walked by libgcc, whole. An address without an FDE ends the walk, as in libgcc (a static
 * program's _start: crt1.o's table is not registered), unless it is a signal's return. So the
 * two walks give the same frames; AXMALLOC_PROF_UNWIND=check takes every stack both ways and
 * aborts, naming both, where they differ (t_prof), and AXMALLOC_PROF_UNWIND=libgcc walks with
 * libgcc only.
 *
 * A code unloaded (dlclose) and another mapped at its address must not inherit its rules: an
 * entry keeps the 8 bytes of code before its return address (the call instruction), and is
 * used only while they are the same.
 *
 * A thread that samples again from where it sampled before does not walk at all: its heap
 * keeps its last walks with the words they read, and reads those again (the memo, below).
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "modes/stacks/unwind.h"

#include "os.h"
#include "print.h"

/* ---- the program's frames of a stack, and their hash ------------------------------------ */

/* The linker's bounds of the section AX_API puts the allocation entry points in. */
extern const char __start_axmalloc_api[] AXI_HIDDEN;
extern const char __stop_axmalloc_api[] AXI_HIDDEN;

bool axi_stack_in_api(uintptr_t ret) { /* a return address: one past its call */
  return ret > (uintptr_t)__start_axmalloc_api && ret <= (uintptr_t)__stop_axmalloc_api;
}

/* The program's part of a stack axi_stack_capture took: everything after the last return into
 * the allocator's entry points. post: its first frame's index; *depth frames. */
unsigned axi_stack_program_frames(const ax_stack_t *st, unsigned *depth) {
  unsigned first = 0;
  for (unsigned i = 0; i < st->n && i < AX_STACK_OURS; i++)
    if (axi_stack_in_api(st->pc[i]))
      first = i + 1;
  unsigned d = st->n - first;
  *depth = d < AX_STACK_DEPTH ? d : AX_STACK_DEPTH;
  return first;
}

/* The hash of a stack (axi_stack_key). */
static uint64_t stack_hash(const uintptr_t *pc, unsigned depth) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned i = 0; i < depth; i++) {
    h ^= pc[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

void axi_stack_key(ax_stack_t *st) {
  st->first = axi_stack_program_frames(st, &st->depth);
  st->hash = stack_hash(st->pc + st->first, st->depth);
}

/* libgcc's, exported (GCC_3.0) but in no installed header: the FDE that covers pc, and the
 * bases its pointers are relative to (func: the start of the function the FDE covers). */
struct dwarf_eh_bases {
  void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

/* libgcc's registry of unwind tables (unwind-dw2-fde.c, one object: its static helpers, 5 KiB
 * in GCC 12's libgcc_eh.a, search_object last of them, then __register_frame_info_bases ...
 * _Unwind_Find_FDE) mallocs and frees holding the lock _Unwind_Find_FDE takes: sorting a
 * table at its first lookup (init_object, in search_object), freeing it in
 * __deregister_frame_info_bases (a static program's exit, a JIT's deregistrations). A walk
 * from such a malloc or free (a sampled one; the leak checker's and checked mode's stacks:
 * every one) must not look a frame up there: it ends at the first return address into the
 * registry, taken as 4 KiB before the exported functions (the object's own helpers) to the end
 * of _Unwind_Find_FDE (its FDE's range: a static program's next function is libc's
 * __libc_start_call_main, 0x6b0 bytes after its start). The walk's own frames before it are
 * looked up already, by the thread's earlier mallocs and frees (a first free inside
 * __deregister_frame through a path no walk took still deadlocks). */
extern void __register_frame_info(const void *begin, void *ob);
extern void *__deregister_frame_info(const void *begin);
extern void __register_frame(void *begin);
extern void __deregister_frame(void *begin);
static uintptr_t registry_lo, registry_hi; /* [lo, hi): set once by axi_stack_ready */

static bool in_registry(uintptr_t ret) { /* (ret - 1: the call) */
  return ret > registry_lo && ret - registry_lo <= registry_hi - registry_lo;
}
bool axi_stack_in_registry(uintptr_t ret) { return in_registry(ret); }

/* ---- rules --------------------------------------------------------------------------------- */

enum {
  R_CFA_FP = 1,   /* CFA = the frame pointer + cfa_off (else the stack pointer + cfa_off) */
  R_FP_SAVED = 2, /* the caller's frame pointer is at CFA + fp_off (else it is unchanged) */
  R_FP_LOST = 4,  /* the caller's frame pointer is not known (undefined) */
  R_END = 8,      /* the return address is undefined: the outermost frame */
  R_SLOW = 16,    /* not a rule of this shape: libgcc walks the stack */
};

typedef struct rule {
  int32_t cfa_off, ra_off, fp_off;
  uint32_t flags;
} rule_t;

/* One register's rule while the programs run: only these shapes are followed. */
enum { H_UNSAVED, H_OFFSET, H_UNDEFINED, H_OTHER };
typedef struct how {
  uint8_t how;
  int64_t off;
} how_t;
typedef struct cfa_state {
  uint64_t cfa_reg;
  int64_t cfa_off;
  bool cfa_other; /* an expression */
  how_t ra, fp;
} cfa_state_t;

static uint64_t uleb(const uint8_t **p, const uint8_t *end) {
  uint64_t v = 0;
  for (unsigned shift = 0; *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80))
      break;
  }
  return v;
}

static int64_t sleb(const uint8_t **p, const uint8_t *end) {
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b = 0;
  while (*p < end) {
    b = *(*p)++;
    if (shift < 64)
      v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80))
      break;
  }
  if (shift < 64 && (b & 0x40))
    v |= ~(uint64_t)0 << shift;
  return (int64_t)v;
}

/* Reads a pointer of DW_EH_PE encoding enc as stored (not made absolute) into *v, and moves
 * past it. post: false for encodings a rule cannot use. */
static bool read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t *v) {
  *v = 0;
  if (enc == 0xff) /* DW_EH_PE_omit */
    return true;
  if ((enc & 0x70) == 0x50) /* DW_EH_PE_aligned */
    return false;
  unsigned size;
  switch (enc & 0x0f) {
  case 0x01:
    *v = uleb(p, end);
    return *p <= end;
  case 0x09:
    *v = (uint64_t)sleb(p, end);
    return *p <= end;
  case 0x00: /* absptr */
    size = sizeof(void *);
    break;
  case 0x02:
  case 0x0a:
    size = 2;
    break;
  case 0x03:
  case 0x0b:
    size = 4;
    break;
  case 0x04:
  case 0x0c:
    size = 8;
    break;
  default:
    return false;
  }
  if ((size_t)(end - *p) < size)
    return false;
  memcpy(v, *p, size); /* (little-endian, both architectures) */
  *p += size;
  return true;
}
static bool skip_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc) {
  uint64_t v;
  return read_encoded(p, end, enc, &v);
}

/* The fields of a CIE a rule needs. */
typedef struct cie {
  const uint8_t *insn, *end;
  uint64_t code_align, ra_reg;
  int64_t data_align;
  uint8_t fde_enc;
  bool z, ok;
} cie_t;

static const uint8_t *entry_end(const uint8_t *e, const uint8_t **body) {
  uint32_t len;
  memcpy(&len, e, 4);
  if (len == 0 || len == 0xffffffffu) /* a terminator, or 64-bit DWARF (not in .eh_frame) */
    return NULL;
  *body = e + 4;
  return e + 4 + len;
}

static cie_t parse_cie(const uint8_t *c) {
  cie_t r = {0};
  const uint8_t *p, *end = entry_end(c, &p);
  if (!end)
    return r;
  p += 4; /* the CIE id */
  uint8_t version = *p++;
  const char *aug = (const char *)p;
  size_t aug_len = strnlen(aug, (size_t)(end - p));
  p += aug_len + 1;
  if (version != 1 && version != 3 && version != 4)
    return r;
  if (version == 4)
    p += 2; /* address size, segment size */
  r.code_align = uleb(&p, end);
  r.data_align = sleb(&p, end);
  r.ra_reg = version == 1 ? *p++ : uleb(&p, end);
  r.fde_enc = 0; /* absptr unless 'R' says otherwise */
  if (aug_len) {
    if (aug[0] != 'z')
      return r;
    r.z = true;
    uint64_t n = uleb(&p, end);
    const uint8_t *data = p;
    for (size_t i = 1; i < aug_len; i++) {
      switch (aug[i]) {
      case 'R':
        r.fde_enc = *p++;
        break;
      case 'L':
        p++;
        break;
      case 'P':
        if (!skip_encoded(&p, end, *p++))
          return r;
        break;
      case 'G':
        break; /* memory-tagged stack frames: nothing for the walk */
      default:
        return r; /* 'S' (a signal frame), 'B' (signed return addresses), ... */
      }
    }
    p = data + n;
  }
  if (p > end)
    return r;
  r.insn = p;
  r.end = end;
  r.ok = true;
  return r;
}

static how_t *reg_how(cfa_state_t *s, uint64_t reg) {
  return reg == AX_DWARF_RA ? &s->ra : reg == AX_DWARF_FP ? &s->fp : NULL;
}

/* Runs a call-frame program as libgcc's execute_cfa_program does, up to the row of pc - 1
 * (loc < pc). post: false for an instruction this walk does not follow. */
static bool run_cfa(const uint8_t *p, const uint8_t *end, const cie_t *cie, uintptr_t *loc,
                    uintptr_t pc, cfa_state_t *s) {
  cfa_state_t saved[8];
  unsigned depth = 0;
  while (p < end && *loc < pc) {
    uint8_t op = *p++;
    uint64_t reg;
    how_t *h;
    switch (op & 0xc0) {
    case 0x40: /* advance_loc */
      *loc += (op & 0x3f) * cie->code_align;
      continue;
    case 0x80: /* offset */
      if ((h = reg_how(s, op & 0x3f)))
        *h = (how_t){H_OFFSET, (int64_t)uleb(&p, end) * cie->data_align};
      else
        uleb(&p, end);
      continue;
    case 0xc0: /* restore: libgcc makes it unsaved, not the CIE's rule */
      if ((h = reg_how(s, op & 0x3f)))
        *h = (how_t){H_UNSAVED, 0};
      continue;
    }
    switch (op) {
    case 0x00:
      break; /* nop */
    case 0x02:
      *loc += *p++ * cie->code_align;
      break;     /* advance_loc1 */
    case 0x03: { /* advance_loc2 */
      uint16_t d;
      memcpy(&d, p, 2);
      p += 2;
      *loc += d * cie->code_align;
      break;
    }
    case 0x04: { /* advance_loc4 */
      uint32_t d;
      memcpy(&d, p, 4);
      p += 4;
      *loc += d * cie->code_align;
      break;
    }
    case 0x05: /* offset_extended */
    case 0x11: /* offset_extended_sf */
    case 0x2f: /* GNU_negative_offset_extended */
      reg = uleb(&p, end);
      {
        int64_t off = op == 0x11 ? sleb(&p, end) : (int64_t)uleb(&p, end);
        if (op == 0x2f)
          off = -off;
        if ((h = reg_how(s, reg)))
          *h = (how_t){H_OFFSET, off * cie->data_align};
      }
      break;
    case 0x06: /* restore_extended */
    case 0x08: /* same_value */
      if ((h = reg_how(s, uleb(&p, end))))
        *h = (how_t){H_UNSAVED, 0};
      break;
    case 0x07: /* undefined */
      if ((h = reg_how(s, uleb(&p, end))))
        *h = (how_t){H_UNDEFINED, 0};
      break;
    case 0x09: /* register */
    case 0x14: /* val_offset */
    case 0x15: /* val_offset_sf */
      reg = uleb(&p, end);
      if (op == 0x15)
        sleb(&p, end);
      else
        uleb(&p, end);
      if ((h = reg_how(s, reg)))
        *h = (how_t){H_OTHER, 0};
      break;
    case 0x0a: /* remember_state */
      if (depth == sizeof saved / sizeof saved[0])
        return false;
      saved[depth++] = *s;
      break;
    case 0x0b: /* restore_state: the CFA and the registers */
      if (!depth)
        return false;
      *s = saved[--depth];
      break;
    case 0x0c: /* def_cfa */
      s->cfa_reg = uleb(&p, end);
      s->cfa_off = (int64_t)uleb(&p, end);
      s->cfa_other = false;
      break;
    case 0x12: /* def_cfa_sf */
      s->cfa_reg = uleb(&p, end);
      s->cfa_off = sleb(&p, end) * cie->data_align;
      s->cfa_other = false;
      break;
    case 0x0d:
      s->cfa_reg = uleb(&p, end);
      s->cfa_other = false;
      break; /* def_cfa_register */
    case 0x0e:
      s->cfa_off = (int64_t)uleb(&p, end);
      break; /* def_cfa_offset */
    case 0x13:
      s->cfa_off = sleb(&p, end) * cie->data_align;
      break;   /* def_cfa_offset_sf */
    case 0x0f: /* def_cfa_expression */
      s->cfa_other = true;
      p += uleb(&p, end);
      break;
    case 0x10: /* expression */
    case 0x16: /* val_expression */
      reg = uleb(&p, end);
      p += uleb(&p, end);
      if ((h = reg_how(s, reg)))
        *h = (how_t){H_OTHER, 0};
      break;
    case 0x2e:
      uleb(&p, end);
      break; /* GNU_args_size */
    default:
      return false; /* set_loc, AArch64's negate_ra_state, vendor extensions */
    }
  }
  return p <= end;
}

static bool fits(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* The FDE at fde: its CIE, the length of code it covers, and its instructions from the
 * returned pointer (past the augmentation data) to *end. NULL: not an FDE a rule can use. */
static const uint8_t *fde_read(const uint8_t *fde, cie_t *cie, uint64_t *range,
                               const uint8_t **end) {
  const uint8_t *p;
  if (!(*end = entry_end(fde, &p)))
    return NULL;
  int32_t delta;
  memcpy(&delta, p, 4);
  *cie = parse_cie(p - delta);
  p += 4;
  if (!cie->ok || !skip_encoded(&p, *end, cie->fde_enc) || /* pc_begin, pc_range */
      !read_encoded(&p, *end, cie->fde_enc & 0x0f, range))
    return NULL;
  if (cie->z)
    p += uleb(&p, *end); /* the augmentation data (the LSDA) */
  return p;
}

/* ---- our own frames' FDEs ------------------------------------------------------------------- */

/* The FDEs of the object that holds the allocator (the library, or the program it is linked
 * into), found without libgcc: a sample's walk starts with a few frames of ours, and when the
 * sampled malloc is one libgcc's registry makes holding its lock (a JIT's table sorted at its
 * first lookup), _Unwind_Find_FDE on one of them, not looked up before, waited for that lock for
 * ever (t_jit_frames hung, rarely, under AXMALLOC_PROF_SAMPLE=4096; guarded sampling, on by
 * default, samples anywhere). The object's .eh_frame_hdr table, sorted by start address, is
 * searched as libgcc's dl_iterate_phdr path searches it, with the common encodings only (the
 * version 1 header, eh_frame_ptr pcrel|sdata4, fde_count udata4, the table datarel|sdata4, as
 * GNU ld and lld write it); anything else, or an address it does not cover, goes to libgcc. */
static const uint8_t *own_hdr;   /* the .eh_frame_hdr; NULL: libgcc for every frame */
static uintptr_t own_lo, own_hi; /* the object's executable segments */
static uint32_t own_count;       /* entries in the table */

static int own_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t at = (uintptr_t)arg, lo = UINTPTR_MAX, hi = 0;
  const uint8_t *hdr = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_GNU_EH_FRAME)
      hdr = (const uint8_t *)start;
    else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      lo = start < lo ? start : lo;
      hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
    }
  }
  if (at < lo || at >= hi)
    return 0; /* (not the object that holds at: the next) */
  if (hdr && hdr[0] == 1 && hdr[1] == 0x1b && hdr[2] == 0x03 && hdr[3] == 0x3b) {
    memcpy(&own_count, hdr + 8, 4);
    own_lo = lo;
    own_hi = hi;
    own_hdr = hdr;
  }
  return 1;
}

/* The FDE that covers pc in our own object, and the start of its function; NULL when pc is
 * elsewhere or before the first. Bounded by the next function's start, not by the FDE's own
 * range, which would cost a CIE parse in this frame (96 bytes more of a sampled malloc's stack:
 * t_stack): pc is a return address, inside a function, never in the padding after one. */
static AX_NOINLINE const uint8_t *own_fde(uintptr_t pc, uintptr_t *func) {
  if (!own_hdr || own_count == 0 || pc < own_lo || pc >= own_hi)
    return NULL;
  const uint8_t *table = own_hdr + 12;
  intptr_t want = (intptr_t)(pc - (uintptr_t)own_hdr);
  uint32_t lo = 0, hi = own_count; /* the last entry whose start is <= pc */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    int32_t start;
    memcpy(&start, table + 8 * (size_t)mid, 4);
    if (start <= want)
      lo = mid;
    else
      hi = mid;
  }
  int32_t start, at;
  memcpy(&start, table + 8 * (size_t)lo, 4);
  memcpy(&at, table + 8 * (size_t)lo + 4, 4);
  if (start > want)
    return NULL;
  *func = (uintptr_t)own_hdr + (uintptr_t)(intptr_t)start;
  return own_hdr + at;
}

/* The rule of the frame whose return address is pc, from its FDE: as libgcc's
 * uw_frame_state_for reads it. */
static rule_t derive(uintptr_t pc) {
  const rule_t slow = {0, 0, 0, R_SLOW};
  if (in_registry(pc)) /* (not looked up: the walk ends with this frame) */
    return (rule_t){0, 0, 0, R_END};
  struct dwarf_eh_bases bases;
  uintptr_t func = 0;
  const uint8_t *fde = own_fde(pc - 1, &func), *p, *end;
  if (fde)
    bases.func = (void *)func;
  else
    fde = _Unwind_Find_FDE((void *)(pc - 1), &bases);
  if (!fde) /* libgcc ends the walk there too, unless pc is a signal's return */
    return ax_arch_sigreturn_at(pc) ? slow : (rule_t){0, 0, 0, R_END};
  cie_t cie;
  uint64_t range;
  if (!(p = fde_read(fde, &cie, &range, &end)) || cie.ra_reg != AX_DWARF_RA)
    return slow;
  uintptr_t loc = (uintptr_t)bases.func;
  cfa_state_t s = {.cfa_reg = AX_DWARF_SP};
  if (!run_cfa(cie.insn, cie.end, &cie, &loc, pc, &s) || !run_cfa(p, end, &cie, &loc, pc, &s))
    return slow;
  rule_t r = {0};
  if (s.cfa_other || (s.cfa_reg != AX_DWARF_SP && s.cfa_reg != AX_DWARF_FP) || !fits(s.cfa_off))
    return slow;
  r.cfa_off = (int32_t)s.cfa_off;
  r.flags = s.cfa_reg == AX_DWARF_FP ? R_CFA_FP : 0;
  if (s.ra.how == H_UNDEFINED)
    r.flags |= R_END;
  else if (s.ra.how == H_OFFSET && fits(s.ra.off))
    r.ra_off = (int32_t)s.ra.off;
  else
    return slow;
  if (s.fp.how == H_OFFSET && fits(s.fp.off)) {
    r.flags |= R_FP_SAVED;
    r.fp_off = (int32_t)s.fp.off;
  } else if (s.fp.how == H_UNDEFINED) {
    r.flags |= R_FP_LOST;
  } else if (s.fp.how != H_UNSAVED) {
    return slow;
  }
  return r;
}

/* The registry's bounds (in_registry), from the exported functions and _Unwind_Find_FDE's own
 * FDE: once, from a constructor, before a walk can meet the registry's lock held. */
static void registry_bounds(void) {
  const uintptr_t at[] = {(uintptr_t)&__register_frame_info, (uintptr_t)&__deregister_frame_info,
                          (uintptr_t)&__register_frame, (uintptr_t)&__deregister_frame};
  uintptr_t lo = at[0], hi = (uintptr_t)&_Unwind_Find_FDE;
  for (unsigned i = 1; i < sizeof at / sizeof at[0]; i++)
    lo = at[i] < lo ? at[i] : lo;
  struct dwarf_eh_bases bases;
  const uint8_t *fde = _Unwind_Find_FDE((void *)hi, &bases), *fend;
  cie_t cie;
  uint64_t range = 1; /* (its FDE not read: its first byte) */
  if (!fde || (uintptr_t)bases.func != hi || !fde_read(fde, &cie, &range, &fend) || range == 0 ||
      range >= ((uint64_t)1 << 20))
    range = 1;
  registry_lo = lo > 4096 ? lo - 4096 : 0;
  registry_hi = hi + (uintptr_t)range;
}

static _Unwind_Reason_Code first_frame(struct _Unwind_Context *ctx, void *arg) {
  return _URC_END_OF_STACK;
}

/* The first walk through frames registered with libgcc (a static program's: crtbeginT
 * registers them) sorts their tables, with malloc, holding libgcc's lock. Were that malloc
 * sampled, the sample's walk would wait for the same lock: a thread cancelled (its forced
 * unwind walking first) deadlocked there (glibc's tst-malloc-stats-cancellation, -static,
 * AXMALLOC_PROF_SAMPLE=4096). So that first walk happens here, before anything is sampled or
 * recorded; then the registry's bounds. pre: process init done; called once, from a
 * constructor (alloc.c), when a mode walks stacks. */
bool axi_stack_walkable;
void axi_stack_ready(void) {
  _Unwind_Backtrace(first_frame, NULL);
  registry_bounds();
  dl_iterate_phdr(own_object, (void *)(uintptr_t)&derive);
  axi_stack_walkable = true;
}

/* ---- the table of rules -------------------------------------------------------------------- */

/* Open addressing, never shrinking; full, a rule is used without being kept. An entry is
 * written under the fill lock, inside a count that is odd while it is written (a seqlock); a
 * reader takes it when the count reads the same even value before and after its fields. (The
 * count was pc itself, cleared and set again: a reader that had read pc before a rewrite for
 * the same pc, other code now at that address after a dlclose and a dlopen, and its check
 * after, accepted a mix of the two rules.) A count a writer left odd (a thread that does not
 * exist in a fork child) makes the entry a miss until it is written again. */
typedef struct entry {
  uintptr_t pc;  /* 0: empty (the end of a probe sequence) */
  uint64_t seq;  /* odd while the entry is written */
  uint64_t code; /* the 8 bytes before pc */
  rule_t rule;
} entry_t;

#define TABLE_BITS 12
#define PROBES 8
static entry_t *table;
static ax_atomic_word fill_lock;
static unsigned filled;

static size_t slot_of(uintptr_t pc) {
  return (size_t)(((uint64_t)pc * 0x9e3779b97f4a7c15ull) >> (64 - TABLE_BITS));
}

/* The code before a return address: the call instruction's bytes, read only inside the
 * 4 KiB page that holds pc - 1 (which the call was fetched from). */
static uint64_t code_at(uintptr_t pc) {
  uint64_t v = 0;
  if ((pc & 4095) >= 8)
    memcpy(&v, (const void *)(pc - 8), 8);
  return v;
}

static bool lookup(uintptr_t pc, uint64_t code, rule_t *r) {
  entry_t *t = ax_peek_acquire(&table);
  if (!t)
    return false;
  for (size_t i = slot_of(pc), n = 0; n < PROBES; n++, i = (i + 1) & ((1u << TABLE_BITS) - 1)) {
    entry_t *e = &t[i];
    uint64_t seq = ax_peek_acquire(&e->seq);
    uintptr_t k = ax_peek(&e->pc);
    if (k == 0)
      return false;
    if (k != pc)
      continue;
    uint64_t c = ax_peek(&e->code);
    rule_t v = {ax_peek(&e->rule.cfa_off), ax_peek(&e->rule.ra_off), ax_peek(&e->rule.fp_off),
                ax_peek(&e->rule.flags)};
    ax_fence_acquire();
    if ((seq & 1) || ax_peek(&e->seq) != seq)
      return false; /* written meanwhile: derived again */
    if (c != code)
      return false; /* other code at this address now: derived again, and replaced */
    *r = v;
    return true;
  }
  return false;
}

static void keep(uintptr_t pc, uint64_t code, rule_t r) {
  if (ax_atomic_xchg_acquire(&fill_lock, 1))
    return; /* another thread fills: this rule is used, not kept */
  entry_t *t = table;
  if (!t && (t = axi_os_map(sizeof(entry_t) << TABLE_BITS)))
    ax_poke_release(&table, t);
  if (t && filled < (3u << TABLE_BITS) / 4) {
    size_t i = slot_of(pc);
    for (unsigned n = 0; n < PROBES; n++, i = (i + 1) & ((1u << TABLE_BITS) - 1)) {
      entry_t *e = &t[i];
      if (e->pc != 0 && e->pc != pc)
        continue;
      if (e->pc == 0)
        filled++;
      uint64_t seq = e->seq | 1; /* odd: being written (left odd by a writer gone: still odd) */
      ax_poke(&e->seq, seq);
      ax_fence_release();
      ax_poke(&e->code, code);
      ax_poke(&e->rule.cfa_off, r.cfa_off);
      ax_poke(&e->rule.ra_off, r.ra_off);
      ax_poke(&e->rule.fp_off, r.fp_off);
      ax_poke(&e->rule.flags, r.flags);
      ax_poke(&e->pc, pc);
      ax_poke_release(&e->seq, seq + 1);
      break;
    }
  }
  ax_atomic_store_release(&fill_lock, 0);
}

void axi_stack_fork_child(void) { ax_atomic_store_relaxed(&fill_lock, 0); }

/* ---- the memo of a thread's last walks ------------------------------------------------------ */

/* A walk is a function of where it starts (the return address into the allocator, the stack
 * pointer, the frame pointer when a rule uses it before a frame saved it) and of the words it
 * reads: the code before each return address (the table's check), the saved return addresses,
 * and the saved frame pointers that a rule uses (a -O2 program keeps other values in the frame
 * pointer register, which differ from call to call). A program that samples again and again
 * from the same place, at the same depth, walks the same stack: so a heap keeps its last walks
 * with the words they read, and a walk that starts where one of them started reads those
 * words again, in the same order, instead of walking (about 4 instructions a word against 50
 * a frame; the program's frames and their hash come with it). The first word that differs
 * ends the check; every word before it was the same, so each address read is one the walk
 * itself reads. */
#define MEMO_WAYS 8
#define MEMO_FRAMES 24
#define MEMO_READS (3 * MEMO_FRAMES)

typedef struct memo_read {
  const void *at;
  uint64_t v;
} memo_read_t;

typedef struct memo {
  uintptr_t pc0, sp0, fp0; /* pc0 == 0: empty, or being written */
  uint64_t used;           /* the memo's clock when last found */
  bool fp0_used;
  uint8_t nreads;
  uint8_t n, first, depth; /* the stack's frames, and the program's (axi_stack_key) */
  uint64_t hash;
  uintptr_t pc[MEMO_FRAMES];
  memo_read_t read[MEMO_READS];
} memo_t;

typedef struct ax_prof_memo {
  uint64_t clock; /* counts the walks */
  memo_t way[MEMO_WAYS];
} ax_prof_memo_t;

/* The memo of a walk that starts at pc, sp and fp (*hit), else the one of its two ways to
 * replace (the one used last stays); NULL when no memory for the memo. */
static memo_t *memo_find(ax_heap_t *heap, uintptr_t pc, uintptr_t sp, uintptr_t fp, bool *hit) {
  if (!heap) /* (a walk without a memo: axi_stack_capture_memo) */
    return NULL;
  if (!heap->prof_memo && !(heap->prof_memo = axi_os_map(sizeof(ax_prof_memo_t))))
    return NULL;
  ax_prof_memo_t *memo = heap->prof_memo;
  uint64_t h = (uint64_t)(pc ^ sp) * 0x9e3779b97f4a7c15ull;
  memo_t *m = &memo->way[(h >> 62) * 2];
  memo->clock++;
  for (unsigned i = 0; i < 2; i++)
    if (m[i].pc0 == pc && m[i].sp0 == sp && (!m[i].fp0_used || m[i].fp0 == fp)) {
      m[i].used = memo->clock;
      *hit = true;
      return &m[i];
    }
  *hit = false;
  return m[0].used <= m[1].used ? &m[0] : &m[1];
}

/* Do m's words read the same now? In order, stopping at the first that differs. */
static bool memo_holds(const memo_t *m) {
  for (const memo_read_t *r = m->read, *end = r + m->nreads; r != end; r++) {
    uint64_t v;
    memcpy(&v, r->at, sizeof v);
    if (v != r->v)
      return false;
  }
  return true;
}

/* A word the walk read, into the memo being written (m->nreads past MEMO_READS: too long). */
static inline void note(memo_t *m, const void *at, uint64_t v) {
  if (!m)
    return;
  if (m->nreads < MEMO_READS)
    m->read[m->nreads] = (memo_read_t){at, v};
  m->nreads += m->nreads <= MEMO_READS;
}

/* ---- the walk ------------------------------------------------------------------------------ */

/* The walk from pc, sp, fp (the caller's return address, stack pointer at the call and frame
 * pointer), by the rules, the words it reads noted in m (if any). post: the frames, at most
 * max; 0 when libgcc must walk this stack; *fp0_used: a rule took the starting frame pointer. */
static unsigned walk(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t *out, unsigned max,
                     memo_t *m, bool *fp0_used) {
  bool fp_known = true;
  const uintptr_t *fp_at = NULL; /* where fp was read (NULL: the starting one), noted when used */
  unsigned n = 0;
  while (pc != 0 && n < max) {
    out[n++] = pc;
    uint64_t code = code_at(pc);
    if ((pc & 4095) >= 8 && !axi_stack_in_api(pc)) /* (our own code stays) */
      note(m, (const void *)(pc - 8), code);
    rule_t r;
    if (!lookup(pc, code, &r)) {
      r = derive(pc);
      keep(pc, code, r);
    }
    if (r.flags & (R_SLOW | R_END))
      return r.flags & R_SLOW ? 0 : n;
    if (r.flags & R_CFA_FP) {
      if (!fp_known)
        return 0;
      if (fp_at)
        note(m, fp_at, fp);
      else
        *fp0_used = true;
    }
    uintptr_t cfa = ((r.flags & R_CFA_FP) ? fp : sp) + (uintptr_t)(intptr_t)r.cfa_off;
    if (cfa <= sp || cfa - sp > ((uintptr_t)1 << 30) || (cfa & 7))
      return 0; /* not a caller's frame: libgcc decides */
    const uintptr_t *ra_at = (const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r.ra_off);
    pc = *ra_at;
    note(m, ra_at, pc);
    if (r.flags & R_FP_SAVED) {
      fp_at = (const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r.fp_off);
      fp = *fp_at;
    } else if (r.flags & R_FP_LOST) {
      fp_known = false;
    }
    sp = cfa;
  }
  return n;
}

/* Return addresses from the caller's frame outwards, as _Unwind_Backtrace from the caller
 * would give them (its first: the return into the caller), into st with its program's frames
 * and their hash (axi_stack_key); st->n = 0 when libgcc must walk this stack (a frame without
 * a rule of this shape). pre: heap is the calling thread's, busy. */
__attribute__((noinline)) void axi_stack_unwind(ax_heap_t *heap, ax_stack_t *st) {
  uintptr_t pc = (uintptr_t)__builtin_return_address(0);
  uintptr_t sp = (uintptr_t)__builtin_dwarf_cfa();         /* the caller's, at the call */
  uintptr_t fp = *(uintptr_t *)__builtin_frame_address(0); /* the caller's, saved by our entry */
  bool hit;
  memo_t *m = memo_find(heap, pc, sp, fp, &hit);
  if (m && hit && memo_holds(m)) {
    memcpy(st->pc, m->pc, m->n * sizeof m->pc[0]);
    st->n = m->n;
    st->first = m->first;
    st->depth = m->depth;
    st->hash = m->hash;
    st->memo = true;
    return;
  }
  if (m) {
    m->pc0 = 0;
    m->nreads = 0;
  }
  bool fp0_used = false;
  st->n = walk(pc, sp, fp, st->pc, AX_STACK_OURS + AX_STACK_DEPTH, m, &fp0_used);
  if (st->n == 0)
    return;
  axi_stack_key(st);
  if (!m || st->n > MEMO_FRAMES || m->nreads > MEMO_READS)
    return;
  m->n = (uint8_t)st->n;
  m->first = (uint8_t)st->first;
  m->depth = (uint8_t)st->depth;
  m->hash = st->hash;
  memcpy(m->pc, st->pc, st->n * sizeof st->pc[0]);
  m->sp0 = sp;
  m->fp0 = fp;
  m->fp0_used = fp0_used;
  m->used = heap->prof_memo->clock;
  m->pc0 = pc;
}

/* ---- libgcc's walk ------------------------------------------------------------------------ */

_Unwind_Reason_Code axi_stack_walk_frame(struct _Unwind_Context *ctx, void *arg) {
  ax_stack_t *st = arg;
  uintptr_t pc = _Unwind_GetIP(ctx);
  if (pc == 0)
    return _URC_END_OF_STACK;
  st->pc[st->n++] = pc;
  return st->n == AX_STACK_OURS + AX_STACK_DEPTH ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* AXMALLOC_PROF_UNWIND=check: the stacks compared (those of them from the memo), and those
 * libgcc walked alone */
static ax_atomic_word walks_table, walks_memo, walks_libgcc;

static void print_stack(const char *what, const uintptr_t *pc, unsigned n) {
  axi_write("axmalloc: %s:", what);
  for (unsigned i = 0; i < n; i++)
    axi_write(" %p", (void *)pc[i]);
  axi_write("\n");
}

/* libgcc's walk of st, from the caller's frame: where axi_stack_unwind could not walk it
 * (st->n == 0), or, with AXMALLOC_PROF_UNWIND=check, beside it: both must give the same
 * program frames, or the process aborts naming both. */
AX_NOINLINE void axi_stack_walk_libgcc(ax_stack_t *st) {
  if (st->n == 0) {
    _Unwind_Backtrace(axi_stack_walk_frame, st);
    axi_stack_key(st);
    if (axi_prof_unwind_mode == AX_UNWIND_CHECK)
      ax_atomic_fetch_add_relaxed(&walks_libgcc, 1);
    return;
  }
  ax_stack_t ref = {0};
  _Unwind_Backtrace(axi_stack_walk_frame, &ref);
  unsigned d1, d2, f1 = axi_stack_program_frames(st, &d1), f2 = axi_stack_program_frames(&ref, &d2);
  if (d1 != d2 || memcmp(st->pc + f1, ref.pc + f2, d1 * sizeof st->pc[0]) != 0) {
    axi_write_to_saved_stderr();
    print_stack("stack walked from the unwind table rules", st->pc + f1, d1);
    print_stack("stack walked by libgcc's _Unwind_Backtrace", ref.pc + f2, d2);
    axi_write("axmalloc: AXMALLOC_PROF_UNWIND=check: the two walks differ\n");
    abort();
  }
  ax_atomic_fetch_add_relaxed(&walks_table, 1);
  if (st->memo)
    ax_atomic_fetch_add_relaxed(&walks_memo, 1);
}

/* AXMALLOC_PROF_UNWIND=check, at exit: how many stacks were compared. */
__attribute__((destructor)) static void unwind_report(void) {
  if (axi_prof_on && axi_prof_unwind_mode == AX_UNWIND_CHECK)
    axi_write("axmalloc: AXMALLOC_PROF_UNWIND=check: %llu stacks walked from the table "
              "(%llu of them from the memo) and by libgcc, the same; %llu by libgcc alone\n",
              (unsigned long long)ax_atomic_load_relaxed(&walks_table),
              (unsigned long long)ax_atomic_load_relaxed(&walks_memo),
              (unsigned long long)ax_atomic_load_relaxed(&walks_libgcc));
}
