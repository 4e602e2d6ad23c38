"""Synthetic lmcache-bench output for the report tools' tests: a sweep (metrics.prom and
Google Benchmark JSON) and a summary run with repetitions, shaped like the real ones."""
import json
import os
import random

import reportdata

CODEC_SIZES = (4096, 1 << 20)
FORMATS = ('float8_e4m3fn', 'float8_e5m2')
DTYPES = ('float32', 'float16', 'bfloat16')


def labels(**kw):
    out = {k: 'none' for k in reportdata.LABELS}
    out.update({k: str(v) for k, v in kw.items()})
    return out


def prom_line(family, lab, value, **extra):
    lab = {**lab, **extra}
    text = ','.join(f'{k}="{v}"' for k, v in sorted(lab.items()))
    return f'{family}{{{text}}} {value!r}'


def sweep_rows(roofline_spread=0.02):
    """[(labels, {prom family: value, ...})] of a small sweep."""
    rows = []
    for size in CODEC_SIZES:
        for threads in (1, 2):
            for op in ('encode', 'decode'):
                for fmt in FORMATS:
                    for dtype in DTYPES:
                        for impl in ('simd', 'scalar'):
                            if impl == 'scalar' and threads != 1:
                                continue
                            rate = (3e9 * threads if impl == 'simd' else 1e8)
                            lab = labels(suite='codec', op=op, impl=impl, serde='fp8',
                                         dtype=dtype, format=fmt, device='cpu', size_bytes=size,
                                         threads=threads)
                            rows.append((lab, {
                                'lmcache_bench_throughput_bytes_per_second': rate,
                                'lmcache_bench_roofline_ratio': rate / 10e9,
                                'lmcache_bench_roofline_bytes_per_second': 10e9,
                                'lmcache_bench_roofline_spread_ratio': roofline_spread}))
            rows.append((labels(suite='roofline', op='memcpy', impl='memcpy', device='cpu',
                                size_bytes=size * 3 // 4, threads=threads),
                         {'lmcache_bench_throughput_bytes_per_second': 9e9}))
    rows.append((labels(suite='processor', op='latency', impl='handoff', device='cpu',
                        threads=1, batch=1),
                 {('lmcache_bench_task_latency_seconds', 'p50'): 8e-6,
                  ('lmcache_bench_task_latency_seconds', 'p99'): 2e-5}))
    rows.append((labels(suite='processor', op='latency', impl='async', serde='noop',
                        dtype='bfloat16', device='cpu', size_bytes=4096, threads=1, batch=1),
                 {('lmcache_bench_task_latency_seconds', 'p50'): 1.2e-5,
                  ('lmcache_bench_task_latency_seconds', 'p99'): 4e-5}))
    for op in ('store', 'load'):
        for impl, ratio in (('wrapper', 0.61), ('wrapper_pipelined', 0.7), ('processor', 0.9)):
            for batch in (1, 8):
                rows.append((labels(suite='wrapper', op=op, impl=impl, serde='fp8',
                                    dtype='bfloat16', format='float8_e4m3fn', device='cpu',
                                    size_bytes=1 << 20, threads=1, batch=batch),
                             {'lmcache_bench_throughput_bytes_per_second': 5e9 * ratio,
                              'lmcache_bench_codec_ratio': ratio}))
    return rows


def l2_rows():
    """[(labels, {prom family: value})] of the l2/ suite (resp and fs, raw and fp8, batches 1
    and 8) and the bare codec rows its break-even needs: resp raw 1 GB/s under a break-even of
    5e9 x (1 - 0.5) = 2.5 GB/s, fs raw 4 GB/s above it."""
    rows = []
    for op in ('store', 'load'):
        for batch in (1, 8):
            rows.append((labels(suite='wrapper', op=op, impl='serde_direct', serde='fp8',
                                dtype='bfloat16', format='float8_e4m3fn', device='cpu',
                                size_bytes=1 << 20, threads=1, batch=batch),
                         {'lmcache_bench_throughput_bytes_per_second': 5e9}))
            for adapter, raw, fp8 in (('resp', 1e9, 1.5e9), ('fs', 4e9, 2e9)):
                for serde, rate, ratio in (('none', raw, 1.0), ('fp8', fp8, 0.5)):
                    rows.append((labels(suite='l2', op=op, impl=adapter, serde=serde,
                                        dtype='bfloat16',
                                        format='float8_e4m3fn' if serde == 'fp8' else 'none',
                                        device='cpu', size_bytes=1 << 20, batch=batch),
                                 {'lmcache_bench_throughput_bytes_per_second': rate,
                                  'lmcache_bench_stored_ratio': ratio}))
    return rows


def l2_redis_rows():
    """[(labels, {prom family: value})] of a connector plugin's raw l2 rows (MapConnector,
    0.5 GB/s) and redis-benchmark's ceiling (2 GB/s), batches 1 and 8, to go with l2_rows():
    resp's 1 GB/s is half the ceiling, MapConnector's a quarter."""
    rows = []
    for op in ('store', 'load'):
        for batch in (1, 8):
            for impl, rate in (('MapConnector', 5e8), ('redis-benchmark', 2e9)):
                rows.append((labels(suite='l2', op=op, impl=impl, serde='none',
                                    dtype='bfloat16', format='none', device='cpu',
                                    size_bytes=1 << 20, batch=batch),
                             {'lmcache_bench_throughput_bytes_per_second': rate,
                              'lmcache_bench_stored_ratio': 1.0}))
    return rows


def l2_read_pool_rows():
    """[(labels, {prom family: value})] of the read-pool load rows, to go with l2_rows(): resp at
    read_io_depth 1 and 4 (0.5 and 2 GB/s, against resp's shared 1 GB/s), batch 8."""
    return [(labels(suite='l2', op='load', impl=f'resp_read_io_depth_{depth}', serde='none',
                    dtype='bfloat16', format='none', device='cpu', size_bytes=1 << 20, batch=8),
             {'lmcache_bench_throughput_bytes_per_second': rate,
              'lmcache_bench_stored_ratio': 1.0})
            for depth, rate in ((1, 5e8), (4, 2e9))]


def metrics_text(sha, rows):
    lines = ['# TYPE lmcache_bench_build_info gauge',
             f'lmcache_bench_build_info{{build_type="Release",compiler="g++",git_sha="{sha}",'
             'version="0.1.0"}} 1']
    for lab, values in rows:
        for family, value in values.items():
            if isinstance(family, tuple):
                lines.append(prom_line(family[0], lab, value, stat=family[1]))
            else:
                lines.append(prom_line(family, lab, value))
    lines.append('lmcache_bench_benchmarks{status="ok"} 9')
    return '\n'.join(lines) + '\n'


def gbench_doc(entries, context=None):
    """Google Benchmark JSON: entries = [(labels, [{field: value} per repetition])]."""
    benchmarks = []
    for lab, reps in entries:
        name = reportdata.benchmark_name(lab) + '/real_time'
        for i, fields in enumerate(reps):
            benchmarks.append({'name': name, 'run_name': name, 'run_type': 'iteration',
                               'repetitions': len(reps), 'repetition_index': i,
                               'real_time': 1.0, 'time_unit': 'us', **fields})
        if len(reps) > 1:
            benchmarks.append({'name': name + '_median', 'run_name': name,
                               'run_type': 'aggregate', 'aggregate_name': 'median',
                               'real_time': 1.0})
    return {'context': {'date': '2026-12-01T10:00:00+00:00', 'load_avg': [0.5, 0.4, 0.3],
                        'lmcache_git_sha': 'abcdef123456', 'lmcache_bench_quick': 'true',
                        'simd_target': 'AVX2', **(context or {})},
            'benchmarks': benchmarks}


def summary_entries(seed, reps=9, slow=None, noise=0.02, processes=1, process_noise=0.0):
    """The summary run's rows with `reps` repetitions of multiplicative noise; `slow`:
    {benchmark name prefix: factor} applied to the time-like figure (throughput divided,
    latency multiplied). processes > 1 splits the repetitions over that many processes (rows
    tagged "process", as make_report.merge_bench_jsons() does), each row of each process off by
    its own factor within +-process_noise (what differs between processes)."""
    rng = random.Random(seed)
    slow = slow or {}
    entries = []

    def factor(lab):
        name = reportdata.benchmark_name(lab)
        return next((f for prefix, f in slow.items() if name.startswith(prefix)), 1.0)

    def repeated(make):
        """reps dicts from make(jitter): the jitter of each includes its process's offset."""
        offsets = [1 + rng.uniform(-process_noise, process_noise) for _ in range(processes)]
        out = []
        for i in range(reps):
            process = i * processes // reps
            fields = make(lambda: offsets[process] * (1 + rng.uniform(-noise, noise)))
            if processes > 1:
                fields['process'] = process + 1
            out.append(fields)
        return out

    for op in ('encode', 'decode'):
        for fmt in FORMATS:
            for impl, threads_list in (('simd', (1, 2)), ('scalar', (1,))):
                for threads in threads_list:
                    lab = labels(suite='codec', op=op, impl=impl, serde='fp8', dtype='bfloat16',
                                 format=fmt, device='cpu', size_bytes=1 << 20, threads=threads)
                    rate = (3e9 * threads if impl == 'simd' else 1e8) / factor(lab)
                    entries.append((lab, repeated(lambda j, rate=rate: {
                        'bytes_per_second': rate * j(), 'roofline_ratio': rate / 10e9 * j(),
                        'roofline_bytes_per_second': 10e9 * j(), 'roofline_spread': 0.03})))
    for lab, p50 in ((labels(suite='processor', op='latency', impl='handoff', device='cpu',
                             threads=1, batch=1), 8e-6),
                     (labels(suite='processor', op='latency', impl='async', serde='noop',
                             dtype='bfloat16', device='cpu', size_bytes=4096, threads=1,
                             batch=1), 1.2e-5)):
        entries.append((lab, repeated(lambda j, lab=lab, p50=p50: {
            'p50_s': p50 * factor(lab) * j(), 'p99_s': 3 * p50})))
    for op in ('store', 'load'):
        lab = labels(suite='wrapper', op=op, impl='wrapper', serde='fp8', dtype='bfloat16',
                     format='float8_e4m3fn', device='cpu', size_bytes=1 << 20, threads=1,
                     batch=8)
        entries.append((lab, repeated(lambda j, lab=lab: {
            'bytes_per_second': 3e9 / factor(lab) * j(), 'codec_ratio': 0.6 * j()})))
    return entries


def write_bench_dir(path, sha, rows=None):
    """An lmcache-bench --out directory of the sweep."""
    os.makedirs(path, exist_ok=True)
    rows = sweep_rows() if rows is None else rows
    with open(os.path.join(path, 'metrics.prom'), 'w', encoding='utf-8') as f:
        f.write(metrics_text(sha, rows))
    entries = []
    for lab, values in rows:
        fields = {}
        if 'lmcache_bench_throughput_bytes_per_second' in values:
            fields['bytes_per_second'] = values['lmcache_bench_throughput_bytes_per_second']
        entries.append((lab, [fields]))
    with open(os.path.join(path, 'lmcache-bench.json'), 'w', encoding='utf-8') as f:
        json.dump(gbench_doc(entries), f)
    with open(os.path.join(path, 'system.json'), 'w', encoding='utf-8') as f:
        json.dump({'cpu': {'simd_best': 'AVX2'}}, f)  # lmcache-bench's, not a benchmark file


def write_summary_dir(path, seed, context=None, **kw):
    """An lmcache-bench --out directory of the summary run (summary_entries(seed, **kw))."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, 'lmcache-bench.json'), 'w', encoding='utf-8') as f:
        json.dump(gbench_doc(summary_entries(seed, **kw), context), f)


def write_summary_process_dirs(path, seed, processes, context=None, **kw):
    """The summary run as scripts/run.sh makes it: path/process-<n>/lmcache-bench.json, one
    lmcache-bench --out directory per process, each of one repetition."""
    for n in range(1, processes + 1):
        write_summary_dir(os.path.join(path, f'process-{n}'), seed * 100 + n, context, reps=1,
                          **kw)
