# SPDX-License-Identifier: MIT
# The contract test: every entry point of the malloc family (and the C++ operators) over edge
# inputs, on glibc's allocator and on axmalloc's, compared line by line (tests/t_contract.c).
#
# Included from tests/CMakeLists.txt, this file registers the test t_contract. Run in script
# mode it is the test's driver:
#
#   cmake -DAX_PROG=<t_contract> -DAX_LIB=<libaxmalloc.so> -DAX_EXPECTED=<contract_expected.txt>
#         -DAX_WORK=<dir> [-DAX_EMU=<emulator args joined with |>] [-DAX_MODEL=large|small]
#         [-DAX_VMEM_KIB=<ulimit -v for qemu>] -P contract.cmake
#
# It runs the program twice, plainly (glibc's malloc, libstdc++'s operators) and with AX_LIB
# preloaded (natively LD_PRELOAD in the environment; under qemu-user `qemu-aarch64 ... -E
# LD_PRELOAD=<lib>`, so that the guest loads it and not qemu), checks that the first run says
# "# allocator: glibc" and the second "# allocator: axmalloc" (malloc is ax_malloc) and
# "# operator new: libaxmalloc...", and compares the outputs line by line. Each line is
# "<call> -> <result>". A difference is expected when an entry of AX_EXPECTED matches it; the
# test fails on any other difference, and on any entry that matches no difference (the list
# must stay honest). Both outputs are kept in AX_WORK
# (glibc.txt, axmalloc.txt) and the differences in AX_WORK/differences.txt.
#
# AX_EXPECTED: one entry per line, five fields separated by " || ":
#   where || call || glibc result || axmalloc result || reason
# where is all, x86_64 or aarch64 (the arch the program prints); call and the two results
# are CMake regular expressions matched against the whole text. '#' starts a comment line.
#
# Under qemu the driver runs qemu inside `sh -c "ulimit -v AX_VMEM_KIB"`: qemu-user ignores
# a guest's setrlimit, and the program needs its address space limited (it probes that).

# ---- script mode: the driver ---------------------------------------------------------------
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_policy(VERSION 3.25)
  foreach(v AX_PROG AX_LIB AX_EXPECTED AX_WORK)
    if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
      message(FATAL_ERROR "contract.cmake driver: ${v} not set")
    endif()
  endforeach()
  if(NOT AX_MODEL)
    set(AX_MODEL large)
  endif()
  set(emu "")
  if(AX_EMU)
    string(REPLACE "|" ";" emu "${AX_EMU}")
    if(NOT AX_VMEM_KIB)
      message(FATAL_ERROR "contract.cmake driver: AX_VMEM_KIB not set (needed under qemu)")
    endif()
  endif()
  file(MAKE_DIRECTORY "${AX_WORK}")

  # Lines as a list. A CMake list would split at ';' and keep '[' ... ']' (the regexes have
  # unbalanced ones) and '\;' together, so those characters are stood in for by control
  # characters while the text is a list: decode() gives a line back.
  string(ASCII 1 c_bs)
  string(ASCII 2 c_lb)
  string(ASCII 3 c_rb)
  string(ASCII 4 c_sc)
  function(read_lines file var)
    file(READ "${file}" text)
    string(REPLACE "\\" "${c_bs}" text "${text}")
    string(REPLACE "[" "${c_lb}" text "${text}")
    string(REPLACE "]" "${c_rb}" text "${text}")
    string(REPLACE ";" "${c_sc}" text "${text}")
    string(REGEX REPLACE "\n$" "" text "${text}")
    string(REPLACE "\n" ";" text "${text}")
    set(${var} "${text}" PARENT_SCOPE)
  endfunction()
  macro(decode var)
    string(REPLACE "${c_bs}" "\\" ${var} "${${var}}")
    string(REPLACE "${c_lb}" "[" ${var} "${${var}}")
    string(REPLACE "${c_rb}" "]" ${var} "${${var}}")
    string(REPLACE "${c_sc}" ";" ${var} "${${var}}")
  endmacro()
  # run(<name> <preload?>): runs the program, output in ${AX_WORK}/<name>.txt
  function(run name preload)
    if(emu)
      set(pre "")
      if(preload)
        set(pre -E "LD_PRELOAD=${AX_LIB}")
      endif()
      # qemu and its guest inside one address-space limit; LD_PRELOAD goes to the guest
      set(cmd sh -c "ulimit -v ${AX_VMEM_KIB} && exec \"$@\"" sh ${emu} ${pre} ${AX_PROG}
              ${AX_MODEL})
    elseif(preload)
      set(cmd ${CMAKE_COMMAND} -E env "LD_PRELOAD=${AX_LIB}" ${AX_PROG} ${AX_MODEL})
    else()
      set(cmd ${AX_PROG} ${AX_MODEL})
    endif()
    string(TIMESTAMP t0 "%s%f")
    execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_PRELOAD ${cmd}
      RESULT_VARIABLE rc OUTPUT_FILE "${AX_WORK}/${name}.txt" ERROR_VARIABLE err)
    string(TIMESTAMP t1 "%s%f")
    math(EXPR ms "(${t1} - ${t0}) / 1000")
    string(REPLACE ";" " " shown "${cmd}")
    message("---- ${name}: ${shown}: exit ${rc}, ${ms} ms")
    if(NOT rc STREQUAL "0")
      read_lines("${AX_WORK}/${name}.txt" last)
      if(last)
        list(GET last -1 last)
        decode(last)
      endif()
      message(FATAL_ERROR "${name} run failed (${rc}). Last line of its output:\n${last}\n"
                          "stderr:\n${err}")
    endif()
    if(err)
      message("stderr:\n${err}")
    endif()
  endfunction()
  run(glibc OFF)
  run(axmalloc ON)

  read_lines("${AX_WORK}/glibc.txt" out_g)
  read_lines("${AX_WORK}/axmalloc.txt" out_a)
  # headers: which allocator ran, the arch, and that the run got to its end
  foreach(r g a)
    set(hdr_${r} "")
    foreach(l IN LISTS out_${r})
      if(NOT l MATCHES "^#")
        break()
      endif()
      decode(l)
      string(APPEND hdr_${r} "${l}\n")
    endforeach()
    list(GET out_${r} -1 end_${r})
  endforeach()
  if(NOT hdr_g MATCHES "# allocator: glibc\n")
    message(FATAL_ERROR "the plain run did not run on glibc's malloc:\n${hdr_g}")
  endif()
  if(NOT hdr_a MATCHES "# allocator: axmalloc\n")
    message(FATAL_ERROR "the preloaded run did not run on axmalloc (is ${AX_LIB} preloaded "
                        "into the program?):\n${hdr_a}")
  endif()
  if(NOT hdr_a MATCHES "# operator new: [^\n]*axmalloc[^\n]*\n")
    message(FATAL_ERROR "the preloaded run did not call axmalloc's operator new:\n${hdr_a}")
  endif()
  if(NOT hdr_g MATCHES "# arch: ([a-z0-9_]+)\n")
    message(FATAL_ERROR "no '# arch:' line in the output")
  endif()
  set(arch "${CMAKE_MATCH_1}")
  foreach(r g a)
    if(NOT end_${r} MATCHES "^# end: ([0-9]+) calls")
      message(FATAL_ERROR "a run did not get to its end (last line: ${end_${r}})")
    endif()
    set(calls_${r} ${CMAKE_MATCH_1})
  endforeach()
  if(NOT calls_g EQUAL calls_a)
    message(FATAL_ERROR "the runs made different numbers of calls: ${calls_g}, ${calls_a}")
  endif()

  # the expected differences
  read_lines("${AX_EXPECTED}" exp_lines)
  set(nexp 0)
  set(fileline 0)
  foreach(l IN LISTS exp_lines)
    math(EXPR fileline "${fileline} + 1")
    if(l MATCHES "^[ \t]*(#|$)")
      continue()
    endif()
    decode(l)
    set(fields "")
    set(rest "${l}")
    foreach(i RANGE 3)
      string(FIND "${rest}" " || " pos)
      if(pos EQUAL -1)
        message(FATAL_ERROR "${AX_EXPECTED}: not five fields separated by ' || ':\n${l}")
      endif()
      string(SUBSTRING "${rest}" 0 ${pos} f)
      math(EXPR pos "${pos} + 4")
      string(SUBSTRING "${rest}" ${pos} -1 rest)
      set(exp_f${i}_${nexp} "${f}")
    endforeach()
    set(exp_f4_${nexp} "${rest}")
    if(NOT exp_f0_${nexp} MATCHES "^(all|x86_64|aarch64)$")
      message(FATAL_ERROR "${AX_EXPECTED}: 'where' must be all, x86_64 or aarch64:\n${l}")
    endif()
    set(exp_hits_${nexp} 0)
    set(exp_line_${nexp} ${fileline})
    math(EXPR nexp "${nexp} + 1")
  endforeach()

  # compare
  set(ndiff 0)
  set(nexpected 0)
  set(nunexpected 0)
  set(difffile "${AX_WORK}/differences.txt")
  file(WRITE "${difffile}" "")
  set(groups "")
  set(lineno 0)
  foreach(g a IN ZIP_LISTS out_g out_a)
    math(EXPR lineno "${lineno} + 1")
    if(g STREQUAL a)
      continue()
    endif()
    if(g MATCHES "^#" OR a MATCHES "^#")
      continue() # headers (the allocator line)
    endif()
    decode(g)
    decode(a)
    string(FIND "${g}" " -> " pg)
    string(FIND "${a}" " -> " pa)
    if(pg EQUAL -1 OR pa EQUAL -1)
      message(FATAL_ERROR "line ${lineno}: not '<call> -> <result>':\n${g}\n${a}")
    endif()
    string(SUBSTRING "${g}" 0 ${pg} call)
    string(SUBSTRING "${a}" 0 ${pa} call_a)
    if(NOT call STREQUAL call_a)
      message(FATAL_ERROR "line ${lineno}: the runs are out of step:\n${g}\n${a}")
    endif()
    math(EXPR pg "${pg} + 4")
    math(EXPR pa "${pa} + 4")
    string(SUBSTRING "${g}" ${pg} -1 res_g)
    string(SUBSTRING "${a}" ${pa} -1 res_a)
    math(EXPR ndiff "${ndiff} + 1")
    set(hit -1)
    if(nexp GREATER 0)
      math(EXPR last "${nexp} - 1")
      foreach(e RANGE ${last})
        if((exp_f0_${e} STREQUAL "all" OR exp_f0_${e} STREQUAL arch)
           AND call MATCHES "^(${exp_f1_${e}})$" AND res_g MATCHES "^(${exp_f2_${e}})$"
           AND res_a MATCHES "^(${exp_f3_${e}})$")
          set(hit ${e})
          break()
        endif()
      endforeach()
    endif()
    if(hit GREATER -1)
      math(EXPR exp_hits_${hit} "${exp_hits_${hit}} + 1")
      math(EXPR nexpected "${nexpected} + 1")
      file(APPEND "${difffile}" "expected (line ${exp_line_${hit}}): ${call}\n"
                                "    glibc:    ${res_g}\n    axmalloc: ${res_a}\n")
    else()
      math(EXPR nunexpected "${nunexpected} + 1")
      file(APPEND "${difffile}" "UNEXPECTED: ${call}\n"
                                "    glibc:    ${res_g}\n    axmalloc: ${res_a}\n")
      # group by function and the two results, for a readable summary
      string(REGEX REPLACE "\\(.*" "" fn "${call}")
      string(MD5 key "${fn} ${res_g} ${res_a}")
      if(NOT DEFINED grp_n_${key})
        list(APPEND groups ${key})
        set(grp_n_${key} 0)
        set(grp_desc_${key} "${fn}: glibc '${res_g}', axmalloc '${res_a}'")
        set(grp_ex_${key} "")
      endif()
      math(EXPR grp_n_${key} "${grp_n_${key}} + 1")
      if(grp_n_${key} LESS_EQUAL 3)
        string(APPEND grp_ex_${key} "      ${call}\n")
      endif()
      set(grp_last_${key} "${call}")
    endif()
  endforeach()

  # entries that match no difference any more
  set(nstale 0)
  set(stale "")
  if(nexp GREATER 0)
    math(EXPR last "${nexp} - 1")
    foreach(e RANGE ${last})
      set(desc "${exp_f0_${e}} || ${exp_f1_${e}} || ${exp_f2_${e}} || ${exp_f3_${e}}")
      if(NOT (exp_f0_${e} STREQUAL "all" OR exp_f0_${e} STREQUAL arch))
        message("line ${exp_line_${e}} (${exp_f0_${e}} only): not checked on ${arch}")
      elseif(exp_hits_${e} EQUAL 0)
        math(EXPR nstale "${nstale} + 1")
        string(APPEND stale "  line ${exp_line_${e}}: ${desc}\n    (${exp_f4_${e}})\n")
      else()
        message("line ${exp_line_${e}}: ${exp_hits_${e}} differences: ${exp_f4_${e}}")
      endif()
    endforeach()
  endif()

  if(nunexpected GREATER 0)
    set(summary "")
    foreach(key IN LISTS groups)
      string(APPEND summary "  ${grp_n_${key}} x ${grp_desc_${key}}\n${grp_ex_${key}}")
      if(grp_n_${key} GREATER 3)
        string(APPEND summary "      ...\n      ${grp_last_${key}}\n")
      endif()
    endforeach()
    message("differences not in ${AX_EXPECTED} (${nunexpected}; all of them in "
            "${AX_WORK}/differences.txt):\n${summary}")
  endif()
  if(nstale GREATER 0)
    message("entries of ${AX_EXPECTED} that match no difference (${nstale}): remove or fix "
            "them:\n${stale}")
  endif()
  message("contract: ${calls_g} calls compared, ${ndiff} differences, ${nexpected} expected")
  if(nunexpected GREATER 0 OR nstale GREATER 0)
    message(FATAL_ERROR "contract: ${nunexpected} unexpected differences, ${nstale} stale entries")
  endif()
  return()
endif()

# ---- registration ---------------------------------------------------------------------------
# The program must not link axmalloc: it runs on glibc's malloc unless the driver preloads
# libaxmalloc.so. Under qemu the small address-space model, inside ulimit -v: qemu's own
# ~240 MiB plus 640 MiB for the guest (the program checks it can map 512 MiB and not 768).
add_executable(t_contract t_contract.c t_contract_cxx.cc)
target_include_directories(t_contract PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                           ${PROJECT_SOURCE_DIR}/include)
target_compile_options(t_contract PRIVATE -fno-builtin -Wall -Wextra -Wno-unused-parameter)
set_target_properties(t_contract PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_link_libraries(t_contract PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(t_contract axmalloc)
if(CMAKE_CROSSCOMPILING)
  set(AX_CONTRACT_MODEL small)
  set(AX_CONTRACT_VMEM_KIB 901120)
else()
  set(AX_CONTRACT_MODEL large)
  set(AX_CONTRACT_VMEM_KIB 0)
endif()
add_test(NAME t_contract
  COMMAND ${CMAKE_COMMAND} "-DAX_EMU=${AX_EMU_ARG}" "-DAX_PROG=$<TARGET_FILE:t_contract>"
          "-DAX_LIB=$<TARGET_FILE:axmalloc>"
          "-DAX_EXPECTED=${CMAKE_CURRENT_SOURCE_DIR}/contract_expected.txt"
          "-DAX_WORK=${CMAKE_CURRENT_BINARY_DIR}/t_contract.d" "-DAX_MODEL=${AX_CONTRACT_MODEL}"
          "-DAX_VMEM_KIB=${AX_CONTRACT_VMEM_KIB}"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/contract.cmake)
set_tests_properties(t_contract PROPERTIES LABELS "api;contract" TIMEOUT 300)
