/* SPDX-License-Identifier: MIT */
/* The operating system (os.c): mappings, files, futex waits, time, randomness, membarrier. Raw
 * system calls: no allocation, errno kept. Layer: base (docs/design/00-base.md). */
#ifndef AX_OS_H
#define AX_OS_H

#include "types.h"

AXI_HIDDEN void *axi_os_map(size_t size);
AXI_HIDDEN void *axi_os_reserve(size_t size);
AXI_HIDDEN void *axi_os_reserve_aligned(size_t size, size_t align, size_t guard);
AXI_HIDDEN bool axi_os_protect(void *p, size_t size, bool access);
AXI_HIDDEN bool axi_os_commit(void *p, size_t size);
AXI_HIDDEN void *axi_os_map_aligned(size_t size, size_t align, size_t off);
AXI_HIDDEN void axi_os_unmap(void *p, size_t size);
AXI_HIDDEN void axi_os_purge(void *p, size_t size);
AXI_HIDDEN bool axi_os_zero_pages(void *p, size_t size);
AXI_HIDDEN bool axi_os_resident(const void *p);
AXI_HIDDEN bool axi_os_remap(void *p, size_t old_size, size_t new_size);
AXI_HIDDEN bool axi_os_move(void *p, size_t old_size, size_t new_size, void *target);
AXI_HIDDEN enum ax_thp_kernel axi_os_thp_read(const char *dir, size_t *size);
AXI_HIDDEN enum ax_thp_defrag axi_os_thp_defrag(const char *dir);
AXI_HIDDEN bool axi_os_thp_advise(void *p, size_t size, bool on);
AXI_HIDDEN int axi_os_open(const char *path, int flags, unsigned mode);
AXI_HIDDEN int axi_os_gettid(void);
AXI_HIDDEN long axi_os_read(int fd, void *buf, size_t n);
AXI_HIDDEN long axi_os_write(int fd, const void *buf, size_t n);
AXI_HIDDEN int axi_os_close(int fd);
AXI_HIDDEN int axi_os_fcntl(int fd, int cmd, int arg);
AXI_HIDDEN bool axi_os_getcwd(char *buf, size_t size);
AXI_HIDDEN int axi_os_access(const char *path, int mode);
AXI_HIDDEN void *axi_os_map_file(int fd, size_t size);
AXI_HIDDEN long axi_os_file_size(int fd);
AXI_HIDDEN long axi_os_readlink(const char *path, char *buf, size_t n);
AXI_HIDDEN void axi_os_wait(ax_atomic_word *w, uint32_t v, unsigned ms);
AXI_HIDDEN void axi_os_wake(ax_atomic_word *w, uint32_t n);
AXI_HIDDEN uint64_t axi_now_ms(void);
AXI_HIDDEN uint64_t axi_os_cpu_ns(void);
AXI_HIDDEN uint64_t axi_random(void);
/* A full memory barrier on every other running thread of the process (membarrier(2)).
 * post: false when the kernel offers none (then nothing relies on it). No allocation. */
AXI_HIDDEN void axi_os_barrier_init(void); /* pre: process init, alone */
AXI_HIDDEN bool axi_os_barrier(void);
AXI_HIDDEN bool axi_os_barrier_available(void);
AXI_HIDDEN size_t axi_os_address_room(void);

#endif
