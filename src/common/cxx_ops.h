/* SPDX-License-Identifier: MIT */
/* The base C++ operators, as the program resolves them and as new_delete.cc defines them
 * (cxx_replaced.c). Included from C and C++. */
#ifndef AX_CXX_OPS_H
#define AX_CXX_OPS_H

#include <stdbool.h>
#include <stddef.h>

/* A delete is noexcept, and so are the functions it calls: then it calls them with a jump (a
 * call from a noexcept function to one that might throw needs a frame to stop the throw: 14
 * instructions more per sized delete, 79.8 against 65.8 for a 48 B new/delete pair). */
#ifdef __cplusplus
#define AX_NOEXCEPT noexcept
extern "C" {
#else
#define AX_NOEXCEPT
#endif

typedef struct axi_cxx_ops {
  void *(*new_)(size_t);
  void *(*new_array)(size_t);
  void (*delete_)(void *) AX_NOEXCEPT;
  void (*delete_array)(void *) AX_NOEXCEPT;
  void *(*new_al)(size_t, size_t); /* std::align_val_t is passed as a size_t */
  void *(*new_array_al)(size_t, size_t);
  void (*delete_al)(void *, size_t) AX_NOEXCEPT;
  void (*delete_array_al)(void *, size_t) AX_NOEXCEPT;
} axi_cxx_ops_t;

/* Set before main by cxx_replaced.c: the winning definitions, and whether any is not ours. */
__attribute__((visibility("hidden"))) extern axi_cxx_ops_t axi_cxx_ops;
__attribute__((visibility("hidden"))) extern bool axi_cxx_replaced;
/* The sized deletes, one jump each: free.c's while nothing is replaced, else through the
 * program's operator delete (delete[]) (cxx_replaced.c: set with the above). */
__attribute__((visibility("hidden"))) extern void (*axi_cxx_sized_delete)(void *,
                                                                          size_t) AX_NOEXCEPT;
__attribute__((visibility("hidden"))) extern void (*axi_cxx_sized_delete_array)(void *,
                                                                                size_t) AX_NOEXCEPT;

/* free.c: operator delete and delete[]; sized, the size must be of the block's class (aborts
 * otherwise) */
__attribute__((visibility("hidden"))) void axi_delete(void *p) AX_NOEXCEPT;
__attribute__((visibility("hidden"))) void axi_delete_sized(void *p, size_t size) AX_NOEXCEPT;
__attribute__((visibility("hidden"))) void axi_delete_array(void *p) AX_NOEXCEPT;
__attribute__((visibility("hidden"))) void axi_delete_array_sized(void *p, size_t size) AX_NOEXCEPT;
/* alloc.c: operator new[]'s block (checked mode remembers it is an array's) */
__attribute__((visibility("hidden"))) void *axi_new_array(size_t n);

/* new_delete.cc's own definitions (hidden aliases) */
__attribute__((visibility("hidden"))) void *axi_cxx_new(size_t);
__attribute__((visibility("hidden"))) void *axi_cxx_new_array(size_t);
__attribute__((visibility("hidden"))) void axi_cxx_delete(void *) AX_NOEXCEPT;
__attribute__((visibility("hidden"))) void axi_cxx_delete_array(void *) AX_NOEXCEPT;
__attribute__((visibility("hidden"))) void *axi_cxx_new_al(size_t, size_t);
__attribute__((visibility("hidden"))) void *axi_cxx_new_array_al(size_t, size_t);
__attribute__((visibility("hidden"))) void axi_cxx_delete_al(void *, size_t) AX_NOEXCEPT;
__attribute__((visibility("hidden"))) void axi_cxx_delete_array_al(void *, size_t) AX_NOEXCEPT;

#ifdef __cplusplus
}
#endif
#endif
