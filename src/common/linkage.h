/* SPDX-License-Identifier: MIT */
/* A static link takes all of axmalloc or none of it: every object of the core refers to alloc.o
 * (which defines malloc) and free.o, so that a program linked with libc before libaxmalloc.a
 * fails with a duplicate malloc instead of mixing glibc's malloc with axmalloc's other objects
 * (t_linkorder); and to stats.o, whose destructor writes the AXMALLOC_STATS=1 report at exit.
 * The references are undefined symbols the assembler is told of, not names the C code uses:
 * they pull objects into a link and call nothing, so they are no dependency of any layer
 * (tests/layers/t_layers.py names them as its only exceptions). Included by every file of the core
 * that its own header does not already cover: state.h includes it. */
#ifndef AX_LINKAGE_H
#define AX_LINKAGE_H

#ifdef AX_CORE
__asm__(".globl axi_link_alloc_o\n\t.globl axi_link_free_o\n\t.globl axi_link_stats_o");
#endif

#endif
