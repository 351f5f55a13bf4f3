/* SPDX-License-Identifier: MIT */
// t_static_cxx: a -static C++ program linked with libaxmalloc.a.
//
// Churns std::string and std::vector (also from a second thread), throws exceptions,
// and uses over-aligned new (alignas(256), scalar and array, with and without an array
// cookie), checking alignment and contents. Proves axmalloc serves all of it:
// ax_stats_get's mallocs counter grows by at least the number of allocations made, and
// ax_usable_size (which only understands axmalloc's blocks) agrees with
// malloc_usable_size and covers new'd objects.
#include <axmalloc.h>
#include <malloc.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sys_check.h"

struct alignas(256) X { // trivial: new X[n] has no array cookie
  unsigned char b[100];
  int v;
};

static int y_live = 0;
struct alignas(256) Y { // non-trivial destructor: new Y[n] stores a cookie
  int v;
  Y() : v(7) { y_live++; }
  ~Y() { y_live--; }
};

static std::string make_str(unsigned i) {
  std::string s = "string-number-" + std::to_string(i) + "-";
  s.append(i % 97, (char)('a' + i % 26)); // most are beyond the SSO buffer
  return s;
}

static uint64_t mallocs_now() {
  ax_stats_t st;
  ax_stats_get(&st);
  return st.mallocs;
}

static void churn(unsigned seed, unsigned n) {
  std::vector<std::string> v;
  for (unsigned i = 0; i < n; i++)
    v.push_back(make_str(seed + i));
  std::vector<std::string> copy = v;
  std::sort(copy.begin(), copy.end());
  std::sort(v.begin(), v.end());
  CHECK(v == copy);
  std::vector<std::string> expect;
  for (unsigned i = 0; i < n; i++)
    expect.push_back(make_str(seed + i));
  std::sort(expect.begin(), expect.end());
  CHECK(v == expect);
  std::vector<std::vector<int>> vv(200);
  for (unsigned i = 0; i < 200; i++)
    for (unsigned j = 0; j < i * 10; j++)
      vv[i].push_back((int)(i * j));
  for (unsigned i = 0; i < 200; i++) {
    CHECK(vv[i].size() == i * 10);
    for (unsigned j = 0; j < i * 10; j++)
      CHECK(vv[i][j] == (int)(i * j));
  }
}

int main() {
  uint64_t m0 = mallocs_now();

  // malloc itself is ours.
  void *p = malloc(1234);
  CHECK(p != nullptr);
  CHECK(malloc_usable_size(p) == ax_usable_size(p) && ax_usable_size(p) >= 1234);
  free(p);

  churn(0, 20000);
  uint64_t m1 = mallocs_now();
  // 20000 strings (x3 copies) outside SSO, plus vector growth: far more than 20000.
  CHECKF(m1 - m0 >= 20000,
         "ax_stats mallocs grew by %llu over the churn: std::string "
         "is not allocating through axmalloc",
         (unsigned long long)(m1 - m0));

  // Over-aligned new.
  X *xs = new X[10];
  CHECKF(((uintptr_t)xs & 255) == 0, "new X[10] (alignas 256) gave %p", (void *)xs);
  CHECK(ax_usable_size(xs) >= sizeof(X) * 10);
  for (int i = 0; i < 10; i++) {
    CHECK(((uintptr_t)&xs[i] & 255) == 0);
    memset(xs[i].b, i, sizeof xs[i].b);
    xs[i].v = i * 1000;
  }
  X *x1 = new X;
  CHECK(((uintptr_t)x1 & 255) == 0);
  CHECK(ax_usable_size(x1) >= sizeof(X));
  x1->v = 42;
  for (int i = 0; i < 10; i++) {
    for (unsigned j = 0; j < sizeof xs[i].b; j++)
      CHECK(xs[i].b[j] == (unsigned char)i);
    CHECK(xs[i].v == i * 1000);
  }
  CHECK(x1->v == 42);
  delete x1;
  delete[] xs;

  Y *ys = new Y[10];
  CHECK(y_live == 10);
  for (int i = 0; i < 10; i++) {
    CHECK(((uintptr_t)&ys[i] & 255) == 0);
    CHECK(ys[i].v == 7);
  }
  delete[] ys;
  CHECK(y_live == 0);

  std::vector<X> vx(33);
  CHECK(((uintptr_t)vx.data() & 255) == 0);
  auto up = std::make_unique<X[]>(5);
  CHECK(((uintptr_t)up.get() & 255) == 0);

  // Exceptions allocate through malloc (__cxa_allocate_exception).
  int caught = 0;
  for (int i = 0; i < 100; i++) {
    try {
      throw std::runtime_error(make_str((unsigned)i + 1000));
    } catch (const std::runtime_error &e) {
      if (std::string(e.what()) == make_str((unsigned)i + 1000))
        caught++;
    }
  }
  CHECK(caught == 100);

  // A second thread churning; its strings are freed on the main thread.
  std::vector<std::string> from_thread;
  std::thread t([&] {
    churn(50000, 5000);
    for (unsigned i = 0; i < 1000; i++)
      from_thread.push_back(make_str(i));
  });
  t.join();
  for (unsigned i = 0; i < 1000; i++)
    CHECK(from_thread[i] == make_str(i));
  from_thread.clear();
  from_thread.shrink_to_fit();

  uint64_t m2 = mallocs_now();
  CHECK(m2 - m1 >= 5000 + 1000 + 100);
  printf("t_static_cxx: mallocs %llu -> %llu -> %llu, OK\n", (unsigned long long)m0,
         (unsigned long long)m1, (unsigned long long)m2);
  return 0;
}
