// C++ operator new and delete in every standard form, so that C++ programs get axmalloc's
// from the shared library, the static library and axmalloc.o alike, and sized delete hands
// its size to ax_free_sized.
//
// This is the library's only C++, and it must not make C programs need libstdc++: a C
// program links axmalloc.o, or libaxmalloc.a under --whole-archive, and gets this object
// too. So every symbol it takes from the C++ runtime is a *weak* reference (the list
// below; tests/t_cxx_weakrefs.sh checks that nothing else is undefined). In a C++ program they
// resolve to libstdc++'s; in a C program they stay 0 and are never reached, since nothing
// there calls operator new.
//
// A -static C++ program links only the libstdc++.a members something asks for, and a weak
// reference asks for nothing: std::bad_alloc's type information may be missing when the
// program itself never names std::bad_alloc. Then a failing `new` cannot throw and ends
// the program with a message instead. The installed CMake target axmalloc::static and
// axmalloc.pc add -Wl,-u for the three symbols that make throwing possible.
#include <cstddef>
#include <new>

#include "axmalloc.h"

// The C++ runtime, weakly (the compiler's own references to them, from `throw` and
// `catch`, become weak too: symbol binding is per object file).
__asm__(".weak _ZSt15get_new_handlerv\n"
        ".weak __cxa_allocate_exception\n"
        ".weak __cxa_throw\n"
        ".weak __cxa_begin_catch\n"
        ".weak __cxa_end_catch\n"
        ".weak __cxa_rethrow\n"
        ".weak __gxx_personality_v0\n"
        ".weak _Unwind_Resume\n"
        ".weak _ZTISt9bad_alloc\n"
        ".weak _ZTVSt9bad_alloc\n"
        ".weak _ZNSt9bad_allocD1Ev\n"
        ".weak _ZTVSt9exception\n" /* UBSan's pointer-overflow check names it */
        ".weak _ZSt9terminatev\n");

// The same symbols under names the compiler does not treat as always non-null.
extern "C" {
extern const char ax_cxx_bad_alloc_type __asm__("_ZTISt9bad_alloc") __attribute__((weak));
extern const char ax_cxx_bad_alloc_vtable __asm__("_ZTVSt9bad_alloc") __attribute__((weak));
void ax_cxx_bad_alloc_dtor() __asm__("_ZNSt9bad_allocD1Ev") __attribute__((weak));
void *ax_cxx_allocate_exception(size_t) __asm__("__cxa_allocate_exception") __attribute__((weak));
void ax_cxx_throw() __asm__("__cxa_throw") __attribute__((weak));
std::new_handler ax_cxx_get_new_handler() __asm__("_ZSt15get_new_handlerv")
    __attribute__((weak));
[[noreturn]] void ax_fatal_new(size_t size); // below
// os.c: message to stderr without allocating, then abort
[[noreturn]] void axi_fatal(const char *fmt, ...) __attribute__((visibility("hidden")));
}

#define AX_EXPORT __attribute__((visibility("default")))

namespace {

// std::get_new_handler(), or none when libstdc++ is not linked in.
std::new_handler new_handler() {
  return ax_cxx_get_new_handler ? ax_cxx_get_new_handler() : nullptr;
}

[[noreturn]] void throw_bad_alloc(size_t size) {
  if (!&ax_cxx_bad_alloc_type || !&ax_cxx_bad_alloc_vtable || !ax_cxx_bad_alloc_dtor ||
      !ax_cxx_allocate_exception || !ax_cxx_throw)
    ax_fatal_new(size);
  throw std::bad_alloc();
}

// The standard's loop: allocate; on failure call the new-handler and retry, or throw
// std::bad_alloc when there is none. The handler may throw; nothrow callers catch it.
// pre: align is 0 (plain) or a power of two.
__attribute__((noinline)) void *new_slow(size_t size, size_t align) {
  for (;;) {
    void *p = align ? ax_aligned_alloc(align, size) : ax_malloc(size);
    if (p)
      return p;
    std::new_handler h = new_handler();
    if (!h)
      throw_bad_alloc(size);
    h();
  }
}

inline void *new_plain(size_t size) {
  void *p = ax_malloc(size);
  return __builtin_expect(p != nullptr, 1) ? p : new_slow(size, 0);
}

// aligned_alloc wants size to be a multiple of the alignment only in ISO C; ours does not.
inline void *new_aligned(size_t size, std::align_val_t al) {
  void *p = ax_aligned_alloc((size_t)al, size);
  return __builtin_expect(p != nullptr, 1) ? p : new_slow(size, (size_t)al);
}

// nothrow: a handler that throws (std::bad_alloc, say) must give nullptr, not an exception.
void *new_nothrow(size_t size, size_t align) noexcept {
  void *p = align ? ax_aligned_alloc(align, size) : ax_malloc(size);
  if (__builtin_expect(p != nullptr, 1) || !new_handler())
    return p;
  try {
    return new_slow(size, align);
  } catch (...) {
    return nullptr;
  }
}

// An aligned block comes from a class of at least `align` bytes.
inline void delete_sized_aligned(void *p, size_t size, std::align_val_t al) {
  ax_free_sized(p, size > (size_t)al ? size : (size_t)al);
}

} // namespace

extern "C" __attribute__((noinline, cold)) void ax_fatal_new(size_t size) {
  // Only a -static program that never names std::bad_alloc gets here (see the top).
  axi_fatal("axmalloc: operator new(%zu): out of memory, and std::bad_alloc is not linked in "
            "(static link: add -Wl,-u,_ZTISt9bad_alloc,-u,__cxa_throw,-u,__cxa_allocate_exception)\n",
            size);
}

// ---- new ------------------------------------------------------------------------------
AX_EXPORT void *operator new(size_t n) { return new_plain(n); }
AX_EXPORT void *operator new[](size_t n) { return new_plain(n); }
AX_EXPORT void *operator new(size_t n, const std::nothrow_t &) noexcept {
  return new_nothrow(n, 0);
}
AX_EXPORT void *operator new[](size_t n, const std::nothrow_t &) noexcept {
  return new_nothrow(n, 0);
}
AX_EXPORT void *operator new(size_t n, std::align_val_t al) { return new_aligned(n, al); }
AX_EXPORT void *operator new[](size_t n, std::align_val_t al) { return new_aligned(n, al); }
AX_EXPORT void *operator new(size_t n, std::align_val_t al, const std::nothrow_t &) noexcept {
  return new_nothrow(n, (size_t)al);
}
AX_EXPORT void *operator new[](size_t n, std::align_val_t al, const std::nothrow_t &) noexcept {
  return new_nothrow(n, (size_t)al);
}

// ---- delete ---------------------------------------------------------------------------
AX_EXPORT void operator delete(void *p) noexcept { ax_free(p); }
AX_EXPORT void operator delete[](void *p) noexcept { ax_free(p); }
AX_EXPORT void operator delete(void *p, const std::nothrow_t &) noexcept { ax_free(p); }
AX_EXPORT void operator delete[](void *p, const std::nothrow_t &) noexcept { ax_free(p); }
AX_EXPORT void operator delete(void *p, size_t n) noexcept { ax_free_sized(p, n); }
AX_EXPORT void operator delete[](void *p, size_t n) noexcept { ax_free_sized(p, n); }
AX_EXPORT void operator delete(void *p, std::align_val_t) noexcept { ax_free(p); }
AX_EXPORT void operator delete[](void *p, std::align_val_t) noexcept { ax_free(p); }
AX_EXPORT void operator delete(void *p, std::align_val_t, const std::nothrow_t &) noexcept {
  ax_free(p);
}
AX_EXPORT void operator delete[](void *p, std::align_val_t, const std::nothrow_t &) noexcept {
  ax_free(p);
}
AX_EXPORT void operator delete(void *p, size_t n, std::align_val_t al) noexcept {
  delete_sized_aligned(p, n, al);
}
AX_EXPORT void operator delete[](void *p, size_t n, std::align_val_t al) noexcept {
  delete_sized_aligned(p, n, al);
}
