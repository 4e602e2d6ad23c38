#!/usr/bin/env bash
# check_component_graph.sh <source-dir> <python3>: configures the project in a scratch build
# tree with `cmake --graphviz` (options in cmake/CMakeGraphVizOptions.cmake) and checks that
# the README's component graph is that graph (check_component_graph.py).
set -euo pipefail
src=$1 python=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# cmake reads CMakeGraphVizOptions.cmake from the top of the build tree.
cp "$src/cmake/CMakeGraphVizOptions.cmake" "$tmp/"
cmake -S "$src" -B "$tmp" -G Ninja -DLMCACHE_ENABLE_CUDA=OFF --graphviz="$tmp/graph.dot" \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
"$python" "$src/cmake/tests/check_component_graph.py" "$tmp/graph.dot" "$src/README.md"
