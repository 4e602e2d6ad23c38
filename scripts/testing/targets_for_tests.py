#!/usr/bin/env python3
"""targets_for_tests.py <build-dir>  (test names on stdin, one a line)

Prints the Ninja outputs that the named ctest tests of <build-dir> run or load, one a line, so
that scripts/test.sh builds only what a step runs rather than the whole tree. A test needs:
  - every path under <build-dir> that its command or its properties (ENVIRONMENT,
    REQUIRED_FILES, ...; not WORKING_DIRECTORY) name and that Ninja builds (programs, test
    binaries, plugins); Ninja adds what those link or depend on;
  - when it names <build-dir> itself (the packaging tests install it): everything the tree
    installs, read from its cmake_install.cmake scripts.
Exits 1 with a message when ninja fails or a name on stdin is no test of the tree.
"""
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


# One add_test() or set_tests_properties() line of a CTestTestfile.cmake: the test's name (in
# [=[...]=] or bare) and the rest of the line.
TEST_LINE = re.compile(r"^(add_test|set_tests_properties)\((?:\[=\[(.+?)\]=\]|(\S+)) (.*)\)$")
QUOTED = r'"((?:[^"\\]|\\.)*)"'


def test_strings(build):
    """{test name: the strings of its command and of its properties but WORKING_DIRECTORY and
    _BACKTRACE_TRIPLES}, read from the tree's CTestTestfile.cmake files. These, not ctest's
    JSON, since ctest leaves out the command of a test whose program is not built yet."""
    found = {}
    for testfile in build.rglob("CTestTestfile.cmake"):
        for line in testfile.read_text().splitlines():
            m = TEST_LINE.match(line)
            if not m:
                continue
            name, rest = m.group(2) or m.group(3), m.group(4)
            strings = found.setdefault(name, [])
            if m.group(1) == "add_test":
                strings += re.findall(QUOTED, rest)
            else:
                for key, value in re.findall(r"(\w+) " + QUOTED, rest):
                    if key not in ("WORKING_DIRECTORY", "_BACKTRACE_TRIPLES"):
                        strings += [value] + re.split(r"[=:;]", value)
    return found


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
    tests = test_strings(build)
    unknown = sorted(wanted - set(tests))
    if unknown:
        sys.exit(f"targets_for_tests: no such test in {build}: {', '.join(unknown)}")
    outputs = {line.rsplit(": ", 1)[0]
               for line in run(["ninja", "-C", str(build), "-t", "targets", "all"]).splitlines()}
    paths = set()
    for name in wanted:
        for s in tests[name]:
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
