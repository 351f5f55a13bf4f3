// SPDX-License-Identifier: MIT
// C++ with guarded sampling at every allocation the pool can hold (AXMALLOC_GUARD=1, issue 43):
// new and delete (sized), new[] and delete[], aligned new (64 .. 4096) with its sized delete,
// std::string, std::vector and std::map growing and shrinking, in 4 std::threads that hand
// objects to each other; every object's contents checked. The guarded blocks are counted by
// ax_ctl's guard.samples (there must be some). A sized delete of a guarded block must not be
// taken for a mismatch: the block holds the bytes asked for.
#include <axmalloc.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace {

struct alignas(64) Wide {
  unsigned char bytes[200];
};
struct alignas(4096) Paged {
  unsigned char bytes[100];
};
struct Node {
  uint32_t seed;
  char text[77];
  explicit Node(uint32_t s) : seed(s) {
    for (size_t i = 0; i < sizeof text; i++)
      text[i] = static_cast<char>('a' + (s + i) % 26);
  }
  bool ok() const {
    for (size_t i = 0; i < sizeof text; i++)
      if (text[i] != static_cast<char>('a' + (seed + i) % 26))
        return false;
    return true;
  }
};

std::mutex xlock;
std::vector<std::unique_ptr<Node>> exchange(16);

uint32_t rnd(uint32_t &s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

void work(uint32_t seed, int rounds) {
  uint32_t s = seed | 1;
  std::map<int, std::string> names;
  std::vector<std::unique_ptr<Node>> nodes;
  for (int r = 0; r < rounds; r++) {
    switch (rnd(s) % 6) {
    case 0: { // a node, kept or handed over (another thread deletes it: a sized delete)
      auto n = std::make_unique<Node>(rnd(s));
      if (rnd(s) % 2) {
        std::lock_guard<std::mutex> g(xlock);
        auto &slot = exchange[rnd(s) % exchange.size()];
        if (slot)
          CHECK(slot->ok());
        slot.swap(n);
      }
      if (n)
        nodes.push_back(std::move(n));
      if (nodes.size() > 50) {
        for (auto &x : nodes)
          CHECK(x->ok());
        nodes.clear();
      }
      break;
    }
    case 1: { // strings of every length up to a page and more
      int k = static_cast<int>(rnd(s) % 64);
      std::string t(rnd(s) % 5000, static_cast<char>('A' + k % 26));
      names[k] = t;
      CHECK(names[k] == t);
      if (rnd(s) % 4 == 0)
        names.erase(k);
      break;
    }
    case 2: { // a vector grown and shrunk
      std::vector<uint32_t> v;
      size_t n = rnd(s) % 2000;
      for (size_t i = 0; i < n; i++)
        v.push_back(static_cast<uint32_t>(i * 2654435761u));
      v.resize(n / 3);
      v.shrink_to_fit();
      for (size_t i = 0; i < v.size(); i++)
        CHECK(v[i] == static_cast<uint32_t>(i * 2654435761u));
      break;
    }
    case 3: { // arrays
      size_t n = 1 + rnd(s) % 3000;
      char *a = new char[n];
      std::memset(a, 0x5c, n);
      CHECK(a[n - 1] == 0x5c);
      delete[] a;
      std::string *strs = new std::string[3]{"x", std::string(300, 'y'), std::string(2000, 'z')};
      CHECK(strs[2].size() == 2000 && strs[1][299] == 'y');
      delete[] strs;
      break;
    }
    case 4: { // aligned new, sized aligned delete
      Wide *w = new Wide;
      CHECK(reinterpret_cast<uintptr_t>(w) % 64 == 0);
      std::memset(w->bytes, 1, sizeof w->bytes);
      delete w;
      Paged *p = new Paged;
      CHECK(reinterpret_cast<uintptr_t>(p) % 4096 == 0);
      std::memset(p->bytes, 2, sizeof p->bytes);
      delete p;
      Wide *ws = new Wide[5];
      CHECK(reinterpret_cast<uintptr_t>(ws) % 64 == 0);
      delete[] ws;
      break;
    }
    default: { // plain new and sized delete of odd sizes
      auto *n = new Node(rnd(s));
      CHECK(n->ok());
      delete n;
      auto *d = new double(3.5);
      CHECK(*d == 3.5);
      delete d;
    }
    }
  }
  for (auto &x : nodes)
    CHECK(x->ok());
}

uint64_t ctl(const char *name) {
  uint64_t v = 0;
  size_t len = sizeof v;
  return ax_ctl(name, &v, &len, nullptr, 0) == 0 ? v : UINT64_MAX;
}

} // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 3000;
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < 4; i++)
    threads.emplace_back(work, 0x9e3779b9u * (i + 1), rounds);
  work(12345, rounds);
  for (auto &t : threads)
    t.join();
  for (auto &x : exchange)
    if (x)
      CHECK(x->ok());
  exchange.clear();
  uint64_t samples = ctl("guard.samples");
  std::printf("t_sampling_cxx: guard.samples %llu\n", static_cast<unsigned long long>(samples));
  CHECK(samples != UINT64_MAX && samples >= 100);
  std::puts("t_sampling_cxx: OK");
  return 0;
}
