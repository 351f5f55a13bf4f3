/* Bulk kernels for calloc and realloc. For now the C library's memset and memcpy (glibc's
 * are already tuned per CPU); the per-ISA kernels and their dispatch come with issue 3. */
#include <string.h>

#include "bulk.h"

void axi_bulk_init(void) {}
void axi_bulk_zero(void *p, size_t n) { memset(p, 0, n); }
void axi_bulk_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
const char *axi_bulk_zero_name(void) { return "libc"; }
const char *axi_bulk_copy_name(void) { return "libc"; }
