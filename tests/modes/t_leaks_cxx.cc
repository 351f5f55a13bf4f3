// SPDX-License-Identifier: MIT
// The leak checker's report of a C++ program (tests/modes/t_leaks_cxx.sh runs it with
// AXMALLOC_LEAKS): built with -g, so the report names each frame's source line.
//
//   t_leaks_cxx strings   a thread runs leak_in_thread(10): 10 std::string objects of 100
//                         characters lost (direct leaks: 10 x 32 bytes, made at the line
//                         marked LEAK_SITE), and their character buffers (indirect leaks:
//                         10 x 101 bytes, only the lost objects point at them); one string
//                         a global holds is still reachable
//
// The buffers are the bigger group: a report sorted by size alone would list them first.
// The program checks that each step it relies on happened (every string made, the thread ran).
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <string>

std::string *volatile sink; // (the last object made: cleared before exit)
std::string *volatile kept; // still reachable at exit
static volatile int made;

__attribute__((noinline)) void leak_in_thread(int n) {
  for (int i = 0; i < n; i++) {
    sink = new std::string(100, static_cast<char>('a' + i)); // LEAK_SITE
    made++;
  }
  sink = nullptr;
}

static void *thread_main(void *) {
  leak_in_thread(10);
  return nullptr;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "strings") != 0) {
    fprintf(stderr, "usage: t_leaks_cxx strings\n");
    return 2;
  }
  kept = new std::string(300, 'k');
  pthread_t t;
  if (pthread_create(&t, nullptr, thread_main, nullptr) != 0 || pthread_join(t, nullptr) != 0 ||
      made != 10) {
    fprintf(stderr, "t_leaks_cxx: the thread did not make its 10 strings\n");
    return 1;
  }
  printf("t_leaks_cxx: %d strings lost\n", made);
  return 0;
}
