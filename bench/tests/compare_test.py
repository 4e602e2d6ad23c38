#!/usr/bin/env python3
"""Tests of bench/tools/compare.py on synthetic Google Benchmark JSON (ctest label "unit").

Exits 77 (skip) when no interpreter with scipy is available (Debian package python3-scipy).
"""

import json
import os
import random
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "..", "tools", "compare.py")


def scipy_python():
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import scipy.stats"], capture_output=True).returncode == 0:
            return exe
    return None


def doc(series, seed):
    """Google Benchmark 1.7.1-shaped JSON: iteration runs plus a median aggregate."""
    rng = random.Random(seed)
    benchmarks = []
    for name, (center, reps) in series.items():
        values = [center * (1 + rng.uniform(-0.005, 0.005)) for _ in range(reps)]
        for i, v in enumerate(values):
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration",
                               "repetitions": reps, "repetition_index": i, "real_time": v,
                               "cpu_time": v, "time_unit": "us",
                               "bytes_per_second": 1e9 / v})
        benchmarks.append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                           "aggregate_name": "median", "real_time": 1e9, "cpu_time": 1e9})
    return {"context": {"date": "x"}, "benchmarks": benchmarks}


def main():
    python = scipy_python()
    if python is None:
        print("SKIP: scipy not available (apt-get install python3-scipy)")
        return 77
    base = {"same": (100.0, 9), "slower": (100.0, 9), "faster": (100.0, 9), "few": (100.0, 3),
            "tiny": (100.0, 9), "only_base": (1.0, 9)}
    new = {"same": (100.0, 9), "slower": (120.0, 9), "faster": (80.0, 9), "few": (150.0, 3),
           "tiny": (100.5, 9)}
    with tempfile.TemporaryDirectory() as d:
        a, b, out = (os.path.join(d, n) for n in ("a.json", "b.json", "v.json"))
        json.dump(doc(base, 1), open(a, "w"))
        json.dump(doc(new, 2), open(b, "w"))
        failures = []

        def run(*extra):
            proc = subprocess.run([python, COMPARE, a, b, "--json", out, *extra],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                failures.append(f"exit {proc.returncode}: {proc.stderr}")
                return {}
            print(proc.stdout)
            return {v["name"]: v["verdict"] for v in json.load(open(out))}

        got = run()
        expect = {"same": "same", "slower": "slower", "faster": "faster",
                  "tiny": "same"}  # significant but under the 1% minimum effect
        for k, v in expect.items():
            if got.get(k) != v:
                failures.append(f"real_time {k}: got {got.get(k)!r}, want {v!r}")
        if not got.get("few", "").startswith("too few reps"):
            failures.append(f"few: got {got.get('few')!r}")
        if "only_base" in got:
            failures.append("only_base should not be compared")
        # Throughput: higher is better, so the verdicts keep their meaning.
        got = run("--metric", "bytes_per_second")
        for k in ("slower", "faster"):
            if got.get(k) != k:
                failures.append(f"bytes_per_second {k}: got {got.get(k)!r}")
        # A smaller minimum effect turns the 0.5% difference into a verdict.
        got = run("--min-effect", "0.001")
        if got.get("tiny") != "slower":
            failures.append(f"tiny with --min-effect 0.001: got {got.get('tiny')!r}")
        # --json is an output file (bench/tools/output_file.py): a device, a FIFO or a symbolic
        # link there is refused before anything is compared (exit 2), and left as it was.
        fifo, target, link = (os.path.join(d, n) for n in ("fifo", "target", "link"))
        os.mkfifo(fifo)
        with open(target, "w") as f:
            f.write("keep")
        os.symlink(target, link)
        for bad, why in (("/dev/null", "is a character device"), (fifo, "is a FIFO"),
                         (link, "is a symbolic link"), (d, "is a directory"),
                         (os.path.join(d, "missing", "v.json"), "does not exist")):
            proc = subprocess.run([python, COMPARE, a, b, "--json", bad], capture_output=True,
                                  text=True)
            if proc.returncode != 2 or why not in proc.stderr or "--json" not in proc.stderr:
                failures.append(f"--json {bad}: exit {proc.returncode}, stderr {proc.stderr!r}")
        if open(target).read() != "keep" or not os.path.islink(link) or \
                not stat.S_ISFIFO(os.stat(fifo).st_mode):
            failures.append("a refused --json path was changed")
        if any(".tmp." in n for n in os.listdir(d)):
            failures.append(f"a temporary file was left: {os.listdir(d)}")
    for f in failures:
        print("FAIL:", f)
    print(f"{0 if failures else 1} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
