#!/usr/bin/python3
"""Tests of make_report.py, validate_report.py, index.py and sysinfo.py on synthetic runs
(testdata.py). Needs python3-matplotlib (the plots)."""
import contextlib
import csv
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import index  # noqa: E402
import make_report  # noqa: E402
import promtext  # noqa: E402
import summary  # noqa: E402
import sysinfo  # noqa: E402
import testdata  # noqa: E402
import validate_report  # noqa: E402

ZEN3_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse4_2 pclmulqdq aes ssse3 avx2 bmi2 fma f16c
"""
ZEN5_CPUINFO = ZEN3_CPUINFO.replace('cpu family\t: 25', 'cpu family\t: 26').replace(
    'model\t\t: 1\n', 'model\t\t: 2\n')


# The inputs and the report every test starts from, made once (plots take seconds) and copied.
BASE = None


def tearDownModule():
    if BASE:
        shutil.rmtree(BASE)


def load_json(path):
    with open(path, encoding='utf-8') as f:
        return json.load(f)


def dump_json(data, path):
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(data, f)


class ReportTest(unittest.TestCase):
    """A report made from a synthetic sweep and summary run, in a temporary reports root."""

    def setUp(self):
        global BASE
        if BASE is None:
            self.tmp = tempfile.mkdtemp()
            self.build()
            BASE = self.tmp
        self.tmp = tempfile.mkdtemp()
        shutil.copytree(BASE, self.tmp, dirs_exist_ok=True)
        self.sha = make_report.sysinfo.collect(make_report.ROOT)['git_revision'][:12]
        self.bench = os.path.join(self.tmp, 'bench')
        self.summary_dir = os.path.join(self.tmp, 'summary')
        self.conf = os.path.join(self.tmp, 'conf.json')
        self.camp = os.path.join(self.tmp, 'camp.json')
        self.root = os.path.join(self.tmp, 'reports')
        system = sysinfo.collect(make_report.ROOT, simd_target='AVX2')
        self.report = os.path.join(self.root, system['system_id'] + '-test')

    def build(self):
        self.sha = make_report.sysinfo.collect(make_report.ROOT)['git_revision'][:12]
        self.bench = os.path.join(self.tmp, 'bench')
        testdata.write_bench_dir(self.bench, self.sha)
        self.summary_dir = os.path.join(self.tmp, 'summary')
        testdata.write_summary_dir(self.summary_dir, seed=1)
        self.conf = os.path.join(self.tmp, 'conf.json')
        dump_json({'summary': {'Pass': 2, 'Fail': 0}, 'rc_params': 'seed=1',
                   'implementations': [{'name': 'fp8', 'properties': [
                       {'property': 'deterministic', 'status': 'Pass'},
                       {'property': 'estimate', 'status': 'Pass'}]}]}, self.conf)
        self.camp = os.path.join(self.tmp, 'camp.json')
        dump_json({'operations': 100, 'violation_count': 0, 'violations': [], 'seed': 7,
                   'faults_injected': {'store_fail': 3, 'corrupt': 2}}, self.camp)
        self.root = os.path.join(self.tmp, 'reports')
        os.makedirs(self.root)
        self.report = self.make()

    def make(self, *extra, summary_dir=True):
        args = ['--bench-dir', self.bench, '--conformance', self.conf, '--campaign', self.camp,
                '--reports-root', self.root, '--id-suffix', 'test', *extra]
        if summary_dir:
            args += ['--summary-dir', self.summary_dir]
        with contextlib.redirect_stdout(io.StringIO()):
            make_report.main(args)
        system = sysinfo.collect(make_report.ROOT, simd_target='AVX2')
        return os.path.join(self.root, system['system_id'] + '-test')

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def read(self, *parts):
        with open(os.path.join(self.report, *parts), encoding='utf-8') as f:
            return f.read()

    def write(self, text, *parts):
        with open(os.path.join(self.report, *parts), 'w', encoding='utf-8') as f:
            f.write(text)

    def edit_json(self, name, edit):
        """Loads the report's JSON file `name`, lets `edit` change it in place, writes it back."""
        path = os.path.join(self.report, name)
        doc = load_json(path)
        edit(doc)
        dump_json(doc, path)

    def assert_caught(self, fragment):
        problems = validate_report.validate(self.report)
        self.assertTrue(any(fragment in p for p in problems), f'{fragment!r} not in {problems}')


class MakeReportTest(ReportTest):
    def test_generated_report_is_valid(self):
        self.assertEqual(validate_report.validate(self.report), [])

    def test_conformance_row_carries_the_kits_coverage_of_the_reference(self):
        # By default the checked-in baseline's figures; --coverage names another file.
        with open(make_report.COVERAGE_BASELINE, encoding='utf-8') as f:
            baseline = json.load(f)
        self.assertIn(f"covers {baseline['lines_percent']:.1f} % of the reference's lines",
                      self.read('README.md'))
        stored = json.loads(self.read('coverage.json'))
        self.assertNotIn('untriaged', stored)
        gate = os.path.join(self.tmp, 'gate.json')
        dump_json({'lines_percent': 12.34, 'branches_percent': 5.0, 'depth': 'standard',
                   'seed': '2', 'uncovered': []}, gate)
        self.report = self.make('--coverage', gate)
        readme = self.read('README.md')
        self.assertIn("covers 12.3 % of the reference's lines, 5.0 % of its branches "
                      '(standard depth', readme)

    def test_python_examples_get_a_conformance_row_of_their_own(self):
        dump_json({'summary': {'Pass': 2, 'Fail': 1}, 'rc_params': 'seed=1',
                   'implementations': [
                       {'name': 'fp8', 'source': 'reference', 'properties': [
                           {'property': 'RoundTrip', 'status': 'Pass'}]},
                       {'name': 'py_fp8_serde_make_e4m3fn',
                        'source': 'python:/x/fp8_serde.py:make_e4m3fn', 'properties': [
                            {'property': 'RoundTrip', 'status': 'Pass'},
                            {'property': 'MatchesReference', 'status': 'Fail'}]}]}, self.conf)
        self.report = self.make()
        rows = validate_report.summary_rows(self.read('README.md'))
        python = [r for r in rows if 'conformance of the Python examples' in r]
        reference = [r for r in rows if 'conformance of the reference implementation' in r]
        self.assertEqual(len(python), 1, rows)
        self.assertIn('**1 Fail**', python[0])
        self.assertIn('**0 Fail**', reference[0])

    def test_readme_opens_with_the_summary_and_links_tables_and_plots(self):
        readme = self.read('README.md')
        sections = [l for l in readme.splitlines() if l.startswith('## ')]
        self.assertEqual(sections[0], '## Summary')
        rows = validate_report.summary_rows(readme)
        self.assertTrue(1 <= len(rows) <= 15, rows)
        # encode/decode x 2 formats, floor, processor, store, load, conformance, campaign
        self.assertEqual(len(rows), 10)
        for table in ('codec', 'roofline', 'overheads', 'summary'):
            self.assertIn(f'(tables/{table}.csv)', readme)
        for stem in ('codec_vs_size_cpu', 'codec_vs_threads_cpu', 'overheads'):
            self.assertIn(f'(plots/{stem}.png)](plots/{stem}.svg)', readme)
            for ext in ('png', 'svg'):
                self.assertTrue(os.path.isfile(os.path.join(self.report, 'plots',
                                                            f'{stem}.{ext}')))

    def test_l2_section_table_plot_and_summary_rows(self):
        bench = os.path.join(self.tmp, 'bench_l2')
        testdata.write_bench_dir(bench, self.sha, testdata.sweep_rows() + testdata.l2_rows())
        self.bench = bench
        self.report = self.make(summary_dir=False)
        readme = self.read('README.md')
        self.assertEqual(validate_report.validate(self.report), [])
        self.assertIn('\n## L2 end to end\n', readme)
        self.assertIn('(tables/l2.csv)', readme)
        self.assertIn('(plots/l2_end_to_end.png)](plots/l2_end_to_end.svg)', readme)
        # 10 rows plus resp and fs, store and load.
        self.assertEqual(len(validate_report.summary_rows(readme)), 14)
        # Break-even: bare codec 5 GB/s x (1 - 0.5 stored per wide byte) = 2.5 GB/s; resp's raw
        # 1 GB/s is below it, fs's 4 GB/s above.
        self.assertRegex(readme, r'L2 store end to end through resp.*\*\*1\.50 GB/s\*\* \| '
                                 r'raw 1\.00 GB/s \(1\.50× raw\) · break-even storage '
                                 r'bandwidth 2\.50 GB/s')
        with open(os.path.join(self.report, 'tables', 'l2.csv'), encoding='utf-8') as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 8)
        by = {(r['adapter'], r['op'], r['batch']): r for r in rows}
        self.assertEqual(by[('resp', 'load', '8')]['raw_below_break_even'], 'yes')
        self.assertEqual(by[('fs', 'load', '8')]['raw_below_break_even'], 'no')
        self.assertEqual(by[('fs', 'store', '1')]['break_even_gb_per_s'], '2.50')
        # Without redis-benchmark rows there is no side-by-side table.
        self.assertNotIn('Side by side on one redis-server', readme)
        self.assertFalse(os.path.exists(os.path.join(self.report, 'tables', 'l2_redis.csv')))
        # The validator holds the section to its table and its plot.
        os.remove(os.path.join(self.report, 'tables', 'l2.csv'))
        self.assert_caught('no tables/l2.csv')

    def test_l2_side_by_side_with_redis_benchmark(self):
        bench = os.path.join(self.tmp, 'bench_l2_redis')
        testdata.write_bench_dir(bench, self.sha, testdata.sweep_rows() + testdata.l2_rows()
                                 + testdata.l2_redis_rows())
        self.bench = bench
        self.report = self.make(summary_dir=False)
        readme = self.read('README.md')
        self.assertEqual(validate_report.validate(self.report), [])
        self.assertIn('**Side by side on one redis-server**', readme)
        # The connector plugin first, then resp, then the ceiling; shares of 2 GB/s.
        self.assertIn('| op | chunks per task | MapConnector GB/s (share) | resp GB/s (share) | '
                      'redis-benchmark GB/s |', readme)
        self.assertIn('| store | 8 | 0.50 (0.25) | 1.00 (0.50) | 2.00 |', readme)
        self.assertIn('(tables/l2_redis.csv)', readme)
        with open(os.path.join(self.report, 'tables', 'l2_redis.csv'), encoding='utf-8') as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 8)  # 2 ops x 2 batches x 2 clients; fs is not a Redis client
        by = {(r['op'], r['batch'], r['impl']): r for r in rows}
        self.assertEqual(by[('load', '1', 'resp')]['share_of_ceiling'], '0.50')
        self.assertEqual(by[('load', '1', 'MapConnector')]['redis_benchmark_gb_per_s'], '2.00')
        # The L2 summary rows stay the adapters' (resp and fs), not the ceiling's.
        self.assertEqual(len(validate_report.summary_rows(readme)), 14)
        os.remove(os.path.join(self.report, 'tables', 'l2_redis.csv'))
        self.assert_caught('no tables/l2_redis.csv')

    def test_l2_read_pool_rows(self):
        bench = os.path.join(self.tmp, 'bench_l2_read_pool')
        testdata.write_bench_dir(bench, self.sha, testdata.sweep_rows() + testdata.l2_rows()
                                 + testdata.l2_redis_rows() + testdata.l2_read_pool_rows())
        self.bench = bench
        self.report = self.make(summary_dir=False)
        readme = self.read('README.md')
        self.assertEqual(validate_report.validate(self.report), [])
        self.assertIn('**Read pool**', readme)
        self.assertIn('| resp | 8 | 4 | 2.00 | 1.00 | 2.00× |', readme)
        self.assertIn('| resp | 8 | 1 | 0.50 | 1.00 | 0.50× |', readme)
        # The read-pool rows are not Redis clients of their own in the side-by-side table.
        self.assertNotIn('resp_read_io_depth_4 GB/s', readme)
        with open(os.path.join(self.report, 'tables', 'l2_read_pool.csv'), encoding='utf-8') as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([r['read_io_depth'] for r in rows], ['1', '4'])
        os.remove(os.path.join(self.report, 'tables', 'l2_read_pool.csv'))
        self.assert_caught('no tables/l2_read_pool.csv')

    def test_summary_figures(self):
        readme = self.read('README.md')
        # Best of threads 1 and 2 (6 GB/s at 2 threads), x the scalar reference (1e8).
        self.assertRegex(readme, r'fp8 encode bfloat16 → e4m3fn, 1 MiB, CPU \| '
                                 r'\*\*[56]\.\d\d GB/s\*\* ±\d+ % \| 0\.[56]\d× roofline · '
                                 r'(59|60|61)× the scalar reference')
        self.assertIn('2 threads (best of 1, 2)', readme)
        self.assertIn('median of 9 repetitions', readme)
        # The processor's own cost beside the floor: 12 - 8 = 4 us.
        self.assertRegex(readme, r'hand-off floor.*\*\*8\.\d µs\*\*')
        self.assertRegex(readme, r'\*\*12\.\d µs\*\*.*own cost [34]\.\d µs above the floor')
        self.assertRegex(readme, r'L2 store end to end.*× 8 per task \| \*\*[23]\.\d\d GB/s\*\*'
                                 r'.*0\.[56]\d× the bare codec')
        self.assertIn('| **0 Fail** | 2 Pass', readme)
        self.assertIn('| **0 violations** | 100 operations, 5 faults injected', readme)

    def test_without_a_summary_run_the_sweep_feeds_the_summary(self):
        self.report = self.make(summary_dir=False)
        readme = self.read('README.md')
        self.assertIn('one measurement (sweep)', readme)
        self.assertIn('No summary run', readme)
        self.assertEqual(validate_report.validate(self.report), [])

    def test_a_summary_run_of_several_processes_is_merged_and_tagged(self):
        shutil.rmtree(self.summary_dir)
        testdata.write_summary_process_dirs(self.summary_dir, seed=3, processes=9)
        self.report = self.make()
        with open(os.path.join(self.report, 'summary_bench.json'), encoding='utf-8') as f:
            merged = json.load(f)
        self.assertEqual(merged['context']['summary_processes'], 9)
        rows = [b for b in merged['benchmarks'] if b.get('run_type') == 'iteration']
        self.assertEqual(sorted({b['process'] for b in rows}), list(range(1, 10)))
        repeated = make_report.reportdata.Repeated(merged)
        name = next(iter(repeated.runs))
        self.assertEqual(len(repeated.by_process(name, 'real_time')), 9)
        self.assertEqual(repeated.repetitions(), 9)
        runs = self.read('README.md').split('## Runs')[1].split('##')[0]
        summary_line = [l for l in runs.splitlines() if l.startswith('| summary run')][0]
        self.assertIn('9 (9 processes)', summary_line)
        self.assertEqual(validate_report.validate(self.report), [])

    def test_a_run_on_a_busy_machine_is_flagged_in_the_runs_table(self):
        testdata.write_summary_dir(self.summary_dir, seed=1,
                                   context={'load_avg': [5.0, 4.0, 3.0], 'num_cpus': 2})
        self.report = self.make()
        runs = self.read('README.md').split('## Runs')[1].split('##')[0]
        summary_line = [l for l in runs.splitlines() if l.startswith('| summary run')][0]
        self.assertIn('5.00, 4.00, 3.00 ⚠ busy', summary_line)
        sweep_line = [l for l in runs.splitlines() if l.startswith('| sweep')][0]
        self.assertNotIn('busy', sweep_line)

    def test_codec_csv_has_every_row_and_flags_a_noisy_roofline(self):
        rows = testdata.sweep_rows(roofline_spread=0.3)
        testdata.write_bench_dir(self.bench, self.sha, rows)
        self.report = self.make()
        with open(os.path.join(self.report, 'tables', 'codec.csv'), newline='') as f:
            table = list(csv.DictReader(f))
        self.assertEqual(len(table), sum(1 for lab, _ in rows if lab['suite'] == 'codec'))
        self.assertEqual({r['roofline_flag'] for r in table}, {'noisy'})
        self.assertEqual(table[0]['roofline_gb_per_s'], '10')
        self.assertIn('roofline spread above 10 %', self.read('README.md'))

    def section_lines(self, readme, title):
        lines = readme.splitlines()
        start = lines.index(title)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith('## ')),
                   len(lines))
        return [l for l in lines[start:end] if l.startswith('| ')]

    def test_codec_by_size_and_wrapper_with_default_options(self):
        # The synthetic sweep has 4 KiB and 1 MiB at 1 and 2 threads: of the section's sizes
        # only 1 MiB, with its own rate per thread count (3 GB/s per thread, roofline 10 GB/s).
        rows = [(lab, vals) for lab, vals in testdata.sweep_rows()
                if not (lab['suite'] == 'codec' and lab['dtype'] == 'float32'
                        and lab['format'] == 'float8_e5m2' and lab['op'] == 'decode')]
        testdata.write_bench_dir(self.bench, self.sha, rows)
        self.report = self.make()
        table = self.section_lines(self.read('README.md'), '## fp8 codec by size')
        self.assertEqual(table[0], '| op | dtype → format | 1 MiB, 1 thr | 1 MiB, 2 thr |')
        body = table[1:]  # (the |---| line does not start with '| ')
        # 2 ops x 3 dtypes x 2 formats, less the pair the sweep lacks.
        self.assertEqual(len(body), 11, body)
        self.assertIn('| encode | bfloat16 → e4m3fn | 3.0 (0.30×) | 6.0 (0.60×) |', body)
        self.assertIn('| decode | e5m2 → float16 | 3.0 (0.30×) | 6.0 (0.60×) |', body)
        self.assertFalse(any('e5m2 → float32' in r for r in body), body)
        wrapper = self.section_lines(self.read('README.md'), '## Wrapper with default options')
        # impl=wrapper only (not wrapper_pipelined or processor), store then load, by batch.
        self.assertEqual(wrapper[1:], [f'| {op} | {batch} | 3.05 | 0.61× |'
                                       for op in ('store', 'load') for batch in (1, 8)])

    def test_codec_by_size_flags_a_noisy_roofline_and_is_left_out_without_its_sizes(self):
        testdata.write_bench_dir(self.bench, self.sha, testdata.sweep_rows(roofline_spread=0.3))
        self.report = self.make()
        table = self.section_lines(self.read('README.md'), '## fp8 codec by size')
        self.assertIn('| encode | float32 → e4m3fn | 3.0 (0.30× ⚠) | 6.0 (0.60× ⚠) |',
                      table)
        rows = [(lab, vals) for lab, vals in testdata.sweep_rows()
                if lab['suite'] != 'codec' or lab['size_bytes'] != str(1 << 20)]
        testdata.write_bench_dir(self.bench, self.sha, rows)
        self.report = self.make('--force')
        self.assertNotIn('## fp8 codec by size', self.read('README.md'))

    def test_summary_flags_a_roofline_noisier_than_the_bound(self):
        spread = summary.ROOFLINE_SPREAD_BOUND * 2
        testdata.write_summary_dir(self.summary_dir, seed=1)
        path = os.path.join(self.summary_dir, 'lmcache-bench.json')
        doc = load_json(path)
        for b in doc['benchmarks']:
            if 'roofline_spread' in b:
                b['roofline_spread'] = spread
        dump_json(doc, path)
        self.report = self.make()
        readme = self.read('README.md')
        self.assertIn(f'⚠ roofline too noisy (spread {100 * spread:.0f} %', readme)
        with open(os.path.join(self.report, 'tables', 'summary.csv'), newline='') as f:
            flagged = {r['key']: r['flagged'] for r in csv.DictReader(f)}
        self.assertEqual(flagged['codec/cpu/encode/float8_e4m3fn'], 'yes')
        self.assertEqual(flagged['processor/round_trip'], 'no')

    def test_rebuild_rewrites_the_same_presentation(self):
        before = {n: self.read(*n.split('/')) for n in ('README.md', 'tables/codec.csv',
                                                         'tables/summary.csv')}
        with open(os.path.join(self.report, 'plots', 'overheads.svg'), 'rb') as f:
            svg = f.read()
        make_report.main(['--rebuild', self.report])
        for name, text in before.items():
            self.assertEqual(self.read(*name.split('/')), text, name)
        with open(os.path.join(self.report, 'plots', 'overheads.svg'), 'rb') as f:
            self.assertEqual(f.read(), svg)

    def test_rerun_replaces_its_own_report_only(self):
        other = os.path.join(self.root, 'other-system')
        shutil.copytree(self.report, other)
        stray = os.path.join(self.report, 'stale-file')
        open(stray, 'w').close()
        self.make()
        self.assertFalse(os.path.exists(stray))
        self.assertTrue(os.path.isfile(os.path.join(other, 'README.md')))
        self.assertEqual([d for d in os.listdir(self.root) if d.startswith('.')], [])

    def test_same_id_of_other_hardware_is_not_replaced(self):
        path = os.path.join(self.report, 'system.json')
        system = load_json(path)
        system['cpu_model_number'] += 1  # same id (the table maps both), other hardware
        dump_json(system, path)
        with self.assertRaises(SystemExit) as e:
            self.make()
        self.assertIn('other hardware', str(e.exception.code))
        self.assertEqual(load_json(path), system)
        self.assertEqual([d for d in os.listdir(self.root) if d.startswith('.')], [])


class ValidateTest(ReportTest):
    def test_missing_file_is_caught(self):
        os.remove(os.path.join(self.report, 'metrics.prom'))
        self.assert_caught('missing metrics.prom')

    def test_broken_plot_link_is_caught(self):
        os.remove(os.path.join(self.report, 'plots', 'codec_vs_size_cpu.png'))
        self.assert_caught('links plots/codec_vs_size_cpu.png, which does not exist')
        self.assert_caught('plots/codec_vs_size_cpu.svg has no plots/codec_vs_size_cpu.png')

    def test_plot_not_shown_is_caught(self):
        open(os.path.join(self.report, 'plots', 'extra.png'), 'w').close()
        self.assert_caught('plots/extra.png is not shown')
        self.assert_caught('plots/extra.png has no plots/extra.svg')

    def test_summary_not_first_is_caught(self):
        readme = self.read('README.md')
        self.write(readme.replace('## Summary', '## Machine details\n\nx\n\n## Summary', 1),
                   'README.md')
        self.assert_caught('does not open with its "## Summary" section')

    def test_summary_too_long_is_caught(self):
        readme = self.read('README.md')
        extra = ''.join(f'| row {i} | x | y | z |\n' for i in range(6))
        self.write(readme.replace('\n\nGB/s = ', '\n' + extra.rstrip('\n') + '\n\nGB/s = ', 1),
                   'README.md')
        self.assert_caught('the summary has 16 rows (1 to 15 wanted)')

    def test_summary_without_its_table_rows_is_caught(self):
        readme = self.read('README.md')
        self.write(readme.replace('| conformance of the reference', '| x', 1).replace(
            '\n| x', '', 1), 'README.md')
        self.assert_caught('tables/summary.csv 10')

    def test_broken_csv_is_caught(self):
        with open(os.path.join(self.report, 'tables', 'codec.csv'), 'a') as f:
            f.write('cpu,encode,simd\n')
        self.assert_caught('tables/codec.csv line')
        text = self.read('tables', 'roofline.csv').splitlines()
        text[1] = ','.join(text[1].split(',')[:-1] + ['fast'])
        self.write('\n'.join(text) + '\n', 'tables', 'roofline.csv')
        self.assert_caught("gb_per_s = 'fast' is not a number")

    def test_missing_table_is_caught(self):
        os.remove(os.path.join(self.report, 'tables', 'overheads.csv'))
        self.assert_caught('tables/overheads.csv is missing')
        self.assert_caught('links tables/overheads.csv, which does not exist')

    def test_campaign_violation_is_caught(self):
        dump_json({'summary': {'violations': 2}}, os.path.join(self.report, 'campaign.json'))
        self.assert_caught('2 violation(s)')

    def test_conformance_failure_is_caught(self):
        dump_json({'summary': {'fail': 1}}, os.path.join(self.report, 'conformance.json'))
        self.assert_caught('Fail results')

    def test_system_id_mismatch_is_caught(self):
        self.edit_json('system.json', lambda system: system.update(system_id='other'))
        self.assert_caught('differs from the directory name')

    def test_id_that_does_not_name_the_hardware_is_caught(self):
        # The bug this id scheme fixes: a Zen 5 AVX-512 run filed under a Zen 3 AVX2 id.
        self.edit_json('system.json', lambda system: system.update(simd_target='AVX3'))
        self.assert_caught('does not describe its hardware')

    def test_missing_roofline_is_caught(self):
        path = os.path.join(self.report, 'metrics.prom')
        with open(path) as f:
            text = ''.join(l for l in f if 'suite="roofline"' not in l)
        with open(path, 'w') as f:
            f.write(text)
        self.assert_caught('no roofline throughput')

    def test_failed_summary_run_is_caught(self):
        self.edit_json('summary_bench.json',
                       lambda doc: doc['benchmarks'][0].update(error_occurred=True))
        self.assert_caught('summary_bench.json: 1 benchmark(s) failed')


class IndexTest(ReportTest):
    def test_one_row_per_system_and_a_comparison_plot(self):
        # A made-up CPU: no host's own report can share its id, whatever CPU runs the test.
        other = os.path.join(self.root, 'test-cpu-zen5-avx512-2c')
        shutil.copytree(self.report, other)
        system = load_json(os.path.join(other, 'system.json'))
        system.update(cpu_model='Test CPU', cpu_family=26, cpu_uarch='zen5', simd_target='AVX3',
                      id_suffix='', logical_cores=2, system_id='test-cpu-zen5-avx512-2c')
        dump_json(system, os.path.join(other, 'system.json'))
        self.assertEqual(index.main(['--reports-root', self.root]), 0)
        with open(os.path.join(self.root, 'README.md')) as f:
            readme = f.read()
        rows = [l for l in readme.splitlines() if l.startswith('| [')]
        self.assertEqual(len(rows), 2)
        # The CPU column is the copied report's model name.
        self.assertIn('[test-cpu-zen5-avx512-2c](test-cpu-zen5-avx512-2c/README.md) | '
                      'Test CPU (zen5, AVX3), 2 cores', readme)
        for ext in ('png', 'svg', 'json'):
            self.assertTrue(os.path.isfile(os.path.join(self.root, 'plots',
                                                        f'compare_systems.{ext}')))
        self.assertEqual(index.main(['--reports-root', self.root, '--check']), 0)

    def test_check_catches_a_stale_index_and_stale_plot_data(self):
        self.assertEqual(index.main(['--reports-root', self.root]), 0)
        testdata.write_summary_dir(self.summary_dir, seed=5, slow={'codec/': 2.0})
        self.make()
        self.assertEqual(index.main(['--reports-root', self.root, '--check']), 1)
        self.assertEqual(index.main(['--reports-root', self.root]), 0)
        os.remove(os.path.join(self.root, 'plots', 'compare_systems.png'))
        self.assertEqual(index.main(['--reports-root', self.root, '--check']), 1)

    def test_index_takes_the_processor_and_the_wrapper_not_their_neighbours(self):
        # The hand-off floor is not the processor's round trip, and the processor-alone and
        # pipelined rows of the wrapper suite are not the wrapper's ratio.
        self.assertEqual(index.main(['--reports-root', self.root]), 0)
        with open(os.path.join(self.root, 'README.md')) as f:
            readme = f.read()
        row = [l for l in readme.splitlines() if l.startswith('| [')][0]
        self.assertRegex(row, r'\| 1[12]\.\d µs \(floor [78]\.\d µs\) \| '
                              r'0\.\d\d× / 0\.\d\d× \|$')
        self.assertNotIn('0.90×', row)
        self.assertNotIn('0.70×', row)


class SysinfoTest(unittest.TestCase):
    def test_ids_tell_apart_machines_that_share_a_model_name(self):
        zen3 = sysinfo.collect(make_report.ROOT, simd_target='AVX2', cpuinfo_text=ZEN3_CPUINFO)
        zen5 = sysinfo.collect(make_report.ROOT, simd_target='AVX3', cpuinfo_text=ZEN5_CPUINFO)
        cores = os.cpu_count()
        self.assertEqual(zen3['system_id'], f'amd-epyc-zen3-avx2-{cores}c')
        self.assertEqual(zen5['system_id'], f'amd-epyc-zen5-avx512-{cores}c')
        self.assertNotEqual(sysinfo.hardware(zen3), sysinfo.hardware(zen5))

    def test_every_distinguishing_part_changes_the_id(self):
        base = {'cpu_model': 'AMD EPYC', 'cpu_uarch': 'zen3', 'simd_target': 'AVX2',
                'logical_cores': 2, 'gpus': []}
        ids = {sysinfo.system_id(base)}
        for change in ({'cpu_model': 'AMD EPYC 7B13'}, {'cpu_uarch': 'zen4'},
                       {'simd_target': 'SSE4'}, {'logical_cores': 4},
                       {'gpus': [{'name': 'NVIDIA H200'}]}):
            ids.add(sysinfo.system_id({**base, **change}))
        self.assertEqual(len(ids), 6)
        self.assertEqual(sysinfo.system_id({**base, 'gpus': [{'name': 'NVIDIA H200'}]}),
                         'amd-epyc-zen3-avx2-2c-nvidia-h200')

    def test_unknown_models_still_name_their_family(self):
        self.assertEqual(sysinfo.uarch('AuthenticAMD', 0x19, 0x11), 'zen4')
        self.assertEqual(sysinfo.uarch('GenuineIntel', 6, 0x8f), 'sapphirerapids')
        self.assertEqual(sysinfo.uarch('GenuineIntel', 6, 0x99), 'f6m99')
        self.assertEqual(sysinfo.uarch('', -1, -1), '')
        cpu = sysinfo.parse_cpuinfo(ZEN3_CPUINFO)
        self.assertEqual((cpu['cpu_vendor'], cpu['cpu_family'], cpu['cpu_model_number']),
                         ('AuthenticAMD', 25, 1))
        self.assertIn('avx2', cpu['flags'])

    def test_summary_filter_selects_the_summary_rows(self):
        import re
        args = summary.bench_args(quick=True)
        self.assertEqual(args[0], '--filter')
        reps = [a for a in args if a.startswith('--benchmark_repetitions=')]
        self.assertEqual(len(reps), 1, args)
        per_process = int(reps[0].split('=')[1])
        # The U test of compare needs 9 values a side, from processes enough for quartiles.
        self.assertGreaterEqual(per_process * summary.SUMMARY_PROCESSES, 9)
        self.assertGreaterEqual(summary.SUMMARY_PROCESSES, 4)
        pattern = re.compile(args[1])
        for lab, _ in testdata.summary_entries(seed=1, reps=1):
            self.assertTrue(pattern.search(testdata.reportdata.benchmark_name(lab) + '/'),
                            lab)
        # The L2 rows at batch 8, raw (no serde or format in the name) and fp8.
        for lab, _ in testdata.l2_rows():
            if lab['suite'] == 'l2' and lab['batch'] == '8':
                self.assertTrue(pattern.search(testdata.reportdata.benchmark_name(lab) + '/'),
                                lab)
        for other in ('codec/encode/simd/fp8/float32/float8_e4m3fn/cpu/size:1048576/threads:1/',
                      'codec/encode/simd/fp8/bfloat16/float8_e4m3fn/cpu/size:4096/threads:1/',
                      'wrapper/store/wrapper_pipelined/fp8/bfloat16/float8_e4m3fn/cpu/'
                      'size:1048576/threads:1/batch:8/',
                      'processor/latency/async/noop/bfloat16/cpu/size:4096/threads:2/batch:1/'):
            self.assertIsNone(pattern.search(other), other)


class PromtextTest(unittest.TestCase):
    def test_promtext_parses_escaped_labels(self):
        samples, types = promtext.parse('# TYPE m gauge\nm{a="x\\"y",b="2"} 1.5\nn 3\n')
        self.assertEqual(samples, [('m', {'a': 'x"y', 'b': '2'}, 1.5), ('n', {}, 3.0)])
        self.assertEqual(types, {'m': 'gauge'})
        with self.assertRaises(ValueError):
            promtext.parse('not a sample line with spaces\n')


if __name__ == '__main__':
    unittest.main()
