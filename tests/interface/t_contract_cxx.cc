/* SPDX-License-Identifier: MIT */
// t_contract's C++ half: the operators new and delete in every standard form, called through
// pointers (so the compiler can neither elide nor fold them), with the outcome as a code for
// the C half to print. Which operators run is the dynamic linker's choice: libstdc++'s in a
// plain run, axmalloc's when libaxmalloc.so is preloaded.
#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <new>

extern "C" {
enum { CX_PTR, CX_BAD_ALLOC, CX_OTHER, CX_NULLPTR };
int contract_cxx_new(int form, std::size_t n, std::size_t al, void **out);
void contract_cxx_delete(int form, void *p, std::size_t n, std::size_t al);
extern const char *const contract_cxx_new_name[8];
extern const char *const contract_cxx_delete_name[12];
const char *contract_cxx_new_origin(void);
}

const char *const contract_cxx_new_name[8] = {"operator new",   "operator new[]", "operator new",
                                              "operator new[]", "operator new",   "operator new[]",
                                              "operator new",   "operator new[]"};
const char *const contract_cxx_delete_name[12] = {
    "operator delete", "operator delete[]", "operator delete", "operator delete[]",
    "operator delete", "operator delete[]", "operator delete", "operator delete[]",
    "operator delete", "operator delete[]", "operator delete", "operator delete[]"};

namespace {
using std::align_val_t;
using std::nothrow_t;
using std::size_t;

using new_t = void *(*)(size_t);
using new_nt_t = void *(*)(size_t, const nothrow_t &) noexcept;
using new_al_t = void *(*)(size_t, align_val_t);
using new_al_nt_t = void *(*)(size_t, align_val_t, const nothrow_t &) noexcept;
using del_t = void (*)(void *) noexcept;
using del_nt_t = void (*)(void *, const nothrow_t &) noexcept;
using del_sz_t = void (*)(void *, size_t) noexcept;
using del_al_t = void (*)(void *, align_val_t) noexcept;
using del_al_nt_t = void (*)(void *, align_val_t, const nothrow_t &) noexcept;
using del_sz_al_t = void (*)(void *, size_t, align_val_t) noexcept;

// forms: 0 new(n), 1 new[](n), 2 new(n, nothrow), 3 new[](n, nothrow), 4 new(n, al),
// 5 new[](n, al), 6 new(n, al, nothrow), 7 new[](n, al, nothrow)
new_t volatile new0 = static_cast<new_t>(&::operator new);
new_t volatile new1 = static_cast<new_t>(&::operator new[]);
new_nt_t volatile new2 = static_cast<new_nt_t>(&::operator new);
new_nt_t volatile new3 = static_cast<new_nt_t>(&::operator new[]);
new_al_t volatile new4 = static_cast<new_al_t>(&::operator new);
new_al_t volatile new5 = static_cast<new_al_t>(&::operator new[]);
new_al_nt_t volatile new6 = static_cast<new_al_nt_t>(&::operator new);
new_al_nt_t volatile new7 = static_cast<new_al_nt_t>(&::operator new[]);

// forms: 0 delete(p), 1 delete[](p), 2 delete(p, nothrow), 3 delete[](p, nothrow),
// 4 delete(p, n), 5 delete[](p, n), 6 delete(p, al), 7 delete[](p, al),
// 8 delete(p, al, nothrow), 9 delete[](p, al, nothrow), 10 delete(p, n, al),
// 11 delete[](p, n, al)
del_t volatile del0 = static_cast<del_t>(&::operator delete);
del_t volatile del1 = static_cast<del_t>(&::operator delete[]);
del_nt_t volatile del2 = static_cast<del_nt_t>(&::operator delete);
del_nt_t volatile del3 = static_cast<del_nt_t>(&::operator delete[]);
del_sz_t volatile del4 = static_cast<del_sz_t>(&::operator delete);
del_sz_t volatile del5 = static_cast<del_sz_t>(&::operator delete[]);
del_al_t volatile del6 = static_cast<del_al_t>(&::operator delete);
del_al_t volatile del7 = static_cast<del_al_t>(&::operator delete[]);
del_al_nt_t volatile del8 = static_cast<del_al_nt_t>(&::operator delete);
del_al_nt_t volatile del9 = static_cast<del_al_nt_t>(&::operator delete[]);
del_sz_al_t volatile del10 = static_cast<del_sz_al_t>(&::operator delete);
del_sz_al_t volatile del11 = static_cast<del_sz_al_t>(&::operator delete[]);
} // namespace

// The file name of the object that defines the operator new this program calls.
const char *contract_cxx_new_origin(void) {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(new0), &info) || !info.dli_fname)
    return "?";
  const char *slash = std::strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

int contract_cxx_new(int form, size_t n, size_t al, void **out) {
  const align_val_t a{al};
  try {
    void *p = nullptr;
    switch (form) {
    case 0:
      p = new0(n);
      break;
    case 1:
      p = new1(n);
      break;
    case 2:
      p = new2(n, std::nothrow);
      break;
    case 3:
      p = new3(n, std::nothrow);
      break;
    case 4:
      p = new4(n, a);
      break;
    case 5:
      p = new5(n, a);
      break;
    case 6:
      p = new6(n, a, std::nothrow);
      break;
    default:
      p = new7(n, a, std::nothrow);
      break;
    }
    *out = p;
    return p ? CX_PTR : CX_NULLPTR;
  } catch (const std::bad_alloc &) {
    return CX_BAD_ALLOC;
  } catch (...) {
    return CX_OTHER;
  }
}

void contract_cxx_delete(int form, void *p, size_t n, size_t al) {
  const align_val_t a{al};
  switch (form) {
  case 0:
    del0(p);
    break;
  case 1:
    del1(p);
    break;
  case 2:
    del2(p, std::nothrow);
    break;
  case 3:
    del3(p, std::nothrow);
    break;
  case 4:
    del4(p, n);
    break;
  case 5:
    del5(p, n);
    break;
  case 6:
    del6(p, a);
    break;
  case 7:
    del7(p, a);
    break;
  case 8:
    del8(p, a, std::nothrow);
    break;
  case 9:
    del9(p, a, std::nothrow);
    break;
  case 10:
    del10(p, n, a);
    break;
  default:
    del11(p, n, a);
    break;
  }
}
