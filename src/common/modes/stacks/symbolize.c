/* SPDX-License-Identifier: MIT */
/* Stack frames by name (the leak report's, checked mode's): the function that holds a return
 * address, from the symbol tables of the files loaded in the process.
 *
 * A program built without -rdynamic exports none of its own functions, and its static ones
 * never: their names are in .symtab, which `strip` removes but a build keeps by default. So
 * each loaded file (dl_iterate_phdr: the program, /proc/self/exe for its path, and every
 * library) is mapped read-only once, its .symtab taken, else its .dynsym, and the enclosing
 * FUNC symbol looked for; a frame with none prints as file+offset, which addr2line reads. No
 * allocation: the module table and the files are mappings of our own, kept to the end.
 *
 * The leak report at exit goes further (axi_symbolize_external), as LeakSanitizer does: C++
 * names demangled by the C++ runtime's __cxa_demangle, and each frame's source file and line
 * (inlined calls too) from binutils' addr2line, run once per file for all its addresses. Both
 * allocate (the demangler through malloc, the spawn in libc), so checked mode's reports, made
 * inside malloc and free, never ask for them; the leak report asks after its count, when a
 * block it makes is one more block made after the scan, which no count includes, and malloc's
 * recording of it symbolizes nothing (no recursion). Without libstdc++ (a C program: the
 * reference is weak) or without addr2line, or for a file without debug information (no
 * .debug_line, no .gnu_debuglink: not looked up), frames print as before.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "modes/stacks/symbolize.h"

#include "os.h"

#define MAX_MODULES 512

typedef struct module {
  uintptr_t base, lo, hi; /* load address; the span of its executable segments */
  char path[256];
  char file[256]; /* the file opened, by the kernel's name (for addr2line): "" if not known */
  bool main;      /* the program itself: opened as /proc/self/exe */
  bool looked;    /* its symbols looked for */
  bool debug;     /* it has line tables, or names a file of them (.gnu_debuglink) */
  const ElfW(Sym) * sym;
  const char **pretty; /* (external) each symbol's name demangled, when looked for */
  size_t nsym;
  const char *str;
  size_t nstr;
} module_t;

static module_t *mods;
static unsigned nmods;

static void copy(char *to, const char *from, size_t n) {
  size_t i = 0;
  for (; from[i] && i + 1 < n; i++)
    to[i] = from[i];
  to[i] = 0;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg) {
  if (nmods == MAX_MODULES)
    return 1;
  module_t *m = &mods[nmods];
  m->base = info->dlpi_addr;
  m->lo = UINTPTR_MAX;
  m->hi = 0;
  for (unsigned i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
      continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    m->lo = lo < m->lo ? lo : m->lo;
    m->hi = lo + ph->p_memsz > m->hi ? lo + ph->p_memsz : m->hi;
  }
  if (m->hi == 0)
    return 0;
  m->main = !info->dlpi_name || !info->dlpi_name[0];
  if (!m->main)
    copy(m->path, info->dlpi_name, sizeof m->path);
  else if (axi_os_readlink("/proc/self/exe", m->path, sizeof m->path - 1) <= 0)
    copy(m->path, "/proc/self/exe", sizeof m->path);
  nmods++;
  return 0;
}

/* Is section sh named name (names: the section of section names, within the file)? */
static bool section_is(const char *f, const ElfW(Shdr) * names, const ElfW(Shdr) * sh,
                       const char *name) {
  size_t n = __builtin_strlen(name) + 1;
  return sh->sh_name < names->sh_size && names->sh_size - sh->sh_name >= n &&
         !__builtin_memcmp(f + names->sh_offset + sh->sh_name, name, n);
}

/* Its file's symbol table: .symtab (every function, static ones too), else .dynsym. */
static void read_symbols(module_t *m) {
  m->looked = true;
  int fd = axi_os_open(m->main ? "/proc/self/exe" : m->path, O_RDONLY, 0);
  if (fd < 0)
    return;
  /* The file's name as the kernel has it: under qemu-user -L <sysroot> the loader's name
   * (/lib/libc.so.6) is the target's file under the sysroot, which another process (addr2line,
   * a host program) would not find by that name. */
  char link[32] = "/proc/self/fd/", *d = link + 14;
  int digits = fd < 10 ? 1 : fd < 100 ? 2 : fd < 1000 ? 3 : fd < 10000 ? 4 : 0;
  for (int i = digits, v = fd; i > 0; v /= 10)
    d[--i] = (char)('0' + v % 10);
  long n = digits ? axi_os_readlink(link, m->file, sizeof m->file - 1) : -1;
  m->file[n > 0 && m->file[0] == '/' ? n : 0] = 0;
  long size = axi_os_file_size(fd);
  const char *f = size > (long)sizeof(ElfW(Ehdr)) ? axi_os_map_file(fd, (size_t)size) : NULL;
  axi_os_close(fd);
  if (!f)
    return;
  const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)f;
  if (__builtin_memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_shentsize != sizeof(ElfW(Shdr)) ||
      eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(ElfW(Shdr)) > (uint64_t)size)
    return;
  const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(f + eh->e_shoff), *tab = NULL;
  const ElfW(Shdr) *names = eh->e_shstrndx < eh->e_shnum ? &sh[eh->e_shstrndx] : NULL;
  if (names && names->sh_offset + names->sh_size > (uint64_t)size)
    names = NULL;
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type == SHT_SYMTAB || (sh[i].sh_type == SHT_DYNSYM && !tab))
      tab = &sh[i];
    if (names && (section_is(f, names, &sh[i], ".debug_line") ||
                  section_is(f, names, &sh[i], ".zdebug_line") ||
                  section_is(f, names, &sh[i], ".gnu_debuglink")))
      m->debug = true;
  }
  if (!tab || tab->sh_link >= eh->e_shnum)
    return;
  const ElfW(Shdr) *st = &sh[tab->sh_link];
  if (tab->sh_offset + tab->sh_size > (uint64_t)size ||
      st->sh_offset + st->sh_size > (uint64_t)size)
    return;
  m->sym = (const ElfW(Sym) *)(f + tab->sh_offset);
  m->nsym = tab->sh_size / sizeof(ElfW(Sym));
  m->str = f + st->sh_offset;
  m->nstr = st->sh_size;
}

static module_t *module_of(uintptr_t pc) {
  if (!mods) {
    if (!(mods = axi_os_map(MAX_MODULES * sizeof *mods)))
      return NULL;
    dl_iterate_phdr(add_module, NULL);
  }
  for (unsigned i = 0; i < nmods; i++)
    if (pc >= mods[i].lo && pc < mods[i].hi)
      return &mods[i];
  return NULL;
}

/* The function symbol of m that holds addr (an address of the file's own), NULL if none. */
static const ElfW(Sym) * enclosing(const module_t *m, uintptr_t addr) {
  const ElfW(Sym) *best = NULL;
  for (size_t i = 0; i < m->nsym; i++) {
    const ElfW(Sym) *s = &m->sym[i];
    unsigned type = ELF64_ST_TYPE(s->st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF)
      continue;
    if (addr >= s->st_value && addr < s->st_value + (s->st_size ? s->st_size : 1) &&
        s->st_name < m->nstr && (!best || s->st_value > best->st_value))
      best = s;
  }
  return best;
}

static const char *pretty_name(module_t *m, const ElfW(Sym) * s); /* (below) */

void axi_symbolize(uintptr_t pc, ax_sym_t *out) {
  module_t *m = module_of(pc - 1); /* (a return address: its call is just before it) */
  out->name = out->mangled = NULL;
  out->off = 0;
  out->module = m ? m->path : "";
  out->module_off = m ? pc - m->base : pc;
  if (!m)
    return;
  if (!m->looked)
    read_symbols(m);
  const ElfW(Sym) *s = enclosing(m, pc - 1 - m->base);
  if (!s)
    return;
  out->mangled = m->str + s->st_name;
  out->name = pretty_name(m, s);
  out->off = pc - m->base - s->st_value;
}

/* ---- the external names: demangled, and source lines ------------------------------------- */

static bool external; /* axi_symbolize_external: names may be demangled, lines looked up */

/* Strings of our own (names, lines, addr2line's arguments), kept to the end: bumped out of
 * mappings of 1 MiB. NULL when no memory. */
static char *arena_at, *arena_end;
static char *keep(const char *s, size_t n) {
  if ((size_t)(arena_end - arena_at) < n + 1) {
    size_t size = n + 1 > ((size_t)1 << 20) ? n + 1 : (size_t)1 << 20;
    if (!(arena_at = axi_os_map(size)))
      return arena_end = NULL;
    arena_end = arena_at + size;
  }
  char *out = arena_at;
  __builtin_memcpy(out, s, n);
  out[n] = 0;
  arena_at += n + 1;
  return out;
}

/* The C++ runtime's demangler, when the program has it (a weak reference: a C program runs
 * without libstdc++; a static C++ program has it when its libstdc++ pulled it in, as the
 * verbose terminate handler does). It returns a block of malloc's, kept here to the end. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *n, int *status)
    __attribute__((weak));

/* The name of symbol s of m as printed: demangled when external (once per symbol: m->pretty
 * maps each), else as in the file. */
static const char *pretty_name(module_t *m, const ElfW(Sym) * s) {
  const char *raw = m->str + s->st_name;
  if (!external || !__cxa_demangle || raw[0] != '_' || raw[1] != 'Z')
    return raw;
  if (!m->pretty && !(m->pretty = axi_os_map(m->nsym * sizeof *m->pretty)))
    return raw;
  const char **p = &m->pretty[s - m->sym];
  if (!*p) {
    int status = -1;
    char *d = __cxa_demangle(raw, NULL, NULL, &status);
    *p = status == 0 && d ? d : raw;
  }
  return *p;
}

/* Each return address looked up by axi_symbolize_external, and its frames: the inlined calls
 * at it (innermost first), then its function. Open addressing by address, mapped at the first
 * address; a stack's 30 frames by 2,000 stacks fit (65,536 addresses). */
#define LINE_PCS ((size_t)1 << 16)
#define LINE_FRAMES ((size_t)1 << 18)
#define LINE_BATCH 256 /* addresses per run of addr2line: its arguments stay short */
typedef struct pc_lines {
  uintptr_t pc;
  uint32_t first, n; /* its frames: line[first .. first + n) */
} pc_lines_t;
static pc_lines_t *line_pc;
static ax_sym_line_t *line;
static uint32_t nline;

static pc_lines_t *pc_slot(uintptr_t pc, bool add) {
  if (!line_pc && (!add || !(line_pc = axi_os_map(LINE_PCS * sizeof *line_pc))))
    return NULL;
  for (size_t i = (pc * 0x9e3779b97f4a7c15u) >> 48, n = 0; n < LINE_PCS; i++, n++) {
    pc_lines_t *e = &line_pc[i & (LINE_PCS - 1)];
    if (e->pc == pc)
      return e;
    if (!e->pc) {
      if (add)
        e->pc = pc;
      return add ? e : NULL;
    }
  }
  return NULL;
}

void axi_symbolize_want(uintptr_t pc) {
  if (pc)
    pc_slot(pc, true);
}

/* addr2line's output for the batch of addresses a[0..n) (each one's line "0x<addr>", then
 * pairs of lines, function and file:line, innermost first) into their entries. */
static char *next_line(char **at, char *end) {
  char *s = *at, *e = s;
  while (e < end && *e != '\n')
    e++;
  if (e == end)
    return NULL;
  *e = 0;
  *at = e + 1;
  return s;
}

static void parse(char *out, size_t len, pc_lines_t **e, const uintptr_t *a, unsigned n) {
  char *at = out, *end = out + len, *s;
  int k = -1;
  while ((s = next_line(&at, end))) {
    if (s[0] == '0' && s[1] == 'x' && k + 1 < (int)n) {
      const char *h = s + 2;
      uintptr_t v = 0;
      for (; (*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f'); h++)
        v = v * 16 + (uintptr_t)(*h <= '9' ? *h - '0' : *h - 'a' + 10);
      if (v == a[k + 1]) {
        k++;
        e[k]->first = nline;
        continue;
      }
    }
    char *file = next_line(&at, end);
    if (k < 0 || !file || nline == LINE_FRAMES)
      continue;
    char *d = __builtin_strstr(file, " (discriminator");
    if (d)
      *d = 0;
    /* Without a source line, addr2line names the nearest symbol before the address, whatever
     * its size (a static function of a stripped libc as the exported one before it): not
     * taken, the frame prints as before; nor a file without a line ("x.o:?", "x.c:0"). */
    size_t fl = __builtin_strlen(file);
    bool no_func = !__builtin_strcmp(s, "??"),
         no_file = (file[0] == '?' && file[1] == '?') ||
                   (fl > 2 && file[fl - 2] == ':' && (file[fl - 1] == '?' || file[fl - 1] == '0'));
    if (no_file)
      continue;
    line[nline].func = no_func ? NULL : keep(s, __builtin_strlen(s));
    line[nline].file = keep(file, fl);
    nline++;
    e[k]->n = nline - e[k]->first;
  }
}

extern char **environ;

/* The environment, less what would make addr2line run on this allocator (LD_PRELOAD) or
 * check itself (AXMALLOC_*: a leak check of its own would print into our report). */
static char **child_env(void) {
  size_t n = 0;
  while (environ && environ[n])
    n++;
  char **env = axi_os_map((n + 1) * sizeof *env);
  size_t k = 0;
  for (size_t i = 0; env && i < n; i++)
    if (__builtin_strncmp(environ[i], "LD_PRELOAD=", 11) &&
        __builtin_strncmp(environ[i], "AXMALLOC_", 9))
      env[k++] = environ[i];
  return env;
}

/* The places addr2line may be: each directory of PATH (/usr/bin:/bin if none), NULL last. */
static char **candidates(void) {
  const char *path = getenv("PATH");
  path = path && *path ? path : "/usr/bin:/bin";
  size_t n = 2;
  for (const char *p = path; *p; p++)
    n += *p == ':';
  char **v = axi_os_map(n * sizeof *v);
  size_t k = 0;
  for (const char *p = path; v && *p;) {
    const char *colon = p;
    while (*colon && *colon != ':')
      colon++;
    char buf[4096];
    size_t len = (size_t)(colon - p);
    if (len && len + sizeof "/addr2line" <= sizeof buf) {
      __builtin_memcpy(buf, p, len);
      __builtin_memcpy(buf + len, "/addr2line", sizeof "/addr2line");
      v[k++] = keep(buf, len + sizeof "/addr2line" - 1);
    }
    p = *colon ? colon + 1 : colon;
  }
  return v;
}

/* fd moved to 3 or above (close-on-exec): a program that closed its stdout (coreutils do, at
 * exit) makes the pipe fd 1, which the child's dup2 onto 0, 1 and 2 would mix up. */
static int high(int fd) {
  if (fd < 0 || fd > 2)
    return fd;
  int to = axi_os_fcntl(fd, F_DUPFD_CLOEXEC, 3);
  axi_os_close(fd);
  return to;
}

/* Runs argv's program (each of where[] in turn) with stdout into a pipe, stdin and stderr
 * /dev/null; its output, in a mapping of its own (*len bytes of *mapped), NULL when it could
 * not run. vfork and execve, and the system calls for the rest: none of them is a
 * cancellation point (tests/concurrency/t_cancel_points.sh). Signals are blocked across the
 * vfork, so no handler of the program's runs in the child while it shares our memory; the
 * child sets the mask back before execve (a handler caught in between runs in the child). */
static bool not_found; /* addr2line is on no directory of PATH */
static char *run(char *const *where, char *const *argv, char *const *env, size_t *len,
                 size_t *mapped) {
  int fd[2], null = high(axi_os_open("/dev/null", O_RDWR, 0));
  if (null < 0)
    return NULL;
  if (pipe2(fd, O_CLOEXEC) != 0)
    fd[0] = fd[1] = -1;
  else
    fd[0] = high(fd[0]), fd[1] = high(fd[1]);
  if (fd[0] < 0 || fd[1] < 0) {
    for (int i = 0; i < 2; i++)
      if (fd[i] >= 0)
        axi_os_close(fd[i]);
    axi_os_close(null);
    return NULL;
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = vfork();
  if (pid == 0) { /* (the child: shares our memory until execve; writes none of it) */
    dup2(null, 0);
    dup2(fd[1], 1);
    dup2(null, 2);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (unsigned i = 0; where[i]; i++)
      execve(where[i], argv, env);
    _exit(127);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  axi_os_close(fd[1]);
  axi_os_close(null);
  size_t cap = (size_t)1 << 20, have = 0;
  char *out = pid > 0 ? axi_os_map(cap) : NULL;
  for (long r; out;) {
    if (have == cap) {
      char *more = axi_os_map(2 * cap);
      if (more)
        __builtin_memcpy(more, out, have);
      axi_os_unmap(out, cap);
      out = more;
      cap *= 2;
      continue;
    }
    if ((r = axi_os_read(fd[0], out + have, cap - have)) > 0)
      have += (size_t)r;
    else if (r == 0 || errno != EINTR)
      break;
  }
  axi_os_close(fd[0]);
  int status = 0;
  while (pid > 0 && syscall(SYS_wait4, pid, &status, 0, NULL) < 0 && errno == EINTR)
    ;
  if (pid > 0 && !have && WIFEXITED(status) && WEXITSTATUS(status) == 127)
    not_found = true; /* (no execve took: the next runs would fail the same) */
  *len = have;
  *mapped = cap;
  return out;
}

/* The lines of m's wanted addresses, LINE_BATCH at a time. */
static void lines_of(module_t *m, char *const *where, char *const *env) {
  pc_lines_t *e[LINE_BATCH];
  uintptr_t a[LINE_BATCH];
  char *argv[8 + LINE_BATCH];
  unsigned n = 0;
  for (size_t i = 0; i <= LINE_PCS; i++) {
    pc_lines_t *x = i < LINE_PCS ? &line_pc[i] : NULL;
    if (x && (!x->pc || x->first || module_of(x->pc - 1) != m))
      continue;
    if (x) {
      e[n] = x;
      a[n++] = x->pc - 1 - m->base; /* (the call: a return address may be the next line's) */
    }
    if (n == LINE_BATCH || (!x && n)) {
      unsigned k = 0;
      argv[k++] = "addr2line";
      argv[k++] = "-a"; /* each address first: it says where its frames start */
      argv[k++] = "-f";
      argv[k++] = "-C";
      argv[k++] = "-i";
      argv[k++] = "-e";
      argv[k++] = m->file;
      for (unsigned j = 0; j < n; j++) {
        char hex[24], *h = hex + sizeof hex;
        uintptr_t v = a[j];
        *--h = 0;
        do
          *--h = "0123456789abcdef"[v & 15];
        while (v >>= 4);
        *--h = 'x';
        *--h = '0';
        argv[k++] = keep(h, (size_t)(hex + sizeof hex - 1 - h));
      }
      argv[k] = NULL;
      size_t len = 0, mapped = 0;
      char *out = not_found ? NULL : run(where, argv, env, &len, &mapped);
      if (out) {
        parse(out, len, e, a, n);
        axi_os_unmap(out, mapped);
      }
      for (unsigned j = 0; j < n; j++)
        e[j]->first = e[j]->first ? e[j]->first : UINT32_MAX; /* (looked up) */
      n = 0;
    }
  }
}

void axi_symbolize_external(void) {
  external = true;
  if (!line_pc || !(line = axi_os_map(LINE_FRAMES * sizeof *line)))
    return;
  nline = 1; /* (first 0: not looked up yet) */
  char **env = child_env(), **where = candidates();
  if (!env || !where || !where[0])
    return;
  for (unsigned i = 0; i < nmods; i++) {
    if (!mods[i].looked)
      read_symbols(&mods[i]);
    if (mods[i].debug && mods[i].file[0])
      lines_of(&mods[i], where, env);
  }
}

unsigned axi_symbolize_lines(uintptr_t pc, const ax_sym_line_t **out) {
  pc_lines_t *e = line ? pc_slot(pc, false) : NULL;
  if (!e || !e->n || e->first == UINT32_MAX)
    return 0;
  *out = &line[e->first];
  return e->n;
}
