/* SPDX-License-Identifier: MIT */
// t_cxx_replaced: a program that replaces only the base operators new(size_t) and
// delete(void *) with its own (an arena and counters). The standard defines the other forms
// by them: new[] and nothrow new call the program's new, sized, array and nothrow deletes
// call its delete. axmalloc's forms must do the same, dynamically (libaxmalloc.so) and
// -static (libaxmalloc.a: its operators are weak, so the program's win without a
// duplicate definition).
#include <axmalloc.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>

#include "sys_check.h"

alignas(16) static unsigned char arena[1 << 20];
static size_t arena_used;
static int news, deletes;

void *operator new(size_t n) {
  news++;
  void *p = arena + arena_used;
  arena_used += (n + 15) & ~(size_t)15;
  if (arena_used > sizeof arena)
    throw std::bad_alloc();
  return p;
}
// (deliberately no sized delete: the point is that the default one calls this)
void operator delete(void *p) noexcept {
  if (p) {
    CHECK((unsigned char *)p >= arena && (unsigned char *)p < arena + sizeof arena);
    deletes++;
  }
}

struct S {
  long a[3];
};
struct T {
  long a[5];
  ~T() {}
};

int main() {
  S *volatile s = new S;                // the program's new
  delete s;                             // sized delete: must reach the program's delete
  T *volatile t = new T[4];             // new[] -> the program's new; cookie for the destructor
  delete[] t;                           // sized array delete -> the program's delete
  S *volatile u = new (std::nothrow) S; // nothrow new -> the program's new
  CHECK(u != nullptr);
  ::operator delete(u, std::nothrow);
  void *volatile v = ::operator new[](40, std::nothrow);
  ::operator delete[](v, (size_t)40);
  CHECKF(news == 4 && deletes == 4, "program's new ran %d times, delete %d times (want 4, 4)", news,
         deletes);
  // the program's new throws: nothrow new turns that into nullptr
  CHECK(::operator new((size_t)2 << 20, std::nothrow) == nullptr);
  // malloc is still axmalloc's
  void *m = malloc(100);
  CHECK(ax_usable_size(m) >= 100);
  free(m);
  std::puts("t_cxx_replaced: OK");
  return 0;
}
