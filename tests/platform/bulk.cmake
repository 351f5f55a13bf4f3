# SPDX-License-Identifier: MIT
# The bulk kernels and their dispatch (t_bulk.c; src/arch/<arch>/arch_bulk.h; docs/bulk.md).
#
#   t_bulk            guard-band sweeps of this backend's kernels (with their per-file ISA
#                     flags) and of the other backend's kernels built through SIMDe without
#                     flags (portable code), then the allocator checks
#   t_bulk.<kernel>   AXMALLOC_FORCE_ISA=<kernel>: ax_info() reports it (when the CPU has
#                     it); calloc/realloc correct with it; one per name in arch_bulk.h's list
#   t_bulk.nonsense   an unknown name is ignored, and said (a kernel the CPU lacks: only under
#                     AXMALLOC_VERBOSE, since the test passes force every kernel everywhere)
#   t_bulk.objdump    the library's kernels are the intended instructions, and no code
#                     outside the AVX kernels uses ymm/zmm registers
ax_bulk_kernel_properties() # per-file ISA flags, for this directory's targets

if(AX_ARCH STREQUAL "x86_64")
  set(ax_other_arch aarch64)
else()
  set(ax_other_arch x86_64)
endif()
file(GLOB ax_other_bulk ${PROJECT_SOURCE_DIR}/src/arch/${ax_other_arch}/bulk_*.c)
list(FILTER ax_other_bulk EXCLUDE REGEX "/bulk_detect\\.c$") # cpuid / mrs: native only

ax_test(t_bulk SOURCES t_bulk.c ${AX_BULK_SOURCES} ${ax_other_bulk}
        ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH}/cpu_${AX_ARCH}.c)
target_include_directories(t_bulk PRIVATE ${PROJECT_SOURCE_DIR}/src/arch)
target_include_directories(t_bulk SYSTEM PRIVATE ${AX_SIMDE_INCLUDE})
set_tests_properties(t_bulk PROPERTIES ENVIRONMENT_MODIFICATION "AXMALLOC_FORCE_ISA=unset:")

# One variant per kernel name of the list (the X(name, ...) rows of arch_bulk.h), plus libc.
file(READ ${PROJECT_SOURCE_DIR}/src/arch/${AX_ARCH}/arch_bulk.h ax_bulk_header)
string(REGEX MATCHALL "\n  X\\([a-z0-9_]+," ax_bulk_rows "${ax_bulk_header}")
set(ax_bulk_names libc)
foreach(row IN LISTS ax_bulk_rows)
  string(REGEX REPLACE "^\n  X\\(([a-z0-9_]+),$" "\\1" name "${row}")
  list(APPEND ax_bulk_names ${name})
endforeach()
foreach(name IN LISTS ax_bulk_names)
  add_test(NAME t_bulk.${name} COMMAND t_bulk alloc)
  set_tests_properties(t_bulk.${name} PROPERTIES ENVIRONMENT "AXMALLOC_FORCE_ISA=${name}")
endforeach()
add_test(NAME t_bulk.nonsense COMMAND t_bulk alloc)
set_tests_properties(t_bulk.nonsense PROPERTIES
  ENVIRONMENT "AXMALLOC_FORCE_ISA=nonsense" ENVIRONMENT_MODIFICATION "AXMALLOC_VERBOSE=unset:"
  PASS_REGULAR_EXPRESSION "AXMALLOC_FORCE_ISA=nonsense is not a bulk kernel \\(libc, [^\n]*\\): the default none is used\n(.*\n)?t_bulk: OK"
  FAIL_REGULAR_EXPRESSION "CHECK failed")

# objdump: <function>:<extended regex that must occur in its body>; "!avx:<regex>" must not
# occur in any function whose name does not contain "avx".
if(AX_ARCH STREQUAL "x86_64")
  set(ax_bulk_insns
    "axi_bulk_zero_sse2:movaps|movdqa"
    "axi_bulk_zero_avx2:vmovdqa[[:space:]]+%ymm"
    "axi_bulk_copy_avx2:vmovdqa[[:space:]]+%ymm"
    "axi_bulk_zero_avx2_nt:vmovntdq[[:space:]]+%ymm"
    "axi_bulk_copy_avx2_nt:vmovntdq[[:space:]]+%ymm"
    "axi_bulk_zero_avx512:vmovdqa64[[:space:]]+%zmm"
    "axi_bulk_copy_avx512:vmovdqa64[[:space:]]+%zmm"
    "axi_bulk_zero_avx512_nt:vmovntdq[[:space:]]+%zmm"
    "axi_bulk_copy_avx512_nt:vmovntdq[[:space:]]+%zmm"
    "axi_bulk_zero_erms:rep stos"
    "axi_bulk_copy_erms:rep movsb"
    "!avx:%[yz]mm")
else()
  set(ax_bulk_insns
    "axi_bulk_zero_neon:stp[[:space:]]+q"
    "axi_bulk_copy_neon:ldp[[:space:]]+q"
    "axi_bulk_zero_dczva:dc[[:space:]]+zva")
endif()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/t_bulk_objdump.sh [=[
# usage: t_bulk_objdump.sh <objdump> <library> <function>:<regex>... (see tests/bulk.cmake)
od=$1 lib=$2
shift 2
dis=$("$od" -d --no-show-raw-insn "$lib") || exit 1
st=0
for spec in "$@"; do
  fn=${spec%%:*} re=${spec#*:}
  case $fn in
  !*)
    bad=$(printf '%s\n' "$dis" | awk -v s="${fn#!}" '/^[0-9a-f]+ <.*>:$/ {p = index($2, s) == 0} p' |
      grep -E "$re" | head -3)
    if [ -n "$bad" ]; then
      echo "FAIL: /$re/ outside the ${fn#!} kernels:"; echo "$bad"; st=1
    else
      echo "ok: no /$re/ outside the ${fn#!} kernels"
    fi ;;
  *)
    hit=$(printf '%s\n' "$dis" | awk -v f="<$fn>:" '$2 == f {p = 1; next} /^$/ {p = 0} p' |
      grep -E "$re" | head -1)
    if [ -n "$hit" ]; then echo "ok: $fn: $hit"; else echo "FAIL: $fn: no /$re/"; st=1; fi ;;
  esac
done
exit $st
]=])
add_test(NAME t_bulk.objdump
  COMMAND sh ${CMAKE_CURRENT_BINARY_DIR}/t_bulk_objdump.sh ${CMAKE_OBJDUMP}
          $<TARGET_FILE:axmalloc> ${ax_bulk_insns})
