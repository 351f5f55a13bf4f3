# The x86-64 backend's build: included by the top-level CMakeLists.txt after the target
# axmalloc_objects exists.
