#!/usr/bin/env python3
"""lmcache-bench's command line (ctest bench_cli_test, label "unit").

usage: bench_cli_test.py <lmcache-bench>

A filter that does not compile or matches nothing, a value out of its range and an output path
that is not a regular file or nothing (a device, a directory, a FIFO, a symbolic link) are usage
errors: exit 2, a message naming the option, nothing run and nothing written. A short real run
writes its outputs over regular files, whole, and leaves no temporary file.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = None
# One tiny row, run for a moment: enough to write every output.
TINY = ["--quick", "--device", "cpu", "--filter", "^l1/", "--sizes", "4KiB", "--batches", "1",
        "--benchmark_min_time=0.001"]


class BenchCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.out = os.path.join(self.dir, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def run_bench(self, *args):
        return subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=240)

    def expect_usage_error(self, fragment, *args):
        proc = self.run_bench(*args)
        self.assertEqual(proc.returncode, 2, f"{args}: {proc.stdout[-800:]}{proc.stderr[-800:]}")
        self.assertIn(fragment, proc.stderr)
        self.assertNotIn("std::", proc.stderr)
        self.assertNotIn("metrics written", proc.stderr, "a usage error, yet outputs were written")
        return proc

    def test_a_filter_that_does_not_compile_is_a_usage_error(self):
        self.expect_usage_error("--filter '(': not a valid regular expression", "--filter", "(",
                                "--out", self.out)
        self.expect_usage_error("--benchmark_filter '[': not a valid regular expression",
                                "--benchmark_filter=[", "--out", self.out)

    def test_a_filter_that_matches_nothing_is_a_usage_error_and_writes_nothing(self):
        self.expect_usage_error("no benchmark matches --filter 'no_such_benchmark'", "--quick",
                                "--device", "cpu", "--filter", "no_such_benchmark", "--out",
                                self.out)
        self.assertEqual(os.listdir(self.out), [])

    def test_values_out_of_range_name_the_range(self):
        self.expect_usage_error("--threads: expected an integer in [1, 1024], got '0'",
                                "--threads", "0")
        self.expect_usage_error("--threads: expected an integer in [1, 1024], got '2000'",
                                "--threads", "2000")
        self.expect_usage_error("--batches: expected an integer in [1, 4096]", "--batches", "-1")
        self.expect_usage_error("--sizes: size must be in [1 B, 64GiB]", "--sizes",
                                "999999999999G")

    def test_outputs_are_never_written_over_what_is_not_a_regular_file(self):
        # A device (as root this replaced /dev/null with a regular file), a directory, a FIFO, a
        # symbolic link: each refused before anything runs, and left as it was.
        self.expect_usage_error("--metrics-textfile: '/dev/null' is a character device", *TINY,
                                "--out", self.out, "--metrics-textfile", "/dev/null")
        self.assertTrue(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"))
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        self.expect_usage_error("is a FIFO", *TINY, "--out", self.out, "--metrics-textfile", fifo)
        target = os.path.join(self.dir, "target")
        with open(target, "w") as f:
            f.write("keep")
        link = os.path.join(self.dir, "link")
        os.symlink(target, link)
        self.expect_usage_error("is a symbolic link", *TINY, "--out", self.out,
                                "--metrics-textfile", link)
        with open(target) as f:
            self.assertEqual(f.read(), "keep")
        self.expect_usage_error("--metrics-textfile: '" + self.dir + "' is a directory", *TINY,
                                "--out", self.out, "--metrics-textfile", self.dir)
        self.expect_usage_error("does not exist", *TINY, "--out", self.out, "--metrics-textfile",
                                os.path.join(self.dir, "missing", "m.prom"))
        self.expect_usage_error("--benchmark_out: '/dev/null' is a character device", *TINY,
                                "--out", self.out, "--benchmark_out=/dev/null")
        os.makedirs(os.path.join(self.out, "system.json"))
        self.expect_usage_error("--out: '" + os.path.join(self.out, "system.json") +
                                "' is a directory", *TINY, "--out", self.out)

    def test_a_run_writes_every_output_over_regular_files(self):
        prom = os.path.join(self.dir, "m.prom")
        with open(prom, "w") as f:
            f.write("old\n")
        proc = self.run_bench(*TINY, "--out", self.out, "--metrics-textfile", prom)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        with open(prom) as f:
            self.assertIn("lmcache_bench_", f.read())
        with open(os.path.join(self.out, "lmcache-bench.json")) as f:
            self.assertTrue(json.load(f)["benchmarks"])
        with open(os.path.join(self.out, "system.json")) as f:
            self.assertIn("build", json.load(f))
        leftovers = [n for d in (self.dir, self.out) for n in os.listdir(d) if ".tmp." in n]
        self.assertEqual(leftovers, [])

    def test_an_output_that_cannot_be_written_fails_the_run(self):
        # /proc takes no new file, whoever asks: the run goes, the textfile cannot be written.
        proc = self.run_bench(*TINY, "--out", self.out, "--metrics-textfile",
                              "/proc/lmcache-bench-cli-test.prom")
        self.assertEqual(proc.returncode, 1, proc.stderr[-2000:])
        self.assertIn("--metrics-textfile: cannot create '/proc/lmcache-bench-cli-test.prom.tmp.",
                      proc.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: bench_cli_test.py <lmcache-bench>")
    BENCH = sys.argv.pop(1)
    unittest.main()
