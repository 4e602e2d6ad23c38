#!/usr/bin/env python3
"""check_component_graph.py <graphviz.dot> <README.md> [--print]

The README's component graph (the ```mermaid block under "## Component graph") must be the
transitive reduction of the link graph of the project's own libraries, as `cmake --graphviz`
writes it: same libraries, same direct edges once implied edges are removed. Libraries are the
targets named lmcache_* except the build-flags interface, object libraries (*_objects) and
test-only libraries (*_mutants). Exits 1 naming every difference, and prints the block the
README should hold; --print prints that block only.
"""
import re
import sys


def library(name):
    return (name.startswith("lmcache_") and name != "lmcache_build_flags"
            and not name.endswith("_objects") and not name.endswith("_mutants"))


def short(name):
    return name[len("lmcache_"):]


def cmake_graph(dot_path):
    nodes, edges = set(), set()
    text = open(dot_path, encoding="utf-8").read()
    for m in re.finditer(r'\[ label = "([^"\\]+)', text):
        if library(m.group(1)):
            nodes.add(short(m.group(1)))
    for m in re.finditer(r"// (\S+) -> (\S+)\s*$", text, re.M):
        a, b = m.group(1), m.group(2)
        if library(a) and library(b):
            edges.add((short(a), short(b)))
    return nodes, edges


def reduce(nodes, edges):
    succ = {n: set() for n in nodes}
    for a, b in edges:
        succ[a].add(b)

    def reachable(src, skip_edge):
        seen, stack = set(), [src]
        while stack:
            n = stack.pop()
            for m in succ[n]:
                if (n, m) == skip_edge or m in seen:
                    continue
                seen.add(m)
                stack.append(m)
        return seen

    return {(a, b) for a, b in edges if b not in reachable(a, (a, b))}


def readme_graph(readme_path):
    text = open(readme_path, encoding="utf-8").read()
    m = re.search(r"^## Component graph\n.*?```mermaid\n(.*?)```", text, re.S | re.M)
    if not m:
        return None, None
    nodes, edges = set(), set()
    for line in m.group(1).splitlines():
        line = line.strip()
        e = re.fullmatch(r"(\w+) --> (\w+)", line)
        if e:
            edges.add((e.group(1), e.group(2)))
            nodes.update(e.groups())
        elif re.fullmatch(r"\w+", line):
            nodes.add(line)
    return nodes, edges


def mermaid(nodes, edges):
    lines = ["graph BT"]
    linked = {n for e in edges for n in e}
    for n in sorted(nodes - linked):
        lines.append("  " + n)
    for a, b in sorted(edges):
        lines.append(f"  {a} --> {b}")
    return "\n".join(lines) + "\n"


def main():
    args = [a for a in sys.argv[1:] if a != "--print"]
    nodes, edges = cmake_graph(args[0])
    reduced = reduce(nodes, edges)
    block = "```mermaid\n" + mermaid(nodes, reduced) + "```"
    if "--print" in sys.argv:
        print(block)
        return 0
    have_nodes, have_edges = readme_graph(args[1])
    if have_nodes is None:
        print("README has no ```mermaid block under '## Component graph'; it should be:\n" + block)
        return 1
    problems = []
    for n in sorted(nodes - have_nodes):
        problems.append(f"library {n} is missing from the README graph")
    for n in sorted(have_nodes - nodes):
        problems.append(f"the README graph shows {n}, which is no library of the build")
    for a, b in sorted(reduced - have_edges):
        problems.append(f"edge {a} --> {b} is missing from the README graph")
    for a, b in sorted(have_edges - reduced):
        problems.append(f"the README graph has {a} --> {b}, which the build does not have "
                        "(or which another path implies)")
    if problems:
        print("README component graph differs from cmake --graphviz:")
        for p in problems:
            print("  - " + p)
        print("The README block should be:\n" + block)
        return 1
    print(f"README component graph matches cmake --graphviz ({len(nodes)} libraries, "
          f"{len(reduced)} edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
