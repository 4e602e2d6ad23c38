#!/usr/bin/env bash
# The main job (README quick start): install what is missing, build Release, and run the whole
# harness on this machine, then write its performance report.
#
#   scripts/run.sh [--quick] [--seed N] [--out DIR]
#
#   --quick    short conformance, campaign and benchmarks (a few minutes instead of ~15)
#   --seed N   seed of the fault campaign and of RapidCheck (default: 1; printed either way)
#   --out DIR  where the raw results go (default build/harness); the report itself is written
#              to reports/<system-id>/ and checked with reports/tools/validate_report.py
#
# Stages: build -> conformance of the reference implementation -> fault campaigns (over the
# mock, and over real Redis and files with real storage faults) -> benchmarks on every
# available device (the l2/ rows start their own redis-server and directory) -> report. Any
# failing stage stops the job with a non-zero exit status naming it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# ccache: share hits between clones (CI builds a fresh clone in another folder).
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
quick=0
seed=1
out="$root/build/harness"
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --seed) seed="$2"; shift ;;
    --out) out="$2"; shift ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
build="$root/build/release"
python=/usr/bin/python3
[[ -x $python ]] || python=python3
stages_total=5
stage_no=0
started=$SECONDS
stage() {
  stage_no=$((stage_no + 1))
  current="$*"
  printf '\n[%d/%d] %s  (%ds elapsed)\n' "$stage_no" "$stages_total" "$*" $((SECONDS - started))
}
trap 'rc=$?; ((rc)) && echo "run.sh: stage \"${current:-setup}\" failed (exit $rc)" >&2' EXIT

stage "install dependencies and build (Release)"
bash "$root/scripts/install-deps.sh"
mkdir -p "$root/build" "$out"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLMCACHE_WERROR=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
# Only the three harness programs: the tests are scripts/test.sh's job, and leaving them out
# keeps a cold build on a 2-core machine within the job's budget.
cmake --build "$build" -j "$(nproc)" --target lmcache-conform lmcache-fault-campaign lmcache-bench

if ((quick)); then
  depth=quick
  operations=2000
  bench_args=(--quick)
else
  depth=standard
  operations=20000
  bench_args=()
fi
rc_params="seed=$seed"

stage "conformance of the reference implementation and the Python examples"
# The Python examples (docs/python.md): LMCache-style Python serdes under the same suites.
python_examples="$root/conformance/examples/python"
"$build/conformance/lmcache-conform" --reference --depth "$depth" --rc-params "$rc_params" \
  --python "$python_examples/fp8_serde.py:make_e4m3fn" \
  --python "$python_examples/fp8_serde.py:make_e5m2" \
  --python "$python_examples/checksum_serde.py:make" \
  --python "$python_examples/memory_adapter.py:make" \
  --json "$out/conformance.json" --junit "$out/conformance.xml"

stage "fault campaigns ($operations operations each, seed $seed)"
"$build/fault_injection/lmcache-fault-campaign" --operations "$operations" --seed "$seed" \
  --json "$out/campaign.json"
# Over real storage, every real storage fault together with every simulated kind: the
# campaign's own redis-server, and its own directory with crc32 (fault_injection/README.md,
# "Real storage faults in campaigns"). Each real kind must strike (--expect-strikes); which rare
# simulated kinds fire over a real store in a short run depends on timing.
"$build/fault_injection/lmcache-fault-campaign" --operations "$operations" --seed "$seed" \
  --inner '{"type":"resp"}' --storage-faults all --storage-rate 0.05 --faults all --rate 0.01 \
  --expect-strikes --json "$out/campaign_resp.json"
"$build/fault_injection/lmcache-fault-campaign" --operations "$operations" --seed "$seed" \
  --inner '{"type":"fs","checksum":"crc32"}' --storage-faults all --storage-rate 0.05 \
  --faults all --rate 0.01 --expect-strikes --json "$out/campaign_fs.json"

stage "benchmarks"
rm -rf "$out/bench" "$out/bench-summary"
# The sweep: every row once (the report's tables and plots).
"$build/bench/lmcache-bench" "${bench_args[@]}" --out "$out/bench"
# The summary run: the report's summary rows again, repeated and randomly interleaved, in a few
# processes one after another, so that each row has a median with a spread that includes what
# differs between processes, and two reports can be compared (reports/tools/compare).
summary_args=()
if ((quick)); then summary_args=(--quick); fi
mapfile -t summary_bench_args < <("$python" "$root/reports/tools/summary.py" --bench-args \
  "${summary_args[@]}")
((${#summary_bench_args[@]})) ||
  { echo "run.sh: reports/tools/summary.py gave no arguments" >&2; exit 1; }
summary_processes=$("$python" "$root/reports/tools/summary.py" --processes)
for ((process = 1; process <= summary_processes; process++)); do
  "$build/bench/lmcache-bench" "${bench_args[@]}" "${summary_bench_args[@]}" \
    --out "$out/bench-summary/process-$process"
done

stage "report"
# (Not `$( ((quick)) && echo ...)`: under `set -e` a command substitution that fails ends the job.)
reproduce="scripts/run.sh --seed $seed"
if ((quick)); then reproduce="scripts/run.sh --quick --seed $seed"; fi
report=$("$python" "$root/reports/tools/make_report.py" --bench-dir "$out/bench" \
  --summary-dir "$out/bench-summary" --conformance "$out/conformance.json" \
  --campaign "$out/campaign.json" --build-dir "$build" --reproduce "$reproduce")
"$python" "$root/reports/tools/validate_report.py" "$report"
"$python" "$root/reports/tools/index.py" >/dev/null
echo
echo "Report: $report/README.md  (index: reports/README.md; total $((SECONDS - started))s)"
