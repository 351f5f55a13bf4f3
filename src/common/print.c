/* SPDX-License-Identifier: MIT */
/* Output without stdio and without allocation: messages, reports, fatal errors.
 *
 * Callable from anywhere, a signal handler or a thread with a cancellation pending
 * included: one small buffer on the stack, written with a system call that is not a
 * cancellation point.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "print.h"

#include "os.h"
#include "state.h"

static int out_fd = 2;        /* where axi_write goes */
static int saved_err_fd = -1; /* a private copy of stderr, for the report at exit */

/* Programs such as coreutils close stderr in an atexit handler, before our report: keep a
 * copy of it (AXMALLOC_STATS=1). */
void axi_write_keep_stderr(void) {
  int saved = errno;
  saved_err_fd = axi_os_fcntl(2, F_DUPFD_CLOEXEC, 3);
  errno = saved;
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
 * error would cancel the thread instead of aborting. axi_os_write is the system call alone. */
static void out_nocancel(const char *buf, size_t n) {
  int saved = errno;
  while (n > 0) {
    long w = axi_os_write(out_fd, buf, n);
    if (w <= 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    buf += w;
    n -= (size_t)w;
  }
  errno = saved;
}

/* A number, padded to its width: right-aligned, or left-aligned with '-' (reports' columns). */
static char *put_num(char *o, char *end, uint64_t v, unsigned base, bool neg, unsigned width,
                     bool left) {
  char tmp[24], *t = tmp;
  if (neg)
    *t++ = '-';
  t = put_u(t, tmp + sizeof tmp, v, base);
  size_t n = (size_t)(t - tmp), pad = width > n ? width - n : 0;
  for (; !left && pad && o < end; pad--)
    *o++ = ' ';
  for (t = tmp; n && o < end; n--)
    *o++ = *t++;
  for (; left && pad && o < end; pad--)
    *o++ = ' ';
  return o;
}

/* A printf subset: %s %d %zu %llu %p %x, with a width (%8llu, %-12s) for reports' columns.
 * Into a 256-byte buffer, written out whenever it fills: a report or a fatal error on a small
 * stack or in a signal handler costs 400 bytes of it at most (t_stack). Not cancellable. */
static void vwrite(const char *fmt, va_list ap) {
  char buf[256], *o = buf, *end = buf + sizeof buf;
  for (; *fmt; fmt++) {
    if (o >= end - 64) { /* (room for one padded number) */
      out_nocancel(buf, (size_t)(o - buf));
      o = buf;
    }
    if (*fmt != '%') {
      *o++ = *fmt;
      continue;
    }
    fmt++;
    bool left = *fmt == '-';
    fmt += left;
    unsigned width = 0;
    for (; *fmt >= '0' && *fmt <= '9'; fmt++)
      width = width * 10 + (unsigned)(*fmt - '0');
    if (width > 32)
      width = 32;
    if (*fmt == 'z' || *fmt == 'l') {
      while (*fmt == 'z' || *fmt == 'l')
        fmt++;
      o = put_num(o, end, va_arg(ap, uint64_t), *fmt == 'x' ? 16 : 10, false, width, left);
    } else if (*fmt == 'd') {
      int v = va_arg(ap, int);
      o = put_num(o, end, v < 0 ? -(uint64_t)v : (uint64_t)v, 10, v < 0, width, left);
    } else if (*fmt == 'x') {
      o = put_num(o, end, va_arg(ap, unsigned), 16, false, width, left);
    } else if (*fmt == 'p') {
      if (o + 2 <= end) {
        *o++ = '0';
        *o++ = 'x';
      }
      o = put_u(o, end, (uintptr_t)va_arg(ap, void *), 16);
    } else if (*fmt == 's') {
      const char *s = va_arg(ap, const char *);
      size_t n = strlen(s);
      for (size_t pad = width > n ? width - n : 0; !left && pad && o < end; pad--)
        *o++ = ' ';
      for (; *s; s++) {
        if (o == end) {
          out_nocancel(buf, sizeof buf);
          o = buf;
        }
        *o++ = *s;
      }
      for (size_t pad = width > n ? width - n : 0; left && pad && o < end; pad--)
        *o++ = ' ';
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
  if (axi_os_fcntl(2, F_GETFD, 0) < 0 && saved_err_fd >= 0)
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

/* The errors a file operation of ours meets (the profiles): glibc's words for them. */
const char *axi_strerror(int err, char *buf) {
  static const struct {
    int err;
    const char *text;
  } names[] = {{ENOENT, "No such file or directory"}, {EACCES, "Permission denied"},
               {EPERM, "Operation not permitted"},    {EROFS, "Read-only file system"},
               {ENOTDIR, "Not a directory"},          {EISDIR, "Is a directory"},
               {ENAMETOOLONG, "File name too long"},  {ELOOP, "Too many levels of symbolic links"},
               {ENOSPC, "No space left on device"},   {EDQUOT, "Disk quota exceeded"},
               {EMFILE, "Too many open files"},       {ENFILE, "Too many open files in system"},
               {EIO, "Input/output error"},           {ERANGE, "Numerical result out of range"}};
  for (unsigned i = 0; i < sizeof names / sizeof *names; i++)
    if (names[i].err == err)
      return names[i].text;
  char *o = buf + 6;
  memcpy(buf, "errno ", 6);
  *put_u(o, buf + 23, err < 0 ? 0 : (uint64_t)err, 10) = 0;
  return buf;
}

/* ---- the fatal reports, each naming what it found ------------------------------------ */

/* (The axi_say_* write a report's line only: check.c adds the block's stacks, then aborts.)
 * A free that realloc makes (realloc.c sets axi_freeing_for) is named after realloc: the
 * paths below free() name "free" as a constant. */
static const char *caller(const char *fn) {
  return axi_freeing_for && fn[0] == 'f' ? axi_freeing_for : fn;
}
void axi_say_invalid_free(const char *fn, const void *p) {
  axi_write("axmalloc: %s(): invalid pointer %p\n", caller(fn), p);
}
void axi_invalid_free(const char *fn, const void *p) {
  axi_say_invalid_free(fn, p);
  abort();
}

void axi_say_double_free(const char *fn, const void *p) {
  axi_write("axmalloc: %s(): double free %p\n", caller(fn), p);
}
void axi_double_free(const char *fn, const void *p) {
  axi_say_double_free(fn, p);
  abort();
}

/* A sized free whose size is not the block's (free.c, check.c: block is the bytes it holds,
 * or in checked mode the size it was allocated with). */
void axi_say_bad_size(const char *fn, const void *p, size_t size, size_t block) {
  axi_write("axmalloc: %s(): size mismatch %p (freed as %zu byte%s, the block holds %zu)\n", fn, p,
            size, axi_plural(size), block);
}
void axi_bad_size(const char *fn, const void *p, size_t size, size_t block) {
  axi_say_bad_size(fn, p, size, block);
  abort();
}

void axi_corrupted(const void *at) {
  axi_fatal("axmalloc: corrupted segment metadata at %p\n", at);
}

/* A list of remote frees in transit (remote.c, page.c) leads to b, which is no block of ours:
 * a write into a freed block. */
void axi_corrupted_transit(const void *b) {
  axi_fatal("axmalloc: corrupted list of remote frees (block %p)\n", b);
}

/* b's link leads out of its page (or the list is longer than the page): a write into a
 * free block, or a double free that raced. Reported, never followed. */
void axi_corrupted_list(const ax_page_t *page, const ax_block_t *b) {
  axi_fatal("axmalloc: corrupted free list in page %p (block %p)\n", (void *)page->area,
            (const void *)b);
}
