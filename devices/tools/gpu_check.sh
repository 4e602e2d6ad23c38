#!/usr/bin/env bash
# devices/tools/gpu_check.sh: the CUDA check of a machine with an NVIDIA GPU, in one go.
#
#   1. configure and build, Release with CUDA required and the default fat binary:
#      fp8_kernels_test, lmcache-bench-kernels and lmcache-bench;
#   2. run the CUDA tests (fp8_kernels_test --gtest_filter='Fp8Cuda*': the GPU cases and the
#      fake-runtime cases);
#   3. run the CUDA benchmarks: lmcache-bench-kernels's CudaD2D rows (64 MiB inputs, each kernel
#      beside a device-to-device copy of the same traffic) and lmcache-bench's CUDA codec and
#      roofline rows (4 KiB .. 256 MiB);
#   4. write OUT/summary.md (machine, GPU, stage times, nvcc time of the fat binary, test
#      counts, GB/s tables) beside the raw logs and JSON, for a report under reports/.
# Without a usable GPU it stops after step 2 (the GPU tests skip, and summary.md records why)
# and exits 0 when the build and the fake-runtime tests passed.
#
# Usage: devices/tools/gpu_check.sh [--out DIR] [--build-dir DIR] [--jobs N] [--archs LIST]
#                                   [--no-lmcache-bench]
#   --out DIR          results (default: $OUT when set, else build/gpu-check)
#   --build-dir DIR    build tree (default build/gpu; reused when present)
#   --jobs N           build jobs (default nproc)
#   --archs LIST       CMAKE_CUDA_ARCHITECTURES (default: the project's fat list, see
#                      devices/CMakeLists.txt; "native" builds only for the GPU present)
#   --no-lmcache-bench skip building and running lmcache-bench (the longest build)
# Exit status: 0 everything ran (or no GPU, after a clean build and skip), 1 a step failed,
# 2 usage error or a missing tool.
#
# Budget: about 8 minutes on a 16-core machine from a cold build tree (build ~3 min, tests
# ~2 min, benchmarks ~2 min); every step runs under a timeout, so the summary is written even
# when one overruns.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out="${OUT:-$root/build/gpu-check}"
build="$root/build/gpu"
jobs=$(nproc)
archs=""
lmcache_bench=1
while (($#)); do
  case "$1" in
    --out) out="$2"; shift ;;
    --build-dir) build="$2"; shift ;;
    --jobs) jobs="$2"; shift ;;
    --archs) archs="$2"; shift ;;
    --no-lmcache-bench) lmcache_bench=0 ;;
    -h|--help) sed -n '2,31p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "gpu_check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out" "$(dirname "$build")"
out=$(cd "$out" && pwd)
summary="$out/summary.md"
start=$SECONDS
status=0
declare -a stage_rows=()

say() { printf '[gpu_check %4ds] %s\n' "$((SECONDS - start))" "$*"; }
# stage <name> <timeout s> <log> <command...>: runs the command under a timeout into the log.
stage() {
  local name=$1 limit=$2 log=$3; shift 3
  local t0=$SECONDS rc=0
  say "$name ..."
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1 || rc=$?
  local took=$((SECONDS - t0))
  local verdict=ok
  ((rc == 124 || rc == 137)) && verdict="timed out after ${limit} s"
  ((rc != 0 && rc != 124 && rc != 137)) && verdict="failed (exit $rc)"
  stage_rows+=("| $name | ${took} s | $verdict | \`$(basename "$log")\` |")
  say "$name: $verdict in ${took} s"
  return "$rc"
}

for tool in cmake ninja timeout; do
  command -v "$tool" >/dev/null || { echo "gpu_check.sh: '$tool' not found" >&2; exit 2; }
done
if [[ -z "${CUDACXX:-}" ]]; then
  if command -v nvcc >/dev/null; then
    CUDACXX=$(command -v nvcc)
  elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
    CUDACXX=/usr/local/cuda/bin/nvcc
  else
    echo "gpu_check.sh: nvcc not found (put it on PATH or set CUDACXX)" >&2
    exit 2
  fi
fi
export CUDACXX
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1

# --- the machine -----------------------------------------------------------------------------
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "nvcc: $("$CUDACXX" --version | tail -n 2 | head -n 1)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  if command -v nvidia-smi >/dev/null; then
    echo "gpu: $(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total \
                 --format=csv,noheader 2>&1 | head -n 4 | paste -sd ';')"
  else
    echo "gpu: nvidia-smi not found"
  fi
} >"$out/machine.txt"
cat "$out/machine.txt"

# --- build -----------------------------------------------------------------------------------
config=(-DCMAKE_BUILD_TYPE=Release -DLMCACHE_WERROR=ON -DLMCACHE_ENABLE_CUDA=ON
        "-DCMAKE_CUDA_FLAGS=--threads=0")  # nvcc compiles the architectures in parallel
[[ -n "$archs" ]] && config+=("-DCMAKE_CUDA_ARCHITECTURES=$archs")
targets=(fp8_kernels_test lmcache-bench-kernels)
((lmcache_bench)) && targets+=(lmcache-bench)
built=0
if stage configure 180 "$out/configure.log" cmake -S "$root" -B "$build" -G Ninja "${config[@]}" &&
   stage build 420 "$out/build.log" cmake --build "$build" -j "$jobs" --target "${targets[@]}"; then
  built=1
else
  status=1
fi
arch_list=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
# nvcc's time for the fat binary: the kernels' object in the ninja log (near 0 on a ccache hit).
cu_seconds=$(awk '/fp8_kernels_cuda\.cu\.o/ {t = ($2 - $1) / 1000} END {if (t != "") print t}' \
  "$build/.ninja_log" 2>/dev/null)

# --- tests -----------------------------------------------------------------------------------
bin="$build/reference/lmcache/fp8"
gpu_usable=0
skip_reason=""
if ((built)); then
  stage tests 420 "$out/fp8_kernels_test.log" "$bin/fp8_kernels_test" --gtest_filter='Fp8Cuda*' \
    --gtest_output="json:$out/fp8_kernels_test.json" || status=1
  log="$out/fp8_kernels_test.log"
  passed=$(grep -c '^\[       OK \]' "$log")
  skipped=$(grep -c '^\[  SKIPPED \] .* ms)$' "$log")
  failed=$(grep -c '^\[  FAILED  \] .* ms)$' "$log")
  skip_reason=$(grep -m1 '^CUDA: ' "$log" | sed 's/^CUDA: //')
  if grep -q '^\[       OK \] Fp8Cuda\.Every16BitInputMatchesReference' "$log"; then
    gpu_usable=1
  fi
fi

# --- benchmarks ------------------------------------------------------------------------------
if ((gpu_usable)); then
  stage lmcache-bench-kernels 240 "$out/lmcache-bench-kernels.txt" "$build/devices/lmcache-bench-kernels" \
    --benchmark_filter='^CudaD2D/' --benchmark_min_time=0.3 --benchmark_repetitions=3 \
    --benchmark_enable_random_interleaving=true \
    --benchmark_out="$out/lmcache-bench-kernels.json" --benchmark_out_format=json || status=1
  if ((lmcache_bench)); then
    stage lmcache-bench 300 "$out/lmcache-bench.log" "$build/bench/lmcache-bench" \
      --device cuda --filter '/cuda/' --threads 1 --sizes 4KiB,64KiB,1MiB,16MiB,256MiB \
      --out "$out/lmcache-bench" || status=1
    if command -v python3 >/dev/null && [[ -f "$out/lmcache-bench/lmcache-bench.json" ]]; then
      python3 "$root/bench/tools/summarize.py" "$out/lmcache-bench/lmcache-bench.json" \
        >"$out/lmcache-bench.md" 2>&1 || true
    fi
  fi
fi

# --- summary ---------------------------------------------------------------------------------
{
  echo "# CUDA check ($(date -u +%Y-%m-%d))"
  echo
  echo '```'
  cat "$out/machine.txt"
  echo "CMAKE_CUDA_ARCHITECTURES: ${arch_list:-unknown}"
  echo "nvcc time of the fat binary (its last compile in this build tree): ${cu_seconds:-unknown} s"
  echo '```'
  echo
  echo "| stage | time | result | log |"
  echo "|---|---|---|---|"
  printf '%s\n' "${stage_rows[@]}"
  echo
  if ((built)); then
    echo "Tests (Fp8Cuda*): $passed passed, $skipped skipped, $failed failed."
    if ((failed > 0)); then
      echo
      grep '^\[  FAILED  \] .* ms)$' "$out/fp8_kernels_test.log" | sed 's/^/    /'
    fi
    if ((!gpu_usable)); then
      echo
      echo "No usable GPU: the GPU tests skipped (${skip_reason:-no reason printed}); no benchmarks."
    fi
  fi
  if [[ -f "$out/lmcache-bench-kernels.txt" ]]; then
    echo
    echo "## lmcache-bench-kernels (64 MiB input, device to device; the last repetition)"
    echo
    echo '```'
    sed -n '/^CUDA: GB\/s/,$p' "$out/lmcache-bench-kernels.txt"
    echo '```'
  fi
  if [[ -s "$out/lmcache-bench.md" ]]; then
    echo
    echo "## lmcache-bench CUDA rows"
    echo
    cat "$out/lmcache-bench.md"
  fi
  echo
  echo "Total: $((SECONDS - start)) s. Files in $out:"
  (cd "$out" && find . -maxdepth 2 -type f ! -name summary.md | sort | sed 's|^\./|    |')
} >"$summary"
say "summary: $summary"
cat "$summary"
exit "$status"
