# The AArch64 backend's build: included by the top-level CMakeLists.txt after the target
# axmalloc_objects exists.

# Debian's aarch64 gcc emits calls to libgcc outline-atomic helpers by default: never.
target_compile_options(axmalloc_objects PRIVATE -mno-outline-atomics)
