# SPDX-License-Identifier: MIT
# The core's layers (src/common/internal.h): t_layers.py reads the library's objects with nm
# and fails when a lower layer uses a symbol a higher one defines (but for the exceptions it
# names), or when the call graph has a circle of more than a handful of files.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_FOUND)
  add_test(NAME t_layers
           COMMAND ${CMAKE_COMMAND} -E env NM=${CMAKE_NM} ${Python3_EXECUTABLE}
                   ${CMAKE_CURRENT_LIST_DIR}/t_layers.py $<TARGET_OBJECTS:axmalloc_objects>)
  set_tests_properties(t_layers PROPERTIES LABELS "layers;quick" TIMEOUT 60)
  # the same with the layers upside down: every call goes upward, and the check must say so
  add_test(NAME t_layers.inverted
           COMMAND ${CMAKE_COMMAND} -E env NM=${CMAKE_NM} AX_LAYERS_INVERT=1
                   ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/t_layers.py
                   $<TARGET_OBJECTS:axmalloc_objects>)
  set_tests_properties(t_layers.inverted PROPERTIES LABELS layers TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "uses axi_[a-z_]+ of [a-z_]+[.]c [(][a-z ]+[)]: a call into a higher layer")
endif()
