/* SPDX-License-Identifier: MIT */
/* A JIT's unwind tables: the program registers a table of its own with libgcc
 * (__register_frame, as JIT compilers do), walks its stack (backtrace: libgcc sorts the table
 * at its first lookup, with malloc, holding its registry's lock) and deregisters it (libgcc
 * frees it holding the same lock). Under the modes that walk a stack at every malloc or free,
 * or at a sampled one (checked mode with AXMALLOC_PROF=1, the leak checker, the profiler at
 * AXMALLOC_PROF_SAMPLE=1: tests/modes/modes.cmake), a walk that looked a return address up inside
 * the registry waited for that lock for ever (modes/stacks/unwind.c, in_registry). The table is a
 * copy of the program's own .eh_frame (found through PT_GNU_EH_FRAME). The ctest TIMEOUT
 * turns a hang into a failure. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void __register_frame(void *begin);
extern void __deregister_frame(void *begin);

static const uint8_t *eh_frame;

/* The main program's .eh_frame, from its .eh_frame_hdr (eh_frame_ptr: pcrel|sdata4). */
static int find(struct dl_phdr_info *info, size_t size, void *arg) {
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) {
      const uint8_t *h = (const uint8_t *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      int32_t off;
      if (h[0] != 1 || h[1] != 0x1b)
        return 1;
      memcpy(&off, h + 4, 4);
      eh_frame = h + 4 + off;
      return 1;
    }
  return 1; /* (the main program comes first) */
}

int main(void) {
  dl_iterate_phdr(find, NULL);
  if (!eh_frame) {
    printf("t_jit_frames: no .eh_frame_hdr in the program: skipped\n");
    return 77;
  }
  size_t n = 0;
  for (;;) { /* its entries up to the zero terminator */
    uint32_t len;
    memcpy(&len, eh_frame + n, 4);
    n += 4;
    if (!len)
      break;
    n += len;
  }
  uint8_t *table = malloc(n);
  if (!table)
    return 1;
  memcpy(table, eh_frame, n);
  void *pcs[16];
  int before = backtrace(pcs, 16);
  __register_frame(table);
  int during = backtrace(pcs, 16); /* (the first lookup since: the new table sorted) */
  __deregister_frame(table);       /* (its sorted array freed) */
  free(table);
  printf("t_jit_frames: %zu bytes registered; backtrace %d frames before, %d while registered; "
         "deregistered: OK\n",
         n, before, during);
  return before > 0 && during > 0 ? 0 : 1;
}
