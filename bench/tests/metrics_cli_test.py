#!/usr/bin/env python3
"""End-to-end tests of lmcache-bench's metrics export (ctest label "metrics").

Parts (--part; default all):
  promtool  a real (tiny) run's textfile passes `promtool check metrics`, and the Google
            Benchmark JSON and system.json are written;
  push      a real prometheus-pushgateway on 127.0.0.1:<free port> receives --push-gateway;
            the values read back over HTTP equal the textfile's; the group is then deleted;
  listen    --metrics-listen 127.0.0.1:<free port> --metrics-linger serves the same values
            to a scrape after the run;
  plugin    --plugin <conformance plugin .so> (--plugin-so): the vendor's serde and processor
            are benchmarked and exported beside the reference ones; a bad path is refused.
  python    --python <MODULE:FACTORY> (--python-spec): a Python serde's rows (serde and its
            _async processor) beside the C++ reference's; a spec that cannot load exits 2.
  redis_connector_plugin
            --connector-plugin <a Redis connector plugin .so> (--connector-plugin-so): its
            factory connects to the redis-server the bench exports; its raw l2/ rows, resp's
            and redis-benchmark's all run on that server.
  connector_plugin
            --connector-plugin <native connector plugin .so> (--connector-plugin-so): l2/
            rows for the vendor's connector (raw and fp8, store and load) beside resp and fs;
            a file that is no connector plugin is refused with status 2.
A part whose tool is missing is skipped with the reason; when every requested part was
skipped the script exits 77 (ctest SKIP_RETURN_CODE). Standard library only.
"""

import argparse
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
# One tiny, fast benchmark: enough to exercise every metric family.
FILTER = r"^l1/reserve_finish/cycle/uint8/cpu/size:4096/threads:1/batch:1/"
JOB = "lmcache_bench_ctest"

LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*')


def parse_exposition(text, prefix="lmcache_bench_"):
    """{(name, frozenset(labels)): float} for the series whose name starts with prefix."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m or not m.group(1).startswith(prefix):
            continue
        labels = {}
        if m.group(3):
            pos = 0
            while pos < len(m.group(3)):
                lm = LABEL.match(m.group(3), pos)
                if not lm:
                    raise ValueError(f"cannot parse labels of: {line}")
                labels[lm.group(1)] = lm.group(2)
                pos = lm.end()
        out[(m.group(1), frozenset(labels.items()))] = float(m.group(4))
    return out


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, timeout=5):
    req = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.status, resp.read().decode()


def run_bench(bench, workdir, *extra, wait=True):
    cmd = [bench, "--quick", "--device", "cpu", "--filter", FILTER, "--out", workdir,
           "--benchmark_min_time=0.001", *extra]
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def same_values(expected, got, extra_labels, what):
    """Every expected series appears in `got` (with extra_labels added) with the same value."""
    missing = []
    for (name, labels), value in expected.items():
        if name == "lmcache_bench_last_run_timestamp_seconds" and value == 0:
            continue
        key = (name, frozenset(dict(labels, **extra_labels).items()))
        if key not in got:
            missing.append(f"{name}{dict(labels)}")
            continue
        check(math.isclose(got[key], value, rel_tol=1e-9, abs_tol=1e-12),
              f"{what}: {name}{dict(labels)} = {got[key]}, textfile says {value}")
    check(not missing, f"{what}: series missing: {missing[:5]}")


def textfile_values(workdir):
    path = os.path.join(workdir, "metrics.prom")
    check(os.path.exists(path), f"{path} not written")
    with open(path) as f:
        text = f.read()
    values = parse_exposition(text)
    names = {n for n, _ in values}
    for family in ("lmcache_bench_build_info", "lmcache_bench_machine_info",
                   "lmcache_bench_throughput_bytes_per_second", "lmcache_bench_items_per_second",
                   "lmcache_bench_time_seconds", "lmcache_bench_benchmarks",
                   "lmcache_bench_last_run_timestamp_seconds"):
        check(family in names, f"{family} missing from {path}")
    leftovers = [e for e in os.listdir(workdir) if ".tmp." in e]
    check(not leftovers, f"temporary files left behind: {leftovers}")
    return text, values


def part_promtool(bench, workdir):
    promtool = shutil.which("promtool")
    if not promtool:
        return "promtool not installed (Debian package 'prometheus')"
    run_bench(bench, workdir)
    text, values = textfile_values(workdir)
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                          text=True)
    check(proc.returncode == 0, f"promtool check metrics failed ({proc.returncode}):\n"
                                f"{proc.stdout}{proc.stderr}")
    with open(os.path.join(workdir, "lmcache-bench.json")) as f:
        results = json.load(f)
    check(len(results["benchmarks"]) == 1, "expected one benchmark in lmcache-bench.json")
    check(results["context"].get("lmcache_version"), "custom context missing from the JSON")
    with open(os.path.join(workdir, "system.json")) as f:
        check("cpu" in json.load(f), "system.json has no cpu section")
    ok = [v for (n, l), v in values.items()
          if n == "lmcache_bench_benchmarks" and ("status", "ok") in l]
    check(ok == [1.0], f"lmcache_bench_benchmarks{{status=ok}} = {ok}, expected 1")
    return None


def part_push(bench, workdir):
    gateway = shutil.which("prometheus-pushgateway")
    if not gateway:
        return "prometheus-pushgateway not installed (Debian package 'prometheus-pushgateway')"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    gw = subprocess.Popen([gateway, f"--web.listen-address=127.0.0.1:{port}",
                           "--persistence.file="], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            try:
                if http("GET", base + "/-/ready")[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            check(gw.poll() is None, f"prometheus-pushgateway exited with {gw.returncode}")
            check(time.time() < deadline, "prometheus-pushgateway not ready after 20 s")
            time.sleep(0.1)
        proc = run_bench(bench, workdir, "--push-gateway", f"127.0.0.1:{port}", "--push-job", JOB)
        check("pushed to" in proc.stderr, f"no push confirmation in:\n{proc.stderr}")
        _, expected = textfile_values(workdir)
        status, body = http("GET", base + "/metrics")
        check(status == 200, f"GET /metrics: {status}")
        got = parse_exposition(body)
        instance = socket.gethostname()
        same_values(expected, got, {"job": JOB, "instance": instance}, "pushgateway")
        # The group stays until deleted: delete it and check it is gone. The gateway applies a
        # DELETE asynchronously (202 Accepted), so poll, within a bound, until it has.
        status, _ = http("DELETE", f"{base}/metrics/job/{JOB}/instance/{instance}")
        check(status in (200, 202), f"DELETE returned {status}")
        deadline = time.time() + 20
        while True:
            _, body = http("GET", base + "/metrics")
            if f'job="{JOB}"' not in body:
                break
            check(time.time() < deadline, "series still present 20 s after DELETE")
            time.sleep(0.1)
    finally:
        gw.terminate()
        try:
            gw.wait(timeout=10)
        except subprocess.TimeoutExpired:
            gw.kill()
    return None


def part_listen(bench, workdir):
    port = free_port()
    proc = run_bench(bench, workdir, "--metrics-listen", f"127.0.0.1:{port}",
                     "--metrics-linger", "8", wait=False)
    try:
        deadline = time.time() + 90
        body = ""
        while time.time() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"lmcache-bench exited early:\n{proc.stdout.read()}")
            try:
                _, body = http("GET", f"http://127.0.0.1:{port}/metrics", timeout=2)
                scraped = parse_exposition(body)
                done = [v for (n, _), v in scraped.items()
                        if n == "lmcache_bench_last_run_timestamp_seconds"]
                # The run is over and its textfile written (just before the linger).
                if done and done[0] > 0 and os.path.exists(os.path.join(workdir, "metrics.prom")):
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.1)
        else:
            raise AssertionError(f"no finished run scraped within 90 s; last body:\n{body[:2000]}")
        _, expected = textfile_values(workdir)  # written before the linger starts
        same_values(expected, scraped, {}, "scrape")
        out, _ = proc.communicate(timeout=30)
        check(proc.returncode == 0, f"lmcache-bench exited {proc.returncode}:\n{out}")
        check("lingering" in out, "no linger message")
    finally:
        if proc.poll() is None:
            proc.kill()
    return None


def quick_rows(bench, workdir, *rows, load=()):
    """A quick run of the rows the options `rows` select, with what `load` names loaded (e.g.
    ("--plugin", so); none by default): it exits 0 and writes its textfile. Returns the run and
    the textfile's values."""
    proc = subprocess.run([bench, "--quick", "--device", "cpu", *load, *rows, "--out", workdir,
                           "--benchmark_min_time=0.001"],
                          capture_output=True, text=True, timeout=300)
    run = f"lmcache-bench {load[0]}" if load else "lmcache-bench"
    check(proc.returncode == 0, f"{run} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    _, values = textfile_values(workdir)
    return proc, values


def check_no_errors(values, proc, what):
    """No benchmark of the run ended in error."""
    errors = [v for (n, l), v in values.items()
              if n == "lmcache_bench_benchmarks" and dict(l).get("status") == "error"]
    check(errors == [0.0], f"{what} failed: {errors}\n{proc.stdout}{proc.stderr}")


def serde_rows(bench, workdir, flag, source):
    """A quick run of the serde/ rows with a plugin or Python source loaded (`flag source`).
    Returns the run and the serdes with a throughput."""
    proc, values = quick_rows(bench, workdir, "--filter", "^serde/", "--sizes", "64KiB",
                              load=(flag, source))
    serdes = {dict(l).get("serde") for (n, l), _ in values.items()
              if n == "lmcache_bench_throughput_bytes_per_second"}
    return proc, serdes


def check_refused(bench, flag, source, reason, what, timeout=60):
    """`flag source` naming something that cannot be loaded is refused with status 2, its stderr
    giving `reason`."""
    bad = subprocess.run([bench, flag, source, "--filter", "^none$"],
                         capture_output=True, text=True, timeout=timeout)
    check(bad.returncode == 2 and reason in bad.stderr,
          f"{what}: exit {bad.returncode}, stderr {bad.stderr!r}")


def part_plugin(bench, workdir, plugin_so):
    if not plugin_so:
        return "no --plugin-so given"
    proc, serdes = serde_rows(bench, workdir, "--plugin", plugin_so)
    check("registered" in proc.stderr, f"no plugin registration message:\n{proc.stderr}")
    # The vendor's serde and processor beside the reference ones, in the same run.
    for want in ("vendor_copy", "vendor_copy_async", "fp8_e4m3fn"):
        check(want in serdes, f"serde {want!r} not exported; got {sorted(serdes)}")
    # A file that is not a plugin is refused with the loader's reason and status 2.
    check_refused(bench, "--plugin", "/nonexistent/plugin.so", "cannot load plugin", "bad plugin")
    return None


def part_python(bench, workdir, spec):
    if not spec:
        return "no --python-spec given"
    _, serdes = serde_rows(bench, workdir, "--python", spec)
    python = sorted(s for s in serdes if s and s.startswith("py_"))
    check(len(python) == 2 and python[1] == python[0] + "_async" and "checksum" in serdes,
          f"want a py_ serde and its _async processor beside checksum; got {sorted(serdes)}")
    check_refused(bench, "--python", "/nonexistent/serde.py:make", "no Python file",
                  "bad --python", timeout=120)
    return None


def part_connector_plugin(bench, workdir, plugin_so):
    if not plugin_so:
        return "no --connector-plugin-so given"
    proc, values = quick_rows(bench, workdir, "--filter", "^l2/(store|load)/MapConnector/",
                              "--batches", "1", "--sizes", "1MiB",
                              load=("--connector-plugin", plugin_so))
    rows = {(dict(l)["op"], dict(l)["serde"]): v for (n, l), v in values.items()
            if n == "lmcache_bench_stored_ratio" and dict(l).get("impl") == "MapConnector"}
    # Raw rows store the wide bytes; fp8 rows one byte per bfloat16 element (plus a header).
    for op in ("store", "load"):
        check(rows.get((op, "none")) == 1.0, f"MapConnector {op} raw: {rows}")
        fp8 = rows.get((op, "fp8"))
        check(fp8 is not None and 0.5 <= fp8 < 0.51, f"MapConnector {op} fp8: {rows}")
    check_no_errors(values, proc, "connector rows")
    # A file that is not a connector plugin (lmcache-bench itself) is refused, status 2.
    check_refused(bench, "--connector-plugin", bench, "--connector-plugin", "bad connector plugin")
    return None


def part_redis_connector_plugin(bench, workdir, plugin_so):
    """A connector plugin whose factory connects to the redis-server the bench exports: its raw
    rows, resp's and redis-benchmark's, all on that one server, ran without error."""
    if not plugin_so:
        return "no --connector-plugin-so given"
    if not shutil.which("redis-server") or not shutil.which("redis-benchmark"):
        return "redis-server or redis-benchmark not installed (scripts/install-deps.sh)"
    # The factory throws without the address, so a load (exit 0) means the bench exported it.
    proc, values = quick_rows(bench, workdir,
                              "--filter", "^l2/(store|load)/(RespConnector|resp|redis-benchmark)/",
                              "--batches", "1", "--sizes", "1MiB",
                              load=("--connector-plugin", plugin_so))
    check_no_errors(values, proc, "rows")
    rates = {(dict(l)["impl"], dict(l)["op"]) for (n, l), v in values.items()
             if n == "lmcache_bench_throughput_bytes_per_second" and v > 0
             and dict(l).get("suite") == "l2" and dict(l).get("serde") == "none"}
    for impl in ("RespConnector", "resp", "redis-benchmark"):
        for op in ("store", "load"):
            check((impl, op) in rates, f"no {impl} {op} rate: {sorted(rates)}")
    return None


def part_l2(bench, workdir):
    """The l2/ rows over real storage (a private redis-server, a temporary directory): every
    adapter x op x serde row ran without error, with its stored bytes per wide byte."""
    if not shutil.which("redis-server"):
        return "redis-server not installed (scripts/install-deps.sh installs it)"
    proc, values = quick_rows(bench, workdir, "--filter", "^l2/", "--batches", "1",
                              "--sizes", "1MiB")
    check_no_errors(values, proc, "l2 rows")
    ratios = {(dict(l)["impl"], dict(l)["op"], dict(l)["serde"]): v for (n, l), v in values.items()
              if n == "lmcache_bench_stored_ratio" and dict(l).get("suite") == "l2"}
    for adapter in ("resp", "fs"):
        for op in ("store", "load"):
            check(ratios.get((adapter, op, "none")) == 1.0,
                  f"{adapter} {op} raw: stored_ratio {ratios.get((adapter, op, 'none'))}")
            fp8 = ratios.get((adapter, op, "fp8"))
            check(fp8 is not None and 0.5 <= fp8 < 0.51, f"{adapter} {op} fp8: stored_ratio {fp8}")
    # The server's own ceiling beside them, when redis-benchmark is installed (else skipped).
    if shutil.which("redis-benchmark"):
        for op in ("store", "load"):
            check(ratios.get(("redis-benchmark", op, "none")) == 1.0,
                  f"redis-benchmark {op}: {sorted(ratios)}")
    return None


PARTS = {"promtool": part_promtool, "push": part_push, "listen": part_listen,
         "plugin": part_plugin, "python": part_python, "connector_plugin": part_connector_plugin,
         "redis_connector_plugin": part_redis_connector_plugin, "l2": part_l2}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="path to lmcache-bench")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--part", action="append", choices=sorted(PARTS), default=[])
    ap.add_argument("--plugin-so", default=None, help="a conformance plugin (part 'plugin')")
    ap.add_argument("--python-spec", default=None, help="a --python spec (part 'python')")
    ap.add_argument("--connector-plugin-so", default=None,
                    help="a native connector plugin (part 'connector_plugin')")
    args = ap.parse_args()
    parts = args.part or [p for p in PARTS
                          if (p != "plugin" or args.plugin_so)
                          and (p != "python" or args.python_spec)
                          and (p not in ("connector_plugin", "redis_connector_plugin")
                               or args.connector_plugin_so)]
    root = args.workdir or tempfile.mkdtemp(prefix="lmcache-metrics-test-")
    skipped, failed = [], []
    for name in parts:
        workdir = os.path.join(root, name)
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
        try:
            if name == "plugin":
                reason = part_plugin(args.bench, workdir, args.plugin_so)
            elif name == "python":
                reason = part_python(args.bench, workdir, args.python_spec)
            elif name == "connector_plugin":
                reason = part_connector_plugin(args.bench, workdir, args.connector_plugin_so)
            elif name == "redis_connector_plugin":
                reason = part_redis_connector_plugin(args.bench, workdir,
                                                     args.connector_plugin_so)
            else:
                reason = PARTS[name](args.bench, workdir)
        except (AssertionError, subprocess.SubprocessError, OSError, ValueError) as e:
            print(f"FAIL {name}: {e}")
            failed.append(name)
            continue
        if reason:
            print(f"SKIP {name}: {reason}")
            skipped.append(name)
        else:
            print(f"PASS {name}")
    passed = len(parts) - len(skipped) - len(failed)
    print(f"{passed} passed, {len(failed)} failed, {len(skipped)} skipped")
    if failed:
        return 1
    if skipped and passed == 0:
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
