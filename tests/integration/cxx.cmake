# SPDX-License-Identifier: MIT
# C++ operators new/delete (src/common/new_delete.cc), from the shared library and linked
# -static, natively and under qemu-aarch64.

# Dynamic: libaxmalloc.so's operators win over libstdc++'s (dladdr proves it).
ax_test(t_cxx_new SOURCES t_cxx_new.cc LIBS ${CMAKE_DL_LIBS})
set_target_properties(t_cxx_new PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
ax_expect_fail(t_cxx_new.baddelete t_cxx_new ARGS baddelete
               REGEX "axmalloc: operator delete\\(\\): invalid pointer 0x[0-9a-f]+")
# sized delete with another class's size: `delete` of a `new char[4096]`, a type's wrong size
# (the block holds its class's 16 bytes, or in an AX_CHECKED=ON build the 1 asked for)
ax_expect_fail(t_cxx_new.delarray t_cxx_new ARGS delarray
               REGEX "axmalloc: operator delete\\(\\): size mismatch 0x[0-9a-f]+ \\(freed as 1 bytes, the block holds 4096\\)")
ax_expect_fail(t_cxx_new.deltype t_cxx_new ARGS deltype
               REGEX "axmalloc: operator delete\\(\\): size mismatch 0x[0-9a-f]+ \\(freed as 72 bytes, the block holds (16|1)\\)")

# checked mode knows new[]'s blocks: delete[] of a `new char` aborts
ax_expect_fail(t_cxx_new.arraydelete t_cxx_new ARGS arraydelete ENV AXMALLOC_CHECK=1
               REGEX "axmalloc: operator delete\\[\\]\\(\\): mismatched deallocation of 0x[0-9a-f]+ \\(allocated by malloc or operator new\\)")

# -static against libaxmalloc.a, with the flags the CMake package and axmalloc.pc add.
ax_sys_static(t_cxx_new_static SOURCES t_cxx_new.cc DEFS AX_STATIC LIBS axmalloc_static
              OPTIONS ${AX_CXX_STATIC_LINK_FLAGS})
set_target_properties(t_cxx_new_static PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
add_test(NAME t_cxx_new_static COMMAND t_cxx_new_static)
ax_expect_fail(t_cxx_new_static.baddelete t_cxx_new_static ARGS baddelete
               REGEX "axmalloc: operator delete\\(\\): invalid pointer 0x[0-9a-f]+")
# sized delete with another class's size: `delete` of a `new char[4096]`, a type's wrong size
# (the block holds its class's 16 bytes, or in an AX_CHECKED=ON build the 1 asked for)
ax_expect_fail(t_cxx_new_static.delarray t_cxx_new_static ARGS delarray
               REGEX "axmalloc: operator delete\\(\\): size mismatch 0x[0-9a-f]+ \\(freed as 1 bytes, the block holds 4096\\)")
ax_expect_fail(t_cxx_new_static.deltype t_cxx_new_static ARGS deltype
               REGEX "axmalloc: operator delete\\(\\): size mismatch 0x[0-9a-f]+ \\(freed as 72 bytes, the block holds (16|1)\\)")

# A program that never names std::bad_alloc: dynamically and with the -u flags, a failed
# new is a catchable exception; -static without them, axmalloc's message says what to add.
ax_test(t_cxx_nobadalloc SOURCES t_cxx_nobadalloc.cc)
set_tests_properties(t_cxx_nobadalloc PROPERTIES PASS_REGULAR_EXPRESSION "caught")
ax_sys_static(t_cxx_nobadalloc_u SOURCES t_cxx_nobadalloc.cc LIBS axmalloc_static
              OPTIONS ${AX_CXX_STATIC_LINK_FLAGS})
add_test(NAME t_cxx_nobadalloc_u COMMAND t_cxx_nobadalloc_u)
set_tests_properties(t_cxx_nobadalloc_u PROPERTIES PASS_REGULAR_EXPRESSION "caught")
ax_sys_static(t_cxx_nobadalloc_static SOURCES t_cxx_nobadalloc.cc LIBS axmalloc_static)
ax_expect_fail(t_cxx_nobadalloc_static t_cxx_nobadalloc_static
  REGEX "axmalloc: operator new\\([0-9]+\\): out of memory, and std::bad_alloc is not linked in \\(static link: add -Wl,-u,_ZTISt9bad_alloc")

# A program that replaces only new(size_t) and delete(void *): every other form must go
# through them (dynamic: the executable's win; static: ours are weak).
ax_test(t_cxx_replaced SOURCES t_cxx_replaced.cc)
set_target_properties(t_cxx_replaced PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_compile_options(t_cxx_replaced PRIVATE -Wno-sized-deallocation)
ax_sys_static(t_cxx_replaced_static SOURCES t_cxx_replaced.cc LIBS axmalloc_static
              OPTIONS ${AX_CXX_STATIC_LINK_FLAGS})
set_target_properties(t_cxx_replaced_static PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_compile_options(t_cxx_replaced_static PRIVATE -Wno-sized-deallocation)
add_test(NAME t_cxx_replaced_static COMMAND t_cxx_replaced_static)

# The operators' object asks nothing of the C++ runtime but weakly, so that C programs
# link it (axmalloc.o, --whole-archive) without libstdc++.
add_test(NAME t_cxx_weakrefs
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/t_cxx_weakrefs.sh ${CMAKE_NM} ${AX_RELOC_OBJECT})
set_tests_properties(t_cxx_replaced t_cxx_replaced_static t_cxx_new t_cxx_new_static t_cxx_nobadalloc t_cxx_nobadalloc_u
  t_cxx_nobadalloc_static t_cxx_weakrefs t_cxx_new.baddelete t_cxx_new_static.baddelete
  t_cxx_new.delarray t_cxx_new_static.delarray t_cxx_new.deltype t_cxx_new_static.deltype
  t_cxx_new.arraydelete
  PROPERTIES LABELS cxx)
