/* SPDX-License-Identifier: MIT */
/* Heap profiles out: files in gperftools' heap-profile text format, the leak report at exit.
 *
 *   heap profile:  <in-use samples>: <bytes> [<allocated samples>: <bytes>] @ heap_v2/<rate>
 *   <n>: <bytes> [<n>: <bytes>] @ <return addresses, the caller of malloc first>
 *   ...
 *   MAPPED_LIBRARIES:
 *   <this process's /proc/self/maps>
 *
 * One line per stack and block size, raw sample counts: google-pprof scales each line by
 * 1 / (1 - exp(-size / rate)) itself ("heap_v2"), and symbolizes through the maps.
 * Files: <prefix>.<pid>.<seq>.heap (AXMALLOC_PROF_SIGNAL, ax_prof_dump(NULL)),
 * <prefix>.<pid>.<seq>.interval.heap and .peak.heap (AXMALLOC_PROF_INTERVAL, _GDUMP),
 * <prefix>.<pid>.final.heap at exit, <prefix>.<pid>.leaks.heap (AXMALLOC_PROF_LEAKS=1: the samples
 * still live at exit). Nothing here allocates: a signal handler dumps too. Every dump runs
 * under the profile's lock, so its buffers are static (a dump costs a signal handler's stack
 * a few hundred bytes: t_stack), and every file operation is the system call itself (os.c):
 * no cancellation point while the lock is held (t_prof_cancel).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hooks.h"
#include "lock.h"
#include "modes/prof_dump.h"
#include "options.h"
#include "os.h"
#include "print.h"
#include "state.h"

ax_prof_state_t axi_prof; /* the profile: its stacks and their samples (prof.c) */

/* ---- a buffered writer ------------------------------------------------------------------- */

typedef struct out {
  int fd;
  bool ok;
  unsigned n;
  char buf[4096];
} out_t;

static void out_flush(out_t *o) {
  for (unsigned done = 0; done < o->n && o->ok;) {
    long w = axi_os_write(o->fd, o->buf + done, o->n - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      o->ok = false;
    else
      done += (unsigned)w;
  }
  o->n = 0;
}

static void out_mem(out_t *o, const char *s, size_t len) {
  while (len) {
    if (o->n == sizeof o->buf)
      out_flush(o);
    size_t k = sizeof o->buf - o->n < len ? sizeof o->buf - o->n : len;
    memcpy(o->buf + o->n, s, k);
    o->n += (unsigned)k;
    s += k;
    len -= k;
  }
}

static void out_str(out_t *o, const char *s) { out_mem(o, s, strlen(s)); }

/* v in base 10 or 16, right-aligned in width characters */
static void out_u(out_t *o, uint64_t v, unsigned base, unsigned width) {
  char tmp[24];
  unsigned n = 0;
  do {
    tmp[sizeof tmp - ++n] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v);
  while (width > n && width--)
    out_mem(o, " ", 1);
  out_mem(o, tmp + sizeof tmp - n, n);
}

/* ---- profiles ------------------------------------------------------------------------------ */

static uint64_t live_of(const ax_prof_bucket_t *b) {
  uint64_t a = ax_atomic_load_relaxed(&b->allocs), f = ax_atomic_load_relaxed(&b->frees);
  return a > f ? a - f : 0; /* (a free may be counted before its bucket's alloc is seen) */
}

/* "<n>: <bytes> [<n>: <bytes>]" */
static void out_counts(out_t *o, uint64_t n1, uint64_t s1, uint64_t n2, uint64_t s2) {
  out_u(o, n1, 10, 6);
  out_str(o, ": ");
  out_u(o, s1, 10, 8);
  out_str(o, " [");
  out_u(o, n2, 10, 6);
  out_str(o, ": ");
  out_u(o, s2, 10, 8);
  out_str(o, "]");
}

/* /proc/self/maps, read straight into o's buffer. */
static void out_maps(out_t *o) {
  out_str(o, "\nMAPPED_LIBRARIES:\n");
  int fd = axi_os_open("/proc/self/maps", O_RDONLY, 0);
  if (fd < 0)
    return;
  for (long r;;) {
    if (o->n == sizeof o->buf)
      out_flush(o);
    if ((r = axi_os_read(fd, o->buf + o->n, sizeof o->buf - o->n)) == 0)
      break;
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    o->n += (unsigned)r;
  }
  axi_os_close(fd);
}

/* The whole profile, or (leaks) only what is still live, as if nothing else had been
 * allocated. pre: the lock is held. */
static void write_profile(out_t *o, bool leaks) {
  uint64_t n1 = 0, s1 = 0, n2 = 0, s2 = 0;
  for (unsigned i = 0; i < AX_PROF_TABLE; i++)
    for (const ax_prof_bucket_t *b = axi_prof.table[i]; b; b = b->next) {
      uint64_t live = live_of(b), all = leaks ? live : ax_atomic_load_relaxed(&b->allocs);
      n1 += live, s1 += live * b->size, n2 += all, s2 += all * b->size;
    }
  out_str(o, "heap profile: ");
  out_counts(o, n1, s1, n2, s2);
  out_str(o, " @ heap_v2/");
  out_u(o, axi_prof.rate, 10, 0);
  out_str(o, "\n");
  for (unsigned i = 0; i < AX_PROF_TABLE; i++)
    for (const ax_prof_bucket_t *b = axi_prof.table[i]; b; b = b->next) {
      uint64_t live = live_of(b), all = leaks ? live : ax_atomic_load_relaxed(&b->allocs);
      if (!all)
        continue;
      out_counts(o, live, live * b->size, all, all * b->size);
      out_str(o, " @");
      for (uint32_t k = 0; k < b->depth || k == 0; k++) { /* pprof wants one address at least */
        out_str(o, " 0x");
        out_u(o, b->depth ? b->pc[k] : 0, 16, 0);
      }
      out_str(o, "\n");
    }
  out_maps(o);
}

/* The writer and the path of the dump in progress: one at a time, under the lock. */
static out_t out;
static char path_buf[sizeof out.buf];

/* post: 0, or the errno of what failed. pre: the lock is held. */
static int dump_locked(const char *path, bool leaks) {
  int fd = axi_os_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return errno;
  AX_HOOK(AX_HOOK_DUMP, NULL);
  out.fd = fd;
  out.ok = true;
  out.n = 0;
  write_profile(&out, leaks);
  out_flush(&out);
  int err = out.ok ? 0 : errno ? errno : EIO;
  if (axi_os_close(fd) != 0 && !err)
    err = errno;
  return err;
}

/* <prefix>.<pid>.<tag>.heap, or <prefix>.<pid>.<seq>.heap when tag is NULL, and
 * <prefix>.<pid>.<seq>.<kind>.heap with a kind, in path_buf (built in out's buffer, which no
 * dump uses yet). pre: the lock is held. */
static const char *profile_path_kind(const char *tag, const char *kind) {
  out.fd = -1;
  out.n = 0;
  out_str(&out, axi_prof.prefix);
  out_str(&out, ".");
  out_u(&out, (uint64_t)getpid(), 10, 0);
  out_str(&out, ".");
  if (tag)
    out_str(&out, tag);
  else
    out_u(&out, ax_atomic_fetch_add_relaxed(&axi_prof.seq, 1), 10, 0);
  if (kind)
    out_str(&out, "."), out_str(&out, kind);
  out_str(&out, ".heap");
  size_t n = out.n < sizeof path_buf - 1 ? out.n : sizeof path_buf - 1;
  memcpy(path_buf, out.buf, n);
  path_buf[n] = 0;
  return path_buf;
}

static const char *profile_path(const char *tag) { return profile_path_kind(tag, NULL); }

static int dump_numbered_locked(void) { return dump_locked(profile_path(NULL), false); }

int ax_prof_dump(const char *path) {
  if (!axi_prof_on)
    return EINVAL;
  int saved = errno;
  axi_lock(&axi_prof.lock);
  int err = path ? dump_locked(path, false) : dump_numbered_locked();
  axi_prof_unlock();
  errno = saved;
  return err;
}

/* The dump signal: now, unless the table is locked (perhaps by the very code this handler
 * interrupted): then whoever unlocks it dumps (axi_prof_unlock). */
static void on_signal(int sig) {
  int saved = errno;
  if (axi_trylock(&axi_prof.lock)) {
    dump_numbered_locked();
    axi_unlock(&axi_prof.lock);
  } else {
    ax_atomic_store_relaxed(&axi_prof.dump_pending, 1);
  }
  errno = saved;
}

/* Every unlock of the profile's lock: then the dump the signal asked for while it was held,
 * if any (a dump makes no cancellation point of malloc or free: see above). */
void axi_prof_unlock(void) {
  axi_unlock(&axi_prof.lock);
  while (ax_atomic_load_relaxed(&axi_prof.dump_pending) &&
         ax_atomic_xchg_acq_rel(&axi_prof.dump_pending, 0)) {
    int saved = errno;
    axi_lock(&axi_prof.lock);
    dump_numbered_locked();
    axi_unlock(&axi_prof.lock);
    errno = saved;
  }
}

/* ---- the leak report ------------------------------------------------------------------------ */

/* e^x, for the report's scaling (no libm): 2^k e^r, |r| <= ln2 / 2, r's Taylor series. */
double axi_prof_exp(double x) {
  if (x < -700)
    return 0;
  double kf = x * 1.4426950408889634;
  int k = (int)(kf < 0 ? kf - 0.5 : kf + 0.5);
  double r = x - k * 0.6931471805599453, s = 1, term = 1;
  for (int i = 1; i <= 14; i++) {
    term *= r / i;
    s += term;
  }
  uint64_t bits = (uint64_t)(k + 1023) << 52;
  double p;
  memcpy(&p, &bits, sizeof p);
  return s * p;
}

/* Samples stand for 1 / (1 - e^(-size/rate)) allocations each (what pprof scales by). */
static double scale_of(size_t size) {
  return 1.0 / (1.0 - axi_prof_exp(-(double)size / (double)axi_prof.rate));
}

/* ---- profiles by the program's own measure ---------------------------------------------- */

/* AXMALLOC_PROF_INTERVAL (jemalloc's lg_prof_interval): a profile each time the bytes
 * allocated pass a multiple of the interval. Nothing counts bytes on the fast paths, so the
 * samples estimate them as pprof does: a sample of size bytes stands for size / (1 -
 * e^(-size/rate)) bytes allocated (the rate for small blocks, the size itself for large ones);
 * over n samples the estimate is within about 1/sqrt(n) of the truth, and t_prof_dumps' 16
 * intervals of 1 MiB at a 4 KiB rate give 15-17 profiles.
 * AXMALLOC_PROF_GDUMP (jemalloc's prof_gdump): a profile each time the bytes mapped reach a new
 * peak, seen at the first sample after it: mappings grow by segments (4 MiB) and huge
 * blocks, so a program that grows writes one a segment at most, and one that shrinks and
 * grows back to where it was writes none. Files: <prefix>.<pid>.<seq>.interval.heap and
 * <prefix>.<pid>.<seq>.peak.heap, numbered with the others. */
void axi_prof_dump_due(size_t size) {
  bool interval = false, peak = false;
  if (axi_prof.interval) {
    uint64_t est = (uint64_t)((double)size * scale_of(size)), every = axi_prof.interval;
    uint64_t before = ax_atomic_fetch_add_relaxed(&axi_prof.allocated, est);
    interval = before / every != (before + est) / every;
  }
  if (axi_prof.gdump) {
    uintptr_t mapped = ax_atomic_load_relaxed(&axi_stats.os_reserved_peak),
              seen = ax_atomic_load_relaxed(&axi_prof.gdump_mapped);
    while (mapped > seen && !peak) /* (one thread dumps a peak) */
      peak = ax_atomic_cas_acq_rel(&axi_prof.gdump_mapped, &seen, mapped);
  }
  if (!interval && !peak)
    return;
  int saved = errno;
  axi_lock(&axi_prof.lock);
  dump_locked(profile_path_kind(NULL, interval ? "interval" : "peak"), false);
  axi_prof_unlock();
  errno = saved;
}

static void report_frame(uintptr_t pc) {
  Dl_info info;
  if (dladdr((void *)(pc - 1), &info) && info.dli_fname) {
    if (info.dli_sname)
      axi_write("axmalloc:     %p %s+%zx (%s+%zx)\n", (void *)pc, info.dli_sname,
                (size_t)(pc - (uintptr_t)info.dli_saddr), info.dli_fname,
                (size_t)(pc - (uintptr_t)info.dli_fbase));
    else
      axi_write("axmalloc:     %p (%s+%zx)\n", (void *)pc, info.dli_fname,
                (size_t)(pc - (uintptr_t)info.dli_fbase));
  } else {
    axi_write("axmalloc:     %p\n", (void *)pc);
  }
}

/* Like jemalloc's leak summary: the estimated totals, then the largest stacks, without
 * allocating. pre: the lock is held. */
static void report_leaks(const char *path, int err) {
  double bytes = 0, objs = 0;
  unsigned stacks = 0;
  for (unsigned i = 0; i < AX_PROF_TABLE; i++)
    for (const ax_prof_bucket_t *b = axi_prof.table[i]; b; b = b->next) {
      uint64_t live = live_of(b);
      if (!live)
        continue;
      stacks++;
      objs += (double)live * scale_of(b->size);
      bytes += (double)live * scale_of(b->size) * (double)b->size;
    }
  axi_write_to_saved_stderr();
  if (!stacks) {
    axi_write("axmalloc: leak summary: no sampled block was live at exit (one sample per %llu "
              "bytes on average)\n",
              (unsigned long long)axi_prof.rate);
    return;
  }
  axi_write("axmalloc: leak summary: ~%llu bytes in ~%llu objects from %d stacks (one sample "
            "per %llu bytes on average)\n",
            (unsigned long long)bytes, (unsigned long long)objs, (int)stacks,
            (unsigned long long)axi_prof.rate);
  /* the 10 largest, by estimated bytes (then address): a selection pass each */
  double below = 1e300;
  const ax_prof_bucket_t *below_b = NULL;
  for (int shown = 0; shown < 10; shown++) {
    const ax_prof_bucket_t *top = NULL;
    double top_bytes = 0;
    for (unsigned i = 0; i < AX_PROF_TABLE; i++)
      for (const ax_prof_bucket_t *b = axi_prof.table[i]; b; b = b->next) {
        double e = (double)live_of(b) * scale_of(b->size) * (double)b->size;
        bool under = e < below || (e == below && b < below_b);
        if (live_of(b) && under && (!top || e > top_bytes || (e == top_bytes && b > top)))
          top = b, top_bytes = e;
      }
    if (!top)
      break;
    below = top_bytes, below_b = top;
    axi_write("axmalloc: ~%llu bytes in ~%llu objects of %zu bytes allocated at:\n",
              (unsigned long long)top_bytes,
              (unsigned long long)((double)live_of(top) * scale_of(top->size)), top->size);
    for (uint32_t k = 0; k < top->depth && k < 8; k++)
      report_frame(top->pc[k]);
  }
  char e[24];
  if (err)
    axi_write("axmalloc: could not write the leak profile %s (%s)\n", path, axi_strerror(err, e));
  else
    axi_write("axmalloc: leak profile: %s (google-pprof --text <program> %s)\n", path, path);
}

__attribute__((destructor)) static void prof_at_exit(void) {
  if (!axi_prof_on)
    return;
  int saved = errno;
  axi_lock(&axi_prof.lock);
  const char *path = profile_path("final");
  int err = dump_locked(path, false);
  if (err) {
    axi_write_to_saved_stderr();
    char e[24];
    axi_write("axmalloc: could not write the heap profile %s (%s)\n", path, axi_strerror(err, e));
  }
  if (axi_prof.leaks) {
    path = profile_path("leaks");
    report_leaks(path, dump_locked(path, true));
  }
  axi_unlock(&axi_prof.lock);
  errno = saved;
}

/* ---- options ------------------------------------------------------------------------------ */

/* The prefix made absolute, relative to the working directory at start-up (a program that
 * changes directory later writes its profiles where the user looked), with room left in
 * path_buf for ".<pid>.<seq>.heap". */
static char prefix_buf[sizeof path_buf - 64];

/* "<prefix>" or "<prefix> (the default)", as the user gave it: the start of a message. */
static void say_prefix(void) {
  bool env = axi_option_from_env(AXI_OPTION_PROF_FILE);
  axi_write("axmalloc: AXMALLOC_PROF_FILE=%s%s: ", axi_prof.prefix, env ? "" : " (the default)");
}

/* post: prefix_buf holds the working directory, '/' and p (less its "./"s); false when it
 * cannot, said, and then the profiles go where p leads from the directory of the moment. */
static bool prefix_absolute(const char *p) {
  char e[24];
  if (!axi_os_getcwd(prefix_buf, sizeof prefix_buf)) {
    say_prefix();
    axi_write("the working directory is unknown (%s): the prefix is used as it is\n",
              axi_strerror(errno, e));
    return false;
  }
  while (p[0] == '.' && p[1] == '/')
    for (p += 2; *p == '/'; p++)
      ;
  size_t n = strlen(prefix_buf), len = strlen(p);
  if (prefix_buf[n - 1] != '/' && n < sizeof prefix_buf)
    prefix_buf[n++] = '/';
  if (n + len + 2 >= sizeof prefix_buf) { /* (2: prefix_check's) */
    say_prefix();
    axi_write("longer than %zu bytes with the working directory: the prefix is used as it is\n",
              sizeof prefix_buf - 3);
    return false;
  }
  memcpy(prefix_buf + n, p, len + 1);
  return true;
}

/* Said now, not at exit: the prefix's directory must exist and take new files. Asked of
 * "<dir>/.", so that a file where the directory should be is "Not a directory". pre: two
 * bytes of prefix_buf free past the prefix. */
static void prefix_check(void) {
  char *cut = strrchr(prefix_buf, '/'), keep[2];
  if (!cut)
    return;
  memcpy(keep, cut + 1, sizeof keep);
  memcpy(cut + 1, ".", 2);
  if (axi_os_access(prefix_buf, W_OK | X_OK) != 0) {
    char e[24];
    int err = errno;
    *(cut == prefix_buf ? cut + 1 : cut) = 0; /* the directory as it is named: "/" or "/a/b" */
    say_prefix();
    axi_write("cannot write profiles in %s (%s)\n", prefix_buf, axi_strerror(err, e));
    *cut = '/';
  }
  memcpy(cut + 1, keep, sizeof keep);
}

/* axi_prof.prefix made absolute and checked. pre: called once by axi_prof_dump_init. */
static void prefix_init(void) {
  const char *p = axi_prof.prefix;
  if (p[0] != '/') {
    if (!prefix_absolute(p))
      return;
  } else if (strlen(p) + 2 >= sizeof prefix_buf) { /* (2: prefix_check's) */
    say_prefix();
    axi_write("longer than %zu bytes: profiles may not be written\n", sizeof prefix_buf - 3);
    return;
  } else {
    strcpy(prefix_buf, p);
  }
  prefix_check();
  axi_prof.prefix = prefix_buf;
  axi_option_resolved(AXI_OPTION_PROF_FILE, prefix_buf);
}

/* AXMALLOC_PROF_SIGNAL (options.c parsed it): a dump on that signal. */
static void signal_init(void) {
  int sig = (int)axi_option_num(AXI_OPTION_PROF_SIGNAL);
  if (!sig)
    return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, NULL) == 0)
    axi_prof.signal = sig;
  else /* (none that options.c takes, with glibc: another C library may keep one) */
    axi_option_reject(AXI_OPTION_PROF_SIGNAL, "is a signal that cannot be caught", true);
}

/* pre: called once by axi_prof_init. */
void axi_prof_dump_init(void) {
  int saved = errno;
  axi_write_keep_stderr(); /* the leak report and errors at exit must find stderr */
  prefix_init();
  signal_init();
  errno = saved;
}
