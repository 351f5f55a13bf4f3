# SPDX-License-Identifier: MIT
# Cross-compile axmalloc for AArch64 Linux (glibc) with Debian's cross toolchain, and run
# its tests under qemu-user.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=toolchain/aarch64-linux-gnu.cmake
#   cmake --build build-aarch64 -j2
#   QEMU_CPU=max        ctest --test-dir build-aarch64 --output-on-failure   # LSE atomics, SVE
#   QEMU_CPU=cortex-a57 ctest --test-dir build-aarch64 --output-on-failure   # ARMv8.0, no LSE
#
# Debian packages: gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
# qemu-user (scripts/deps.sh installs them).
#
# CMAKE_CROSSCOMPILING_EMULATOR is prepended by ctest to every test whose COMMAND is a
# target name (add_test(NAME x COMMAND target)); it is not prepended to a
# $<TARGET_FILE:...> command or to plain commands such as `sh -c ...`: those must call
# qemu-aarch64 themselves. `-L /usr/aarch64-linux-gnu` makes qemu find the aarch64
# dynamic loader and libraries; static binaries ignore it.
#
# CPU model: qemu-user reads the QEMU_CPU environment variable itself (same as `-cpu`), so
# `QEMU_CPU=cortex-a57 ctest ...` runs the same build on a CPU without LSE. Unset, qemu 7.2
# uses `max` for aarch64 user mode. Nothing here fixes the CPU, on purpose.

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(AX_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${AX_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${AX_CROSS_TRIPLE}-g++)
set(CMAKE_ASM_COMPILER ${AX_CROSS_TRIPLE}-gcc)

# Debian installs the target's headers and libraries here (libc6-dev-arm64-cross).
set(CMAKE_FIND_ROOT_PATH /usr/${AX_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER) # build tools run on the host
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# A list, so ctest runs: qemu-aarch64 -L /usr/aarch64-linux-gnu <test> <args...>
find_program(AX_QEMU_AARCH64 qemu-aarch64)
if(NOT AX_QEMU_AARCH64)
  set(AX_QEMU_AARCH64 qemu-aarch64)
  message(WARNING "qemu-aarch64 not found (Debian package qemu-user): "
                  "the project builds, but ctest cannot run the aarch64 tests")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR "${AX_QEMU_AARCH64};-L;/usr/${AX_CROSS_TRIPLE}")
