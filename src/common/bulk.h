/* Bulk zeroing and copying of allocator blocks (calloc, realloc).
 * pre (both): addresses 16-byte aligned; n a multiple of 16 (blocks always are). */
#ifndef AX_BULK_H
#define AX_BULK_H

#include <stddef.h>

__attribute__((visibility("hidden"))) void axi_bulk_init(void);
__attribute__((visibility("hidden"))) void axi_bulk_zero(void *p, size_t n);
__attribute__((visibility("hidden"))) void axi_bulk_copy(void *dst, const void *src, size_t n);
__attribute__((visibility("hidden"))) const char *axi_bulk_zero_name(void);
__attribute__((visibility("hidden"))) const char *axi_bulk_copy_name(void);

#endif
