# SPDX-License-Identifier: MIT
# The core's layers (docs/design/README.md): t_layers.py reads the library's objects with nm and
# the sources' includes, and fails when a lower layer uses a symbol a higher one defines (but
# for the exceptions it names), when a file includes a header of a higher layer, when a header
# declares names another file defines, or when the rooms' includes form a circle.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_FOUND)
  set(AX_LAYERS ${CMAKE_COMMAND} -E env NM=${CMAKE_NM} ${Python3_EXECUTABLE}
                ${CMAKE_CURRENT_LIST_DIR}/t_layers.py --src ${PROJECT_SOURCE_DIR}/src)
  # the released objects, and the hooks build's (hooks.c: the base layer's dispatcher;
  # validate.c: the tests' views, on top)
  add_test(NAME t_layers COMMAND ${AX_LAYERS} $<TARGET_OBJECTS:axmalloc_objects>)
  set_tests_properties(t_layers PROPERTIES LABELS "layers;quick" TIMEOUT 60)
  add_test(NAME t_layers.hooks COMMAND ${AX_LAYERS} $<TARGET_OBJECTS:axmalloc_hooks_objects>)
  set_tests_properties(t_layers.hooks PROPERTIES LABELS "layers;quick" TIMEOUT 60)
  # the same with the layers upside down: every call goes upward, and the check must say so
  add_test(NAME t_layers.inverted
           COMMAND ${CMAKE_COMMAND} -E env AX_LAYERS_INVERT=1 ${AX_LAYERS}
                   $<TARGET_OBJECTS:axmalloc_objects>)
  set_tests_properties(t_layers.inverted PROPERTIES LABELS layers TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "uses axi_[a-z_]+ of [a-z_]+[.]c [(][a-z ]+[)]: a call into a higher layer")
  # ... and the includes too
  add_test(NAME t_layers.inverted_includes
           COMMAND ${CMAKE_COMMAND} -E env AX_LAYERS_INVERT=1 ${AX_LAYERS})
  set_tests_properties(t_layers.inverted_includes PROPERTIES LABELS layers TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "src/common/[a-z_/]+[.][ch] [(][a-z ]+[)] includes [a-z_/]+[.]h [(][a-z ]+[)]: an include from a higher layer")
  # the design's layer table is the one t_layers.py checks (printed by --table)
  add_test(NAME t_layers.docs
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/t_layers.py
                   --doc ${PROJECT_SOURCE_DIR}/docs/design/README.md)
  set_tests_properties(t_layers.docs PROPERTIES LABELS "layers;quick" TIMEOUT 60)
endif()
