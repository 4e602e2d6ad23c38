# Options for `cmake --graphviz` (read from the top of the build tree or the source tree): the
# component graph of the project's own libraries, which cmake/tests/check_component_graph.py
# compares with the README's.
set(GRAPHVIZ_EXECUTABLES FALSE)
set(GRAPHVIZ_EXTERNAL_LIBS FALSE)
set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)
set(GRAPHVIZ_GENERATE_DEPENDERS FALSE)
