/* SPDX-License-Identifier: MIT */
// t_oom_cxx: C++ allocation failure with axmalloc's operator new and delete.
//
// Without a limit: requests no machine can satisfy throw std::bad_alloc (plain, array,
// aligned), and their nothrow forms return nullptr. Under RLIMIT_AS (see oom_limit.h):
// memory is filled with new'd blocks until bad_alloc; then every form of new fails by its
// contract; a new-handler that frees a reserve lets the retry succeed; a new-handler that
// throws (a class derived from std::bad_alloc) has its exception come out of `new`, and
// nullptr out of nothrow new; std::vector growth throws bad_alloc and keeps its contents;
// after freeing, the same allocations succeed again (less what a page-map table that
// axmalloc mapped meanwhile took: oom_limit.h).
//
// usage: t_oom_cxx [MiB=256]     (exits 77 when no address-space limit can be enforced)
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "sys_check.h"

#include "oom_limit.h"

#include <axmalloc.h>

namespace {

// Huge blocks (> 1 MiB: a mapping each), so that freeing some gives address space back.
constexpr size_t kBlock = 2 * MiB;

// Blocks kept in an intrusive list: bookkeeping needs no memory while there is none.
struct Node {
  Node *next;
  size_t size;
  unsigned tag;
};

Node *push(Node *head, void *mem, size_t size, unsigned tag) {
  Node *n = static_cast<Node *>(mem);
  n->next = head;
  n->size = size;
  n->tag = tag;
  unsigned char *b = static_cast<unsigned char *>(mem);
  for (size_t off = 4096; off < size; off += 4096) // touch every page
    b[off] = (unsigned char)(tag + (off >> 12));
  b[size - 1] = (unsigned char)tag;
  return n;
}

void verify(const Node *n) {
  const unsigned char *b = reinterpret_cast<const unsigned char *>(n);
  for (size_t off = 4096; off < n->size; off += 4096)
    CHECKF(b[off] == (unsigned char)(n->tag + (off >> 12)), "block %p byte %zu lost",
           (const void *)n, off);
  CHECKF(b[n->size - 1] == (unsigned char)n->tag, "block %p last byte lost", (const void *)n);
}

size_t free_all(Node *&head) {
  size_t n = 0;
  while (head) {
    Node *next = head->next;
    verify(head);
    ::operator delete[](head);
    head = next;
    n++;
  }
  return n;
}

// Fill memory with new char[size] until it throws. post: the list, count in *count.
Node *fill(size_t size, size_t *count, size_t cap) {
  Node *head = nullptr;
  size_t n = 0;
  for (;;) {
    try {
      char *p = new char[size];
      head = push(head, p, size, (unsigned)n);
      n++;
      CHECKF(n * size < cap, "%zu MiB allocated under the limit", (n * size) >> 20);
    } catch (const std::bad_alloc &) {
      break;
    }
  }
  *count = n;
  return head;
}

// The compiler may drop a new-expression whose result is only deleted (allocation
// elision): every pointer under test goes through here first.
void *volatile sink;
template <class T> T *used(T *p) {
  sink = p;
  return p;
}

template <class F> bool throws_bad_alloc(F f) {
  try {
    f();
  } catch (const std::bad_alloc &) {
    return true;
  }
  return false;
}

// ---- without a limit ---------------------------------------------------------------------

void impossible_sizes() {
  const size_t sizes[] = {(size_t)PTRDIFF_MAX - 4096, (size_t)PTRDIFF_MAX, SIZE_MAX / 2 + 1,
                          SIZE_MAX - 4096};
  for (size_t n : sizes) {
    CHECKF(throws_bad_alloc([n] { ::operator delete(::operator new(n)); }), "new(%#zx)", n);
    CHECKF(throws_bad_alloc([n] { ::operator delete[](::operator new[](n)); }), "new[](%#zx)", n);
    CHECKF(throws_bad_alloc([n] {
             ::operator delete(::operator new(n, std::align_val_t(4096)), std::align_val_t(4096));
           }),
           "aligned new(%#zx)", n);
    CHECK(::operator new(n, std::nothrow) == nullptr);
    CHECK(::operator new[](n, std::nothrow) == nullptr);
    CHECK(::operator new(n, std::align_val_t(64), std::nothrow) == nullptr);
    CHECK(::operator new[](n, std::align_val_t(4096), std::nothrow) == nullptr);
  }
  // new T[n] whose byte count overflows: std::bad_array_new_length, a std::bad_alloc
  volatile size_t count = SIZE_MAX / 4;
  CHECK(throws_bad_alloc([&] { delete[] used(new uint64_t[count]); }));
  std::printf("t_oom_cxx: impossible sizes throw std::bad_alloc, nothrow gives nullptr\n");
}

// ---- under the limit --------------------------------------------------------------------

Node *reserve; // the handler frees from here
int handler_calls;

void handler_frees_reserve() {
  handler_calls++;
  for (int i = 0; i < 8 && reserve; i++) { // 16 MiB back
    Node *next = reserve->next;
    verify(reserve);
    ::operator delete[](reserve);
    reserve = next;
  }
  if (!reserve)
    std::set_new_handler(nullptr); // nothing left: let new throw
}

struct handler_gave_up : std::bad_alloc {
  const char *what() const noexcept override { return "handler_gave_up"; }
};

void handler_throws() {
  handler_calls++;
  throw handler_gave_up();
}

// Everything fails the same way once the blocks of kBlock are gone.
void every_form_fails() {
  const size_t n = kBlock;
  CHECK(throws_bad_alloc([n] { ::operator delete(::operator new(n)); }));
  CHECK(throws_bad_alloc([n] { delete[] used(new char[n]); }));
  CHECK(throws_bad_alloc([n] {
    ::operator delete[](used(new (std::align_val_t(4096)) char[n]), std::align_val_t(4096));
  }));
  CHECK(throws_bad_alloc([n] {
    ::operator delete(::operator new(n, std::align_val_t(65536)), std::align_val_t(65536));
  }));
  CHECK(used(new (std::nothrow) char[n]) == nullptr);
  CHECK(::operator new(n, std::nothrow) == nullptr);
  CHECK(used(new (std::align_val_t(4096), std::nothrow) char[n]) == nullptr);
  CHECK(::operator new(n, std::align_val_t(256), std::nothrow) == nullptr);
}

void new_handlers() {
  // A handler that frees part of the reserve: the failed new retries and succeeds.
  handler_calls = 0;
  std::set_new_handler(handler_frees_reserve);
  char *p = new char[4 * kBlock];
  CHECKF(handler_calls >= 1, "new succeeded without calling the new-handler (%d calls)",
         handler_calls);
  std::memset(p, 1, 4 * kBlock);
  std::set_new_handler(nullptr); // fill() below must stop at the first failure
  // ... and with an aligned new, once memory is exhausted again
  size_t extra = 0;
  Node *refill = fill(kBlock, &extra, SIZE_MAX);
  int before = handler_calls;
  std::set_new_handler(handler_frees_reserve);
  char *q = new (std::align_val_t(4096)) char[2 * kBlock];
  CHECK(((uintptr_t)q & 4095) == 0);
  CHECKF(handler_calls > before, "aligned new succeeded without calling the new-handler");
  std::set_new_handler(nullptr);
  Node *refill2 = fill(kBlock, &extra, SIZE_MAX);
  // A handler that throws: the exception comes out of new, nullptr out of nothrow new.
  handler_calls = 0;
  std::set_new_handler(handler_throws);
  bool caught = false;
  try {
    delete[] used(new char[kBlock]);
  } catch (const handler_gave_up &) {
    caught = true;
  }
  CHECKF(caught && handler_calls == 1,
         "the new-handler's exception did not come out of new "
         "(caught %d, calls %d)",
         caught, handler_calls);
  CHECK(used(new (std::nothrow) char[kBlock]) == nullptr);
  CHECK(used(new (std::align_val_t(4096), std::nothrow) char[kBlock]) == nullptr);
  CHECK(handler_calls == 3);
  std::set_new_handler(nullptr);
  free_all(refill);
  free_all(refill2);
  operator delete[](q, std::align_val_t(4096));
  delete[] p;
  std::printf("t_oom_cxx: new-handlers: freeing one lets new retry, throwing one throws\n");
}

// push_back until bad_alloc: the vector keeps its elements (strong guarantee).
void vector_growth(size_t cap) {
  std::vector<uint64_t> v;
  bool threw = false;
  try {
    for (;;) {
      v.push_back(v.size() * 7);
      CHECKF(v.size() * 8 < cap, "vector of %zu MiB under the limit", (v.size() * 8) >> 20);
    }
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK(threw);
  CHECK(!v.empty());
  for (size_t i = 0; i < v.size(); i += 4096)
    CHECKF(v[i] == i * 7, "vector element %zu lost after bad_alloc", i);
  CHECK(v.back() == (v.size() - 1) * 7);
  std::printf("t_oom_cxx: vector grew to %zu MiB, then threw bad_alloc intact\n",
              (v.size() * 8) >> 20);
}

} // namespace

int main(int argc, char **argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::printf("t_oom_cxx\n"); // stdio allocates its buffer now
  // axmalloc's operator new is in use: the block is one ax_usable_size knows
  char *probe = new char[100];
  CHECK(ax_usable_size(probe) >= 100);
  delete[] probe;

  impossible_sizes();
  size_t headroom = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256) * MiB;
  size_t limit = oom_limit_setup(headroom);
  if (!limit)
    return OOM_SKIP;
  size_t outside = oom_outside(); // (no huge block freed yet: exact)

  // Fill memory with 2 MiB blocks; the last 32 are the handler's reserve.
  size_t n = 0;
  Node *blocks = fill(kBlock, &n, limit);
  CHECKF(n * kBlock >= oom_avail / 4, "only %zu MiB before bad_alloc, %zu MiB free", n * 2,
         oom_avail >> 20);
  std::printf("t_oom_cxx: %zu blocks of 2 MiB before bad_alloc\n", n);
  for (int i = 0; i < 32 && blocks; i++) {
    Node *next = blocks->next;
    blocks->next = reserve;
    reserve = blocks;
    blocks = next;
  }
  every_form_fails();
  new_handlers();
  free_all(reserve);
  free_all(blocks);

  vector_growth(limit);

  // Recovery: the same blocks again, unless the large blocks of the vector's growth took a
  // segment in a new 64 GiB region, whose page-map table stays (oom_limit.h).
  size_t again = 0;
  blocks = fill(kBlock, &again, limit);
  size_t now = oom_outside(), want = oom_recovery_after(n, outside, now);
  CHECKF(again >= want,
         "after freeing, %zu blocks of 2 MiB before bad_alloc, first time %zu (address space "
         "outside axmalloc's count: %lld KiB more)",
         again, n, ((long long)now - (long long)outside) / 1024);
  if (want < oom_recovery(n))
    std::printf("t_oom_cxx: the page map gained a table (8 MiB) since the first fill\n");
  free_all(blocks);
  std::printf("t_oom_cxx: recovered (%zu blocks again): OK\n", again);
  return 0;
}
