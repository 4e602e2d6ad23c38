"""A report's raw data, loaded for the tools that present and compare it. Stdlib only.

A report directory (reports/<system-id>/) holds two benchmark runs of lmcache-bench:
  - the sweep: every row once (bench.json: Google Benchmark JSON; metrics.prom: the same
    results as labelled Prometheus gauges, medians);
  - the summary run (summary_bench.json, optional): the few rows of the summary block,
    repeated (--benchmark_repetitions, random interleaving), so that each has a median with a
    spread and two reports can be compared with a significance test (compare_reports.py).
"""
import collections
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promtext  # noqa: E402

LABELS = ('suite', 'op', 'impl', 'serde', 'dtype', 'format', 'device', 'size_bytes',
          'threads', 'batch')
NONE = 'none'  # a label that does not apply

SWEEP_JSON = 'bench.json'
SWEEP_PROM = 'metrics.prom'
SUMMARY_JSON = 'summary_bench.json'


def human_bytes(n):
    """4096 -> "4 KiB", 1536 -> "1.5 KiB"."""
    n = float(n)
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if n < 1024 or unit == 'GiB':
            return f'{n:.0f} {unit}' if n == int(n) else f'{n:.1f} {unit}'
        n /= 1024
    return f'{n:.0f} GiB'  # not reached


def num(text):
    """A numeric label as an int; 0 for "none" (the label does not apply)."""
    return int(text) if str(text).isdigit() else 0


def benchmark_name(labels):
    """The registered benchmark name of a row, as lmcache-bench builds it from its labels
    (bench/lmcache/bench/bench_catalog.cc: benchmark_name())."""
    name = '/'.join(labels[k] for k in ('suite', 'op', 'impl'))
    for k in ('serde', 'dtype', 'format', 'device'):
        if labels.get(k, NONE) not in ('', NONE):
            name += '/' + labels[k]
    for k, tag in (('size_bytes', 'size'), ('threads', 'threads'), ('batch', 'batch')):
        if num(labels.get(k, NONE)):
            name += f'/{tag}:{labels[k]}'
    return name


def base_name(run_name):
    """A Google Benchmark run name without the components Google Benchmark appends."""
    cut = len(run_name)
    for suffix in ('/real_time', '/manual_time', '/repeats:', '/iterations:', '/min_time:'):
        at = run_name.find(suffix)
        if at >= 0:
            cut = min(cut, at)
    return run_name[:cut]


class Row(dict):
    """One benchmark row: its labels (a dict) and its values {field: float} (.values)."""

    def __init__(self, labels, values):
        super().__init__(labels)
        self.values = values

    def key(self):
        return tuple(self.get(k, NONE) for k in LABELS)


class Sweep:
    """metrics.prom as rows: every lmcache_bench_* family of a labelled row is one value.

    Value names: throughput (bytes/s), items (items/s), roofline_ratio, roofline_rate
    (bytes/s), roofline_spread, codec_ratio, stored_ratio, p50, p99 (seconds), real_time
    (seconds)."""

    FAMILIES = {
        'lmcache_bench_throughput_bytes_per_second': 'throughput',
        'lmcache_bench_items_per_second': 'items',
        'lmcache_bench_roofline_ratio': 'roofline_ratio',
        'lmcache_bench_roofline_bytes_per_second': 'roofline_rate',
        'lmcache_bench_roofline_spread_ratio': 'roofline_spread',
        'lmcache_bench_codec_ratio': 'codec_ratio',
        'lmcache_bench_stored_ratio': 'stored_ratio',
    }

    def __init__(self, prom_path):
        self.samples, self.types = promtext.load(prom_path)
        rows = {}
        for name, labels, value in self.samples:
            field = self.FAMILIES.get(name)
            if name == 'lmcache_bench_task_latency_seconds':
                field = labels.get('stat')
            elif name == 'lmcache_bench_time_seconds' and labels.get('stat') == 'real':
                field = 'real_time'
            if field is None or 'suite' not in labels:
                continue
            row_labels = {k: labels.get(k, NONE) for k in LABELS}
            key = tuple(row_labels[k] for k in LABELS)
            rows.setdefault(key, Row(row_labels, {})).values[field] = value
        self.rows = list(rows.values())

    def info(self, family):
        """The labels of the first sample of an _info family ({} when absent)."""
        for name, labels, _ in self.samples:
            if name == family:
                return labels
        return {}

    def select(self, **want):
        """Rows whose labels equal every given value (values compared as strings)."""
        return [r for r in self.rows if all(r.get(k) == str(v) for k, v in want.items())]


class Repeated:
    """A Google Benchmark JSON file as {benchmark name: [iteration run, ...]} (aggregates and
    error runs skipped); with --benchmark_repetitions, one run per repetition."""

    def __init__(self, doc):
        self.context = doc.get('context') or {}
        self.runs = collections.defaultdict(list)
        for b in doc.get('benchmarks', []):
            if b.get('run_type', 'iteration') != 'iteration' or b.get('error_occurred'):
                continue
            self.runs[base_name(b.get('run_name', b.get('name', '')))].append(b)

    @classmethod
    def load(cls, path):
        with open(path, encoding='utf-8') as f:
            return cls(json.load(f))

    def values(self, labels, field):
        """The per-repetition values of `field` (a JSON key such as bytes_per_second, p50_s,
        roofline_ratio) of the row with `labels`; [] when absent."""
        return [float(r[field]) for r in self.runs.get(benchmark_name(labels), []) if field in r]

    def by_process(self, name, field):
        """{process: [values of `field`]} of benchmark `name` when the run was made of several
        lmcache-bench processes (rows tagged "process", make_report.merge_bench_jsons());
        {} for a run of one process."""
        out = collections.defaultdict(list)
        for r in self.runs.get(name, []):
            if 'process' not in r or field not in r:
                return {}
            out[r['process']].append(float(r[field]))
        return dict(out)

    def repetitions(self):
        """The largest repetition count of any benchmark (0 when empty)."""
        return max((len(v) for v in self.runs.values()), default=0)


def busy_load(context):
    """The 1-minute load average of a Google Benchmark context when it exceeds the context's
    CPU count (more runnable tasks than CPUs: the figures are lower and noisier than on an idle
    machine); None otherwise."""
    load = (context.get('load_avg') or [0])[0]
    cpus = context.get('num_cpus') or 0
    return load if cpus and load > cpus else None


def quartiles(values):
    """(q1, median, q3), linear interpolation (numpy's default); the median thrice for one
    value."""
    v = sorted(values)
    if not v:
        raise ValueError('quartiles of no values')

    def q(p):
        pos = p * (len(v) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (pos - lo) * (v[hi] - v[lo])
    return q(0.25), statistics.median(v), q(0.75)


class Report:
    """Everything a report directory holds: system, sweep, summary run (or None), conformance,
    campaign and coverage JSON (None when absent or not run)."""

    def __init__(self, path):
        self.path = path

        def load(name):
            p = os.path.join(path, name)
            if not os.path.exists(p):
                return None
            with open(p, encoding='utf-8') as f:
                data = json.load(f)
            return None if isinstance(data, dict) and data.get('not_run') else data

        self.system = load('system.json') or {}
        self.sweep = Sweep(os.path.join(path, SWEEP_PROM))
        self.sweep_context = (load(SWEEP_JSON) or {}).get('context') or {}
        summary = load(SUMMARY_JSON)
        self.repeated = Repeated(summary) if summary else None
        self.conformance = load('conformance.json')
        self.campaign = load('campaign.json')
        self.coverage = load('coverage.json')
