/* SPDX-License-Identifier: MIT */
// nobadalloc.cc: a C++ program that never names std::bad_alloc and throws nothing
// itself, so a -static link takes the exception machinery from libstdc++.a only when
// asked. axmalloc's operator new references it weakly; the link options the package
// (axmalloc::static, axmalloc::object) and axmalloc.pc (--static) add must ask for it,
// or an impossible new ends in axmalloc's "std::bad_alloc is not linked in" message
// instead of an exception caught here.
#include <cstddef>
#include <cstdio>

int main(int argc, char **argv) {
  volatile std::size_t huge = ((std::size_t)1 << 47) + (std::size_t)argc;
  try {
    char *p = new char[huge];
    std::printf("FAIL: new char[%zu] gave %p\n", (std::size_t)huge, (void *)p);
    return 1;
  } catch (...) {
    std::printf("%s: impossible new threw: OK\n", argc > 0 ? argv[0] : "nobadalloc");
    return 0;
  }
}
