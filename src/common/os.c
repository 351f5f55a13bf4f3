/* The OS seam: mappings, time, randomness, options, and output that never allocates.
 *
 * Everything here may run before constructors, inside dlsym, in a fork child and in TLS
 * destructors: no stdio, no allocation, and errno is restored around every system call
 * that free() can reach.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bulk.h"
#include "internal.h"

ax_options_t axi_options = {.purge_delay_ms = 10};
bool axi_force_mt; /* AXMALLOC_FORCE_MT=1: atomics even while single-threaded */
bool axi_forked;
size_t axi_os_page = 4096;
static int out_fd = 2;       /* where axi_write goes */
static int saved_err_fd = -1; /* a private copy of stderr, for the report at exit */

/* ---- process init ------------------------------------------------------------------ */

static uint64_t env_u64(const char *name, uint64_t dflt) {
  const char *s = getenv(name); /* getenv neither allocates nor changes errno */
  if (!s || !*s)
    return dflt;
  uint64_t v = 0;
  for (; *s >= '0' && *s <= '9'; s++)
    v = v * 10 + (uint64_t)(*s - '0');
  return v;
}

/* pre: called once, by the first thread that allocates, before any other thread can
 * (a second thread exists only after the first called pthread_create, which mallocs). */
void axi_init_process(void) {
  int saved = errno;
  unsigned long pg = getauxval(AT_PAGESZ);
  axi_os_page = pg ? pg : 4096;
  /* AXMALLOC_PAGE_SIZE: behave as on a kernel with larger pages (AArch64 servers run 16 and
   * 64 KiB kernels); a power of two from the real page size up to 64 KiB. */
  uint64_t want = env_u64("AXMALLOC_PAGE_SIZE", 0);
  if (want >= axi_os_page && want <= 65536 && (want & (want - 1)) == 0)
    axi_os_page = want;
  axi_options.stats = (int)env_u64("AXMALLOC_STATS", 0);
  axi_options.verbose = (int)env_u64("AXMALLOC_VERBOSE", 0);
  axi_options.purge_delay_ms = env_u64("AXMALLOC_PURGE_DELAY_MS", 10);
  axi_force_mt = env_u64("AXMALLOC_FORCE_MT", 0) != 0;
  /* checked mode can be switched on, never off (an AX_CHECKED build starts with it on) */
  if (env_u64("AXMALLOC_CHECK", 0) != 0)
    axi_checked = true;
  axi_cookie_key = (uintptr_t)axi_random();
  if (axi_options.stats) {
    /* programs such as coreutils close stderr in an atexit handler, before our report */
    saved_err_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
  }
  ax_arch_cpu_detect();
  axi_bulk_init();
  if (axi_options.verbose)
    axi_write("axmalloc: version %d.%d, arch %s, cpu features: %s\n"
              "axmalloc: atomics %s, single-threaded twins %s%s\n"
              "axmalloc: bulk zero %s, bulk copy %s\n"
              "axmalloc: os page %zu B, segment %zu KiB, purge delay %zu ms%s\n",
              AX_VERSION_MAJOR, AX_VERSION_MINOR, AX_ARCH_NAME, ax_arch_cpu_features(),
              ax_arch_atomics_name(), axi_single_threaded() ? "on" : "off",
              axi_force_mt ? " (AXMALLOC_FORCE_MT)" : "", axi_bulk_zero_name(),
              axi_bulk_copy_name(), axi_os_page, (size_t)(AX_SEGMENT_SIZE >> 10),
              (size_t)axi_options.purge_delay_ms, axi_checked ? ", checked mode" : "");
  errno = saved;
}

/* ---- mappings ---------------------------------------------------------------------- */

/* post: size bytes of zeroed, readable and writable memory, or NULL (errno kept). */
void *axi_os_map(size_t size) {
  int saved = errno;
  /* No MAP_NORESERVE: under the default heuristic overcommit it would skip the kernel's
   * "larger than RAM + swap" check, and malloc(64 TiB) would succeed (t_oom.huge). */
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.mmap_calls, 1);
  return p == MAP_FAILED ? NULL : p;
}

void axi_os_unmap(void *p, size_t size) {
  int saved = errno;
  munmap(p, size);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.munmap_calls, 1);
}

/* pre: size a multiple of the OS page; align a power of two >= AX_SEGMENT_SIZE; off a
 * multiple of AX_SEGMENT_SIZE below align.
 * post: size bytes at a start m with m + off a multiple of align (so m is segment-aligned),
 * or NULL. Usually one mmap: consecutive mappings land next to each other, so once one is
 * aligned the next ones tend to be too; otherwise over-reserve by align and trim. */
void *axi_os_map_aligned(size_t size, size_t align, size_t off) {
  if (size > AX_ADDRESS_LIMIT || align > AX_ADDRESS_LIMIT - size)
    return NULL; /* no address space has room for it: no system call */
  char *p = axi_os_map(size);
  if (!p || (((uintptr_t)p + off) & (align - 1)) == 0)
    return p;
  axi_os_unmap(p, size);
  if (!(p = axi_os_map(size + align)))
    return NULL;
  uintptr_t start = (((uintptr_t)p + off + align - 1) & ~(align - 1)) - off;
  if (start < (uintptr_t)p)
    start += align;
  if (start > (uintptr_t)p)
    axi_os_unmap(p, start - (uintptr_t)p);
  uintptr_t end = (uintptr_t)p + size + align;
  if (end > start + size)
    axi_os_unmap((void *)(start + size), end - (start + size));
  return (void *)start;
}

/* Grow or shrink a mapping in place. post: true when it now spans new_size bytes; false
 * with the mapping untouched when the kernel cannot do it without moving. */
bool axi_os_remap(void *p, size_t old_size, size_t new_size) {
  int saved = errno;
  void *q = mremap(p, old_size, new_size, 0);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.mremap_calls, 1);
  return q != MAP_FAILED;
}

/* Move a mapping's pages onto `target` (a mapping of new_size bytes, which it replaces):
 * page tables move, no byte is copied. The old range is given back to the OS by this call.
 * post: true on success; false with both mappings untouched. */
bool axi_os_move(void *p, size_t old_size, size_t new_size, void *target) {
  int saved = errno;
  void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, target);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.mremap_calls, 1);
  return q != MAP_FAILED;
}

/* pre: p and size multiples of the OS page. post: the range reads as zero next time. */
void axi_os_purge(void *p, size_t size) {
  int saved = errno;
  madvise(p, size, MADV_DONTNEED);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.madvise_calls, 1);
  ax_atomic_fetch_add_relaxed(&axi_stats.os_purged, size);
  axi_stat_add(&axi_stats.os_committed, NULL, -(intptr_t)size);
}

/* pre: p and size multiples of the OS page. post: true when the range reads as zero now
 * (its pages went back to the kernel and fault in as zero pages); the mapping's
 * accounting is the caller's. */
bool axi_os_zero_pages(void *p, size_t size) {
  int saved = errno;
  int rc = madvise(p, size, MADV_DONTNEED);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.madvise_calls, 1);
  return rc == 0;
}

/* post: true when the OS page holding p is in memory (mincore), false when it is not or
 * the kernel will not say. */
bool axi_os_resident(const void *p) {
  unsigned char vec = 0;
  int saved = errno;
  uintptr_t page = (uintptr_t)p & ~(uintptr_t)(getpagesize() - 1);
  int rc = mincore((void *)page, 1, &vec);
  errno = saved;
  return rc == 0 && (vec & 1);
}

/* ---- time and randomness ------------------------------------------------------------ */

uint64_t axi_now_ms(void) {
  struct timespec ts;
  int saved = errno;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* vDSO: no system call */
  errno = saved;
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Not cryptographic: xorshift seeded from the kernel's AT_RANDOM bytes. Used for list
 * keys, which only need to be unlikely in user data. */
uint64_t axi_random(void) {
  static ax_atomic_word state;
  uintptr_t s = ax_atomic_load_relaxed(&state);
  if (s == 0) {
    const void *at = (const void *)getauxval(AT_RANDOM); /* 16 bytes, any alignment */
    uint64_t r[2] = {0x9e3779b97f4a7c15u, 0};
    if (at)
      __builtin_memcpy(r, at, sizeof r);
    s = r[0] ^ r[1];
    s |= 1;
  }
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  ax_atomic_store_relaxed(&state, s); /* a lost update only repeats a key */
  return s * 0x2545F4914F6CDD1Du;
}

/* ---- output without stdio ----------------------------------------------------------- */

static char *put_u(char *o, char *end, uint64_t v, unsigned base) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  while (n && o < end)
    *o++ = tmp[--n];
  return o;
}

/* write(2) is a cancellation point: with a cancellation pending, a report would stop half
 * way and the thread would be gone (glibc's tst-malloc-stats-cancellation), and a fatal
 * error would cancel the thread instead of aborting. glibc's syscall() is not one. */
static void out_nocancel(const char *buf, size_t n) {
  int saved = errno;
  while (n > 0) {
    long w = syscall(SYS_write, out_fd, buf, n);
    if (w <= 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    buf += w;
    n -= (size_t)w;
  }
  errno = saved;
}

/* A printf subset: %s %d %zu %llu %p %x. Writes to stderr, not cancellable. */
static void vwrite(const char *fmt, va_list ap) {
  char buf[1024], *o = buf, *end = buf + sizeof buf;
  for (; *fmt && o < end; fmt++) {
    if (*fmt != '%') {
      *o++ = *fmt;
      continue;
    }
    fmt++;
    if (*fmt == 'z' || *fmt == 'l') {
      while (*fmt == 'z' || *fmt == 'l')
        fmt++;
      o = *fmt == 'x' ? put_u(o, end, va_arg(ap, uint64_t), 16) : put_u(o, end, va_arg(ap, uint64_t), 10);
    } else if (*fmt == 'd') {
      int v = va_arg(ap, int);
      if (v < 0 && o < end)
        *o++ = '-';
      o = put_u(o, end, v < 0 ? -(uint64_t)v : (uint64_t)v, 10);
    } else if (*fmt == 'x') {
      o = put_u(o, end, va_arg(ap, unsigned), 16);
    } else if (*fmt == 'p') {
      if (o + 2 <= end) {
        *o++ = '0';
        *o++ = 'x';
      }
      o = put_u(o, end, (uintptr_t)va_arg(ap, void *), 16);
    } else if (*fmt == 's') {
      for (const char *s = va_arg(ap, const char *); *s && o < end; s++)
        *o++ = *s;
    } else if (*fmt == '%') {
      *o++ = '%';
    } else {
      break;
    }
  }
  out_nocancel(buf, (size_t)(o - buf));
}

/* The statistics report at exit goes to stderr, or, when the program has closed it (as
 * coreutils do in an atexit handler), to the copy taken at init. */
void axi_write_to_saved_stderr(void) {
  int saved = errno;
  if (fcntl(2, F_GETFD) < 0 && saved_err_fd >= 0)
    out_fd = saved_err_fd;
  errno = saved;
}

void axi_write(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite(fmt, ap);
  va_end(ap);
}

void axi_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vwrite(fmt, ap);
  va_end(ap);
  abort();
}
