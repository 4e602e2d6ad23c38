#!/usr/bin/env python3
"""The conformance kit's own gate: what `lmcache-conform --reference` drives in the reference.

A branch of the reference that the kit never drives is a branch where a vendor's bug goes unseen,
so the kit is measured by the line and branch coverage it reaches in the reference components
(conformance/coverage/README.md). This script runs in a build configured with
-DLMCACHE_COVERAGE=ON (ctest: conformance_coverage_gate):

  coverage_gate.py --build DIR --source DIR --component PATH... [--run] [--depth quick]
                   [--seed 1] [--counters DIR] [--json OUT] [--update [--keep-untriaged]]
                   [--enforce-goal]

  --component  a measured component folder, relative to --source (CMake passes
               LMCACHE_COVERAGE_COMPONENTS)
  --run        run lmcache-conform --reference at --depth with --seed, its gcov counters written
               under a private directory (GCOV_PREFIX), so that they hold that run alone even
               while other tests of the same build run
  --counters   keep the run's counters in DIR (default: a temporary directory); without --run,
               measure the counters an earlier --run --counters DIR left there
  --json       write the figures and every uncovered line there
  --update     rewrite conformance/coverage/baseline.json with the figures measured and the
               uncovered lines uncovered.txt does not list (untriaged); --keep-untriaged also
               keeps the baseline's untriaged lines and its lower figures (to absorb a second
               run's thread-decided lines). A maintainer does this when coverage rose, and says
               why in the commit.
  --enforce-goal  fail when the goal (95 % lines / 85 % branches) is not met

  coverage_gate.py --source DIR --check-listing

  --check-listing  needs no build: fails (exit 1) when an entry of uncovered.txt, or an untriaged
               line of baseline.json, names a file that is gone or a source text no line of that
               file holds any more (an edit or a clang-format reflow left it stale, and the line
               it meant would fail the gate as new). ctest: conformance_coverage_listing

It fails (exit 1) when line or branch coverage is below the checked-in baseline by more than the
tolerance, when a line is uncovered that neither conformance/coverage/uncovered.txt lists with
its reason nor the baseline holds as untriaged (with --run: in two runs in a row, since threads
decide a few lines), or (--enforce-goal) below the goal. Exit 2: usage or tool errors.
"""
import argparse
import bisect
import collections
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

GOAL_LINES = 95.0
GOAL_BRANCHES = 85.0
# Threads decide a few branches (which side of a race a close() meets): run-to-run noise.
TOLERANCE = 0.5
GCOVR_TIMEOUT_S = 1200


def fail(msg, code=2):
    print(f"coverage_gate: {msg}", file=sys.stderr)
    sys.exit(code)


def measured_file(rel, components):
    return (any(rel.startswith(c) for c in components) and not rel.endswith("_test.cc")
            and "/testing/" not in rel and rel.endswith((".cc", ".h")))


def run_reference(build, depth, seed, counters):
    """Runs the kit over the reference with its .gcda files written under `counters`."""
    exe = build / "conformance" / "lmcache-conform"
    if not exe.exists():
        fail(f"{exe} is missing: build the lmcache-conform target first")
    # gcov writes <GCOV_PREFIX>/<object path>; copy each .gcno beside where its .gcda will be,
    # so that gcov finds both in the private tree.
    for gcno in build.rglob("*.gcno"):
        dest = counters / gcno.resolve().relative_to("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(gcno, dest)
    env = dict(os.environ, GCOV_PREFIX=str(counters), GCOV_PREFIX_STRIP="0")
    cmd = [str(exe), "--reference", "--depth", depth, "--rc-params", f"seed={seed}",
           "--json", str(counters / "conform.json"), "--junit", str(counters / "conform.xml")]
    print("coverage_gate: " + " ".join(cmd), flush=True)
    run = subprocess.run(cmd, check=False, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace")
    if run.returncode != 0:
        # The verdict table is long; its failures and summary come last.
        print(run.stdout[-12000:], file=sys.stderr)
        fail(f"lmcache-conform --reference exited {run.returncode}: the reference must pass "
             "before its coverage means anything", 1)
    print("coverage_gate: " + (run.stdout.strip().splitlines() or [""])[-1])


def gcovr_json(search, build, source, components):
    # --object-directory: gcov runs where the compiler ran, so that the relative source paths
    # a ccache build records (CCACHE_BASEDIR) resolve.
    cmd = ["gcovr", "--root", str(source), "--object-directory", str(build),
           "--exclude-throw-branches",
           "--exclude-unreachable-branches", "-j", str(os.cpu_count() or 1), "--json", "-"]
    for c in components:
        cmd += ["--filter", str(source / c)]
    cmd += ["--exclude", r".*_test\.cc$", "--exclude", r".*/testing/.*", str(search)]
    try:
        # Bounded: gcovr 5.2 waits forever for a parallel worker that raised.
        out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                             timeout=GCOVR_TIMEOUT_S).stdout
    except FileNotFoundError:
        fail("gcovr is not installed (scripts/install-deps.sh installs it)")
    except subprocess.TimeoutExpired:
        fail(f"gcovr did not finish in {GCOVR_TIMEOUT_S} s (a gcov parse error stalls its "
             "workers: rerun it with -j 1 to see the error)")
    except subprocess.CalledProcessError as e:
        fail(f"gcovr failed: {e.stderr.strip()[-2000:]}")
    return json.loads(out)


def load_listed(path):
    """{(file, source text): reason} from uncovered.txt ('path | text | reason' lines)."""
    listed = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ")]
        if len(parts) != 3 or not all(parts):
            fail(f"{path}:{n}: expected 'path | source text | reason', got {raw!r}")
        listed[(parts[0], parts[1])] = parts[2]
    return listed


def stale_entries(source, entries):
    """The (file, source text) pairs of `entries` that no stripped line of `file` (under
    `source`) holds: entries an edit left behind."""
    lines_of = {}
    stale = []
    for f, text in entries:
        if f not in lines_of:
            path = source / f
            lines_of[f] = ({ln.strip() for ln in path.read_text(errors="replace").splitlines()}
                           if path.is_file() else None)
        if lines_of[f] is None or text not in lines_of[f]:
            stale.append((f, text))
    return stale


def check_listing(source, coverage_dir):
    """--check-listing: exit 1 naming every stale entry, else 0."""
    listed = load_listed(coverage_dir / "uncovered.txt")
    baseline = json.loads((coverage_dir / "baseline.json").read_text())
    untriaged = [(f, t) for f, texts in baseline.get("untriaged", {}).items() for t in texts]
    stale = stale_entries(source, list(listed) + untriaged)
    for f, text in stale:
        print(f"coverage_gate: stale: {f} | {text}: no line of {f} holds this text; list the "
              "line's current text (or drop the entry when the line is gone)", file=sys.stderr)
    print(f"coverage_gate: {len(listed)} listed and {len(untriaged)} untriaged line(s) checked, "
          f"{len(stale)} stale")
    return 1 if stale else 0


def measure(args, build, source, components, keep_counters):
    """One measurement: runs the kit (with --run) and reads its counters with gcovr. Returns the
    figures, per-file counts and the uncovered lines as (file, line number, source text)."""
    with tempfile.TemporaryDirectory(prefix="lmcache-coverage-") as scratch:
        counters = keep_counters.resolve() if keep_counters else pathlib.Path(scratch)
        if args.run:
            if keep_counters and counters.exists():
                shutil.rmtree(counters)
            counters.mkdir(parents=True, exist_ok=True)
            run_reference(build, args.depth, args.seed, counters)
        elif not keep_counters:
            counters = build
        data = gcovr_json(counters, build, source, components)

    lines_total = lines_hit = br_total = br_hit = 0
    uncovered = []  # (file, line number, text)
    covered = collections.defaultdict(set)  # file -> covered code line numbers
    per_file = {}
    for f in data.get("files", []):
        rel = os.path.relpath(os.path.join(str(source), f["file"]), str(source))
        if not measured_file(rel, components):
            continue
        src = (source / rel).read_text(errors="replace").splitlines()
        fl = fh = fb = fbh = 0
        for ln in f.get("lines", []):
            if ln.get("gcovr/noncode"):
                continue
            fl += 1
            if ln["count"] > 0:
                fh += 1
                covered[rel].add(ln["line_number"])
            else:
                no = ln["line_number"]
                uncovered.append((rel, no, src[no - 1].strip() if no <= len(src) else ""))
            for b in ln.get("branches", []):
                fb += 1
                fbh += b["count"] > 0
        per_file[rel] = {"lines": fl, "lines_hit": fh, "branches": fb, "branches_hit": fbh}
        lines_total += fl
        lines_hit += fh
        br_total += fb
        br_hit += fbh
    if lines_total == 0:
        fail("no coverage data: is the build configured with -DLMCACHE_COVERAGE=ON, and did the "
             "reference run?")
    return {"line_pct": 100.0 * lines_hit / lines_total,
            "br_pct": 100.0 * br_hit / br_total if br_total else 100.0,
            "lines": [lines_hit, lines_total], "branches": [br_hit, br_total],
            "uncovered": uncovered, "covered": covered, "per_file": per_file}


# Statements with nothing of their own to be listed for: a closing brace or return, a catch-all,
# a lock. Such a line inherits the reason of the listed line next to it in the same uncovered
# block (no covered line between them): a `return false;` after a listed error note, the lock
# of a listed accessor. Listing their text instead would excuse every such line in the file.
CONNECTIVE = re.compile(
    r"^(\}|\{|\};|\}\);|\);|break;|continue;|throw;|default:|try \{|\} else \{|"
    r"\} catch \(\.\.\.\) \{|\} catch \(const [\w:]+&( \w+)?\) \{|"
    r"return( [\w:{}()]*)?;( //.*)?|std::(lock_guard|unique_lock) \w+\([\w_>.-]+\);)$")


def line_reasons(uncovered, covered, listed):
    """{(file, line number): reason} for every uncovered line listed by its text, or connective
    (CONNECTIVE) next to such a line in the same uncovered block: the line before it, else the
    one after."""
    reasons = {}
    by_file = collections.defaultdict(list)
    for f, n, t in uncovered:
        by_file[f].append((n, t))
        if (f, t) in listed:
            reasons[(f, n)] = listed[(f, t)]
    for f, rows in by_file.items():
        rows.sort()
        hit = sorted(covered.get(f, ()))

        def same_block(a, b):  # no covered code line strictly between lines a < b
            i = bisect.bisect_right(hit, a)
            return i >= len(hit) or hit[i] >= b

        for step in (1, -1):  # forwards inherits from the line before; backwards, the one after
            order = rows if step == 1 else rows[::-1]
            for (pn, _), (n, t) in zip(order, order[1:]):
                if (f, n) in reasons or not CONNECTIVE.match(t) or (f, pn) not in reasons:
                    continue
                if same_block(min(pn, n), max(pn, n)):
                    reasons[(f, n)] = reasons[(f, pn)]
    return reasons


def new_uncovered(uncovered, reasons, untriaged):
    """(unlisted, new): the uncovered lines uncovered.txt does not list, and those of them the
    baseline's untriaged lines do not hold either. Counted per source text, so a second
    uncovered "return false;" in the same file is a new line."""
    allowance = collections.Counter(untriaged)
    unlisted, new_lines = [], []
    for u in uncovered:
        key = (u[0], u[2])
        if (u[0], u[1]) in reasons:
            continue
        unlisted.append(u)
        if allowance[key] > 0:
            allowance[key] -= 1
        else:
            new_lines.append(u)
    return unlisted, new_lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=pathlib.Path)
    ap.add_argument("--source", required=True, type=pathlib.Path)
    ap.add_argument("--component", action="append")
    ap.add_argument("--check-listing", action="store_true")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--depth", default="quick", choices=["quick", "standard", "exhaustive"])
    ap.add_argument("--seed", default="1")
    ap.add_argument("--counters", type=pathlib.Path)
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--keep-untriaged", action="store_true")
    ap.add_argument("--enforce-goal", action="store_true")
    args = ap.parse_args()
    source = args.source.resolve()
    coverage_dir = source / "conformance" / "coverage"
    if args.check_listing:
        sys.exit(check_listing(source, coverage_dir))
    if args.build is None or not args.component:
        ap.error("--build and --component are required (unless --check-listing)")
    build = args.build.resolve()
    listed = load_listed(coverage_dir / "uncovered.txt")
    baseline_path = coverage_dir / "baseline.json"
    baseline = json.loads(baseline_path.read_text())

    components = [c.rstrip("/") + "/" for c in args.component]
    m = measure(args, build, source, components, args.counters)
    line_pct, br_pct = m["line_pct"], m["br_pct"]
    lines_hit, lines_total, br_hit, br_total = m["lines"] + m["branches"]
    uncovered, per_file = m["uncovered"], m["per_file"]

    # A line passes when it is listed with a reason, or when the baseline holds it as untriaged
    # (uncovered when the baseline was measured, reason not yet written).
    untriaged = collections.Counter(
        {(f, t): n for f, texts in baseline.get("untriaged", {}).items()
         for t, n in collections.Counter(texts).items()})
    reasons = line_reasons(uncovered, m["covered"], listed)
    unlisted, new_lines = new_uncovered(uncovered, reasons, untriaged)
    if new_lines and args.run and not args.update:
        # Threads decide a few lines (which side of a race a close() meets): a line is new only
        # when a second run leaves it uncovered too.
        print(f"coverage_gate: {len(new_lines)} line(s) not covered and not listed; running the "
              "kit again: a line the second run covers is thread timing, not a gap", flush=True)
        again = measure(args, build, source, components, None)
        _, new_again = new_uncovered(
            again["uncovered"], line_reasons(again["uncovered"], again["covered"], listed),
            untriaged)
        twice = collections.Counter((f, t) for f, _, t in new_again)
        confirmed = []
        for u in new_lines:
            if twice[(u[0], u[2])] > 0:
                twice[(u[0], u[2])] -= 1
                confirmed.append(u)
        for f, n, t in new_lines:
            if (f, n, t) not in confirmed:
                print(f"coverage_gate: note: {f}:{n} was covered by the second run: {t}")
        new_lines = confirmed
        best = max((m, again), key=lambda r: (r["line_pct"], r["br_pct"]))
        line_pct, br_pct = best["line_pct"], best["br_pct"]
        lines_hit, lines_total, br_hit, br_total = best["lines"] + best["branches"]
    seen = {(u[0], u[2]) for u in uncovered}
    stale = [k for k in listed if k not in seen]
    print(f"coverage_gate: lines {line_pct:.2f} % ({lines_hit}/{lines_total}), branches "
          f"{br_pct:.2f} % ({br_hit}/{br_total}) of {', '.join(c.rstrip('/') for c in components)}")
    # Of the lines a property is meant to reach (every line but those given a reason).
    excused = len(uncovered) - len(unlisted)
    reach_pct = 100.0 * lines_hit / max(lines_total - excused, 1)
    print(f"coverage_gate: {reach_pct:.2f} % of the lines not listed with a reason are covered")
    print(f"coverage_gate: {len(uncovered)} uncovered line(s): "
          f"{len(uncovered) - len(unlisted)} listed with a reason in "
          f"conformance/coverage/uncovered.txt, {len(unlisted) - len(new_lines)} untriaged in "
          f"baseline.json, {len(new_lines)} new")
    if args.json:
        args.json.write_text(json.dumps({
            "lines_percent": round(line_pct, 2), "branches_percent": round(br_pct, 2),
            "lines": [lines_hit, lines_total], "branches": [br_hit, br_total],
            "reachable_lines_percent": round(reach_pct, 2), "depth": args.depth, "seed": args.seed, "files": per_file,
            "uncovered": [{"file": f, "line": n, "text": t,
                           "reason": reasons.get((f, n))} for f, n, t in uncovered]},
            indent=1) + "\n")
    if args.update:
        found = collections.Counter((f, t) for f, _, t in unlisted)
        if args.keep_untriaged:  # absorb what another run (threads decide a few lines) left out
            found = found | collections.Counter(
                {k: n for k, n in untriaged.items() if k not in listed})
        by_file = {}
        for (f, t), n in sorted(found.items()):
            by_file.setdefault(f, []).extend([t] * n)
        lines_base, br_base = round(line_pct, 2), round(br_pct, 2)
        if args.keep_untriaged:
            lines_base = min(lines_base, baseline["lines_percent"])
            br_base = min(br_base, baseline["branches_percent"])
        baseline_path.write_text(json.dumps({
            "lines_percent": lines_base, "branches_percent": br_base,
            "depth": args.depth, "seed": args.seed, "untriaged": by_file}, indent=1) + "\n")
        print(f"coverage_gate: wrote {baseline_path}")
        return 0
    problems = []
    goal_gaps = []
    if line_pct < GOAL_LINES:
        goal_gaps.append(f"line coverage {line_pct:.2f} % is below the goal of {GOAL_LINES} %")
    if br_pct < GOAL_BRANCHES:
        goal_gaps.append(f"branch coverage {br_pct:.2f} % is below the goal of {GOAL_BRANCHES} %")
    if args.enforce_goal:
        problems += goal_gaps
    else:
        for g in goal_gaps:
            print(f"coverage_gate: note: {g} (not yet enforced: README 'Figures')")
    if line_pct < baseline["lines_percent"] - TOLERANCE:
        problems.append(f"line coverage dropped: {line_pct:.2f} % < baseline "
                        f"{baseline['lines_percent']} % - {TOLERANCE}")
    if br_pct < baseline["branches_percent"] - TOLERANCE:
        problems.append(f"branch coverage dropped: {br_pct:.2f} % < baseline "
                        f"{baseline['branches_percent']} % - {TOLERANCE}")
    for f, n, t in new_lines:
        problems.append(f"{f}:{n} is not covered by the kit and not listed: {t}")
    for f, t in stale:
        print(f"coverage_gate: note: listed but covered in this run: {f} | {t}")
    if problems:
        for p in problems:
            print(f"coverage_gate: FAIL: {p}", file=sys.stderr)
        print("coverage_gate: make a property drive the line, or list it in "
              "conformance/coverage/uncovered.txt as 'path | source text | reason'",
              file=sys.stderr)
        return 1
    print("coverage_gate: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
