"""reports/tools/compare: what got faster or slower between two reports, with a significance
test. Usable as a CI gate.

    reports/tools/compare A B [--alpha 0.05] [--min-effect 0.15] [--min-repetitions 9]
                              [--json OUT]

A and B are report directories (reports/<system-id>/: their summary run, summary_bench.json)
or Google Benchmark JSON files with repetitions (e.g. lmcache-bench.json of a run with
--benchmark_repetitions). Two machines, or two revisions on one machine.

For every benchmark in both with at least --min-repetitions repetitions on each side, the
values of its metric -- p50_s (per-task latency, lower is better) when the rows carry it,
otherwise bytes_per_second (higher is better) -- are compared: "faster" or "slower" when
  - a two-sided Mann-Whitney U test (bench/tools/compare.py) is significant at --alpha after
    Holm-Bonferroni correction over all compared rows (16 rows at 0.05 uncorrected would call
    about one row of two same-revision runs different by chance alone);
  - the medians differ by at least --min-effect (default 15 %, not compare.py's 1 %: a whole
    run can land higher or lower than another on a shared VM -- two 9-process runs of one
    revision on the development VM, minutes apart, differed by up to 10.5 %, and by 9.7 % in a
    row whose processes agreed within 9.6 %; lower it on dedicated hardware, after two runs of
    one revision there agree); and
  - when both sides have the processes to measure it, the change exceeds the row's process
    noise (the "noise" column): the interquartile range of each side's per-process medians
    relative to their median, the two sides' added. Otherwise "same (within process noise)".
"same" otherwise.

Why processes. scripts/run.sh makes the summary run of 9 lmcache-bench processes of one
repetition each (rows tagged "process", summary.py). What differs between processes -- page
placement of the 256 MiB buffers, which vCPU a thread lands on, a VM's neighbours -- differs
between two runs as much, and repetitions inside one process do not show it: two single-process
runs of one revision on the development VM differed by 6-12 % in 6 of 16 rows, every one
"significant". Values from separate processes are independent samples for the U test, and
their spread says how far apart two runs of the same code land. A side of fewer than 4
processes (an older report, a plain --benchmark_repetitions run) has no noise estimate: the
output says so, and its verdicts rest on the corrected U test and the minimum effect.

A side whose run started with a 1-minute load average above its CPU count is named busy in
the output: its differences may come from the other work on the machine, not from the code
(runs of one revision on a busy 2-core VM differ by 20-40 %); gate on quiet runners.

Exit status: 0 when nothing got slower, 1 when something did (the gate), 2 for bad input or
when no benchmark has enough repetitions on both sides.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'bench', 'tools'))
import compare as bench_compare  # noqa: E402  bench/tools/compare.py: the U test and verdict
import output_file  # noqa: E402  bench/tools/output_file.py
import reportdata  # noqa: E402

# Metric per benchmark, in order of preference: (JSON field, higher is better, unit, scale).
METRICS = (('p50_s', False, 'µs p50', 1e6), ('bytes_per_second', True, 'GB/s', 1e-9),
           ('real_time', False, 'time', 1.0))


class Side:
    """One side of the comparison: its runs and a description."""

    def __init__(self, path):
        self.path = path
        if os.path.isdir(path):
            system_path = os.path.join(path, 'system.json')
            json_path = os.path.join(path, reportdata.SUMMARY_JSON)
            if not os.path.exists(json_path):
                bench_out = os.path.join(path, 'lmcache-bench.json')
                if os.path.exists(bench_out):
                    json_path = bench_out
                else:
                    raise ValueError(f'{path} has no {reportdata.SUMMARY_JSON} (a report made '
                                     'without a summary run cannot be compared: rerun '
                                     'scripts/run.sh)')
        else:
            system_path, json_path = None, path
        try:
            self.runs = reportdata.Repeated.load(json_path)
        except (OSError, ValueError) as e:
            raise ValueError(f'cannot read {json_path}: {e}') from e
        self.system = {}
        if system_path and os.path.exists(system_path):
            with open(system_path, encoding='utf-8') as f:
                self.system = json.load(f)
        ctx = self.runs.context
        self.system_id = self.system.get('system_id') or os.path.basename(os.path.normpath(path))
        self.revision = str(ctx.get('lmcache_git_sha') or self.system.get('git_revision', '?'))
        self.date = str(ctx.get('date', '?'))[:10]

    def few_processes(self):
        """True when the run came from fewer than 4 lmcache-bench processes (rows tagged with
        their process; untagged: one process)."""
        return len({r.get('process') for rows in self.runs.runs.values() for r in rows}) < 4

    def runs_processes(self, name, field):
        """How many lmcache-bench processes the row's repetitions came from (1 when untagged)."""
        return max(1, len(self.runs.by_process(name, field)))

    def busy(self):
        """The run's load average when it exceeded the CPU count (else None)."""
        return reportdata.busy_load(self.runs.context)

    def describe(self):
        text = f'{self.system_id} at {self.revision[:12]} ({self.date})'
        load = self.busy()
        if load:
            text += (f'  BUSY: load average {load:.1f} on {self.runs.context.get("num_cpus")} '
                     'CPUs')
        return text



def pick_metric(a_runs, b_runs):
    for field, higher, unit, scale in METRICS:
        if all(field in r for r in a_runs + b_runs):
            return field, higher, unit, scale
    return None


def compare(a, b, alpha, min_effect, min_reps):
    """[{name, metric, unit, baseline, contender, change, p, p_holm, process_noise, verdict,
    reps}] for every benchmark in both sides."""
    mannwhitneyu = bench_compare.import_mannwhitneyu()
    out = []
    for name in sorted(set(a.runs.runs) & set(b.runs.runs)):
        ra, rb = a.runs.runs[name], b.runs.runs[name]
        metric = pick_metric(ra, rb)
        if metric is None:
            continue
        field, higher, unit, scale = metric
        va = [float(r[field]) for r in ra]
        vb = [float(r[field]) for r in rb]
        # alpha 1: the direction and the effect only; significance is decided below, over all
        # rows together.
        mb, mn, change, p, label = bench_compare.verdict(va, vb, 1.0, min_effect, higher,
                                                         min_reps, mannwhitneyu)
        noise = [process_noise(side.runs, name, field) for side in (a, b)]
        out.append({'name': name, 'metric': field, 'unit': unit, 'baseline': mb * scale,
                    'contender': mn * scale, 'relative_change': change, 'p_value': p,
                    'p_holm': None, 'higher_is_better': higher, 'verdict': label,
                    'process_noise': sum(noise) if None not in noise else None,
                    'processes': [a.runs_processes(name, field), b.runs_processes(name, field)],
                    'repetitions': [len(va), len(vb)]})
    # Holm-Bonferroni over the tested rows: 16 rows at alpha 0.05 would call about one row of
    # two same-revision runs different by chance alone.
    tested = sorted((r for r in out if r['p_value'] is not None), key=lambda r: r['p_value'])
    running = 0.0
    for i, r in enumerate(tested):
        running = max(running, min(1.0, r['p_value'] * (len(tested) - i)))
        r['p_holm'] = running
        if r['verdict'] not in ('faster', 'slower'):
            continue
        if running >= alpha:
            r['verdict'] = 'same'
        elif r['process_noise'] is not None and abs(r['relative_change']) <= r['process_noise']:
            r['verdict'] = 'same (within process noise)'
    return out


def process_noise(runs, name, field):
    """The interquartile range of the per-process medians of `field` of benchmark `name`,
    relative to their median; None for a run of fewer than 4 processes (no quartiles)."""
    groups = runs.by_process(name, field)
    if len(groups) < 4:
        return None
    q1, middle, q3 = reportdata.quartiles([statistics.median(v) for v in groups.values()])
    return (q3 - q1) / abs(middle) if middle else None


def print_table(rows):
    header = ('benchmark', 'unit', 'A', 'B', 'change', 'p (Holm)', 'noise', 'reps', 'verdict')
    body = [(r['name'], r['unit'], f"{r['baseline']:.4g}", f"{r['contender']:.4g}",
             f"{100 * r['relative_change']:+.1f}%",
             '-' if r['p_holm'] is None else f"{r['p_holm']:.4f}",
             '-' if r['process_noise'] is None else f"{100 * r['process_noise']:.1f}%",
             '/'.join(map(str, r['repetitions'])), r['verdict']) for r in rows]
    widths = [max(len(str(x[i])) for x in body + [header]) for i in range(len(header))]
    fmt = '  '.join(('{:<%d}' if i in (0, 1, 8) else '{:>%d}') % w for i, w in enumerate(widths))
    print(fmt.format(*header))
    print(fmt.format(*('-' * w for w in widths)))
    for row in body:
        print(fmt.format(*row))


def main(argv=None):
    ap = argparse.ArgumentParser(prog='reports/tools/compare', description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('a', help='baseline: a report directory or Google Benchmark JSON')
    ap.add_argument('b', help='contender: a report directory or Google Benchmark JSON')
    ap.add_argument('--alpha', type=float, default=0.05, help='significance level (0.05)')
    ap.add_argument('--min-effect', type=float, default=0.15,
                    help='minimum relative change of the medians to call a difference (0.15)')
    ap.add_argument('--min-repetitions', type=int, default=9,
                    help='fewer repetitions than this on a side: "too few reps" (9)')
    ap.add_argument('--json', type=output_file.output_path,
                    help='also write the verdicts as JSON here (a regular file or nothing, in an '
                         'existing directory)')
    args = ap.parse_args(argv)
    try:
        a, b = Side(args.a), Side(args.b)
    except ValueError as e:
        print(f'compare: {e}', file=sys.stderr)
        return 2
    rows = compare(a, b, args.alpha, args.min_effect, args.min_repetitions)
    same_system = a.system.get('system_id') and a.system.get('system_id') == b.system.get(
        'system_id')
    same_revision = a.revision == b.revision and a.revision != '?'
    kind = ('two runs of one revision on one system' if same_system and same_revision else
            'two revisions on one system' if same_system else
            'two systems' if a.system.get('system_id') and b.system.get('system_id') else
            'two runs')
    print(f"A: {a.describe()}\nB: {b.describe()}\n({kind})\n")
    if not rows:
        print('compare: no benchmark in both', file=sys.stderr)
        return 2
    print_table(rows)
    tested = [r for r in rows if not r['verdict'].startswith('too few')]
    counts = {}
    for r in rows:
        key = r['verdict'].split(' (')[0]
        counts[key] = counts.get(key, 0) + 1
    slower = [r['name'] for r in tested if r['verdict'] == 'slower']
    faster = [r['name'] for r in tested if r['verdict'] == 'faster']
    print(f"\n{len(rows)} compared: {', '.join(f'{v} {k}' for k, v in sorted(counts.items()))}. "
          f'Mann-Whitney U two-sided, Holm-corrected alpha {args.alpha}, minimum effect '
          f'{100 * args.min_effect:.0f} %.')
    if faster:
        print('Faster in B: ' + ', '.join(faster))
    if slower:
        print('SLOWER in B: ' + ', '.join(slower))
    single = [side for side in (a, b) if side.few_processes()]
    if single:
        print('Note: ' + ' and '.join('AB'[(a, b).index(side)] for side in single) +
              ' ran in fewer than 4 processes: no process-noise estimate, the verdicts rest on the '
              'corrected U test and the minimum effect (scripts/run.sh runs the summary in 9 '
              'processes).')
    if a.busy() or b.busy():
        print('Warning: a run started on a busy machine (load average above its CPU count): '
              'differences may be the load, not the code.')
    if args.json and not bench_compare.write_verdicts(args.json, rows, 'compare'):
        return 2
    if not tested:
        print(f'compare: no benchmark has {args.min_repetitions} repetitions on both sides',
              file=sys.stderr)
        return 2
    return 1 if slower else 0


if __name__ == '__main__':
    sys.exit(main())
