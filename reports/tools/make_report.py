#!/usr/bin/python3
"""Builds a hardware performance report directory, reports/<system-id>/.

    make_report.py --bench-dir DIR [--summary-dir DIR] [--conformance FILE] [--campaign FILE]
                   [--coverage FILE] [--build-dir DIR] [--reports-root reports] [--id-suffix TAG]
                   [--reproduce CMD] [--note TEXT ...] [--force]
    make_report.py --rebuild REPORT_DIR     re-render README, tables and plots from the raw
                                            files the report already holds

--bench-dir is lmcache-bench's --out directory of the sweep (every row once: its Google
Benchmark JSON and metrics.prom); --summary-dir that of the summary run (the summary rows
repeated: summary.py --bench-filter). The report holds the raw files (system.json, bench.json,
metrics.prom, summary_bench.json, conformance.json, campaign.json, coverage.json: the kit's
coverage of the reference, from conformance/coverage/baseline.json unless --coverage names a
coverage gate's --json), then what is made from
them: README.md (the summary block first), tables/*.csv (every row), plots/*.svg + *.png.

The system id names the hardware (sysinfo.py), so a run on another machine writes another
directory; a rerun on the same hardware replaces that directory only, and only once the new
report is complete. A directory with the same id but other hardware in its system.json (which
only --id-suffix can cause) is refused unless --force. validate_report.py checks the result.
"""
import argparse
import csv
import datetime
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bysize  # noqa: E402
import l2  # noqa: E402
import plots  # noqa: E402
import reportdata  # noqa: E402
import summary  # noqa: E402
import sysinfo  # noqa: E402
from reportdata import human_bytes, num  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLES = ('codec', 'roofline', 'overheads', 'summary')
# What a report keeps of the coverage gate's figures (conformance/coverage/README.md).
COVERAGE_KEYS = ('lines_percent', 'branches_percent', 'depth', 'seed')
COVERAGE_BASELINE = os.path.join(ROOT, 'conformance', 'coverage', 'baseline.json')


def md_table(header, rows):
    out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    out += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
    return '\n'.join(out)


def fmt(value, digits=4):
    return '' if value is None else f'{value:.{digits}g}'


def count(label):
    """A numeric label for a CSV cell: the number, or empty when it does not apply."""
    return num(label) if num(label) else ''


def roofline_flag(row):
    spread = row.values.get('roofline_spread')
    if 'roofline_ratio' not in row.values:
        return 'no roofline'
    if spread is None:
        return 'spread not measured'
    return 'noisy' if spread > summary.ROOFLINE_SPREAD_BOUND else 'ok'


def _order(r):
    return tuple(num(r[k]) if k in ('size_bytes', 'threads', 'batch') else r[k]
                 for k in ('device', 'op', 'format', 'dtype', 'impl', 'threads', 'size_bytes',
                           'suite', 'serde', 'batch'))


def write_tables(report, rows, out_dir):
    """tables/<name>.csv for every name of TABLES; returns {name: row count}."""
    os.makedirs(os.path.join(out_dir, 'tables'), exist_ok=True)
    sweep = report.sweep
    tables = {}
    codec = sorted(sweep.select(suite='codec'), key=_order)
    tables['codec'] = (
        ['device', 'op', 'backend', 'dtype', 'format', 'size_bytes', 'threads', 'gb_per_s',
         'roofline_gb_per_s', 'roofline_spread', 'ratio_to_roofline', 'roofline_flag'],
        [[r['device'], r['op'], r['impl'], r['dtype'], r['format'], count(r['size_bytes']),
          count(r['threads']), fmt(r.values.get('throughput', 0) / 1e9),
          fmt(plots.roofline_of(r)[0] / 1e9 if plots.roofline_of(r) else None),
          fmt(r.values.get('roofline_spread'), 3), fmt(r.values.get('roofline_ratio'), 3),
          roofline_flag(r)] for r in codec])
    roof = sorted(sweep.select(suite='roofline'), key=_order)
    tables['roofline'] = (
        ['device', 'copy', 'bytes_copied', 'threads', 'gb_per_s'],
        [[r['device'], r['impl'], count(r['size_bytes']), count(r['threads']),
          fmt(r.values.get('throughput', 0) / 1e9)] for r in roof])
    over = sorted((r for r in sweep.rows if r['suite'] in ('processor', 'wrapper', 'l1', 'serde')),
                  key=_order)

    def us(v):
        return fmt(v * 1e6 if v is not None else None)
    tables['overheads'] = (
        ['suite', 'op', 'impl', 'serde', 'dtype', 'format', 'size_bytes', 'batch', 'threads',
         'p50_us', 'p99_us', 'gb_per_s', 'items_per_s', 'ratio_to_bare_codec'],
        [[r['suite'], r['op'], r['impl'], r['serde'], r['dtype'], r['format'],
          count(r['size_bytes']), count(r['batch']), count(r['threads']), us(r.values.get('p50')),
          us(r.values.get('p99')),
          fmt(r.values['throughput'] / 1e9 if 'throughput' in r.values else None),
          fmt(r.values.get('items')), fmt(r.values.get('codec_ratio'), 3)] for r in over])
    l2_points = l2.points(sweep)
    if l2_points:
        tables['l2'] = l2.table(l2_points)
        redis_points = l2.redis_points(sweep)
        if redis_points:
            tables['l2_redis'] = l2.redis_table(redis_points)
        read_pool_points = l2.read_pool_points(sweep)
        if read_pool_points:
            tables['l2_read_pool'] = l2.read_pool_table(read_pool_points)
    tables['summary'] = (
        ['key', 'what', 'value', 'unit', 'q1', 'q3', 'repetitions', 'ratio', 'flagged',
         'relative', 'how'],
        [[s.key, s.what, fmt(s.value), s.unit, fmt(s.q1), fmt(s.q3), s.repetitions,
          fmt(s.ratio, 3), 'yes' if s.flagged else 'no', s.relative, s.how] for s in rows])
    counts = {}
    for name, (header, body) in tables.items():
        with open(os.path.join(out_dir, 'tables', name + '.csv'), 'w', encoding='utf-8',
                  newline='') as f:
            w = csv.writer(f, lineterminator='\n')
            w.writerow(header)
            w.writerows(body)
        counts[name] = len(body)
    return counts


def make_plots(report, out_dir):
    """[(title, svg, png)] of every plot the data allows."""
    made = []
    for device in ('cpu', 'cuda'):
        for title, fn in ((f'fp8 codec throughput against size, {device.upper()}',
                           plots.codec_vs_size),
                          (f'fp8 codec throughput against threads, {device.upper()}',
                           plots.codec_vs_threads)):
            paths = fn(report.sweep, device, out_dir)
            if paths:
                made.append((title, *paths))
    paths = plots.overheads(report.sweep, out_dir)
    if paths:
        made.append(('processor and wrapper overheads', *paths))
    return made


def run_line(name, what, context, reps):
    load = context.get('load_avg') or []
    busy = reportdata.busy_load(context)
    return [name, what, str(context.get('date', '?'))[:16].replace('T', ' '),
            f"`{context.get('lmcache_git_sha', '?')}`",
            'quick' if context.get('lmcache_bench_quick') == 'true' else 'full',
            str(reps), (', '.join(f'{x:.2f}' for x in load) or '?')
            + (f" ⚠ busy: more runnable tasks than its {context.get('num_cpus')} CPUs"
               if busy else '')]


def render(report_dir):
    """(Re)writes README.md, tables/ and plots/ of a report from its raw files."""
    for sub in ('tables', 'plots'):
        shutil.rmtree(os.path.join(report_dir, sub), ignore_errors=True)
    report = reportdata.Report(report_dir)
    system = report.system
    rows = summary.build(report)
    counts = write_tables(report, rows, report_dir)
    made = make_plots(report, report_dir)
    l2_points = l2.points(report.sweep)
    l2_plot = l2.plot(l2_points, report_dir, plots)
    noisy = sum(1 for r in report.sweep.select(suite='codec') if roofline_flag(r) == 'noisy')
    unmeasured = sum(1 for r in report.sweep.select(suite='codec')
                     if roofline_flag(r) == 'spread not measured')
    gpu = ', '.join(f"{g['name']} ({human_bytes(g['memory_bytes'])}, driver {g['driver']})"
                    for g in system['gpus']) or 'none'
    cpu = (f"{system['cpu_model']} ({system.get('cpu_uarch') or 'unknown microarchitecture'}, "
           f"{system.get('simd_target', '?')}), {system['logical_cores']} logical cores")
    bound = f'{100 * summary.ROOFLINE_SPREAD_BOUND:.0f} %'
    out = [
        f"# Performance report: {system['system_id']}",
        '',
        f"{cpu}, {human_bytes(system['memory_bytes'])} memory, GPU: {gpu}. Revision "
        f"`{system['git_revision'][:12]}`{' (with local changes)' if system['git_dirty'] else ''}"
        f", {system['date'][:10]}. Every figure was measured on this machine "
        '([runs](#runs), [machine](#machine), [reproduce](#reproduce)).',
        '',
        '## Summary',
        '',
        md_table(['what', 'result', 'compared with', 'how measured'],
                 [[s.what, s.result, s.relative, s.how] for s in rows]),
        '',
        'GB/s = 10⁹ bytes per second. ± is half the interquartile range of the repetitions. '
        'The roofline of a codec row is a memcpy of the same bytes on the same buffers and '
        'threads, sampled right after the kernel in the same run; a ratio is flagged ⚠ when '
        f"the roofline's samples spread more than {bound} (interquartile range / median). The "
        'processor\'s own cost is its round trip minus the hand-off floor (medians).',
        '',
        '## Plots',
        '',
    ]
    for title, svg, png in made:
        out += [f'[![{title}]({png})]({svg})', '']
    if not made:
        out += ['_No plottable results._', '']
    out += bysize.section(report.sweep, md_table, summary.ROOFLINE_SPREAD_BOUND)
    out += l2.section(l2_points, md_table, l2_plot, l2.redis_points(report.sweep),
                      l2.read_pool_points(report.sweep))
    csv_text = {
        'codec': f"every fp8 codec row (GB/s, roofline, its spread, ratio); {noisy} of "
                 f"{counts['codec']} rows have a roofline spread above {bound} "
                 "(`roofline_flag` = noisy)"
                 + (f', {unmeasured} were measured without a spread' if unmeasured else ''),
        'roofline': 'the standalone memcpy (device copy) rows',
        'overheads': 'processor, wrapper, L1 and serde rows (p50/p99 µs, GB/s, × the bare codec)',
        'summary': 'the summary block as data (median, quartiles, repetitions)',
        'l2': 'L2 end to end through real storage (raw and fp8 GB/s, stored bytes per wide '
              'byte, bare codec, break-even storage bandwidth)',
        'l2_redis': 'the Redis clients (resp, a connector plugin\'s) side by side with '
                    'redis-benchmark on the same redis-server (raw GB/s, share of its ceiling)',
        'l2_read_pool': 'loads through LMCache\'s read pool at each read_io_depth (GB/s, × the '
                        'adapter reading on its shared workers)',
    }
    out += ['## Full tables', '']
    out += [f'- [tables/{n}.csv](tables/{n}.csv): {counts[n]} rows, {csv_text[n]}.'
            for n in TABLES + tuple(n for n in ('l2', 'l2_redis', 'l2_read_pool')
                                    if n in counts)]
    sweep_reps = 1
    runs = [run_line('sweep', 'every table and plot', report.sweep_context, sweep_reps)]
    if report.repeated is not None:
        processes = report.repeated.context.get('summary_processes')
        reps = report.repeated.repetitions()
        runs.append(run_line('summary run', 'the summary block', report.repeated.context,
                             f'{reps} ({processes} processes)' if processes else
                             f'{reps} (one process)'))
    out += ['', '## Runs', '',
            md_table(['run', 'feeds', 'date (UTC)', 'revision', 'kind', 'repetitions',
                      'load average (1, 5, 15 min)'], runs), '']
    if report.repeated is None:
        out += ['No summary run: the summary shows the sweep\'s single measurements.', '']
    out += [f'- {n}' for n in system.get('notes', [])]
    if system.get('notes'):
        out.append('')
    out += ['## Machine', '', md_table(['', ''], [
        ['CPU', f"{system['cpu_model']}, {system['logical_cores']} logical cores"],
        ['cpuid', f"{system.get('cpu_vendor', '?')} family {system.get('cpu_family', '?')} "
                  f"model {system.get('cpu_model_number', '?')} "
                  f"({system.get('cpu_uarch') or 'not in the table'})"],
        ['SIMD', f"kernels ran on {system.get('simd_target', '?')}; CPU supports "
                 f"{', '.join(system['simd_targets']) or 'none'}"],
        ['memory', human_bytes(system['memory_bytes'])],
        ['GPU', gpu],
        ['compiler', system['compiler']],
        ['libtorch', system['libtorch_version']],
        ['kernel', system['kernel']],
    ]), '']
    out += ['## Files', '',
            '`system.json` (machine), `bench.json` and `metrics.prom` (the sweep: raw Google '
            'Benchmark JSON and Prometheus metrics), `summary_bench.json` (the summary run, every '
            'repetition), `conformance.json`, `campaign.json`, `coverage.json` (what the kit '
            'drives in the reference: conformance/coverage/README.md); `tables/` and `plots/` '
            'are made '
            'from them by `reports/tools/make_report.py --rebuild`. Compare with another report: '
            f"`reports/tools/compare reports/{system['system_id']} reports/OTHER`.", '',
            '## Reproduce', '', '```sh', f"git checkout {system['git_revision'][:12]}",
            system.get('reproduce', 'scripts/run.sh'), '```', '']
    with open(os.path.join(report_dir, 'README.md'), 'w', encoding='utf-8') as f:
        f.write('\n'.join(out))


def merge_bench_jsons(bench_dir):
    """The Google Benchmark JSON files of an lmcache-bench --out directory, merged. A directory
    of process-<n>/ subdirectories (the summary run: one lmcache-bench process each) merges
    them all, every row tagged with "process": n (reportdata.Repeated.by_process())."""
    parts = [(None, bench_dir)]
    processes = sorted((int(d.split('-', 1)[1]), os.path.join(bench_dir, d))
                       for d in os.listdir(bench_dir)
                       if d.startswith('process-') and d.split('-', 1)[1].isdigit())
    if processes:
        parts = processes
    merged = {'context': None, 'benchmarks': []}
    for process, directory in parts:
        for name in sorted(f for f in os.listdir(directory) if f.endswith('.json')):
            with open(os.path.join(directory, name), encoding='utf-8') as f:
                data = json.load(f)
            if 'benchmarks' not in data:
                continue  # lmcache-bench's system.json
            merged['context'] = merged['context'] or data.get('context')
            for b in data['benchmarks']:
                if process is not None:
                    b['process'] = process
                merged['benchmarks'].append(b)
    if not merged['benchmarks']:
        sys.exit(f'make_report: no benchmark JSON in {bench_dir}')
    if processes:
        merged['context']['summary_processes'] = len(processes)
    return merged


def write_json(path, data, indent=1):
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(data, f, indent=indent)
        f.write('\n')


def load_json(path):
    if not path:
        return None
    with open(path, encoding='utf-8') as f:
        return json.load(f)


def install(staging, out_dir, system, force):
    """Replaces out_dir by the complete staging directory (refusing other hardware)."""
    old_system = os.path.join(out_dir, 'system.json')
    if os.path.exists(old_system) and not force:
        old = load_json(old_system)
        if sysinfo.hardware(old) != sysinfo.hardware(system):
            shutil.rmtree(staging)
            sys.exit(f'make_report: {out_dir} holds the report of other hardware '
                     f'({sysinfo.hardware(old)}); not replaced (use another --id-suffix, or '
                     '--force)')
    if os.path.isdir(out_dir):
        trash = staging + '.old'
        os.rename(out_dir, trash)
        os.rename(staging, out_dir)
        shutil.rmtree(trash)
    else:
        os.rename(staging, out_dir)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--rebuild', metavar='REPORT_DIR',
                    help='re-render an existing report from its raw files')
    ap.add_argument('--bench-dir', help="lmcache-bench's --out directory of the sweep")
    ap.add_argument('--summary-dir', help="lmcache-bench's --out directory of the summary run")
    ap.add_argument('--conformance', help="lmcache-conform's --json report")
    ap.add_argument('--campaign', help="lmcache-fault-campaign's --json summary")
    ap.add_argument('--coverage', default=COVERAGE_BASELINE,
                    help="the kit's coverage of the reference: the coverage gate's --json or "
                         'baseline.json (the default)')
    ap.add_argument('--build-dir', help='the build tree (for the compiler)')
    ap.add_argument('--reports-root', default=os.path.join(ROOT, 'reports'))
    ap.add_argument('--id-suffix', default='',
                    help='appended to the system id: a second report of the same hardware under '
                         'other conditions, e.g. "pinned"')
    ap.add_argument('--reproduce', default='scripts/run.sh', help='the command that made this')
    ap.add_argument('--note', action='append', default=[], help='a line for the Runs section')
    ap.add_argument('--force', action='store_true',
                    help='replace a same-id report of other hardware')
    args = ap.parse_args(argv)
    if args.rebuild:
        render(args.rebuild)
        print(args.rebuild)
        return 0
    if not args.bench_dir:
        ap.error('--bench-dir (or --rebuild) is required')

    sweep = merge_bench_jsons(args.bench_dir)
    prom = os.path.join(args.bench_dir, 'metrics.prom')
    if not os.path.exists(prom):
        sys.exit(f'make_report: {prom} is missing (lmcache-bench writes it)')
    repeated = merge_bench_jsons(args.summary_dir) if args.summary_dir else None
    context = sweep['context'] or {}
    system = sysinfo.collect(ROOT, args.build_dir, simd_target=context.get('simd_target'))
    if args.id_suffix:
        system['id_suffix'] = sysinfo.slug(args.id_suffix)
        if not system['id_suffix']:
            ap.error(f'--id-suffix {args.id_suffix!r} has no letter or digit')
        system['system_id'] += '-' + system['id_suffix']
    system['reproduce'] = args.reproduce
    system['notes'] = args.note
    out_dir = os.path.join(args.reports_root, system['system_id'])
    staging = os.path.join(args.reports_root,
                           f".{system['system_id']}.staging-{os.getpid()}-"
                           f"{datetime.datetime.now().strftime('%H%M%S')}")
    os.makedirs(staging)
    write_json(os.path.join(staging, reportdata.SWEEP_JSON), sweep)
    shutil.copy(prom, os.path.join(staging, reportdata.SWEEP_PROM))
    if repeated is not None:
        write_json(os.path.join(staging, reportdata.SUMMARY_JSON), repeated)
    for name, path in (('conformance.json', args.conformance), ('campaign.json', args.campaign)):
        data = load_json(path)
        write_json(os.path.join(staging, name), data if data is not None else {'not_run': True})
    coverage = load_json(args.coverage)
    if coverage is not None:  # the figures only (baseline.json also lists untriaged lines)
        write_json(os.path.join(staging, 'coverage.json'),
                   {k: coverage.get(k) for k in COVERAGE_KEYS if k in coverage})
    write_json(os.path.join(staging, 'system.json'), system, indent=2)
    render(staging)
    install(staging, out_dir, system, args.force)
    print(out_dir)
    return 0


if __name__ == '__main__':
    sys.exit(main())
