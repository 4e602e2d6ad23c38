#!/usr/bin/env python3
"""Instruction-count regression gate for lmcache (bench/icount).

Runs lmcache-icount under `valgrind --tool=callgrind --instr-atstart=no`; each workload of the
binary brackets itself with CALLGRIND_ZERO_STATS / START_INSTRUMENTATION / STOP_INSTRUMENTATION
/ DUMP_STATS_AT(name), so every dump holds exactly one workload's instructions (Ir, all
threads). The counts are compared with the committed baselines (bench/icount/baselines.json):

  * a workload fails when it grew by more than its tolerance (default 3%) over its baseline;
  * workloads marked "gated": false are reported but never fail (see their "note");
  * a baseline workload the binary no longer produces fails; a new workload is reported as
    "new" (not gated until the next re-baseline);
  * counts are only comparable with the same toolchain: valgrind version, compiler, glibc,
    build type and the CPU features that pick glibc's memcpy/memset variants. The file holds
    one set of baselines per toolchain ("sets"); the gate compares with the set recorded on
    this toolchain, and when there is none it refuses to compare (exit 3) unless
    --allow-toolchain-mismatch is given (then it compares with the closest set).

Each workload's count is the median over --runs runs (default 3); the codec workloads are
exactly reproducible, the multithreaded ones vary a little with thread scheduling (see
bench/README.md).

Re-baseline (after an intended change, on each CI machine kind, from a Release build); this
replaces the set of this toolchain, or adds one, and leaves the other sets alone:
    python3 bench/icount/gate.py --binary <build>/bench/lmcache-icount --rebaseline --runs 5

Exit status: 0 pass, 1 regression or missing workload, 2 usage / run error, 3 toolchain
mismatch, 77 skipped (valgrind not installed, or it cannot emulate an instruction the binary
runs on this host: a SIGILL under callgrind that says "Unrecognised instruction").
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BASELINES = os.path.join(HERE, "baselines.json")
DEFAULT_TOLERANCE_PCT = 3.0
# CPU features that select glibc's string-function variants (under valgrind, which hides
# AVX-512): a different set changes the counts of workloads that copy memory.
CPU_FEATURES = ("avx2", "bmi2", "erms", "fsrm")
SKIP = 77


def fail(msg, code=2):
    print(f"icount gate: {msg}", file=sys.stderr)
    sys.exit(code)


def valgrind_version(valgrind):
    out = subprocess.run([valgrind, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def cpu_features():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return sorted(x for x in CPU_FEATURES if x in flags)
    except OSError:
        pass
    return []


def toolchain(binary, valgrind):
    info = json.loads(
        subprocess.run([binary, "--info"], capture_output=True, text=True, check=True).stdout)
    if not info.get("simd_target_available", False):
        fail(f"the pinned SIMD target {info.get('simd_target')} is not available on this CPU; "
             "the simd workloads cannot run here")
    return {
        "valgrind": valgrind_version(valgrind),
        "compiler": info["compiler"],
        "glibc": info["glibc"],
        "build_type": info["build_type"],
        "cpu_features": cpu_features(),
        "simd_target": info["simd_target"],
    }


TRIGGER = re.compile(r"^desc: Trigger: Client Request: (.+)$")
TOTALS = re.compile(r"^totals: (\d+)")


def parse_dump(path):
    name = total = None
    with open(path, errors="replace") as f:
        for line in f:
            m = TRIGGER.match(line)
            if m:
                name = m.group(1).strip()
                continue
            m = TOTALS.match(line)
            if m:
                total = int(m.group(1))
    return name, total


def cannot_emulate(stderr):
    """Valgrind's report of an instruction it does not know ("unhandled instruction bytes:
    0xF 0x1 0xF9 ..." with "Unrecognised instruction"), as one line; None otherwise."""
    if "Unrecognised instruction" not in stderr:
        return None
    m = re.search(r"unhandled instruction bytes: ((?:0x[0-9A-Fa-f]+ ?){1,4})", stderr)
    return "bytes " + m.group(1).strip() if m else "an unrecognised instruction"


def run_once(binary, valgrind, workdir, only):
    out_dir = tempfile.mkdtemp(prefix="run-", dir=workdir)
    cmd = [valgrind, "--tool=callgrind", "--instr-atstart=no",
           f"--callgrind-out-file={os.path.join(out_dir, 'cg.out')}", binary]
    for name in only:
        cmd += ["--only", name]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        if cannot_emulate(proc.stderr):
            # Not the binary's fault: this valgrind does not know an instruction this host's
            # code paths use (e.g. libhwy's start-up timer reads RDTSCP), so nothing can be
            # counted here.
            print("icount gate: SKIPPED: valgrind cannot emulate an instruction lmcache-icount "
                  f"runs on this host ({cannot_emulate(proc.stderr)}); use a valgrind that "
                  "does, or another machine")
            sys.exit(SKIP)
        fail(f"lmcache-icount under callgrind exited with {proc.returncode}")
    counts = {}
    for entry in sorted(os.listdir(out_dir)):
        if not re.fullmatch(r"cg\.out\.\d+", entry):
            continue  # the final dump (cg.out) holds nothing measured
        name, total = parse_dump(os.path.join(out_dir, entry))
        if name is None or total is None:
            fail(f"cannot parse callgrind dump {entry}")
        counts[name] = total
    shutil.rmtree(out_dir, ignore_errors=True)
    if not counts:
        fail("no workload dump found (was lmcache-icount built with valgrind/callgrind.h?)")
    return counts


def measure(binary, valgrind, workdir, runs, only):
    samples = {}
    for i in range(runs):
        for name, total in run_once(binary, valgrind, workdir, only).items():
            samples.setdefault(name, []).append(total)
    return samples


def load_baselines(path):
    """The baselines document with its sets in "sets" (a file of the older one-set layout,
    with "toolchain" and "workloads" at the top, is read as one set)."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        doc = json.load(f)
    if "sets" not in doc:
        one = {k: doc.pop(k) for k in ("toolchain", "runs", "workloads") if k in doc}
        doc["sets"] = [one] if one else []
    return doc


def pick_set(doc, tc):
    """(the set recorded on toolchain `tc` or None, the closest set and its differences)."""
    best, best_diff = None, None
    for entry in doc.get("sets", []):
        diff = toolchain_diff(entry.get("toolchain", {}), tc)
        if not diff:
            return entry, entry, []
        if best_diff is None or len(diff) < len(best_diff):
            best, best_diff = entry, diff
    return None, best, best_diff or []


def toolchain_diff(old, new):
    return [(k, old.get(k), new.get(k)) for k in sorted(set(old) | set(new))
            if old.get(k) != new.get(k)]


def print_table(rows):
    header = ("workload", "baseline", "current", "change", "limit", "status")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    fmt = "  ".join("{:<%d}" % w if i == 0 or i == 5 else "{:>%d}" % w
                    for i, w in enumerate(widths))
    print(fmt.format(*header))
    print(fmt.format(*("-" * w for w in widths)))
    for r in rows:
        print(fmt.format(*r))


def spread_pct(values):
    lo, hi = min(values), max(values)
    return 100.0 * (hi - lo) / lo if lo else 0.0


def rebaseline(path, old, tc, samples, runs):
    mine, closest, _ = pick_set(old, tc) if old else (None, None, [])
    # Tolerances, gating and notes come from this toolchain's set, else the closest one.
    old_workloads = (mine or closest or {}).get("workloads", {})
    workloads = {}
    for name in sorted(samples):
        values = samples[name]
        entry = {"ir": int(statistics.median(values))}
        prev = old_workloads.get(name, {})
        # Tolerances, gating and notes are decisions, not measurements: keep them.
        for key in ("tolerance_pct", "gated", "note"):
            if key in prev:
                entry[key] = prev[key]
        if runs > 1:
            entry["measured_spread_pct"] = round(spread_pct(values), 3)
        workloads[name] = entry
    new_set = {"toolchain": tc, "runs": runs, "workloads": workloads}
    sets = [e for e in (old or {}).get("sets", []) if e is not mine] + [new_set]
    doc = {
        "about": "Instruction counts (callgrind Ir, all threads) of lmcache-icount's workloads, "
                 "one set per toolchain. Regenerate this toolchain's set with: python3 "
                 "bench/icount/gate.py --binary <build>/bench/lmcache-icount --rebaseline "
                 "--runs 5 (see bench/README.md).",
        "default_tolerance_pct": (old or {}).get("default_tolerance_pct", DEFAULT_TOLERANCE_PCT),
        "sets": sets,
    }
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"icount gate: wrote {len(workloads)} baselines to {path} "
          f"({'replaced' if mine else 'added'} the set of this toolchain; {len(sets)} set(s))")
    for name in sorted(samples):
        values = samples[name]
        print(f"  {name:<48} {int(statistics.median(values)):>12}"
              + (f"  spread {spread_pct(values):.3f}% over {runs} runs" if runs > 1 else ""))


def main():
    ap = argparse.ArgumentParser(
        description="Instruction-count regression gate (callgrind) for lmcache-icount.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--binary", required=True, help="path to lmcache-icount")
    ap.add_argument("--baselines", default=DEFAULT_BASELINES, help="baselines JSON file")
    ap.add_argument("--valgrind", default=shutil.which("valgrind"), help="valgrind executable")
    ap.add_argument("--workdir", default=None, help="where callgrind dumps go (a temp dir)")
    ap.add_argument("--runs", type=int, default=3, help="runs; the median is compared")
    ap.add_argument("--threshold", type=float, default=None,
                    help="override every workload's tolerance (percent growth)")
    ap.add_argument("--only", action="append", default=[], help="workload name (repeatable)")
    ap.add_argument("--rebaseline", action="store_true",
                    help="measure and rewrite the baselines file instead of comparing")
    ap.add_argument("--allow-toolchain-mismatch", action="store_true",
                    help="compare even when valgrind/compiler/glibc/CPU features differ")
    args = ap.parse_args()

    if not args.valgrind or not os.path.exists(args.valgrind):
        print("icount gate: SKIPPED: valgrind is not installed (Debian package 'valgrind')")
        sys.exit(SKIP)
    if not os.access(args.binary, os.X_OK):
        fail(f"{args.binary} is not an executable (build the lmcache-icount target)")
    if args.runs < 1:
        fail("--runs must be >= 1")
    workdir = args.workdir or tempfile.mkdtemp(prefix="lmcache-icount-")
    os.makedirs(workdir, exist_ok=True)

    tc = toolchain(args.binary, args.valgrind)
    baselines = load_baselines(args.baselines)
    samples = measure(args.binary, args.valgrind, workdir, args.runs, args.only)

    if args.rebaseline:
        if args.only:
            fail("--rebaseline measures every workload; drop --only")
        rebaseline(args.baselines, baselines, tc, samples, args.runs)
        return 0

    if baselines is None:
        fail(f"no baselines at {args.baselines}; create them with --rebaseline")
    chosen, closest, diff = pick_set(baselines, tc)
    if chosen is None:
        if closest is None:
            fail(f"{args.baselines} holds no set of baselines; create one with --rebaseline")
        lines = "\n".join(f"    {k}: closest set {old!r}, here {new!r}" for k, old, new in diff)
        msg = ("TOOLCHAIN MISMATCH: instruction counts are only comparable with the toolchain "
               f"a set was recorded with, and none of the {len(baselines['sets'])} set(s) in "
               f"{args.baselines} was recorded on this one:\n" + lines +
               "\n  Add this toolchain's set with --rebaseline (see bench/README.md) or pass "
               "--allow-toolchain-mismatch to compare with the closest set anyway.")
        if not args.allow_toolchain_mismatch:
            print("icount gate: " + msg, file=sys.stderr)
            return 3
        print("icount gate: WARNING (comparing anyway): " + msg, file=sys.stderr)
        chosen = closest

    default_tol = float(baselines.get("default_tolerance_pct", DEFAULT_TOLERANCE_PCT))
    base = chosen.get("workloads", {})
    current = {name: int(statistics.median(v)) for name, v in samples.items()}
    rows, failures = [], []
    for name in sorted(set(base) | set(current)):
        if args.only and name not in args.only:
            continue
        entry = base.get(name)
        cur = current.get(name)
        if entry is None:
            rows.append((name, "-", cur, "-", "-", "new (not gated; re-baseline)"))
            continue
        tol = args.threshold if args.threshold is not None else float(
            entry.get("tolerance_pct", default_tol))
        gated = entry.get("gated", True)
        if cur is None:
            rows.append((name, entry["ir"], "-", "-", f"{tol:.1f}%", "MISSING"))
            failures.append(name)
            continue
        change = 100.0 * (cur - entry["ir"]) / entry["ir"]
        if change > tol:
            status = "REGRESSION" if gated else "slower (not gated)"
            if gated:
                failures.append(name)
        elif change < -tol:
            status = "improved (consider --rebaseline)"
        else:
            status = "ok" if gated else "ok (not gated)"
        rows.append((name, entry["ir"], cur, f"{change:+.2f}%", f"+{tol:.1f}%", status))
    print_table(rows)
    if args.runs > 1:
        noisy = {n: spread_pct(v) for n, v in samples.items() if spread_pct(v) > 0}
        if noisy:
            print("run-to-run spread this time: " +
                  ", ".join(f"{n} {p:.2f}%" for n, p in sorted(noisy.items())))
    if failures:
        print(f"icount gate: FAIL: {len(failures)} workload(s) over their limit or missing: "
              + ", ".join(failures), file=sys.stderr)
        return 1
    print(f"icount gate: PASS ({len(rows)} workloads, {args.runs} run(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
