#!/usr/bin/env bash
# The main job (README quick start): install what is missing, build Release, and run the
# harness on this machine with its defaults.
#
#   scripts/run.sh [--quick]
#
# Stages: build -> reference self-check -> conformance -> fault campaign -> benchmarks ->
# report. A stage whose tool is not built yet says so and is counted as skipped; any failing
# stage makes the job exit non-zero.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
build="$root/build/release"
stages_total=6
stage_no=0
skipped=()
stage() { stage_no=$((stage_no + 1)); printf '\n[%d/%d] %s\n' "$stage_no" "$stages_total" "$*"; }
skip() { echo "  SKIPPED: $1"; skipped+=("$2"); }

stage "install dependencies and build (Release)"
bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)"

stage "reference implementation self-check (unit tests)"
ctest --test-dir "$build" -L unit -j "$(nproc)" --output-on-failure --no-tests=error

run_tool() {  # run_tool <stage-name> <binary relative to build> [args...]
  local name=$1 bin="$build/$2"; shift 2
  if [[ -x "$bin" ]]; then "$bin" "$@"; else skip "$name is not built yet ($bin missing)" "$name"; fi
}

stage "conformance of the reference implementation"
run_tool conformance conformance/lmcache-conform --reference
stage "fault campaign"
run_tool campaign fault_injection/lmcache-fault-campaign --operations $((quick ? 2000 : 20000))
stage "benchmarks"
run_tool benchmarks bench/lmcache-bench $( ((quick)) && echo --quick)
stage "report"
run_tool report reports/lmcache-report

echo
if ((${#skipped[@]})); then
  echo "Done, with ${#skipped[@]} stage(s) not available yet: ${skipped[*]}."
else
  echo "Done: every stage ran."
fi
