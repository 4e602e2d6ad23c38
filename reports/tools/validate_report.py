#!/usr/bin/python3
"""Checks that report directories are complete and consistent.

    validate_report.py DIR [DIR ...]      exit 0 when every DIR is valid; each problem is printed
    validate_report.py --all [ROOT]       every reports/<system-id>/ under ROOT (default: reports/)

A valid report has
  - system.json: every key; system_id = the id its hardware keys give (sysinfo.system_id(),
    plus its id_suffix) = the directory name, so that two machines never share a directory;
  - bench.json (the sweep: at least one benchmark, no errors) and, when present,
    summary_bench.json (the summary run: the same);
  - metrics.prom: parses; build-info gauge; codec and roofline throughput;
  - conformance.json (no Fail) and campaign.json (no violation);
  - tables/*.csv: each one parses (a header, every row as wide, numeric columns numeric);
  - README.md: opens with the summary ("## Summary" is its first section, a table of 1 to 15
    rows, as many as tables/summary.csv), names the system, has a "Reproduce" section; every
    file it links exists, every plot is shown, every plot has its PNG and its SVG, every table
    is linked.
"""
import csv
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promtext  # noqa: E402
import sysinfo  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEM_KEYS = {'system_id': str, 'date': str, 'cpu_model': str, 'cpu_vendor': str,
               'cpu_family': int, 'cpu_model_number': int, 'cpu_uarch': str,
               'logical_cores': int, 'memory_bytes': int, 'simd_targets': list,
               'simd_target': str, 'gpus': list, 'compiler': str, 'libtorch_version': str,
               'git_revision': str, 'git_dirty': bool, 'kernel': str}
FILES = ('system.json', 'bench.json', 'metrics.prom', 'conformance.json', 'campaign.json',
         'README.md')
TABLES = ('codec', 'roofline', 'overheads', 'summary')
# Columns that must hold a number (or be empty: not measured) wherever they appear.
NUMERIC = {'size_bytes', 'threads', 'batch', 'bytes_copied', 'gb_per_s', 'roofline_gb_per_s',
           'roofline_spread', 'ratio_to_roofline', 'p50_us', 'p99_us', 'items_per_s',
           'ratio_to_bare_codec', 'value', 'q1', 'q3', 'repetitions', 'ratio',
           'raw_gb_per_s', 'fp8_gb_per_s', 'fp8_over_raw', 'stored_bytes_per_wide_byte',
           'bare_codec_gb_per_s', 'break_even_gb_per_s'}
MAX_SUMMARY_ROWS = 15


def check_csv(path):
    """Problems of one CSV table ([] when it parses)."""
    try:
        with open(path, encoding='utf-8', newline='') as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        return [f'does not parse ({e})']
    if not rows or not rows[0]:
        return ['has no header']
    header, problems = rows[0], []
    for n, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            problems.append(f'line {n} has {len(row)} fields, the header {len(header)}')
            continue
        for name, cell in zip(header, row):
            if name in NUMERIC and cell != '':
                try:
                    float(cell)
                except ValueError:
                    problems.append(f'line {n}: {name} = {cell!r} is not a number')
    return problems[:5]


def summary_rows(readme):
    """The rows of the table under "## Summary", or None when the README does not open with
    that section."""
    sections = re.findall(r'^## (.+)$', readme, re.M)
    if not sections or sections[0].strip() != 'Summary':
        return None
    body = readme.split('\n## Summary\n', 1)[1].split('\n## ', 1)[0]
    table = [l for l in body.splitlines() if l.startswith('|')]
    return table[2:] if len(table) >= 2 else []


def validate(path):
    problems = []

    def bad(msg):
        problems.append(f'{path}: {msg}')

    missing = [f for f in FILES if not os.path.isfile(os.path.join(path, f))]
    if missing:
        bad('missing ' + ', '.join(missing))
        return problems

    def load(name):
        try:
            with open(os.path.join(path, name), encoding='utf-8') as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            bad(f'{name} is not valid JSON ({e})')
            return None

    system = load('system.json') or {}
    typed = True
    for key, typ in SYSTEM_KEYS.items():
        if not isinstance(system.get(key), typ) or (typ is int and isinstance(system.get(key),
                                                                             bool)):
            bad(f'system.json: "{key}" missing or not a {typ.__name__}')
            typed = False
    if system.get('system_id') != os.path.basename(os.path.normpath(path)):
        bad(f'system.json: system_id {system.get("system_id")!r} differs from the directory name')
    if typed:
        want = sysinfo.system_id(system)
        if system.get('id_suffix'):
            want += '-' + system['id_suffix']
        if system['system_id'] != want:
            bad(f'system.json: system_id {system["system_id"]!r} does not describe its hardware '
                f'(its keys give {want!r})')

    for name in ('bench.json', 'summary_bench.json'):
        if name == 'summary_bench.json' and not os.path.exists(os.path.join(path, name)):
            continue
        bench = load(name) or {}
        runs = bench.get('benchmarks') or []
        if not runs:
            bad(f'{name}: no benchmarks')
        errors = [r.get('name') for r in runs if r.get('error_occurred')]
        if errors:
            bad(f'{name}: {len(errors)} benchmark(s) failed, e.g. {errors[0]}')

    try:
        samples, _ = promtext.load(os.path.join(path, 'metrics.prom'))
    except (OSError, ValueError) as e:
        bad(f'metrics.prom does not parse ({e})')
        samples = []
    names = {s[0] for s in samples}
    if 'lmcache_bench_build_info' not in names:
        bad('metrics.prom: no lmcache_bench_build_info')
    suites = {s[1].get('suite') for s in samples
              if s[0] == 'lmcache_bench_throughput_bytes_per_second'}
    for suite in ('codec', 'roofline'):
        if suite not in suites:
            bad(f'metrics.prom: no {suite} throughput')
    for name, labels, _ in samples:
        if name == 'lmcache_bench_build_info':
            sha = labels.get('git_sha', '')
            rev = system.get('git_revision', '')
            if sha and rev and sha != 'unknown' and not (rev.startswith(sha)
                                                         or sha.startswith(rev)):
                bad(f'metrics.prom: build git_sha {sha} differs from system.json revision {rev}')
        if name == 'lmcache_bench_benchmarks' and labels.get('status') == 'error' and _ > 0:
            bad(f'metrics.prom: {int(_)} benchmark(s) ended in error')

    conformance = load('conformance.json') or {}
    if not conformance.get('not_run'):
        text = json.dumps(conformance)
        counts = conformance.get('summary', {})
        fails = counts.get('fail', counts.get('Fail'))
        if fails or (fails is None and '"Fail"' in text and '"status": "Fail"' in text):
            bad('conformance.json: the reference implementation has Fail results')

    campaign = load('campaign.json') or {}
    if not campaign.get('not_run'):
        summary = campaign.get('summary', campaign)
        violations = summary.get('violations')
        count = len(violations) if isinstance(violations, list) else violations
        if count is None:
            bad('campaign.json: no "violations" entry')
        elif count:
            bad(f'campaign.json: {count} violation(s)')

    def table_parses(name, missing):
        """tables/<name>.csv exists (else the problem `missing`) and is well formed; whether it
        exists."""
        csv_path = os.path.join(path, 'tables', name + '.csv')
        if not os.path.isfile(csv_path):
            bad(missing)
            return False
        for p in check_csv(csv_path):
            bad(f'tables/{name}.csv {p}')
        return True

    for table in TABLES:
        table_parses(table, f'tables/{table}.csv is missing')

    with open(os.path.join(path, 'README.md'), encoding='utf-8') as f:
        readme = f.read()
    if system.get('system_id') and system['system_id'] not in readme:
        bad('README.md does not name the system')
    if '## Reproduce' not in readme:
        bad('README.md has no "Reproduce" section')
    rows = summary_rows(readme)
    if rows is None:
        bad('README.md does not open with its "## Summary" section')
    elif not 1 <= len(rows) <= MAX_SUMMARY_ROWS:
        bad(f'README.md: the summary has {len(rows)} rows (1 to {MAX_SUMMARY_ROWS} wanted)')
    else:
        csv_path = os.path.join(path, 'tables', 'summary.csv')
        if os.path.isfile(csv_path):
            with open(csv_path, encoding='utf-8', newline='') as f:
                n = max(len(list(csv.reader(f))) - 1, 0)
            if n != len(rows):
                bad(f'README.md: the summary has {len(rows)} rows, tables/summary.csv {n}')
    links = re.findall(r'\]\(([^)#\s]+)\)', readme)
    for link in links:
        if '://' in link:
            continue
        if not os.path.isfile(os.path.join(path, link)):
            bad(f'README.md links {link}, which does not exist')
    for table in TABLES:
        if f'tables/{table}.csv' not in links:
            bad(f'tables/{table}.csv is not linked from README.md')
    def section_table(name, section):
        """A section's table: tables/<name>.csv exists, is well formed and is linked."""
        if not table_parses(name, f'README.md has {section} but no tables/{name}.csv'):
            return
        if f'tables/{name}.csv' not in links:
            bad(f'tables/{name}.csv is not linked from README.md')

    # The L2 section (when the sweep had l2/ rows) comes with its table and its plot, and its
    # side-by-side table (a run with redis-benchmark rows) with its own.
    if '\n## L2 end to end\n' in readme:
        section_table('l2', 'an "L2 end to end" section')
        if 'plots/l2_end_to_end.png' not in links:
            bad('README.md: the "L2 end to end" section shows no plots/l2_end_to_end.png')
        if '**Side by side on one redis-server**' in readme:
            section_table('l2_redis', 'the side-by-side Redis table')
        if '**Read pool**' in readme:
            section_table('l2_read_pool', 'the read-pool table')
    plots_dir = os.path.join(path, 'plots')
    if os.path.isdir(plots_dir):
        files = set(os.listdir(plots_dir))
        for plot in sorted(files):
            stem, ext = os.path.splitext(plot)
            if f'plots/{plot}' not in links:
                bad(f'plots/{plot} is not shown in README.md')
            other = stem + ('.svg' if ext == '.png' else '.png')
            if ext in ('.png', '.svg') and other not in files:
                bad(f'plots/{plot} has no plots/{other} beside it')
    return problems


def main(argv):
    if argv and argv[0] == '--all':
        root = argv[1] if len(argv) > 1 else os.path.join(ROOT, 'reports')
        dirs = sorted(os.path.join(root, d) for d in os.listdir(root)
                      if not d.startswith('.')  # make_report's staging directories
                      and os.path.isfile(os.path.join(root, d, 'system.json')))
        if not dirs:
            print(f'validate_report: no report under {root}')
            return 1
    else:
        dirs = argv
    if not dirs:
        print(__doc__)
        return 2
    problems = [p for d in dirs for p in validate(d)]
    for p in problems:
        print(p)
    print(f'validate_report: {len(dirs)} report(s), {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
