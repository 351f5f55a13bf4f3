# SPDX-License-Identifier: MIT
# Guarded sampling (issue 43; src/common/modes/guard.c): a random sample of the allocations,
# each alone in a page of a pool between inaccessible guard pages, its page closed at free.
# Natively and, in a cross build, under the emulator (add_test runs a target under
# CMAKE_CROSSCOMPILING_EMULATOR; the scripts get it as their last argument).
find_program(AX_BASH_SAMPLING bash REQUIRED)

# t_sampling_stat: the odds. Per class, each block guarded with probability
# 1 - exp(-class size / AXMALLOC_GUARD): counted over many blocks of six sizes taken in turn,
# and as the fraction of processes killed by one use after free among 2000 allocations (800
# and 300 processes; 500 and 200 under the emulator); 5 sigma of the binomial each.
add_executable(t_sampling_uaf ${CMAKE_CURRENT_LIST_DIR}/t_sampling_uaf.c)
target_compile_options(t_sampling_uaf PRIVATE -fno-builtin -Wall -Wextra)
target_link_libraries(t_sampling_uaf PRIVATE axmalloc)
add_test(NAME t_sampling_stat
  COMMAND ${AX_BASH_SAMPLING} ${CMAKE_CURRENT_LIST_DIR}/t_sampling_stat.sh
          $<TARGET_FILE:t_sampling_uaf> "${AX_EMU_ARG}")
set_tests_properties(t_sampling_stat PROPERTIES LABELS "sampling" TIMEOUT ${AX_SYS_TIMEOUT})

# t_sampling_clean: a correct program (8 threads handing blocks to each other, a fork,
# realloc, aligned and calloc'd blocks, strdup) with sampling at every allocation the pool can
# hold, its data checked all along: with each placement, the heap profiler sampling too, 16 and 64 KiB pages (64 slots: the
# automatic size would be 16 and 8, fewer than the threads hold), a bigger pool,
# sampling off (it then counts no guarded block), and linked -static.
ax_test(t_sampling_clean SOURCES t_sampling_clean.c ENV AXMALLOC_GUARD=1 AXMALLOC_GUARD_SLOTS=64)
target_include_directories(t_sampling_clean PRIVATE ${PROJECT_SOURCE_DIR}/include)
# (each run: its name, then its environment, the variables separated by ','; at
# AXMALLOC_GUARD=4k about one block in 40 is guarded, maybe fewer than the check's 100 in all)
set(AX_SAMPLING_CLEAN_RUNS
  "start|AXMALLOC_GUARD=1,AXMALLOC_GUARD_PLACE=start"
  "exact|AXMALLOC_GUARD=1,AXMALLOC_GUARD_PLACE=exact"
  "alternate|AXMALLOC_GUARD=1,AXMALLOC_GUARD_PLACE=alternate"
  "page16k|AXMALLOC_GUARD=1,AXMALLOC_PAGE_SIZE=16384,AXMALLOC_GUARD_SLOTS=64"
  "page64k|AXMALLOC_GUARD=1,AXMALLOC_PAGE_SIZE=65536,AXMALLOC_GUARD_SLOTS=64"
  "slots|AXMALLOC_GUARD=1,AXMALLOC_GUARD_SLOTS=2048"
  "rate|AXMALLOC_GUARD=4k,T_SAMPLING_EXPECT=some"
  "off|AXMALLOC_GUARD=0,T_SAMPLING_EXPECT=none"
  "prof|AXMALLOC_GUARD=1,AXMALLOC_PROF=1,AXMALLOC_PROF_SAMPLE=4096,AXMALLOC_PROF_FILE=${CMAKE_CURRENT_BINARY_DIR}/t_sampling_clean.prof")
foreach(run ${AX_SAMPLING_CLEAN_RUNS})
  string(REPLACE "|" ";" run "${run}")
  list(POP_FRONT run name)
  string(REPLACE "," ";" run "${run}")
  if(NOT run MATCHES "AXMALLOC_GUARD_SLOTS") # (64, whatever page size a variant pass sets)
    list(APPEND run AXMALLOC_GUARD_SLOTS=64)
  endif()
  add_test(NAME t_sampling_clean.${name} COMMAND t_sampling_clean)
  set_tests_properties(t_sampling_clean.${name} PROPERTIES ENVIRONMENT "${run}" LABELS "sampling"
                       TIMEOUT ${AX_SYS_TIMEOUT})
endforeach()
ax_sys_static(t_sampling_clean_static SOURCES t_sampling_clean.c LIBS axmalloc_static)
add_test(NAME t_sampling_clean_static COMMAND t_sampling_clean_static)
# (64 slots, whatever page size a variant pass of scripts/test.sh sets: 8 threads hold more)
set_tests_properties(t_sampling_clean_static PROPERTIES ENVIRONMENT
                     "AXMALLOC_GUARD=1;AXMALLOC_GUARD_SLOTS=64")
set_tests_properties(t_sampling_clean t_sampling_clean_static PROPERTIES LABELS "sampling"
                     TIMEOUT ${AX_SYS_TIMEOUT})

# t_sampling_leak: the leak checker and the heap profiler with sampling at every allocation:
# no leak in the clean program, the guarded block it loses on purpose reported (status
# AXMALLOC_LEAKS_EXITCODE's); shared and static.
foreach(prog t_sampling_clean t_sampling_clean_static)
  string(REPLACE "t_sampling_clean" "t_sampling_leak" name ${prog})
  add_test(NAME ${name}
    COMMAND ${AX_BASH_SAMPLING} ${CMAKE_CURRENT_LIST_DIR}/t_sampling_leak.sh
            $<TARGET_FILE:${prog}> "${AX_EMU_ARG}")
  set_tests_properties(${name} PROPERTIES LABELS "sampling;leaks" TIMEOUT ${AX_SYS_TIMEOUT})
endforeach()

# t_sampling_exact: what a guarded block promises (usable size, place, calloc's zeroes,
# realloc's bytes, alignment, slots used again) and the deaths its misuse brings (double and
# invalid frees, realloc and malloc_usable_size of a freed block, a byte written past it: abort
# naming the address; a read after free, an overflow or underflow into a guard page: SIGSEGV);
# each placement, 16 and 64 KiB pages.
ax_test(t_sampling_exact SOURCES t_sampling_exact.c
        ENV AXMALLOC_GUARD=1 AXMALLOC_GUARD_SLOTS=8)
target_compile_options(t_sampling_exact PRIVATE -Wno-use-after-free)
set_tests_properties(t_sampling_exact PROPERTIES LABELS "sampling")
foreach(run "start|AXMALLOC_GUARD_PLACE=start" "exact|AXMALLOC_GUARD_PLACE=exact"
            "alternate|AXMALLOC_GUARD_PLACE=alternate" "page16k|AXMALLOC_PAGE_SIZE=16384"
            "page64k|AXMALLOC_PAGE_SIZE=65536")
  string(REPLACE "|" ";" run "${run}")
  list(POP_FRONT run name)
  add_test(NAME t_sampling_exact.${name} COMMAND t_sampling_exact)
  set_tests_properties(t_sampling_exact.${name} PROPERTIES LABELS "sampling"
                       ENVIRONMENT "AXMALLOC_GUARD=1;AXMALLOC_GUARD_SLOTS=8;${run}")
endforeach()

# t_sampling_cxx: C++ (new/delete sized, new[]/delete[], aligned new up to 4096 and its sized
# delete, strings, vectors, maps, std::thread hand-overs) with sampling at every allocation:
# contents checked, guarded blocks counted by ax_ctl's guard.samples.
ax_test(t_sampling_cxx SOURCES t_sampling_cxx.cc ENV AXMALLOC_GUARD=1)
set_target_properties(t_sampling_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_include_directories(t_sampling_cxx PRIVATE ${PROJECT_SOURCE_DIR}/include)
set_tests_properties(t_sampling_cxx PROPERTIES LABELS "sampling" TIMEOUT ${AX_SYS_TIMEOUT})

# Guarded sampling is off in checked mode, always on in an AX_CHECKED=ON build: these tests,
# which count guarded blocks, cannot hold there (as t_guard_report: tests/guard/guard.cmake).
if(AX_CHECKED)
  get_property(ax_sampling_tests DIRECTORY PROPERTY TESTS)
  foreach(t ${ax_sampling_tests})
    if(t MATCHES "^t_sampling")
      set_tests_properties(${t} PROPERTIES DISABLED TRUE)
    endif()
  endforeach()
endif()
