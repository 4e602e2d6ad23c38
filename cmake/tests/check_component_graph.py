#!/usr/bin/env python3
"""check_component_graph.py <graphviz.dot> <README.md> [--print]

The README's component graph (the ```mermaid block under "## Component graph") must be the
transitive reduction of the link graph of the project's own libraries, as `cmake --graphviz`
writes it: same libraries, same direct edges once implied edges are removed. Libraries are the
targets named lmcache_* except the build-flags interface, object libraries (*_objects) and
test-only libraries (*_mutants).

Areas are floors: each library sits in the area folder whose CMakeLists.txt declares it, the
areas rank in the order the root CMakeLists.txt adds them (bottom first), and no library may
link one of a higher area. The README shows each area as a subgraph, in that order.

Exits 1 naming every difference, and prints the block the README should hold; --print prints
that block only. The source tree is the README's folder.
"""
import pathlib
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


def areas_in_order(source):
    """The root CMakeLists.txt's add_subdirectory() folders, bottom floor first."""
    text = (source / "CMakeLists.txt").read_text(encoding="utf-8")
    return [m.group(1) for m in re.finditer(r"^\s*add_subdirectory\((\w+)", text, re.M)]


def library_areas(source, areas):
    """{library short name: area}, from the lmcache_add_library(), lmcache_add_private_library()
    and add_library() declarations."""
    found = {}
    for area in areas:
        for cml in sorted((source / area).rglob("CMakeLists.txt")):
            text = cml.read_text(encoding="utf-8")
            for m in re.finditer(r"\blmcache_add_library\((\w+)"
                                 r"|\b(?:lmcache_add_private_library|add_library)\((lmcache_\w+)",
                                 text):
                name = m.group(1) or short(m.group(2))
                if library("lmcache_" + name):
                    found[name] = area
    return found


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
    """(nodes, edges, {node: area}, [areas in the order shown]) of the README's block."""
    text = open(readme_path, encoding="utf-8").read()
    m = re.search(r"^## Component graph\n.*?```mermaid\n(.*?)```", text, re.S | re.M)
    if not m:
        return None, None, None, None
    nodes, edges, placed, shown = set(), set(), {}, []
    area = None
    for line in m.group(1).splitlines():
        line = line.strip()
        e = re.fullmatch(r"(\w+) --> (\w+)", line)
        sub = re.fullmatch(r"subgraph area_(\w+)\[.*\]", line)
        if sub:
            area = sub.group(1)
            shown.append(area)
        elif line == "end":
            area = None
        elif e:
            edges.add((e.group(1), e.group(2)))
            nodes.update(e.groups())
        elif re.fullmatch(r"\w+", line):
            nodes.add(line)
            if area:
                placed[line] = area
    return nodes, edges, placed, shown


def mermaid(nodes, edges, areas, order):
    lines = ["graph BT"]
    for area in order:
        members = sorted(n for n in nodes if areas.get(n) == area)
        if members:
            lines.append(f'  subgraph area_{area}["{area}/"]')
            lines += ["    " + n for n in members]
            lines.append("  end")
    for a, b in sorted(edges):
        lines.append(f"  {a} --> {b}")
    return "\n".join(lines) + "\n"


def main():
    args = [a for a in sys.argv[1:] if a != "--print"]
    nodes, edges = cmake_graph(args[0])
    reduced = reduce(nodes, edges)
    source = pathlib.Path(args[1]).resolve().parent
    order = areas_in_order(source)
    areas = library_areas(source, order)
    block = "```mermaid\n" + mermaid(nodes, reduced, areas, order) + "```"
    if "--print" in sys.argv:
        print(block)
        return 0
    problems = []
    for n in sorted(nodes - set(areas)):
        problems.append(f"library {n} is declared in no area the root CMakeLists.txt adds")
    rank = {a: i for i, a in enumerate(order)}
    for a, b in sorted(edges):
        if a in areas and b in areas and rank[areas[b]] > rank[areas[a]]:
            problems.append(f"{a} ({areas[a]}/) links {b} ({areas[b]}/), an area above its own: "
                            "areas are floors in the root CMakeLists.txt's order")
    have_nodes, have_edges, placed, shown = readme_graph(args[1])
    if have_nodes is None:
        print("README has no ```mermaid block under '## Component graph'; it should be:\n" + block)
        return 1
    for n in sorted(nodes & have_nodes):
        if n in areas and placed.get(n) != areas[n]:
            problems.append(f"the README graph shows {n} in area {placed.get(n)}, "
                            f"but it is declared in {areas[n]}/")
    if shown != [a for a in order if a in set(areas.values())]:
        problems.append(f"the README graph's areas are {shown}, not in the root "
                        f"CMakeLists.txt's order")
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
