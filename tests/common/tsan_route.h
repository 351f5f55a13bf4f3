/* SPDX-License-Identifier: MIT */
/* Force-included (-include) into the threaded tests of an AX_SANITIZE=thread build
 * (cmake/sanitize.cmake). ThreadSanitizer's runtime defines malloc & co. itself and comes
 * first in the link, so a test calling malloc would exercise TSan's allocator, not ours.
 * Renaming the calls to the ax_* API puts axmalloc's own synchronization (remote frees,
 * abandoned segments, caches) under TSan's eyes; memory that libc allocates for itself
 * still comes from TSan. The tests check ax_stats mallocs grew, which proves the route.
 *
 * The real declarations come first, so the macros only rename calls in the test itself. */
#ifndef AX_TSAN_ROUTE_H
#define AX_TSAN_ROUTE_H

#include <malloc.h>
#include <stdlib.h>

#include <axmalloc.h>

/* Object-like: a function pointer (pthread_key_create(&k, free)) is renamed too. */
#define malloc ax_malloc
#define free ax_free
#define calloc ax_calloc
#define realloc ax_realloc
#define reallocarray ax_reallocarray
#define aligned_alloc ax_aligned_alloc
#define posix_memalign ax_posix_memalign
#define memalign ax_memalign
#define malloc_usable_size ax_usable_size
#define free_sized ax_free_sized

#endif
