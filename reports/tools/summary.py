#!/usr/bin/python3
"""The summary block of a report: at most 15 rows that answer "how fast is this machine for
LMCache's serde stack", each with its unit and how it was measured.

    summary.py --bench-args [--quick]   print the lmcache-bench arguments of one process of
                                        the summary run, one a line (scripts/run.sh): its
                                        --filter, repetitions and random interleaving
    summary.py --processes              print how many processes make the summary run

Rows (when the report has the data):
  - fp8 encode and decode of bfloat16, per format, at the sweep's largest size, per device:
    GB/s (bytes read + written), x the in-run roofline (flagged when the roofline's spread
    exceeds ROOFLINE_SPREAD_BOUND), x the scalar reference codec (CPU);
  - the machine's hand-off floor (an eventfd round trip between two threads) and the
    AsyncSerdeProcessor's round trip with a no-op serde, with its own cost above the floor;
  - L2 store and load end to end through the fp8 wrapper over the mock adapter, GB/s and x the
    bare codec;
  - L2 store and load end to end through real storage (resp, fs), through the fp8 wrapper, GB/s
    beside the raw adapter's and the break-even storage bandwidth (l2.py);
  - the conformance verdict counts (with the kit's coverage of the reference) and the fault
    campaign's result.
Figures come from the summary run (the rows repeated, median and interquartile range) when
the report has one, otherwise from the sweep's single measurement (said in the row).
"""
import argparse
import dataclasses
import sys

import l2
from reportdata import human_bytes, num, quartiles

# A roofline whose samples' interquartile range exceeds this fraction of their median is too
# noisy to divide by: its ratio is shown flagged.
ROOFLINE_SPREAD_BOUND = 0.10
# The summary run: SUMMARY_PROCESSES lmcache-bench processes of SUMMARY_REPETITIONS_PER_PROCESS
# repetitions each. The U test of compare_reports.py needs at least 9 values a side, and they
# must be independent: what differs between processes (page placement, the vCPU a thread lands
# on) differs between two runs as much, and repetitions inside one process do not show it (two
# single-process runs of one revision here differed by 6-12 % in 6 of 16 rows, each "significant").
# One repetition per process makes every value independent; simulated at 8 % process noise,
# 3 processes x 3 repetitions called 8 % of same-revision rows different, 9 x 1 none of 3000
# (compare_reports.py: process noise).
SUMMARY_PROCESSES = 9
SUMMARY_REPETITIONS_PER_PROCESS = 1
SUMMARY_REPETITIONS = SUMMARY_PROCESSES * SUMMARY_REPETITIONS_PER_PROCESS
# The wrapper rows of the summary: chunk size and chunks per task.
WRAPPER_SIZE = 1 << 20
WRAPPER_BATCH = 8
FULL_CODEC_SIZE = 256 << 20  # the largest codec size of a full sweep (lmcache-bench)
QUICK_CODEC_SIZE = 1 << 20   # ... and of a --quick one


def bench_filter(codec_size):
    """The lmcache-bench --filter that selects the summary rows (codec rows at `codec_size`)."""
    return ('^(codec/(encode|decode)/(simd|scalar|cuda)/fp8/bfloat16/float8_(e4m3fn|e5m2)/'
            f'(cpu|cuda)/size:{codec_size}/'
            '|processor/latency/handoff/'
            '|processor/latency/async/noop/[^/]+/cpu/size:[0-9]+/threads:1/'
            f'|wrapper/(store|load)/wrapper/fp8/bfloat16/float8_e4m3fn/cpu/size:{WRAPPER_SIZE}/'
            f'threads:1/batch:{WRAPPER_BATCH}/'
            f'|l2/(store|load)/(resp|fs)/(fp8/)?bfloat16/(float8_e4m3fn/)?cpu/size:{WRAPPER_SIZE}/'
            f'batch:{WRAPPER_BATCH}/)')


def bench_args(quick):
    """The lmcache-bench arguments of the summary run (after the sweep's own --quick, if any)."""
    return ['--filter', bench_filter(QUICK_CODEC_SIZE if quick else FULL_CODEC_SIZE),
            f'--benchmark_repetitions={SUMMARY_REPETITIONS_PER_PROCESS}',
            '--benchmark_enable_random_interleaving=true']


@dataclasses.dataclass
class SummaryRow:
    key: str           # stable id, e.g. "codec/cpu/encode/float8_e4m3fn"
    what: str          # what was measured
    result: str        # the headline figure, Markdown
    relative: str      # the comparison that gives it meaning
    how: str           # how it was measured
    value: float = None  # the headline figure in `unit` (None for counts)
    unit: str = ''
    q1: float = None
    q3: float = None
    repetitions: int = 0
    ratio: float = None    # x roofline (codec rows), x the bare codec (wrapper rows)
    roofline_spread: float = None  # codec rows: the roofline's spread (None: not measured)
    flagged: bool = False  # a ratio whose denominator is too noisy to trust


class Source:
    """Per-repetition values of a row: the summary run's when it has the row, else the
    sweep's one value."""

    def __init__(self, report):
        self.report = report

    def values(self, row, json_field, sweep_field):
        rep = self.report.repeated
        if rep is not None:
            vals = rep.values(row, json_field)
            if vals:
                return vals
        v = row.values.get(sweep_field)
        return [v] if v is not None else []


def spread_text(vals, scale, unit, digits=2):
    q1, med, q3 = quartiles(vals)
    text = f'**{med * scale:.{digits}f} {unit}**'
    if len(vals) > 1 and med:
        text += f' ±{100 * (q3 - q1) / 2 / med:.0f} %'
    return text, med, q1, q3


def reps_text(vals):
    if len(vals) > 1:
        return f'median of {len(vals)} repetitions'
    return 'one measurement (sweep)'


def roofline_spread(source, row):
    """The roofline's relative interquartile range for a codec row, or None if unmeasured:
    the larger of the within-repetition spread and the spread of the repetitions' medians."""
    within = source.values(row, 'roofline_spread', 'roofline_spread')
    rates = source.values(row, 'roofline_bytes_per_second', 'roofline_rate')
    spreads = []
    if within:
        spreads.append(quartiles(within)[1])
    if len(rates) >= 4:
        q1, med, q3 = quartiles(rates)
        spreads.append((q3 - q1) / med if med else 0.0)
    return max(spreads) if spreads else None


def roofline_text(ratio, spread):
    if ratio is None:
        return 'roofline not measured', False
    if spread is None:
        return f'{ratio:.2f}× roofline (its spread not measured)', False
    if spread > ROOFLINE_SPREAD_BOUND:
        return (f'{ratio:.2f}× roofline ⚠ roofline too noisy (spread {100 * spread:.0f} % > '
                f'{100 * ROOFLINE_SPREAD_BOUND:.0f} %)', True)
    return f'{ratio:.2f}× roofline', False


def codec_rows(report, source):
    out = []
    sweep = report.sweep
    for device, fast in (('cpu', 'simd'), ('cuda', 'cuda')):
        sizes = [num(r['size_bytes']) for r in sweep.select(suite='codec', device=device)]
        if not sizes:
            continue
        size = max(sizes)
        for op in ('encode', 'decode'):
            for fmt in ('float8_e4m3fn', 'float8_e5m2'):
                cands = sweep.select(suite='codec', op=op, impl=fast, dtype='bfloat16',
                                     format=fmt, device=device, size_bytes=size)
                measured = [(c, source.values(c, 'bytes_per_second', 'throughput'))
                            for c in cands]
                measured = [(c, v) for c, v in measured if v]
                if not measured:
                    continue
                best, vals = max(measured, key=lambda cv: quartiles(cv[1])[1])
                result, med, q1, q3 = spread_text(vals, 1e-9, 'GB/s')
                ratios = source.values(best, 'roofline_ratio', 'roofline_ratio')
                ratio = quartiles(ratios)[1] if ratios else None
                spread = roofline_spread(source, best)
                rel, flagged = roofline_text(ratio, spread)
                scalar = sweep.select(suite='codec', op=op, impl='scalar', dtype='bfloat16',
                                      format=fmt, device=device, size_bytes=size)
                svals = source.values(scalar[0], 'bytes_per_second', 'throughput') if scalar \
                    else []
                if svals:
                    rel += f' · {med / quartiles(svals)[1]:.0f}× the scalar reference'
                short = fmt.replace('float8_', '')
                arrow = f'bfloat16 → {short}' if op == 'encode' else f'{short} → bfloat16'
                threads = best['threads']
                others = sorted({num(c['threads']) for c, _ in measured})
                how = (f'{reps_text(vals)}; bytes read + written; {threads} '
                       f"thread{'s' if threads != '1' else ''}")
                if len(others) > 1:
                    how += f" (best of {', '.join(map(str, others))})"
                out.append(SummaryRow(
                    key=f'codec/{device}/{op}/{fmt}', what=f'fp8 {op} {arrow}, '
                    f'{human_bytes(size)}, {device.upper()}', result=result, relative=rel,
                    how=how, value=med / 1e9, unit='GB/s', q1=q1 / 1e9, q3=q3 / 1e9,
                    repetitions=len(vals), ratio=ratio, roofline_spread=spread,
                    flagged=flagged))
    return out


def processor_rows(report, source):
    sweep = report.sweep
    floor = sweep.select(suite='processor', op='latency', impl='handoff')
    proc = sweep.select(suite='processor', op='latency', impl='async', serde='noop', threads=1)
    out = []
    floor_p50 = None
    if floor:
        vals = source.values(floor[0], 'p50_s', 'p50')
        if vals:
            result, floor_p50, q1, q3 = spread_text(vals, 1e6, 'µs', 1)
            p99 = source.values(floor[0], 'p99_s', 'p99')
            out.append(SummaryRow(
                key='processor/handoff_floor', what="the machine's hand-off floor: one eventfd "
                'round trip between two threads, p50', result=result,
                relative=f'p99 {quartiles(p99)[1] * 1e6:.0f} µs' if p99 else '',
                how=f'{reps_text(vals)} of per-round-trip p50s; unpinned',
                value=floor_p50 * 1e6, unit='µs', q1=q1 * 1e6, q3=q3 * 1e6,
                repetitions=len(vals)))
    if proc:
        vals = source.values(proc[0], 'p50_s', 'p50')
        if vals:
            result, p50, q1, q3 = spread_text(vals, 1e6, 'µs', 1)
            if floor_p50 is None:
                rel = 'no hand-off floor measured'
            else:
                own = p50 - floor_p50
                rel = (f'own cost {own * 1e6:.1f} µs above the floor' if own > 0 else
                       'at the floor (own cost within the noise)')
                rel += f' ({p50 / floor_p50:.2f}× the floor)'
            out.append(SummaryRow(
                key='processor/round_trip', what='AsyncSerdeProcessor round trip (submit → '
                'eventfd → query), no-op serde, 1 worker, p50', result=result, relative=rel,
                how=f'{reps_text(vals)} of per-task p50s; one task in flight; unpinned',
                value=p50 * 1e6, unit='µs', q1=q1 * 1e6, q3=q3 * 1e6, repetitions=len(vals)))
    return out


def wrapper_rows(report, source):
    out = []
    for op in ('store', 'load'):
        cands = report.sweep.select(suite='wrapper', op=op, impl='wrapper', serde='fp8',
                                    dtype='bfloat16', size_bytes=WRAPPER_SIZE)
        if not cands:
            continue
        row = min(cands, key=lambda r: abs(num(r['batch']) - WRAPPER_BATCH))
        vals = source.values(row, 'bytes_per_second', 'throughput')
        if not vals:
            continue
        result, med, q1, q3 = spread_text(vals, 1e-9, 'GB/s')
        ratios = source.values(row, 'codec_ratio', 'codec_ratio')
        ratio = quartiles(ratios)[1] if ratios else None
        rel = f'{ratio:.2f}× the bare codec' if ratio is not None else ''
        out.append(SummaryRow(
            key=f'wrapper/mock/{op}', what=f'L2 {op} end to end: fp8 wrapper over the mock '
            f"adapter, {human_bytes(WRAPPER_SIZE)} bfloat16 chunks × {row['batch']} per task",
            result=result, relative=rel,
            how=f'{reps_text(vals)}; bytes of the wide chunks; one task at a time; the bare '
            'codec timed interleaved',
            value=med / 1e9, unit='GB/s', q1=q1 / 1e9, q3=q3 / 1e9, repetitions=len(vals),
            ratio=ratio))
    return out


def l2_rows(report, source):
    out = []
    sweep = report.sweep
    for p in l2.summary_points(l2.points(sweep), WRAPPER_BATCH):
        adapter, op, batch = p['adapter'], p['op'], p['batch']
        fp8 = sweep.select(suite='l2', impl=adapter, op=op, serde='fp8', size_bytes=l2.CHUNK,
                           batch=batch)
        raw = sweep.select(suite='l2', impl=adapter, op=op, serde='none', size_bytes=l2.CHUNK,
                           batch=batch)
        vals = source.values(fp8[0], 'bytes_per_second', 'throughput')
        raw_vals = source.values(raw[0], 'bytes_per_second', 'throughput')
        if not vals or not raw_vals:
            continue
        result, med, q1, q3 = spread_text(vals, 1e-9, 'GB/s')
        raw_med = quartiles(raw_vals)[1]
        rel = f'raw {raw_med / 1e9:.2f} GB/s ({med / raw_med:.2f}× raw)'
        if p['break_even'] is not None:
            rel += f" · break-even storage bandwidth {p['break_even'] / 1e9:.2f} GB/s"
        out.append(SummaryRow(
            key=f'l2/{adapter}/{op}', what=f'L2 {op} end to end through {adapter}: fp8 wrapper, '
            f'{human_bytes(l2.CHUNK)} bfloat16 chunks × {batch} per task',
            result=result, relative=rel,
            how=f'{reps_text(vals)}; bytes of the wide chunks; one task at a time; '
            + ('a private redis-server' if adapter == 'resp' else 'a temporary directory')
            + '; [L2 end to end](#l2-end-to-end)',
            value=med / 1e9, unit='GB/s', q1=q1 / 1e9, q3=q3 / 1e9, repetitions=len(vals),
            ratio=med / raw_med))
    return out


def coverage_text(report):
    """What the kit drives in the reference (conformance/coverage/README.md), or ''."""
    cov = report.coverage
    if not cov or cov.get('lines_percent') is None or cov.get('branches_percent') is None:
        return ''
    return (f"; the kit covers {cov['lines_percent']:.1f} % of the reference's lines, "
            f"{cov['branches_percent']:.1f} % of its branches ({cov.get('depth', '?')} depth, "
            '`conformance/coverage/README.md`)')


def verdict_rows(report):
    out = []
    conf = report.conformance
    if conf is not None:
        impls = conf.get('implementations') or []
        # The Python examples (lmcache-conform --python, docs/python.md) get a row of their own.
        python = [i for i in impls if str(i.get('source', '')).startswith('python:')]
        reference = [i for i in impls if i not in python]
        groups = [('conformance', 'conformance of the reference implementation', reference,
                   'lmcache-conform --reference')]
        if python:
            groups.append(('conformance_python', 'conformance of the Python examples', python,
                           'lmcache-conform --python conformance/examples/python'))
        for key, what, group, command in groups:
            counts = {'Pass': 0, 'NotSupported': 0, 'QualityWarning': 0, 'Fail': 0}
            for impl in group:
                for p in impl.get('properties', []):
                    counts[p.get('status', 'Fail')] = counts.get(p.get('status', 'Fail'), 0) + 1
            out.append(SummaryRow(
                key=key, what=what,
                result=f"**{counts['Fail']} Fail**",
                relative=' · '.join(f'{v} {k}' for k, v in counts.items() if k != 'Fail'),
                how=f'{len(group)} implementations, {command} '
                f"(RapidCheck {conf.get('rc_params', '')})".strip()
                + (coverage_text(report) if key == 'conformance' else '')))
    camp = report.campaign
    if camp is not None:
        summary = camp.get('summary', camp)
        violations = summary.get('violation_count', summary.get('violations'))
        if isinstance(violations, list):
            violations = len(violations)
        faults = summary.get('faults_injected')
        injected = sum(faults.values()) if isinstance(faults, dict) else None
        out.append(SummaryRow(
            key='campaign', what='fault campaign through the wrapper',
            result=f'**{violations} violations**',
            relative=f"{summary.get('operations', '?')} operations"
            + (f', {injected} faults injected' if injected is not None else ''),
            how=f"lmcache-fault-campaign, seed {summary.get('seed', '?')}"))
    return out


def build(report):
    """The summary rows of a report (a reportdata.Report), at most 15."""
    source = Source(report)
    rows = (codec_rows(report, source) + processor_rows(report, source)
            + wrapper_rows(report, source) + l2_rows(report, source) + verdict_rows(report))
    return rows[:15]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument('--bench-args', action='store_true',
                      help='print the lmcache-bench arguments of one summary-run process')
    what.add_argument('--processes', action='store_true',
                      help='print how many lmcache-bench processes make the summary run')
    ap.add_argument('--quick', action='store_true', help='for an lmcache-bench --quick sweep')
    args = ap.parse_args(argv)
    if args.processes:
        print(SUMMARY_PROCESSES)
    else:
        print('\n'.join(bench_args(args.quick)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
