/* SPDX-License-Identifier: MIT */
// The C++ heap misuse probes (see t_misuse.c): new and delete that do not match.
//
//   t_misuse_cxx PROBE      run one probe
//   t_misuse_cxx list       the probes, one a line
#include <cstdio>
#include <cstring>
#include <string>

namespace {

void not_caught() {
  std::puts("NOT_CAUGHT");
  std::fflush(stdout);
}

template <typename T> T *hide(T *p) {
  static T *volatile slot; // (the compiler cannot follow p through it)
  slot = p;
  return slot;
}

// a `new char` deleted as a bigger type: sized delete of 72 bytes
void delete_type_size_mismatch() {
  struct S {
    size_t f[9];
  };
  void *p = hide(new char);
  delete static_cast<S *>(p);
  not_caught();
}
void invalid_array_delete_char() { // new, then delete[]
  char *a = hide(new char);
  delete[] a;
  not_caught();
}
void invalid_delete_array_char() { // new[], then delete
  char *a = hide(new char[4096]);
  delete a;
  not_caught();
}
void invalid_array_delete_string() {
  std::string *a = hide(new std::string);
  delete[] a;
  not_caught();
}
void invalid_delete_array_string() {
  std::string *a = hide(new std::string[4096]);
  delete a;
  not_caught();
}

struct probe {
  const char *name;
  void (*run)();
};
const probe probes[] = {
    {"delete_type_size_mismatch", delete_type_size_mismatch},
    {"invalid_array_delete_char", invalid_array_delete_char},
    {"invalid_delete_array_char", invalid_delete_array_char},
    {"invalid_array_delete_string", invalid_array_delete_string},
    {"invalid_delete_array_string", invalid_delete_array_string},
};

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::strcmp(argv[1], "list") == 0) {
    for (const probe &p : probes)
      std::puts(p.name);
    return 0;
  }
  if (argc == 2)
    for (const probe &p : probes)
      if (std::strcmp(argv[1], p.name) == 0) {
        p.run();
        return 0;
      }
  std::fprintf(stderr, "usage: t_misuse_cxx PROBE | list\n");
  return 2;
}
