#!/usr/bin/python3
"""Builds a hardware performance report directory, reports/<system-id>/.

    make_report.py --bench-dir DIR [--conformance FILE] [--campaign FILE] [--build-dir DIR]
                   [--reports-root reports] [--system-id ID] [--reproduce CMD]

DIR is lmcache-bench's --out directory: its Google Benchmark JSON (*.json) and metrics.prom.
The report holds system.json, bench.json (the raw results), conformance.json, campaign.json,
metrics.prom, plots/*.svg and a README.md with the tables. validate_report.py checks it.
"""
import argparse
import collections
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promtext  # noqa: E402
import sysinfo  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def human_bytes(n):
    n = float(n)
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if n < 1024 or unit == 'GiB':
            return f'{n:.0f} {unit}' if n == int(n) else f'{n:.1f} {unit}'
        n /= 1024


def gbps(v):
    return f'{v / 1e9:.2f}'


def table(header, rows):
    out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    out += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
    return '\n'.join(out)


def key_of(labels, names):
    return tuple(labels.get(n, 'none') for n in names)


class Metrics:
    """The bench metrics indexed by family and by their BenchLabels."""

    LABELS = ('suite', 'op', 'impl', 'serde', 'dtype', 'format', 'device', 'size_bytes',
              'threads', 'batch')

    def __init__(self, path):
        self.samples, self.types = promtext.load(path)
        self.by_family = collections.defaultdict(dict)
        for name, labels, value in self.samples:
            extra = tuple(sorted((k, v) for k, v in labels.items() if k not in self.LABELS))
            self.by_family[name][(key_of(labels, self.LABELS), extra)] = value

    def series(self, family, **extra):
        """{label tuple: value} of one family, restricted to the given extra labels."""
        want = tuple(sorted(extra.items()))
        return {k: v for (k, e), v in self.by_family.get(family, {}).items() if e == want}

    def info(self, family):
        for name, labels, _ in self.samples:
            if name == family:
                return labels
        return {}


def lab(key, name):
    return key[Metrics.LABELS.index(name)]


def num(text):
    """A numeric label as an int; 0 for "none" (the label does not apply)."""
    return int(text) if text.isdigit() else 0


def codec_section(m):
    tput = m.series('lmcache_bench_throughput_bytes_per_second')
    ratio = m.series('lmcache_bench_roofline_ratio')
    rows = []
    for k in sorted(tput, key=lambda k: (lab(k, 'device'), lab(k, 'op'), lab(k, 'dtype'),
                                         lab(k, 'format'), lab(k, 'impl'), num(lab(k, 'threads')),
                                         num(lab(k, 'size_bytes')))):
        if lab(k, 'suite') != 'codec':
            continue
        rows.append([lab(k, 'device'), lab(k, 'op'), lab(k, 'impl'), lab(k, 'dtype'),
                     lab(k, 'format'), (human_bytes(lab(k, 'size_bytes')) if lab(k, 'size_bytes') != 'none' else '–'), lab(k, 'threads'),
                     gbps(tput[k]), f'{ratio[k]:.2f}' if k in ratio else '–'])
    roof = [[lab(k, 'device'), lab(k, 'impl'), (human_bytes(lab(k, 'size_bytes')) if lab(k, 'size_bytes') != 'none' else '–'), lab(k, 'threads'),
             gbps(v)] for k, v in sorted(tput.items(), key=lambda kv: num(lab(kv[0], 'size_bytes')))
            if lab(k, 'suite') == 'roofline']
    text = ['## fp8 codec throughput',
            '',
            'Bytes read + written per second (GB/s = 1e9 B/s) and the ratio to the in-run '
            'roofline (memcpy, or device copy on a GPU) moving the same bytes.',
            '']
    text.append(table(['device', 'op', 'backend', 'dtype', 'format', 'size', 'threads', 'GB/s',
                       'ratio to roofline'], rows) if rows else '_No codec results in this run._')
    text += ['', '### Roofline (in-run copy)', '',
             table(['device', 'copy', 'size', 'threads', 'GB/s'], roof) if roof else '_none_']
    return '\n'.join(text)


def overhead_section(m):
    lat = {}
    for stat in ('p50', 'p99'):
        for k, v in m.series('lmcache_bench_task_latency_seconds', stat=stat).items():
            lat.setdefault(k, {})[stat] = v
    tput = m.series('lmcache_bench_throughput_bytes_per_second')
    items = m.series('lmcache_bench_items_per_second')
    codec_ratio = m.series('lmcache_bench_codec_ratio')
    out = ['## Processor, wrapper and L1 overheads', '']
    rows = []
    for k in sorted(set(lat) | {k for k in items if lab(k, 'suite') in ('processor', 'wrapper', 'l1')}):
        if lab(k, 'suite') not in ('processor', 'wrapper', 'l1', 'serde'):
            continue
        l = lat.get(k, {})
        rows.append([lab(k, 'suite'), lab(k, 'op'), lab(k, 'impl'), lab(k, 'serde'),
                     lab(k, 'dtype'), (human_bytes(lab(k, 'size_bytes')) if lab(k, 'size_bytes') != 'none' else '–') if lab(k, 'size_bytes') != 'none' else '–',
                     lab(k, 'batch'), lab(k, 'threads'),
                     f"{l['p50'] * 1e6:.1f}" if 'p50' in l else '–',
                     f"{l['p99'] * 1e6:.1f}" if 'p99' in l else '–',
                     gbps(tput[k]) if k in tput else '–',
                     f'{items[k]:.3g}' if k in items else '–',
                     f'{codec_ratio[k]:.2f}' if k in codec_ratio else '–'])
    out.append(table(['suite', 'op', 'impl', 'serde', 'dtype', 'size', 'batch', 'threads',
                      'p50 µs', 'p99 µs', 'GB/s', 'items/s', 'ratio to bare codec'], rows)
               if rows else '_No processor, wrapper or L1 results in this run._')
    return '\n'.join(out)


def plots(m, out_dir):
    """Throughput against size and against threads; returns [(title, relative path)]."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    tput = m.series('lmcache_bench_throughput_bytes_per_second')
    made = []
    os.makedirs(os.path.join(out_dir, 'plots'), exist_ok=True)

    # 1. Codec throughput against size, threads = 1, one line per (op, backend, dtype, format).
    lines = collections.defaultdict(list)
    for k, v in tput.items():
        if lab(k, 'suite') in ('codec', 'roofline') and lab(k, 'threads') in ('1', 'none'):
            name = (f"{lab(k, 'op')} {lab(k, 'impl')} {lab(k, 'dtype')} {lab(k, 'format')}"
                    if lab(k, 'suite') == 'codec' else f"roofline {lab(k, 'impl')}")
            lines[(lab(k, 'device'), name)].append((num(lab(k, 'size_bytes')), v / 1e9))
    if lines:
        fig, ax = plt.subplots(figsize=(9, 5.5))
        for (device, name), pts in sorted(lines.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker='o', markersize=3,
                    linestyle='--' if name.startswith('roofline') else '-', label=f'{device}: {name}')
        ax.set_xscale('log', base=2)
        ax.set_xlabel('input size (bytes)')
        ax.set_ylabel('GB/s (bytes read + written)')
        ax.set_title('fp8 codec throughput against size (1 thread)')
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        path = os.path.join('plots', 'codec_throughput_vs_size.svg')
        fig.savefig(os.path.join(out_dir, path))
        plt.close(fig)
        made.append(('fp8 codec throughput against size', path))

    # 2. Codec throughput against threads at the largest size measured.
    codec = [k for k in tput if lab(k, 'suite') == 'codec' and lab(k, 'threads') != 'none']
    if codec:
        biggest = max(num(lab(k, 'size_bytes')) for k in codec)
        lines = collections.defaultdict(list)
        for k in codec:
            if num(lab(k, 'size_bytes')) == biggest:
                name = f"{lab(k, 'device')}: {lab(k, 'op')} {lab(k, 'impl')} {lab(k, 'dtype')} {lab(k, 'format')}"
                lines[name].append((num(lab(k, 'threads')), tput[k] / 1e9))
        if any(len(p) > 1 for p in lines.values()):
            fig, ax = plt.subplots(figsize=(9, 5.5))
            for name, pts in sorted(lines.items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker='o', markersize=3, label=name)
            ax.set_xlabel('threads')
            ax.set_ylabel('GB/s (bytes read + written)')
            ax.set_title(f'fp8 codec throughput against threads ({human_bytes(biggest)} input)')
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=6, ncol=2)
            fig.tight_layout()
            path = os.path.join('plots', 'codec_throughput_vs_threads.svg')
            fig.savefig(os.path.join(out_dir, path))
            plt.close(fig)
            made.append(('fp8 codec throughput against threads', path))
    return made


def summary_section(title, data, kind):
    if data is None:
        return f'## {title}\n\n_Not run._'
    out = [f'## {title}', '']
    summary = data.get('summary', data)
    scalars = [(k, v) for k, v in summary.items() if not isinstance(v, (dict, list))]
    if scalars:
        out.append(table(['field', 'value'], scalars))
    if kind == 'conformance' and isinstance(data.get('implementations'), list):
        rows = []
        for impl in data['implementations']:
            counts = collections.Counter(p.get('status', '?') for p in impl.get('properties', []))
            rows.append([impl.get('name', '?'), impl.get('kind', ''), counts.get('Pass', 0),
                         counts.get('NotSupported', 0), counts.get('QualityWarning', 0),
                         counts.get('Fail', 0)])
        out += ['', table(['implementation', 'kind', 'Pass', 'NotSupported', 'QualityWarning',
                           'Fail'], rows)]
    if kind == 'campaign' and isinstance(summary.get('faults_injected'), dict):
        out += ['', table(['fault kind', 'injected'], sorted(summary['faults_injected'].items()))]
    return '\n'.join(out)


def load_json(path):
    if not path:
        return None
    with open(path, encoding='utf-8') as f:
        return json.load(f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bench-dir', required=True, help="lmcache-bench's --out directory")
    ap.add_argument('--conformance', help="lmcache-conform's --json report")
    ap.add_argument('--campaign', help="lmcache-fault-campaign's --json summary")
    ap.add_argument('--build-dir', help='the build tree (for the compiler)')
    ap.add_argument('--reports-root', default=os.path.join(ROOT, 'reports'))
    ap.add_argument('--system-id', help='override the generated system id')
    ap.add_argument('--reproduce', default='scripts/run.sh', help='the command that made this report')
    args = ap.parse_args(argv)

    system = sysinfo.collect(ROOT, args.build_dir)
    if args.system_id:
        system['system_id'] = args.system_id
    out_dir = os.path.join(args.reports_root, system['system_id'])
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)

    bench_jsons = sorted(f for f in os.listdir(args.bench_dir) if f.endswith('.json'))
    if not bench_jsons:
        sys.exit(f'make_report: no benchmark JSON in {args.bench_dir}')
    merged = {'context': None, 'benchmarks': []}
    for name in bench_jsons:
        data = load_json(os.path.join(args.bench_dir, name))
        merged['context'] = merged['context'] or data.get('context')
        merged['benchmarks'] += data.get('benchmarks', [])
    with open(os.path.join(out_dir, 'bench.json'), 'w', encoding='utf-8') as f:
        json.dump(merged, f, indent=1)
    prom = os.path.join(args.bench_dir, 'metrics.prom')
    if not os.path.exists(prom):
        sys.exit(f'make_report: {prom} is missing (lmcache-bench writes it)')
    shutil.copy(prom, os.path.join(out_dir, 'metrics.prom'))
    conformance = load_json(args.conformance)
    campaign = load_json(args.campaign)
    for name, data in (('conformance.json', conformance), ('campaign.json', campaign)):
        with open(os.path.join(out_dir, name), 'w', encoding='utf-8') as f:
            json.dump(data if data is not None else {'not_run': True}, f, indent=1)
    with open(os.path.join(out_dir, 'system.json'), 'w', encoding='utf-8') as f:
        json.dump(system, f, indent=2)

    metrics = Metrics(prom)
    made = plots(metrics, out_dir)
    gpu = ', '.join(f"{g['name']} ({human_bytes(g['memory_bytes'])}, driver {g['driver']})"
                    for g in system['gpus']) or 'none'
    readme = [
        f"# Performance report: {system['system_id']}",
        '',
        f"Measured {system['date']} at revision `{system['git_revision'][:12]}`"
        f"{' (with local changes)' if system['git_dirty'] else ''}. Every figure below was "
        'measured in this run on this machine.',
        '',
        table(['', ''], [
            ['CPU', f"{system['cpu_model']}, {system['logical_cores']} logical cores"],
            ['memory', human_bytes(system['memory_bytes'])],
            ['SIMD targets', ', '.join(system['simd_targets']) or 'none'],
            ['GPU', gpu],
            ['compiler', system['compiler']],
            ['libtorch', system['libtorch_version']],
            ['kernel', system['kernel']],
        ]),
        '',
        codec_section(metrics),
        '',
        overhead_section(metrics),
        '',
        '## Plots',
        '',
    ]
    readme += [f'![{title}]({path})\n' for title, path in made] or ['_No plottable results._']
    readme += [
        '',
        summary_section('Conformance of the reference implementation', conformance, 'conformance'),
        '',
        summary_section('Fault campaign', campaign, 'campaign'),
        '',
        '## Files',
        '',
        '`system.json` (machine), `bench.json` (raw Google Benchmark results), `metrics.prom` '
        '(the same results as Prometheus metrics), `conformance.json`, `campaign.json`, `plots/`.',
        '',
        '## Reproduce',
        '',
        '```sh',
        f"git checkout {system['git_revision'][:12]}",
        args.reproduce,
        '```',
        '',
    ]
    with open(os.path.join(out_dir, 'README.md'), 'w', encoding='utf-8') as f:
        f.write('\n'.join(readme))
    print(out_dir)


if __name__ == '__main__':
    main()
