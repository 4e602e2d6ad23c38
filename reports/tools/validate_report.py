#!/usr/bin/python3
"""Checks that report directories are complete and consistent.

    validate_report.py DIR [DIR ...]      exit 0 when every DIR is valid; each problem is printed
    validate_report.py --all [ROOT]       every reports/<system-id>/ under ROOT (default: reports/)

A valid report has system.json (every key, system_id = the directory name), bench.json (raw
Google Benchmark results, at least one benchmark, no errors), metrics.prom (parses; build-info
gauge; codec and roofline throughput), conformance.json (no Fail) and campaign.json (no
violation), and a README.md that names the system, links only plots that exist, and has a
"Reproduce" block.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promtext  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYSTEM_KEYS = {'system_id': str, 'date': str, 'cpu_model': str, 'logical_cores': int,
               'memory_bytes': int, 'simd_targets': list, 'gpus': list, 'compiler': str,
               'libtorch_version': str, 'git_revision': str, 'git_dirty': bool, 'kernel': str}
FILES = ('system.json', 'bench.json', 'metrics.prom', 'conformance.json', 'campaign.json',
         'README.md')


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
    for key, typ in SYSTEM_KEYS.items():
        if not isinstance(system.get(key), typ):
            bad(f'system.json: "{key}" missing or not a {typ.__name__}')
    if system.get('system_id') != os.path.basename(os.path.normpath(path)):
        bad(f'system.json: system_id {system.get("system_id")!r} differs from the directory name')

    bench = load('bench.json') or {}
    runs = bench.get('benchmarks') or []
    if not runs:
        bad('bench.json: no benchmarks')
    errors = [r.get('name') for r in runs if r.get('error_occurred')]
    if errors:
        bad(f'bench.json: {len(errors)} benchmark(s) failed, e.g. {errors[0]}')

    try:
        samples, _ = promtext.load(os.path.join(path, 'metrics.prom'))
    except (OSError, ValueError) as e:
        bad(f'metrics.prom does not parse ({e})')
        samples = []
    names = {s[0] for s in samples}
    if 'lmcache_bench_build_info' not in names:
        bad('metrics.prom: no lmcache_bench_build_info')
    suites = {s[1].get('suite') for s in samples if s[0] == 'lmcache_bench_throughput_bytes_per_second'}
    for suite in ('codec', 'roofline'):
        if suite not in suites:
            bad(f'metrics.prom: no {suite} throughput')
    for name, labels, _ in samples:
        if name == 'lmcache_bench_build_info':
            sha = labels.get('git_sha', '')
            rev = system.get('git_revision', '')
            if sha and rev and sha != 'unknown' and not (rev.startswith(sha) or sha.startswith(rev)):
                bad(f'metrics.prom: build git_sha {sha} differs from system.json revision {rev}')
        if name == 'lmcache_bench_benchmarks' and labels.get('status') == 'error' and _ > 0:
            bad(f'metrics.prom: {int(_)} benchmark(s) ended in error')

    conformance = load('conformance.json') or {}
    if not conformance.get('not_run'):
        text = json.dumps(conformance)
        fails = conformance.get('summary', {}).get('fail', conformance.get('summary', {}).get('Fail'))
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

    with open(os.path.join(path, 'README.md'), encoding='utf-8') as f:
        readme = f.read()
    if system.get('system_id') and system['system_id'] not in readme:
        bad('README.md does not name the system')
    if '## Reproduce' not in readme:
        bad('README.md has no "Reproduce" section')
    for link in re.findall(r'!\[[^\]]*\]\(([^)]+)\)', readme):
        if not os.path.isfile(os.path.join(path, link)):
            bad(f'README.md links {link}, which does not exist')
    plots_dir = os.path.join(path, 'plots')
    if os.path.isdir(plots_dir):
        for plot in os.listdir(plots_dir):
            if f'plots/{plot}' not in readme:
                bad(f'plots/{plot} is not shown in README.md')
    return problems


def main(argv):
    if argv and argv[0] == '--all':
        root = argv[1] if len(argv) > 1 else os.path.join(ROOT, 'reports')
        dirs = sorted(os.path.join(root, d) for d in os.listdir(root)
                      if os.path.isfile(os.path.join(root, d, 'system.json')))
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
