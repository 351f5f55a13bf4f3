/* SPDX-License-Identifier: MIT */
/* Valgrind memcheck client requests (-DAX_VALGRIND=ON), compiled to nothing otherwise.
 *
 * Memcheck replaces every exported malloc with its own unless it runs with
 * --soname-synonyms=somalloc=nomatch; then axmalloc runs and these requests tell memcheck
 * what it would otherwise not know:
 *
 *   AX_TRACK_MALLOC(p, n, zeroed)   a block is handed out (VALGRIND_MALLOCLIKE_BLOCK)
 *   AX_TRACK_FREE(p)                it came back (VALGRIND_FREELIKE_BLOCK: no-access)
 *   AX_TRACK_RESIZE(p, old, new)    realloc kept it (VALGRIND_RESIZEINPLACE_BLOCK)
 *   AX_TRACK_HIDE_META / SHOW_META (p, n)
 *                                   a segment's metadata, hidden from the leak scan
 *   AX_TRACK_DEFINED / UNDEFINED / NOACCESS (p, n)
 *                                   the allocator's own accesses to memory it owns: the link
 *                                   word of a free block, checked mode's fill patterns
 *
 * The size registered is the block's usable size, what malloc_usable_size returns: the
 * class size in the default mode (so a write past the requested size but within the class
 * is not reported: checked mode's canaries catch those), the requested size in checked
 * mode. Registering the usable size means realloc within the block changes nothing, and
 * no per-block size has to be stored in the default build. Free blocks and pages not yet
 * carved are no-access, so a use after free, or a stray access into a page's unused tail,
 * is an "Invalid read/write" naming the block and where it was freed.
 */
#ifndef AX_TRACK_H
#define AX_TRACK_H

#if defined(AX_VALGRIND) && AX_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>

#define AX_TRACK_MALLOC(p, n, zeroed) VALGRIND_MALLOCLIKE_BLOCK((p), (n), 0, (zeroed))
#define AX_TRACK_FREE(p) VALGRIND_FREELIKE_BLOCK((p), 0)
#define AX_TRACK_RESIZE(p, old, new) VALGRIND_RESIZEINPLACE_BLOCK((p), (old), (new), 0)
#define AX_TRACK_DEFINED(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#define AX_TRACK_UNDEFINED(p, n) ((void)VALGRIND_MAKE_MEM_UNDEFINED((p), (n)))
#define AX_TRACK_NOACCESS(p, n) ((void)VALGRIND_MAKE_MEM_NOACCESS((p), (n)))
/* Segment metadata (header and page descriptors) holds page->area, the address of each
 * page's first block: memcheck's leak scan would take it for a pointer to that block and
 * call a leaked first block "still reachable". So the metadata is no-access to memcheck,
 * which then skips it when scanning, with address errors in it switched off: the allocator
 * reads and writes it as usual, and loads from it count as defined. */
#define AX_TRACK_HIDE_META(p, n)                                                                   \
  do {                                                                                             \
    (void)VALGRIND_MAKE_MEM_NOACCESS((p), (n));                                                    \
    VALGRIND_DISABLE_ADDR_ERROR_REPORTING_IN_RANGE((p), (n));                                      \
  } while (0)
#define AX_TRACK_SHOW_META(p, n)                                                                   \
  do {                                                                                             \
    VALGRIND_ENABLE_ADDR_ERROR_REPORTING_IN_RANGE((p), (n));                                       \
    (void)VALGRIND_MAKE_MEM_DEFINED((p), (n));                                                     \
  } while (0)
#define AX_TRACKING 1

#else

#define AX_TRACK_MALLOC(p, n, zeroed) ((void)0)
#define AX_TRACK_FREE(p) ((void)0)
#define AX_TRACK_RESIZE(p, old, new) ((void)0)
#define AX_TRACK_DEFINED(p, n) ((void)0)
#define AX_TRACK_UNDEFINED(p, n) ((void)0)
#define AX_TRACK_NOACCESS(p, n) ((void)0)
#define AX_TRACK_HIDE_META(p, n) ((void)0)
#define AX_TRACK_SHOW_META(p, n) ((void)0)
#define AX_TRACKING 0

#endif
#endif
