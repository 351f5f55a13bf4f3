/* SPDX-License-Identifier: MIT */
// t_cxx_nobadalloc: a C++ program that never names std::bad_alloc, so that a -static link
// may leave its type information out. `new` of an impossible size must still end in a
// catchable exception when linked with the documented -Wl,-u flags (and dynamically), and
// in axmalloc's explicit message, never a crash, without them.
#include <cstddef>
#include <cstdio>

int main(int argc, char **argv) {
  try {
    char *p = new char[((size_t)1 << 47) + (size_t)argc];
    std::printf("t_cxx_nobadalloc: got %p\n", (void *)p);
    return 2;
  } catch (...) {
    std::puts("t_cxx_nobadalloc: caught");
    return 0;
  }
}
