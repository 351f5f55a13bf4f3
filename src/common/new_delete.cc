/* SPDX-License-Identifier: MIT */
// C++ operator new and delete in every standard form, so that C++ programs get axmalloc's
// from the shared library, the static library and axmalloc.o alike, and sized delete hands
// its size to ax_free_sized.
//
// This is the library's only C++, and it must not make C programs need libstdc++: a C
// program links axmalloc.o, or libaxmalloc.a under --whole-archive, and gets this object
// too. So every symbol it takes from the C++ runtime is a *weak* reference (the list
// below; tests/integration/t_cxx_weakrefs.sh checks that nothing else is undefined). In a C++
// program they resolve to libstdc++'s; in a C program they stay 0 and are never reached, since
// nothing there calls operator new.
//
// A -static C++ program links only the libstdc++.a members something asks for, and a weak
// reference asks for nothing: std::bad_alloc's type information may be missing when the
// program itself never names std::bad_alloc. Then a failing `new` cannot throw and ends
// the program with a message instead. The installed CMake target axmalloc::static and
// axmalloc.pc add -Wl,-u for the three symbols that make throwing possible.
//
// The operators themselves are weak definitions, so a program's own win, in a static link
// too; when it replaces a base form, the other forms go through it (cxx_replaced.c).
#include <cstddef>
#include <new>

#include "axmalloc.h"
#include "cxx_ops.h"

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
std::new_handler ax_cxx_get_new_handler() __asm__("_ZSt15get_new_handlerv") __attribute__((weak));
[[noreturn]] void ax_fatal_new(size_t size); // below
// os.c: message to stderr without allocating, then abort
[[noreturn]] void axi_fatal(const char *fmt, ...) __attribute__((visibility("hidden")));
}

#define AX_EXPORT __attribute__((visibility("default")))
// The allocation entry points' section: the stack walk drops the frames up to the last one in
// it (modes/stacks/unwind.c).
#define AX_API __attribute__((section("axmalloc_api")))

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

// One allocation: aligned (align a power of two), an array's (operator new[]: checked mode
// remembers it, check.c), or plain.
inline void *alloc(size_t size, size_t align, bool array) {
  return align ? ax_aligned_alloc(align, size) : array ? axi_new_array(size) : ax_malloc(size);
}

// The standard's loop: allocate; on failure call the new-handler and retry, or throw
// std::bad_alloc when there is none. The handler may throw; nothrow callers catch it.
// pre: align is 0 (plain) or a power of two.
__attribute__((noinline)) AX_API void *new_slow(size_t size, size_t align, bool array) {
  for (;;) {
    void *p = alloc(size, align, array);
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
  return __builtin_expect(p != nullptr, 1) ? p : new_slow(size, 0, false);
}

inline void *new_array(size_t size) {
  void *p = axi_new_array(size);
  return __builtin_expect(p != nullptr, 1) ? p : new_slow(size, 0, true);
}

// An alignment that is not a power of two (0 included) is the caller's error: libstdc++ throws
// std::bad_alloc at once, without the new-handler and without touching errno; so do we
// (tests/t_contract compares them).
inline bool bad_align(size_t align) { return __builtin_expect((align & (align - 1)) || !align, 0); }

// aligned_alloc wants size to be a multiple of the alignment only in ISO C; ours does not.
inline void *new_aligned(size_t size, std::align_val_t al) {
  if (bad_align((size_t)al))
    throw_bad_alloc(size);
  void *p = ax_aligned_alloc((size_t)al, size);
  return __builtin_expect(p != nullptr, 1) ? p : new_slow(size, (size_t)al, false);
}

// nothrow: a handler that throws (std::bad_alloc, say) must give nullptr, not an exception.
// align: 0 for the plain forms, else the alignment asked for (a power of two, or nullptr).
AX_API void *new_nothrow(size_t size, size_t align, bool array) noexcept {
  void *p = alloc(size, align, array);
  if (__builtin_expect(p != nullptr, 1) || !new_handler())
    return p;
  try {
    return new_slow(size, align, array);
  } catch (...) {
    return nullptr;
  }
}

// An aligned block may come from a bigger class than its size's: the size must fit it.
inline void delete_sized_aligned(void *p, size_t size, std::align_val_t) { ax_free_sized(p, size); }

// The nothrow forms of a replaced operator new: its exception becomes nullptr.
template <typename F, typename... A> void *try_new(F f, A... a) noexcept {
  try {
    return f(a...);
  } catch (...) {
    return nullptr;
  }
}

#define REPLACED __builtin_expect(axi_cxx_replaced, 0)
#define OPS axi_cxx_ops

} // namespace

extern "C" __attribute__((noinline, cold)) void ax_fatal_new(size_t size) {
  // A -static program that never names std::bad_alloc gets here (see the top), or a C
  // program that loaded libstdc++ with RTLD_LOCAL (its symbols are not global).
  axi_fatal("axmalloc: operator new(%zu): out of memory, and std::bad_alloc is not linked in "
            "(static link: add -Wl,-u,_ZTISt9bad_alloc,-u,__cxa_throw,-u,__cxa_allocate_exception;"
            " or libstdc++ was loaded RTLD_LOCAL)\n",
            size);
}

// ---- the base forms ---------------------------------------------------------------------
// Defined under hidden names, exported as weak aliases: a program that defines its own
// operator new links -static without a duplicate definition, and cxx_replaced.c tells
// ours from the winner.
extern "C" {
AX_API void *axi_cxx_new(size_t n) { return new_plain(n); }
AX_API void *axi_cxx_new_array(size_t n) { return REPLACED ? OPS.new_(n) : new_array(n); }
void axi_cxx_delete(void *p) noexcept { axi_delete(p); }
void axi_cxx_delete_array(void *p) noexcept { REPLACED ? OPS.delete_(p) : axi_delete_array(p); }
AX_API void *axi_cxx_new_al(size_t n, size_t al) { return new_aligned(n, std::align_val_t{al}); }
AX_API void *axi_cxx_new_array_al(size_t n, size_t al) {
  return REPLACED ? OPS.new_al(n, al) : new_aligned(n, std::align_val_t{al});
}
void axi_cxx_delete_al(void *p, size_t) noexcept { ax_free(p); }
void axi_cxx_delete_array_al(void *p, size_t al) noexcept {
  REPLACED ? OPS.delete_al(p, al) : ax_free(p);
}
}

#define AX_OP(target) AX_EXPORT __attribute__((weak, alias(#target)))
AX_OP(axi_cxx_new) void *operator new(size_t);
AX_OP(axi_cxx_new_array) void *operator new[](size_t);
AX_OP(axi_cxx_delete) void operator delete(void *) noexcept;
AX_OP(axi_cxx_delete_array) void operator delete[](void *) noexcept;
AX_OP(axi_cxx_new_al) void *operator new(size_t, std::align_val_t);
AX_OP(axi_cxx_new_array_al) void *operator new[](size_t, std::align_val_t);
AX_OP(axi_cxx_delete_al) void operator delete(void *, std::align_val_t) noexcept;
AX_OP(axi_cxx_delete_array_al) void operator delete[](void *, std::align_val_t) noexcept;

// ---- the forms defined by them ------------------------------------------------------------
// Straight to ax_* while no base form is replaced; through the program's otherwise.
#define AX_WEAK AX_EXPORT __attribute__((weak))
AX_WEAK AX_API void *operator new(size_t n, const std::nothrow_t &) noexcept {
  return REPLACED ? try_new(OPS.new_, n) : new_nothrow(n, 0, false);
}
AX_WEAK AX_API void *operator new[](size_t n, const std::nothrow_t &) noexcept {
  return REPLACED ? try_new(OPS.new_array, n) : new_nothrow(n, 0, true);
}
AX_WEAK AX_API void *operator new(size_t n, std::align_val_t al, const std::nothrow_t &) noexcept {
  if (REPLACED)
    return try_new(OPS.new_al, n, (size_t)al);
  return bad_align((size_t)al) ? nullptr : new_nothrow(n, (size_t)al, false);
}
AX_WEAK AX_API void *operator new[](size_t n, std::align_val_t al,
                                    const std::nothrow_t &) noexcept {
  if (REPLACED)
    return try_new(OPS.new_array_al, n, (size_t)al);
  return bad_align((size_t)al) ? nullptr : new_nothrow(n, (size_t)al, false);
}
AX_WEAK void operator delete(void *p, const std::nothrow_t &) noexcept {
  REPLACED ? OPS.delete_(p) : axi_delete(p);
}
AX_WEAK void operator delete[](void *p, const std::nothrow_t &) noexcept {
  REPLACED ? OPS.delete_array(p) : axi_delete_array(p);
}
AX_WEAK void operator delete(void *p, size_t n) noexcept { axi_cxx_sized_delete(p, n); }
AX_WEAK void operator delete[](void *p, size_t n) noexcept { axi_cxx_sized_delete_array(p, n); }
AX_WEAK void operator delete(void *p, std::align_val_t al, const std::nothrow_t &) noexcept {
  REPLACED ? OPS.delete_al(p, (size_t)al) : ax_free(p);
}
AX_WEAK void operator delete[](void *p, std::align_val_t al, const std::nothrow_t &) noexcept {
  REPLACED ? OPS.delete_array_al(p, (size_t)al) : ax_free(p);
}
AX_WEAK void operator delete(void *p, size_t n, std::align_val_t al) noexcept {
  REPLACED ? OPS.delete_al(p, (size_t)al) : delete_sized_aligned(p, n, al);
}
AX_WEAK void operator delete[](void *p, size_t n, std::align_val_t al) noexcept {
  REPLACED ? OPS.delete_array_al(p, (size_t)al) : delete_sized_aligned(p, n, al);
}
