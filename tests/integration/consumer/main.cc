/* SPDX-License-Identifier: MIT */
// main.cc: a C++ program on axmalloc, however it was linked: containers and strings
// allocate through it (ax_stats_get's counter moves, ax_usable_size knows new'd blocks),
// exceptions work, a second thread allocates, and a failing new throws std::bad_alloc
// (axmalloc's own operator new when the library has one, libstdc++'s otherwise). Like
// main.c it prints the file holding ax_malloc, then OK.
#include <axmalloc.h>
#include <dlfcn.h>
#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

static uint64_t mallocs_now() {
  ax_stats_t st;
  ax_stats_get(&st);
  return st.mallocs;
}

static std::vector<std::string> make_strings(unsigned n) {
  std::vector<std::string> v;
  for (unsigned i = 0; i < n; i++)
    v.push_back("consumer-string-" + std::to_string(i) + std::string(i % 50, 'x'));
  return v;
}

int main() {
  uint64_t m0 = mallocs_now();
  std::vector<std::string> v = make_strings(5000);
  uint64_t m1 = mallocs_now();
  CHECK(m1 - m0 >= 2500,
        "ax_stats mallocs grew by %llu over 5000 strings: new is not "
        "reaching axmalloc",
        (unsigned long long)(m1 - m0));

  char *c = new char[100];
  CHECK(ax_usable_size(c) >= 100 && ax_usable_size(c) == malloc_usable_size(c),
        "new char[100]: ax_usable_size %zu", ax_usable_size(c));
  delete[] c;

  int caught = 0;
  for (int i = 0; i < 50; i++) {
    try {
      throw std::runtime_error(v[(size_t)i]);
    } catch (const std::runtime_error &e) {
      caught += v[(size_t)i] == e.what();
    }
  }
  CHECK(caught == 50, "caught %d of 50 exceptions", caught);

  // An impossible size: new must throw std::bad_alloc, nothrow new must return null.
  volatile size_t huge = SIZE_MAX / 4;
  bool threw = false;
  try {
    char *h = new char[huge];
    h[0] = 1;
    delete[] h;
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK(threw, "new char[SIZE_MAX / 4] did not throw std::bad_alloc");
  CHECK(new (std::nothrow) char[huge] == nullptr, "nothrow new of SIZE_MAX / 4 succeeded");

  std::vector<std::string> from_thread;
  std::thread t([&] { from_thread = make_strings(1000); });
  t.join();
  CHECK(from_thread.size() == 1000 && from_thread[999] == v[999], "thread's strings");
  from_thread.clear();
  from_thread.shrink_to_fit();

  Dl_info dl;
  if (dladdr(reinterpret_cast<void *>(&ax_malloc), &dl) && dl.dli_fname)
    std::printf("ax_malloc in: %s\n", dl.dli_fname);
  std::printf("consumer C++: mallocs +%llu: OK\n", (unsigned long long)(mallocs_now() - m0));
  return 0;
}
