#!/usr/bin/env python3
"""Compare two Google Benchmark JSON result files: faster / slower / same per benchmark.

Advisory, for humans (not a CI gate: wall-clock times on shared machines are noisy; the CI
gate is bench/icount/gate.py). Both files should come from runs with at least 9 repetitions,
randomly interleaved, e.g.

    lmcache-bench --filter '^codec/' --benchmark_repetitions=9 \\
        --benchmark_enable_random_interleaving=true --out before
    ... change, rebuild ...
    lmcache-bench --filter '^codec/' --benchmark_repetitions=9 \\
        --benchmark_enable_random_interleaving=true --out after
    python3 bench/tools/compare.py before/lmcache-bench.json after/lmcache-bench.json

For every benchmark present in both files it takes the per-repetition values (iteration runs;
aggregates are ignored), runs a two-sided Mann-Whitney U test (scipy.stats.mannwhitneyu) and
labels the contender:
    faster / slower  p < alpha (default 0.05) AND |relative change of the medians| >= the
                     minimum effect (default 1%): a difference both significant and large
                     enough to matter;
    same             otherwise;
    too few reps     fewer than --min-repetitions (default 9) values on either side: the U test
                     cannot reach significance reliably (google/benchmark docs/tools.md).
The metric is real_time by default (lower is better); --metric cpu_time, or any counter such as
bytes_per_second (higher is better, --higher-is-better is implied for *_per_second and *ratio).
Exit status 0 whatever the verdicts (2 for bad input).
"""

import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import output_file  # noqa: E402  bench/tools/output_file.py


def import_mannwhitneyu():
    try:
        from scipy.stats import mannwhitneyu  # Debian: python3-scipy
        return mannwhitneyu
    except ImportError:
        pass
    # A pyenv / venv interpreter may lack the Debian package: retry with the system Python.
    system = "/usr/bin/python3"
    if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) \
            and not os.environ.get("LMCACHE_COMPARE_REEXEC"):
        os.environ["LMCACHE_COMPARE_REEXEC"] = "1"
        os.execv(system, [system] + sys.argv)
    print("compare.py: scipy is required: apt-get install python3-scipy", file=sys.stderr)
    sys.exit(2)


def load(path, metric):
    """{benchmark name: [value per repetition]} from a Google Benchmark JSON file."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"compare.py: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)
    values = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        if metric not in b:
            continue
        name = b.get("run_name", b["name"])
        values.setdefault(name, []).append(float(b[metric]))
    return doc.get("context", {}), values


def verdict(base, new, alpha, min_effect, higher_is_better, min_reps, mannwhitneyu):
    mb, mn = statistics.median(base), statistics.median(new)
    change = (mn - mb) / abs(mb) if mb else math.inf
    if len(base) < min_reps or len(new) < min_reps:
        return mb, mn, change, None, f"too few reps ({len(base)}/{len(new)} < {min_reps})"
    p = mannwhitneyu(base, new, alternative="two-sided").pvalue
    if p < alpha and abs(change) >= min_effect:
        better = change > 0 if higher_is_better else change < 0
        return mb, mn, change, p, "faster" if better else "slower"
    return mb, mn, change, p, "same"


def write_verdicts(path, verdicts, prog):
    """Writes the verdicts as JSON to the output file `path` (--json); False, after saying why on
    stderr as `prog`, when it cannot. reports/tools/compare_reports.py uses it too."""
    try:
        output_file.write_output_file(path, json.dumps(verdicts, indent=2) + "\n")
    except (OSError, ValueError) as e:
        print(f"{prog}: --json: cannot write the verdicts: {e}", file=sys.stderr)
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("baseline", help="Google Benchmark JSON (e.g. lmcache-bench.json)")
    ap.add_argument("contender", help="Google Benchmark JSON to compare with the baseline")
    ap.add_argument("--metric", default="real_time",
                    help="real_time (default), cpu_time or a counter, e.g. bytes_per_second")
    ap.add_argument("--higher-is-better", action="store_true",
                    help="larger values are better (implied for *_per_second and *ratio)")
    ap.add_argument("--alpha", type=float, default=0.05, help="significance level (0.05)")
    ap.add_argument("--min-effect", type=float, default=0.01,
                    help="minimum relative change of the medians to call a difference (0.01)")
    ap.add_argument("--min-repetitions", type=int, default=9,
                    help="fewer repetitions than this on a side gives 'too few reps' (9)")
    ap.add_argument("--filter", default="", help="only benchmarks whose name contains this")
    ap.add_argument("--json", default=None, type=output_file.output_path,
                    help="also write the verdicts as JSON here (a regular file or nothing, in "
                         "an existing directory)")
    args = ap.parse_args()
    mannwhitneyu = import_mannwhitneyu()

    higher = args.higher_is_better or args.metric.endswith("_per_second") or \
        args.metric.endswith("ratio")
    _, base = load(args.baseline, args.metric)
    _, new = load(args.contender, args.metric)
    names = sorted(n for n in set(base) & set(new) if args.filter in n)
    only_one = sorted((set(base) ^ set(new)))
    if not names:
        print(f"compare.py: no common benchmark with metric '{args.metric}'", file=sys.stderr)
        return 2

    rows, out = [], []
    for n in names:
        mb, mn, change, p, label = verdict(base[n], new[n], args.alpha, args.min_effect, higher,
                                           args.min_repetitions, mannwhitneyu)
        rows.append((n, f"{mb:.6g}", f"{mn:.6g}", f"{100 * change:+.2f}%",
                     "-" if p is None else f"{p:.4f}", f"{len(base[n])}/{len(new[n])}", label))
        out.append({"name": n, "baseline_median": mb, "contender_median": mn,
                    "relative_change": change, "p_value": p, "verdict": label,
                    "repetitions": [len(base[n]), len(new[n])]})
    header = ("benchmark", f"base {args.metric}", "new", "change", "p", "reps", "verdict")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    fmt = "  ".join(("{:<%d}" if i in (0, 6) else "{:>%d}") % w for i, w in enumerate(widths))
    print(fmt.format(*header))
    print(fmt.format(*("-" * w for w in widths)))
    for r in rows:
        print(fmt.format(*r))
    counts = {}
    for o in out:
        key = o["verdict"].split(" (")[0]
        counts[key] = counts.get(key, 0) + 1
    print(f"\n{len(out)} compared ({', '.join(f'{v} {k}' for k, v in sorted(counts.items()))}); "
          f"Mann-Whitney U two-sided, alpha {args.alpha}, minimum effect "
          f"{100 * args.min_effect:.1f}%, {'higher' if higher else 'lower'} is better. "
          "Advisory only.")
    if only_one:
        print(f"{len(only_one)} benchmark(s) in only one file, not compared.")
    if args.json and not write_verdicts(args.json, out, "compare.py"):
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
