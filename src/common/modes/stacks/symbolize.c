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
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>

#include "modes/stacks/symbolize.h"

#include "os.h"

#define MAX_MODULES 512

typedef struct module {
  uintptr_t base, lo, hi; /* load address; the span of its executable segments */
  char path[256];
  bool main;   /* the program itself: opened as /proc/self/exe */
  bool looked; /* its symbols looked for */
  const ElfW(Sym) * sym;
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

/* Its file's symbol table: .symtab (every function, static ones too), else .dynsym. */
static void read_symbols(module_t *m) {
  m->looked = true;
  int fd = axi_os_open(m->main ? "/proc/self/exe" : m->path, O_RDONLY, 0);
  if (fd < 0)
    return;
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
  for (unsigned i = 0; i < eh->e_shnum; i++)
    if (sh[i].sh_type == SHT_SYMTAB || (sh[i].sh_type == SHT_DYNSYM && !tab))
      tab = &sh[i];
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

void axi_symbolize(uintptr_t pc, ax_sym_t *out) {
  module_t *m = module_of(pc - 1); /* (a return address: its call is just before it) */
  out->name = NULL;
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
  out->name = m->str + s->st_name;
  out->off = pc - m->base - s->st_value;
}
