#!/usr/bin/env python3
"""Markdown tables of an lmcache-bench run, for RESULTS.md.

    python3 bench/tools/summarize.py build/bench-results/lmcache-bench.json > tables.md

Reads the Google Benchmark JSON lmcache-bench wrote (iteration rows; the median when the run
had repetitions) and prints: the codec table (GB/s of bytes read + written and the in-run
memcpy roofline ratio per dtype, format, size, threads and implementation), the processor
figures, the wrapper-vs-bare-serde ratios and the L1 cycles. Standard library only.
"""

import json
import re
import statistics
import sys
from collections import defaultdict

NAME = re.compile(r"^(?P<base>.*?)(/(real_time|manual_time))?$")


def parse(name):
    base = NAME.match(name).group("base")
    parts = base.split("/")
    fields = {"suite": parts[0], "op": parts[1], "impl": parts[2], "rest": parts[3:]}
    for p in parts[3:]:
        if ":" in p:
            k, v = p.split(":", 1)
            fields[k] = int(v)
    return base, fields


def load(path):
    with open(path) as f:
        doc = json.load(f)
    rows = defaultdict(list)
    for b in doc["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        rows[parse(b.get("run_name", b["name"]))[0]].append(b)
    out = {}
    for base, runs in rows.items():
        merged = {}
        for key in runs[0]:
            vals = [r[key] for r in runs if isinstance(r.get(key), (int, float))]
            if vals and len(vals) == len(runs):
                merged[key] = statistics.median(vals)
        merged["fields"] = parse(base)[1]
        out[base] = merged
    return doc.get("context", {}), out


def size(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def gbs(x):
    return f"{x / 1e9:.2f}" if x else "-"


def codec_table(rows):
    print("### fp8 codec (CPU)\n")
    print("GB/s = bytes read + written / s (1e9); ratio = / in-run memcpy of the same traffic "
          "and threads.\n")
    by = defaultdict(dict)
    sizes, threads = set(), set()
    for base, r in rows.items():
        f = r["fields"]
        if f["suite"] != "codec" or "cpu" not in f["rest"]:
            continue
        dtype, fmt = f["rest"][1], f["rest"][2]
        key = (f["op"], dtype, fmt.replace("float8_", ""), f["impl"], f["threads"])
        by[key][f["size"]] = r
        sizes.add(f["size"])
        threads.add(f["threads"])
    sizes = sorted(sizes)
    print("| op | dtype | format | impl | threads | " +
          " | ".join(size(s) for s in sizes) + " |")
    print("|---|---|---|---|---|" + "---|" * len(sizes))
    for key in sorted(by):
        cells = []
        for s in sizes:
            r = by[key].get(s)
            cells.append("-" if r is None else
                         f"{gbs(r.get('bytes_per_second'))} ({r.get('roofline_ratio', 0):.2f})")
        print("| " + " | ".join(str(k) for k in key) + " | " + " | ".join(cells) + " |")
    print()


def roofline_table(rows):
    print("### memcpy roofline (bytes read + written)\n")
    print("| copy | bytes copied | threads | GB/s |")
    print("|---|---|---|---|")
    for base, r in sorted(rows.items(), key=lambda kv: (kv[1]["fields"].get("threads", 0),
                                                         kv[1]["fields"].get("size", 0),
                                                         kv[1]["fields"]["impl"])):
        f = r["fields"]
        if f["suite"] == "roofline":
            print(f"| {f['impl']} | {size(f['size'])} | {f.get('threads', '-')} | "
                  f"{gbs(r.get('bytes_per_second'))} |")
    print()


def simple_table(rows, suite, title, columns):
    print(f"### {title}\n")
    print("| benchmark | " + " | ".join(c[0] for c in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for base in sorted(rows):
        r = rows[base]
        if r["fields"]["suite"] != suite:
            continue
        print(f"| `{base}` | " + " | ".join(c[1](r) for c in columns) + " |")
    print()


def num(key, scale=1.0, fmt="{:.2f}"):
    return lambda r: fmt.format(r[key] * scale) if key in r else "-"


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    context, rows = load(sys.argv[1])
    print(f"Run: {context.get('date')} on {context.get('host_name')}, "
          f"{context.get('num_cpus')} CPUs, cpu_model {context.get('cpu_model')}, "
          f"simd {context.get('simd_target')}, load average {context.get('load_avg')}, "
          f"git {context.get('lmcache_git_sha')}\n")
    codec_table(rows)
    roofline_table(rows)
    simple_table(rows, "processor", "AsyncSerdeProcessor", [
        ("time/iter (us)", num("real_time", fmt="{:.1f}")),
        ("items/s", num("items_per_second", fmt="{:.0f}")),
        ("p50 (us)", num("p50_s", 1e6, "{:.1f}")),
        ("p99 (us)", num("p99_s", 1e6, "{:.1f}")),
        ("codec_ratio", num("codec_ratio")),
    ])
    simple_table(rows, "wrapper", "Wrapper store / load (bytes = wide chunk bytes)", [
        ("GB/s", lambda r: gbs(r.get("bytes_per_second"))),
        ("codec_ratio", num("codec_ratio")),
        ("submit (us)", num("submit_s", 1e6, "{:.0f}")),
        ("serialize (us)", num("serialize_s", 1e6, "{:.0f}")),
        ("inner store (us)", num("inner_store_s", 1e6, "{:.0f}")),
        ("inner load (us)", num("inner_load_s", 1e6, "{:.0f}")),
        ("deserialize (us)", num("deserialize_s", 1e6, "{:.0f}")),
    ])
    simple_table(rows, "l1", "L1Manager cycles", [
        ("time/iter (us)", num("real_time", fmt="{:.1f}")),
        ("keys/s", num("items_per_second", fmt="{:.0f}")),
    ])
    simple_table(rows, "serde", "Serdes of the conformance registry (direct and processor)", [
        ("GB/s (wide bytes)", lambda r: gbs(r.get("bytes_per_second"))),
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
