#!/usr/bin/python3
"""Tests for make_report.py and validate_report.py on a synthetic benchmark run."""
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
import validate_report  # noqa: E402

LABELS = 'suite="{suite}",op="{op}",impl="{impl}",serde="none",dtype="bfloat16",' \
         'format="float8_e4m3fn",device="cpu",size_bytes="{size}",threads="{threads}",batch="none"'


def fake_metrics(sha):
    lines = ['# HELP lmcache_bench_build_info build', '# TYPE lmcache_bench_build_info gauge',
             f'lmcache_bench_build_info{{version="0.1.0",git_sha="{sha}",compiler="g++",build_type="Release"}} 1',
             '# TYPE lmcache_bench_throughput_bytes_per_second gauge']
    for size in (4096, 1 << 20):
        for threads in (1, 2):
            for op in ('encode', 'decode'):
                l = LABELS.format(suite='codec', op=op, impl='simd', size=size, threads=threads)
                lines.append(f'lmcache_bench_throughput_bytes_per_second{{{l}}} {3e9 * threads}')
                lines.append(f'lmcache_bench_roofline_ratio{{{l}}} 0.7')
        l = LABELS.format(suite='roofline', op='memcpy', impl='memcpy', size=size, threads=1)
        lines.append(f'lmcache_bench_throughput_bytes_per_second{{{l}}} 9e9')
    l = LABELS.format(suite='processor', op='task', impl='async', size='none', threads=1)
    lines.append(f'lmcache_bench_task_latency_seconds{{{l},stat="p50"}} 1.2e-05')
    lines.append('lmcache_bench_benchmarks{status="ok"} 9')
    return '\n'.join(lines) + '\n'


class ReportToolsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.bench = os.path.join(self.tmp, 'bench')
        os.makedirs(self.bench)
        sha = validate_report.json and make_report.sysinfo.collect(make_report.ROOT)['git_revision']
        with open(os.path.join(self.bench, 'metrics.prom'), 'w') as f:
            f.write(fake_metrics(sha[:12]))
        with open(os.path.join(self.bench, 'codec.json'), 'w') as f:
            json.dump({'context': {'num_cpus': 2}, 'benchmarks': [
                {'name': 'codec/encode/simd', 'real_time': 1.0, 'time_unit': 'ns'}]}, f)
        self.conf = os.path.join(self.tmp, 'conf.json')
        with open(self.conf, 'w') as f:
            json.dump({'summary': {'pass': 10, 'fail': 0}, 'implementations': [
                {'name': 'fp8', 'properties': [{'name': 'deterministic', 'status': 'Pass'}]}]}, f)
        self.camp = os.path.join(self.tmp, 'camp.json')
        with open(self.camp, 'w') as f:
            json.dump({'summary': {'operations': 100, 'violations': 0,
                                   'faults_injected': {'store_failure': 3}}}, f)
        self.root = os.path.join(self.tmp, 'reports')
        os.makedirs(self.root)
        make_report.main(['--bench-dir', self.bench, '--conformance', self.conf, '--campaign',
                          self.camp, '--reports-root', self.root, '--system-id', 'test-system'])
        self.report = os.path.join(self.root, 'test-system')

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_generated_report_is_valid_and_complete(self):
        self.assertEqual(validate_report.validate(self.report), [])
        readme = open(os.path.join(self.report, 'README.md')).read()
        self.assertIn('## fp8 codec throughput', readme)
        self.assertIn('| cpu | encode | simd | bfloat16 | float8_e4m3fn | 1 MiB | 2 | 6.00 | 0.70 |', readme)
        self.assertIn('plots/codec_throughput_vs_size.svg', readme)
        self.assertIn('plots/codec_throughput_vs_threads.svg', readme)
        self.assertIn('12.0', readme)  # processor p50 in microseconds

    def test_index_row_takes_the_processor_and_the_wrapper_not_their_neighbours(self):
        # The handoff floor (impl=handoff) is below the processor's p50 and the processor-alone
        # rows of the wrapper suite are above the wrapper's ratio: neither may reach the index.
        row_labels = ('suite="{suite}",op="{op}",impl="{impl}",serde="{serde}",dtype="bfloat16",'
                      'format="none",device="cpu",size_bytes="{size}",threads="1",batch="{batch}"')
        lines = []
        for impl, serde, p50 in (('handoff', 'none', 3e-06), ('async', 'noop', 1.2e-05)):
            l = row_labels.format(suite='processor', op='latency', impl=impl, serde=serde,
                                  size='none', batch='1')
            lines.append(f'lmcache_bench_task_latency_seconds{{{l},stat="p50"}} {p50}')
        for impl, batch, ratio in (('processor', 8, 0.95), ('wrapper', 8, 0.61),
                                   ('wrapper_pipelined', 8, 0.66), ('wrapper', 64, 0.64)):
            l = row_labels.format(suite='wrapper', op='store', impl=impl, serde='fp8',
                                  size=1 << 20, batch=batch)
            lines.append(f'lmcache_bench_codec_ratio{{{l}}} {ratio}')
        with open(os.path.join(self.report, 'metrics.prom'), 'w') as f:
            f.write('\n'.join(lines) + '\n')
        cells = index.row(self.report)
        self.assertEqual(cells[-2], '12.0 µs')
        self.assertEqual(cells[-1], '0.66×')

    def assert_caught(self, fragment):
        problems = validate_report.validate(self.report)
        self.assertTrue(any(fragment in p for p in problems), f'{fragment!r} not in {problems}')

    def test_missing_file_is_caught(self):
        os.remove(os.path.join(self.report, 'metrics.prom'))
        self.assert_caught('missing metrics.prom')

    def test_broken_plot_link_is_caught(self):
        os.remove(os.path.join(self.report, 'plots', 'codec_throughput_vs_size.svg'))
        self.assert_caught('does not exist')

    def test_campaign_violation_is_caught(self):
        with open(os.path.join(self.report, 'campaign.json'), 'w') as f:
            json.dump({'summary': {'violations': 2}}, f)
        self.assert_caught('2 violation(s)')

    def test_conformance_failure_is_caught(self):
        with open(os.path.join(self.report, 'conformance.json'), 'w') as f:
            json.dump({'summary': {'fail': 1}}, f)
        self.assert_caught('Fail results')

    def test_system_id_mismatch_is_caught(self):
        path = os.path.join(self.report, 'system.json')
        system = json.load(open(path))
        system['system_id'] = 'other'
        json.dump(system, open(path, 'w'))
        self.assert_caught('differs from the directory name')

    def test_missing_roofline_is_caught(self):
        path = os.path.join(self.report, 'metrics.prom')
        text = ''.join(l for l in open(path) if 'roofline"' not in l or 'suite="roofline"' not in l)
        open(path, 'w').write(text)
        self.assert_caught('no roofline throughput')

    def test_promtext_parses_escaped_labels(self):
        samples, types = promtext.parse('# TYPE m gauge\nm{a="x\\"y",b="2"} 1.5\nn 3\n')
        self.assertEqual(samples, [('m', {'a': 'x"y', 'b': '2'}, 1.5), ('n', {}, 3.0)])
        self.assertEqual(types, {'m': 'gauge'})
        with self.assertRaises(ValueError):
            promtext.parse('not a sample line with spaces\n')


if __name__ == '__main__':
    unittest.main()
