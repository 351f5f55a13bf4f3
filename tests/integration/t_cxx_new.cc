/* SPDX-License-Identifier: MIT */
// t_cxx_new: axmalloc's C++ operators new and delete, in every standard form.
//
//   t_cxx_new            every form allocates from axmalloc, aligned where asked, frees back
//                        (also across threads); failures throw std::bad_alloc, run the
//                        new-handler, and give nullptr in the nothrow forms
//   t_cxx_new baddelete  sized delete of a stack address: must die with axmalloc's
//                        "operator delete(): invalid pointer"
//   t_cxx_new delarray   `delete` of a `new char[4096]` (sized delete of 1 byte) and
//   t_cxx_new deltype    a `new char` deleted as a 72-byte struct: must die with
//                        "operator delete(): size mismatch" (mimalloc-bench's security probes
//                        invalid_delete_array_char and delete_type_size_mismatch)
//   t_cxx_new arraydelete   (checked mode) `delete[]` of a `new char`: must die with
//                        "operator delete[](): mismatched deallocation"
//
// Built twice: against libaxmalloc.so and -static against libaxmalloc.a.
#include <axmalloc.h>
#include <dlfcn.h>
#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sys_check.h"

// new_delete.o defines it (hidden): in a static link, non-null exactly when axmalloc's
// operators are linked in.
extern "C" void ax_fatal_new(size_t) __attribute__((weak));

static const size_t kHuge = (size_t)1 << 47; // no 48-bit address space has room for it

static uint64_t live_in_class(size_t n) {
  unsigned c = 1;
  while (ax_class_size(c) && ax_class_size(c) < n)
    c++;
  ax_stats_t st;
  ax_stats_get(&st);
  return c < AX_NUM_CLASSES ? st.class_live[c] : 0; /* huge: no class */
}

// The operators the program calls are axmalloc's, not libstdc++'s.
static void check_ours() {
#ifdef AX_STATIC
  CHECKF(ax_fatal_new != nullptr, "axmalloc's new_delete.o is not linked in");
#else
  void *(*op)(size_t) = &::operator new;
  Dl_info info;
  CHECK(dladdr((void *)op, &info) != 0 && info.dli_fname);
  CHECKF(std::strstr(info.dli_fname, "libaxmalloc") != nullptr, "operator new comes from %s",
         info.dli_fname);
#endif
}

// A block from axmalloc: usable size covers n, alignment holds, memory is writable.
static void check_block(void *p, size_t n, size_t align) {
  CHECK(p != nullptr);
  CHECKF((uintptr_t)p % align == 0, "%p not aligned to %zu", p, align);
  CHECKF(ax_usable_size(p) >= n, "usable %zu < %zu", ax_usable_size(p), n);
  std::memset(p, 0x5a, n);
}

static void plain_forms() {
  for (size_t n : {0, 1, 16, 24, 100, 1000, 1024, 5000, 70000, 300000, 2000000}) {
    uint64_t before = live_in_class(n ? n : 1);
    void *p = ::operator new(n);
    check_block(p, n, 16);
    // exact per-class count of this thread's live blocks (none for 0 bytes: zero.c's)
    CHECK(n > 1024 || live_in_class(n ? n : 1) == before + (n != 0));
    ::operator delete(p);
    if (n <= 1024)
      CHECK(live_in_class(n ? n : 1) == before);
    p = ::operator new[](n);
    check_block(p, n, 16);
    ::operator delete[](p);
    p = ::operator new(n, std::nothrow);
    check_block(p, n, 16);
    ::operator delete(p, std::nothrow);
    p = ::operator new[](n, std::nothrow);
    check_block(p, n, 16);
    ::operator delete[](p, std::nothrow);
    p = ::operator new(n); // sized delete with the right size
    check_block(p, n, 16);
    ::operator delete(p, n);
    p = ::operator new[](n);
    ::operator delete[](p, n);
  }
  // Sized delete with any size of the block's class frees it (a type's size, not the block's);
  // another class's aborts (the delarray and deltype runs).
  for (size_t real : {1, 17, 100, 1000, 5000, 70000, 300000, 3000000}) {
    void *p = ::operator new(real);
    size_t usable = malloc_usable_size(p);
    ::operator delete(p, usable); // (checked mode: the size asked for)
    p = ::operator new[](real);
    ::operator delete[](p, real);
  }
}

static void aligned_forms() {
  for (size_t al : {16, 32, 64, 256, 4096, 65536, 1 << 20, 2 << 20}) {
    for (size_t n : {1, 100, 5000, 200000, 3000000}) {
      std::align_val_t a{al};
      void *p = ::operator new(n, a);
      check_block(p, n, al);
      ::operator delete(p, a);
      p = ::operator new[](n, a);
      check_block(p, n, al);
      ::operator delete[](p, a);
      p = ::operator new(n, a, std::nothrow);
      check_block(p, n, al);
      ::operator delete(p, a, std::nothrow);
      p = ::operator new[](n, a, std::nothrow);
      check_block(p, n, al);
      ::operator delete[](p, a, std::nothrow);
      p = ::operator new(n, a);
      ::operator delete(p, n, a);
      p = ::operator new[](n, a);
      ::operator delete[](p, n, a);
    }
  }
  // new-expressions pick the aligned forms for over-aligned types.
  struct alignas(4096) Page {
    char b[10];
  };
  std::vector<Page *> v;
  for (int i = 0; i < 100; i++) {
    v.push_back(new Page);
    check_block(v.back(), sizeof(Page), 4096);
  }
  for (Page *p : v)
    delete p;
  Page *arr = new Page[7];
  check_block(arr, 7 * sizeof(Page), 4096);
  delete[] arr;
}

static int handler_calls;
static void counting_handler() {
  if (++handler_calls == 3)
    std::set_new_handler(nullptr); // the next failure throws
}
struct Custom : std::runtime_error {
  Custom() : std::runtime_error("custom") {}
};
static void throwing_handler() { throw Custom(); }
static void bad_alloc_handler() { throw std::bad_alloc(); }

static void failures() {
  // No handler: std::bad_alloc, for every throwing form; nullptr from the nothrow ones.
  int thrown = 0;
  try {
    (void)::operator new(kHuge);
  } catch (const std::bad_alloc &) {
    thrown++;
  }
  try {
    (void)::operator new[](kHuge);
  } catch (const std::bad_alloc &) {
    thrown++;
  }
  try {
    (void)::operator new(SIZE_MAX);
  } catch (const std::bad_alloc &) {
    thrown++;
  }
  try {
    (void)::operator new (kHuge, std::align_val_t{64});
  } catch (const std::bad_alloc &) {
    thrown++;
  }
  try {
    (void)::operator new[](100, std::align_val_t{(size_t)1 << 62});
  } catch (const std::bad_alloc &) {
    thrown++;
  }
  CHECKF(thrown == 5, "%d of 5 failures threw std::bad_alloc", thrown);
  CHECK(::operator new(kHuge, std::nothrow) == nullptr);
  CHECK(::operator new[](kHuge, std::nothrow) == nullptr);
  CHECK(::operator new (kHuge, std::align_val_t{4096}, std::nothrow) == nullptr);
  CHECK(::operator new[](kHuge, std::align_val_t{4096}, std::nothrow) == nullptr);
  // A new-expression's bad_alloc, through std::vector.
  bool vec_threw = false;
  try {
    std::vector<char> big;
    big.reserve(kHuge);
  } catch (const std::bad_alloc &) {
    vec_threw = true;
  } catch (const std::length_error &) {
    vec_threw = true; // libstdc++ may refuse before allocating; either is fine
  }
  CHECK(vec_threw);

  // The new-handler runs on every failure until it gives up (uninstalls itself).
  handler_calls = 0;
  std::set_new_handler(counting_handler);
  thrown = 0;
  try {
    (void)::operator new(kHuge);
  } catch (const std::bad_alloc &) {
    thrown = 1;
  }
  CHECKF(thrown == 1 && handler_calls == 3, "thrown %d, handler ran %d times", thrown,
         handler_calls);
  // nothrow forms run the handler too, and turn its exception into nullptr.
  handler_calls = 0;
  std::set_new_handler(counting_handler);
  CHECK(::operator new(kHuge, std::nothrow) == nullptr);
  CHECK(handler_calls == 3);
  std::set_new_handler(bad_alloc_handler);
  CHECK(::operator new(kHuge, std::nothrow) == nullptr);
  CHECK(::operator new[](kHuge, std::align_val_t{64}, std::nothrow) == nullptr);
  // A handler's own exception leaves the throwing forms unchanged.
  std::set_new_handler(throwing_handler);
  bool custom = false;
  try {
    (void)::operator new(kHuge);
  } catch (const Custom &) {
    custom = true;
  }
  CHECK(custom);
  std::set_new_handler(nullptr);
}

// Objects made in one thread and deleted (sized) in another: remote frees.
static void threads() {
  const int n = 20000;
  std::vector<std::string *> made(n);
  std::thread producer([&] {
    for (int i = 0; i < n; i++)
      made[i] = new std::string(std::to_string(i) + std::string(i % 200, 'x'));
  });
  producer.join();
  std::atomic<int> bad{0};
  std::thread consumer([&] {
    for (int i = 0; i < n; i++) {
      if (made[i]->compare(0, std::to_string(i).size(), std::to_string(i)) != 0)
        bad++;
      delete made[i];
    }
  });
  consumer.join();
  CHECK(bad == 0);
}

int main(int argc, char **argv) {
  check_ours();
  if (argc > 1 && std::strcmp(argv[1], "delarray") == 0) {
    char *volatile a = new char[4096];
    delete a; // must abort: sized delete of one char
    std::puts("t_cxx_new: delete of new[] returned");
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "deltype") == 0) {
    struct S {
      size_t f[9];
    };
    void *volatile p = new char;
    delete static_cast<S *>(p); // must abort: sized delete of 72 bytes
    std::puts("t_cxx_new: delete as the wrong type returned");
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "arraydelete") == 0) {
    char *volatile a = new char;
    delete[] a; // checked mode: must abort, new's block freed by delete[]
    std::puts("t_cxx_new: delete[] of new returned");
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "baddelete") == 0) {
    char on_stack[64];
    void *volatile p = on_stack;           // hidden from -Wfree-nonheap-object: this is the point
    ::operator delete(p, sizeof on_stack); // must abort
    std::puts("t_cxx_new: sized delete of a stack address returned");
    return 0;
  }
  plain_forms();
  aligned_forms();
  failures();
  threads();
  std::puts("t_cxx_new: OK");
  return 0;
}
