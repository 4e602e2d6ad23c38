#!/usr/bin/env python3
"""Runs the concurrency cases many times in a row under the load of the whole test suite.

  scripts/stress_concurrency.py [--build build/release] [--repeat 20] [--no-load]

The concurrency cases are the ones TSan runs: every gtest case whose full name contains
"Concurrency", in each binary ctest labels "concurrency" (cmake/concurrency_subset.sh). Each round
runs every such binary once with that filter and the environment its ctest entry sets. Beside
the rounds, the rest of the suite (`ctest -LE concurrency -j <cores>`) runs over and over as
load, so the cases meet a machine as busy as CI's. A test that passes only on an idle machine,
or only when a thread wakes in time, fails here.

Prints one line per failing run (with the tail of its output) and a summary; exits 1 when any
concurrency run failed, 2 on usage errors. A failure of the load itself is reported but does not
fail the stress run (the load's own tests are not what it measures).
"""
import argparse
import json
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CASE_FILTER = "*Concurrency*"
RUN_TIMEOUT_S = 900


def fail(msg):
    print(f"stress_concurrency: {msg}", file=sys.stderr)
    sys.exit(2)


def concurrency_runs(build):
    """[(name, argv, env)] for every ctest entry labelled "concurrency"."""
    try:
        out = subprocess.run(["ctest", "--test-dir", str(build), "-L", "^concurrency$",
                              "--show-only=json-v1"], check=True, capture_output=True,
                             text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        fail(f"cannot list the tests of {build}: {e}")
    runs = []
    for test in json.loads(out).get("tests", []):
        env = dict(os.environ)
        negative = ""
        for prop in test.get("properties", []):
            if prop["name"] != "ENVIRONMENT":
                continue
            for assignment in prop["value"]:
                key, _, value = assignment.partition("=")
                if key == "GTEST_FILTER":  # keep its exclusions beside the case filter
                    negative = value.partition("-")[2] if "-" in value else ""
                else:
                    env[key] = value
        gtest_filter = CASE_FILTER + (f"-{negative}" if negative else "")
        command = test["command"]
        if command and command[0].endswith("bash"):  # the TSan build's wrapper script
            fail(f"{build} is a TSan build: stress a Release or ASan build")
        runs.append((test["name"], command + [f"--gtest_filter={gtest_filter}"], env))
    if not runs:
        fail(f"{build} has no test labelled 'concurrency' (is it a configured, built tree?)")
    return runs


def start_load(build, jobs, tmpdir):
    """The rest of the suite, over and over, in a process group of its own. Its temporary
    files go under `tmpdir`, so that stopping it mid-test leaves nothing elsewhere."""
    script = (f"while :; do ctest --test-dir {shlex.quote(str(build))} -LE '^concurrency$' "
              f"-j {jobs} --timeout 900 >/dev/null 2>&1 || echo load-failed; done")
    return subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, TMPDIR=tmpdir), start_new_session=True)


def stop_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def remove_tree(tmp):
    """Removes the load's temporary directory; a dying test may still write into it for a moment."""
    for _ in range(10):
        try:
            shutil.rmtree(tmp.name)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(1)
    print(f"stress_concurrency: warning: could not remove {tmp.name}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build/release", type=pathlib.Path)
    ap.add_argument("--repeat", default=20, type=int)
    ap.add_argument("--no-load", action="store_true", help="run the rounds on an idle machine")
    args = ap.parse_args()
    if not 1 <= args.repeat <= 1000:
        fail(f"--repeat must be in [1, 1000], got {args.repeat}")
    build = args.build.resolve()
    if not (build / "CTestTestfile.cmake").exists():
        fail(f"{build} is not a configured build tree (no CTestTestfile.cmake)")
    runs = concurrency_runs(build)
    jobs = os.cpu_count() or 1
    load_tmp = tempfile.TemporaryDirectory(prefix="lmcache-stress-load-")
    load = None if args.no_load else start_load(build, jobs, load_tmp.name)
    print(f"stress_concurrency: {len(runs)} binaries x {args.repeat} rounds"
          + ("" if load is None else f", the rest of the suite running beside them (-j {jobs})"),
          flush=True)
    failures = 0
    started = time.monotonic()
    try:
        for round_no in range(1, args.repeat + 1):
            for name, argv, env in runs:
                try:
                    r = subprocess.run(argv, env=env, capture_output=True, text=True,
                                       errors="replace", timeout=RUN_TIMEOUT_S)
                    ok, tail = r.returncode == 0, (r.stdout + r.stderr)[-3000:]
                except subprocess.TimeoutExpired:
                    ok, tail = False, f"(no end within {RUN_TIMEOUT_S} s)"
                if not ok:
                    failures += 1
                    print(f"stress_concurrency: FAIL round {round_no}: {name}\n{tail}", flush=True)
            print(f"stress_concurrency: round {round_no}/{args.repeat} done, {failures} failed "
                  f"run(s) so far, {time.monotonic() - started:.0f} s", flush=True)
    finally:
        load_failures = 0
        if load is not None:
            stop_group(load.pid, signal.SIGTERM)
            out, _ = load.communicate()
            load_failures = out.count("load-failed")
            stop_group(load.pid, signal.SIGKILL)  # the tests ctest had started, if still there
        remove_tree(load_tmp)
    total = len(runs) * args.repeat
    print(f"stress_concurrency: {total - failures}/{total} concurrency runs passed in "
          f"{time.monotonic() - started:.0f} s"
          + ("" if load is None else f"; the load's suite runs failed {load_failures} time(s)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
