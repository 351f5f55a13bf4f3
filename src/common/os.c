/* SPDX-License-Identifier: MIT */
/* The OS seam: mappings, transparent huge pages, files, time and randomness.
 *
 * Everything here may run before constructors, inside dlsym, in a fork child and in TLS
 * destructors: no stdio, no allocation, and errno is restored around every system call
 * that free() can reach.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "os.h"

#include "state.h"

/* ---- mappings ---------------------------------------------------------------------- */

/* munmap, errno kept: the trims of a fresh reservation below, which nothing else has seen.
 * Everything else goes through axi_os_unmap. */
static void unmap(void *p, size_t size) {
  int saved = errno;
  munmap(p, size);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.munmap_calls, 1);
}

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

/* post: size bytes of address space no access may touch (PROT_NONE: no memory, and no
 * commit charge under overcommit), or NULL (errno kept). */
void *axi_os_reserve(size_t size) {
  int saved = errno;
  void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.mmap_calls, 1);
  return p == MAP_FAILED ? NULL : p;
}

/* pre: size, align and guard multiples of the OS page; align a power of two.
 * post: the start of size bytes of inaccessible address space aligned to align, with guard
 * inaccessible bytes mapped right before it (so that no other mapping lands there), or NULL.
 * One reservation, trimmed at both ends. */
void *axi_os_reserve_aligned(size_t size, size_t align, size_t guard) {
  size_t span = guard + size + align;
  char *p = axi_os_reserve(span);
  if (!p)
    return NULL;
  uintptr_t start = ((uintptr_t)p + guard + align - 1) & ~(align - 1);
  if (start - guard > (uintptr_t)p)
    unmap(p, start - guard - (uintptr_t)p);
  if ((uintptr_t)p + span > start + size)
    unmap((void *)(start + size), (uintptr_t)p + span - (start + size));
  return (void *)start;
}

/* pre: [p, p + size) inside a mapping of ours, p and size multiples of the OS page.
 * post: readable and writable (access) or not at all, true; false when the kernel refused. */
bool axi_os_protect(void *p, size_t size, bool access) {
  int saved = errno;
  int r = mprotect(p, size, access ? PROT_READ | PROT_WRITE : PROT_NONE);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.mprotect_calls, 1);
  return r == 0;
}

/* pre: [p, p + size) inside a mapping of ours, p and size multiples of the OS page.
 * post: readable and writable (and taking memory tags when tagging: mte.c), true; false when
 * the kernel refused (no memory to commit). */
bool axi_os_commit(void *p, size_t size) {
  int saved = errno;
  int r = mprotect(p, size, PROT_READ | PROT_WRITE | (axi_mte ? AX_ARCH_PROT_MTE : 0));
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.mprotect_calls, 1);
  return r == 0;
}

/* In leak mode the checker's scan at exit reads what is mapped while other threads run: an
 * unmap, and a resize or move of a mapping, waits while it runs (leak_gate.c's axi_leak_hold,
 * through its seam: state.h). */
void axi_os_unmap(void *p, size_t size) {
  bool held = axi_seams.unmap_hold != NULL;
  if (held)
    axi_seams.unmap_hold(NULL);
  unmap(p, size);
  if (held)
    axi_seams.unmap_release();
}

/* pre: size a multiple of the OS page; align a power of two >= AX_SEGMENT_SIZE; off a
 * multiple of AX_SEGMENT_SIZE below align.
 * post: size bytes at a start m with m + off a multiple of align (so m is segment-aligned),
 * or NULL. A size that is a multiple of align usually takes one mmap: consecutive mappings
 * land next to each other, so once one is aligned the next ones tend to be too. Any other
 * size (huge blocks) lands aligned by chance only, so it over-reserves by align and trims at
 * once (trying first cost a mapping and an unmapping more per huge block in 9 of 10 cases
 * under wl_bitset's growth). */
void *axi_os_map_aligned(size_t size, size_t align, size_t off) {
  if (size > AX_ADDRESS_LIMIT || align > AX_ADDRESS_LIMIT - size)
    return NULL; /* no address space has room for it: no system call */
  char *p;
  if ((size & (align - 1)) == 0) {
    p = axi_os_map(size);
    if (!p || (((uintptr_t)p + off) & (align - 1)) == 0)
      return p;
    unmap(p, size);
  }
  if (!(p = axi_os_map(size + align)))
    return NULL;
  uintptr_t start = (((uintptr_t)p + off + align - 1) & ~(align - 1)) - off;
  if (start < (uintptr_t)p)
    start += align;
  if (start > (uintptr_t)p)
    unmap(p, start - (uintptr_t)p);
  uintptr_t end = (uintptr_t)p + size + align;
  if (end > start + size)
    unmap((void *)(start + size), end - (start + size));
  return (void *)start;
}

/* Grow or shrink a mapping in place. post: true when it now spans new_size bytes; false
 * with the mapping untouched when the kernel cannot do it without moving. */
bool axi_os_remap(void *p, size_t old_size, size_t new_size) {
  bool held = axi_seams.unmap_hold != NULL; /* (see axi_os_unmap) */
  if (held)
    axi_seams.unmap_hold(NULL);
  int saved = errno;
  void *q = mremap(p, old_size, new_size, 0);
  errno = saved;
  if (held)
    axi_seams.unmap_release();
  ax_atomic_fetch_add_relaxed(&axi_stats.mremap_calls, 1);
  return q != MAP_FAILED;
}

/* Move a mapping's pages onto `target` (a mapping of new_size bytes, which it replaces):
 * page tables move, no byte is copied. The old range is given back to the OS by this call.
 * post: true on success; false with both mappings untouched. */
bool axi_os_move(void *p, size_t old_size, size_t new_size, void *target) {
  bool held = axi_seams.unmap_hold != NULL; /* (see axi_os_unmap) */
  if (held)
    axi_seams.unmap_hold(NULL);
  int saved = errno;
  void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, target);
  errno = saved;
  if (held)
    axi_seams.unmap_release();
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

/* ---- barriers on other threads ---------------------------------------------------------- */
/* membarrier(2)'s private expedited command: every running thread of the process executes a
 * full memory barrier before the call returns (the others pass one as they are scheduled). A
 * thread whose side of a handshake is a plain store and a compiler barrier (remote.c, the
 * steal) is then ordered as if it had fenced. Registered once at process init; a kernel
 * without it, or a filter that refuses it, leaves axi_os_barrier false. */
static bool barrier_ok;

static long membarrier(int cmd) {
  int saved = errno;
  long r = syscall(__NR_membarrier, cmd, 0, 0);
  errno = saved;
  return r;
}

void axi_os_barrier_init(void) {
  long have = membarrier(MEMBARRIER_CMD_QUERY);
  barrier_ok = have > 0 && (have & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
               membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

bool axi_os_barrier(void) {
  if (!ax_peek(&barrier_ok))
    return false;
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
    return true;
  /* (a process that lost its registration: register again, once) */
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
    return true;
  ax_poke(&barrier_ok, false);
  return false;
}

bool axi_os_barrier_available(void) { return ax_peek(&barrier_ok); }

/* ---- transparent huge pages ----------------------------------------------------------- */
/* What the kernel offers (/sys/kernel/mm/transparent_hugepage, or AXMALLOC_THP_SYSFS's
 * directory in tests): its mode and its huge page size, which depends on the base page
 * (2 MiB with 4 KiB pages, 32 MiB with 16 KiB, 512 MiB with 64 KiB on AArch64): read, never
 * assumed. */

/* The first len bytes of dir/name, NUL-terminated; post: the length read, or -1. */
static long read_small(const char *dir, const char *name, char *buf, size_t len) {
  char path[256];
  size_t n = 0;
  for (const char *s = dir; *s && n < sizeof path - 2; s++)
    path[n++] = *s;
  path[n++] = '/';
  for (const char *s = name; *s && n < sizeof path - 1; s++)
    path[n++] = *s;
  path[n] = 0;
  int fd = axi_os_open(path, O_RDONLY, 0);
  if (fd < 0)
    return -1;
  long r = axi_os_read(fd, buf, len - 1);
  axi_os_close(fd);
  buf[r > 0 ? r : 0] = 0;
  return r;
}

/* "always [madvise] never": the word in brackets, or NULL. */
static const char *bracketed(const char *s) {
  for (; *s && *s != '['; s++)
    ;
  return *s == '[' ? s + 1 : NULL;
}

static enum ax_thp_kernel kernel_mode(const char *s) {
  if (!(s = bracketed(s)))
    return AX_THP_KERNEL_ABSENT;
  if (s[0] == 'a' && s[1] == 'l')
    return AX_THP_KERNEL_ALWAYS;
  if (s[0] == 'm')
    return AX_THP_KERNEL_MADVISE;
  return AX_THP_KERNEL_NEVER;
}

/* post: *size the kernel's huge page size (0 when it has none to offer), and its mode. */
enum ax_thp_kernel axi_os_thp_read(const char *dir, size_t *size) {
  int saved = errno;
  char buf[128];
  enum ax_thp_kernel mode = AX_THP_KERNEL_ABSENT;
  uint64_t n = 0;
  if (read_small(dir, "enabled", buf, sizeof buf) > 0)
    mode = kernel_mode(buf);
  if (mode != AX_THP_KERNEL_ABSENT && read_small(dir, "hpage_pmd_size", buf, sizeof buf) > 0)
    for (const char *s = buf; *s >= '0' && *s <= '9'; s++)
      n = n * 10 + (uint64_t)(*s - '0');
  errno = saved;
  /* a size that is no power of two above the base page is no huge page we can align to */
  if (mode == AX_THP_KERNEL_NEVER || n <= axi_os_page || (n & (n - 1)))
    n = 0;
  if (!n && mode != AX_THP_KERNEL_NEVER)
    mode = AX_THP_KERNEL_ABSENT;
  *size = (size_t)n;
  return mode;
}

/* The kernel's defrag setting ("always defer defer+madvise [madvise] never"). */
enum ax_thp_defrag axi_os_thp_defrag(const char *dir) {
  int saved = errno;
  char buf[128];
  enum ax_thp_defrag d = AX_THP_DEFRAG_ABSENT;
  const char *s = read_small(dir, "defrag", buf, sizeof buf) > 0 ? bracketed(buf) : NULL;
  if (s)
    d = s[0] == 'a'   ? AX_THP_DEFRAG_ALWAYS
        : s[0] == 'm' ? AX_THP_DEFRAG_MADVISE
        : s[0] == 'n' ? AX_THP_DEFRAG_NEVER
        : s[5] == '+' ? AX_THP_DEFRAG_DEFER_MADVISE
                      : AX_THP_DEFRAG_DEFER;
  errno = saved;
  return d;
}

/* Ask for huge pages over [p, p + size) (on), or for none (off): a flag of the mapping,
 * which mremap carries along. post: false when the kernel refused (nothing changed). */
bool axi_os_thp_advise(void *p, size_t size, bool on) {
  int saved = errno;
  int rc = madvise(p, size, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  errno = saved;
  ax_atomic_fetch_add_relaxed(&axi_stats.madvise_calls, 1);
  return rc == 0;
}

/* ---- files ----------------------------------------------------------------------------- */
/* The system calls themselves, through syscall(), which is not a cancellation point, as
 * glibc's open, read, write and close are: a heap profile written by a thread with a
 * cancellation pending, or by malloc or free (a dump the signal asked for), must neither stop
 * half way nor end the thread with the profile's lock held (t_prof_cancel). As libc's: -1
 * and errno on failure. */

int axi_os_open(const char *path, int flags, unsigned mode) {
  return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode);
}

int axi_os_gettid(void) { return (int)syscall(SYS_gettid); }

long axi_os_read(int fd, void *buf, size_t n) { return syscall(SYS_read, fd, buf, n); }

long axi_os_write(int fd, const void *buf, size_t n) { return syscall(SYS_write, fd, buf, n); }

int axi_os_close(int fd) { return (int)syscall(SYS_close, fd); }

int axi_os_fcntl(int fd, int cmd, int arg) { return (int)syscall(SYS_fcntl, fd, cmd, arg); }

/* The working directory into buf (the kernel's: ENOENT when it was removed, ERANGE when it
 * does not fit); false and errno on failure. */
bool axi_os_getcwd(char *buf, size_t size) { return syscall(SYS_getcwd, buf, size) > 0; }

/* access(path, mode) (faccessat: AArch64 has no access system call) */
int axi_os_access(const char *path, int mode) {
  return (int)syscall(SYS_faccessat, AT_FDCWD, path, mode);
}

/* The symbols of the modes' stacks (modes/stacks/symbolize.c): a file read whole, read-only;
 * its size; where a link points (/proc/self/exe). */
void *axi_os_map_file(int fd, size_t size) {
  void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}

long axi_os_file_size(int fd) {
  long size = syscall(SYS_lseek, fd, 0L, SEEK_END);
  return size >= 0 && syscall(SYS_lseek, fd, 0L, SEEK_SET) == 0 ? size : -1;
}

long axi_os_readlink(const char *path, char *buf, size_t n) {
  return syscall(SYS_readlinkat, AT_FDCWD, path, buf, n);
}

/* ---- waiting ----------------------------------------------------------------------------- */

/* Both targets are little-endian: a word's low half, the futex, is at its address. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the futex is the word's low half");

/* Sleep while the low half of *w is v, ms milliseconds at most (a wake, a signal or a
 * spurious return end it sooner: the caller looks again). The system call itself: not a
 * cancellation point. errno kept. */
void axi_os_wait(ax_atomic_word *w, uint32_t v, unsigned ms) {
  struct timespec t = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
  int saved = errno;
  ax_atomic_fetch_add_relaxed(&axi_stats.sleeps, 1); /* (ax_ctl's stats.sleeps) */
  syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, &t, NULL, 0);
  errno = saved;
}

/* Up to n threads sleeping in axi_os_wait on w return (UINT32_MAX: every one). errno kept. */
void axi_os_wake(ax_atomic_word *w, uint32_t n) {
  int saved = errno;
  syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, n > 0x7fffffffu ? 0x7fffffffu : n, NULL, NULL, 0);
  errno = saved;
}

/* ---- time and randomness ------------------------------------------------------------ */

uint64_t axi_now_ms(void) {
  struct timespec ts;
  int saved = errno;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* vDSO: no system call */
  errno = saved;
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* CPU time the calling thread has used, in ns: kernel time in its page faults included, time
 * other threads ran on its CPU not (thp.c times its probes so). A system call. */
uint64_t axi_os_cpu_ns(void) {
  struct timespec ts;
  int saved = errno;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  errno = saved;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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

/* ---- address space left ----------------------------------------------------------------- */

/* The address space the process may still map under its RLIMIT_AS: the soft limit less its
 * mapped size (the first field of /proc/self/statm, in the kernel's pages, which
 * AXMALLOC_PAGE_SIZE does not change). Read when huge.c is about to reserve address space
 * ahead of a growing block: one getrlimit without a limit, three more calls with one.
 * post: SIZE_MAX without a limit; 0 when over it or when the size cannot be read. errno kept. */
size_t axi_os_address_room(void) {
  int saved = errno;
  struct rlimit rl;
  size_t room = SIZE_MAX;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    char buf[64];
    long n = -1;
    int fd = axi_os_open("/proc/self/statm", O_RDONLY, 0);
    if (fd >= 0) {
      n = axi_os_read(fd, buf, sizeof buf);
      axi_os_close(fd);
    }
    uint64_t pages = 0;
    for (long i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
      pages = pages * 10 + (uint64_t)(buf[i] - '0');
    uint64_t used = pages * (uint64_t)getpagesize();
    room = n > 0 && used < rl.rlim_cur ? (size_t)(rl.rlim_cur - used) : 0;
  }
  errno = saved;
  return room;
}
