#!/usr/bin/env python3
"""targets_for_tests.py <build-dir>  (test names on stdin, one a line)

Prints the Ninja outputs that the named ctest tests of <build-dir> run or load, one a line, so
that scripts/test.sh builds only what a step runs rather than the whole tree. A test needs:
  - every path under <build-dir> that its command or its properties (ENVIRONMENT,
    REQUIRED_FILES, ...; not WORKING_DIRECTORY) name and that Ninja builds (programs, test binaries, plugins); Ninja
    adds what those link or depend on;
  - when it names <build-dir> itself (the packaging tests install it): everything the tree
    installs, read from its cmake_install.cmake scripts.
Exits 1 with a message when ctest or ninja fails or a name on stdin is no test of the tree.
"""
import json
import os
import pathlib
import re
import subprocess
import sys


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"targets_for_tests: {' '.join(cmd)} failed:\n{r.stderr.strip()}")
    return r.stdout


def strings(value):
    """Every string inside a ctest JSON value, and the parts of "K=V" and "a:b" strings."""
    if isinstance(value, str):
        yield value
        for part in re.split(r"[=:;]", value):
            yield part
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)


def installed_files(build):
    """The build-tree files the tree's install scripts copy."""
    found = set()
    for script in build.rglob("cmake_install.cmake"):
        for m in re.finditer(r'"(%s/[^"]+)"' % re.escape(str(build)), script.read_text()):
            found.add(m.group(1))
    return found


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = pathlib.Path(sys.argv[1]).resolve()
    wanted = {line.strip() for line in sys.stdin if line.strip()}
    tests = json.loads(run(["ctest", "--test-dir", str(build), "--show-only=json-v1"]))["tests"]
    known = {t["name"] for t in tests}
    unknown = sorted(wanted - known)
    if unknown:
        sys.exit(f"targets_for_tests: no such test in {build}: {', '.join(unknown)}")
    outputs = {line.rsplit(": ", 1)[0]
               for line in run(["ninja", "-C", str(build), "-t", "targets", "all"]).splitlines()}
    paths = set()
    for t in tests:
        if t["name"] not in wanted:
            continue
        # WORKING_DIRECTORY names where a test runs, not what it runs.
        props = [p for p in t.get("properties", []) if p.get("name") != "WORKING_DIRECTORY"]
        for s in strings([t.get("command", []), props]):
            if s.rstrip("/") == str(build):
                paths |= installed_files(build)
            elif s.startswith(str(build) + "/"):
                paths.add(s)
    for p in sorted(paths):
        rel = os.path.relpath(p, build)
        if rel in outputs:
            print(rel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
