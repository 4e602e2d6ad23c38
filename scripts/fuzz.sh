#!/usr/bin/env bash
# The longer fuzz run (fuzz/README.md); `ctest -L fuzz` (scripts/test.sh) is the bounded one.
#
#   scripts/fuzz.sh [TIME] [TARGET...]
#
# Installs missing Debian packages, builds the fuzz targets in build/fuzz (clang,
# LMCACHE_BUILD_FUZZERS=ON, as scripts/test.sh does), then runs every TARGET (default: all of
# them; names as in fuzz/corpus/, e.g. serde_frame) for TIME, all at once, each with a fresh
# random seed: TIME is seconds, or a number with s, m or h (default 10m). A target's corpus is kept
# in build/fuzz/corpus/<target>/ between runs, and starts from the checked-in fuzz/corpus/ and
# fuzz/regressions/, which are only read. Prints each target's executions, coverage and corpus;
# exits 1 naming every target that failed, with its log (build/fuzz/logs/<target>.log) and the
# command that replays its crash (saved in build/fuzz/artifacts/<target>/).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1

usage() { sed -n '2,14p' "${BASH_SOURCE[0]}"; }
time_arg=10m
if (($#)) && [[ $1 =~ ^[0-9] ]]; then
  time_arg=$1
  shift
fi
case "${1:-}" in -h | --help) usage; exit 0 ;; esac
if [[ ! $time_arg =~ ^([0-9]+)([smh]?)$ ]]; then
  echo "fuzz.sh: TIME must be seconds or a number with s, m or h (got '$time_arg')" >&2
  exit 2
fi
seconds=${BASH_REMATCH[1]}
case "${BASH_REMATCH[2]}" in m) seconds=$((seconds * 60)) ;; h) seconds=$((seconds * 3600)) ;; esac
if ((seconds < 1)); then
  echo "fuzz.sh: TIME must be at least 1 s" >&2
  exit 2
fi

bash "$root/scripts/install-deps.sh"
build=$root/build/fuzz
mkdir -p "$root/build"
# The same configuration as scripts/test.sh's fuzz step, so that both share one build tree.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  -DLMCACHE_BUILD_FUZZERS=ON -DLMCACHE_BUILD_TESTS=OFF -DLMCACHE_BUILD_BENCH=OFF \
  -DLMCACHE_ENABLE_CUDA=OFF -DLMCACHE_WERROR=ON >"$build.configure.log" 2>&1 ||
  { cat "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target lmcache_fuzzers

# Every target lmcache_add_fuzzer declared leaves <name>.flags and <name>.corpus by its binary.
fuzzers=$build/fuzzers
known=()
for flags in "$fuzzers"/*.flags; do known+=("$(basename "$flags" .flags)"); done
if (($#)); then
  targets=("$@")
else
  targets=("${known[@]}")
fi
for t in "${targets[@]}"; do
  if [[ ! -x $fuzzers/${t}_fuzzer ]]; then
    echo "fuzz.sh: no fuzz target '$t' (known: ${known[*]})" >&2
    exit 2
  fi
done

printf '\n==> fuzzing %s for %s s each, all at once\n' "${targets[*]}" "$seconds"
stamp=$(mktemp)  # artifacts newer than this are this run's
trap 'rm -f "$stamp"' EXIT
pids=()
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t artifacts=$build/artifacts/$t log=$build/logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$build/logs"
  mapfile -t flags <"$fuzzers/$t.flags"
  mapfile -t seeds <"$fuzzers/$t.corpus"
  existing=()
  for dir in "${seeds[@]}"; do [[ -d $dir ]] && existing+=("$dir"); done
  "$fuzzers/${t}_fuzzer" "${flags[@]}" -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "${existing[@]}" >"$log" 2>&1 &
  pids+=($!)
done

failed=()
for i in "${!targets[@]}"; do
  t=${targets[$i]} log=$build/logs/${targets[$i]}.log
  if wait "${pids[$i]}"; then
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
    inputs=$(find "$build/corpus/$t" -type f | wc -l)
    echo "$t: ok: ${done_line:-no DONE line}; corpus $inputs inputs"
  else
    failed+=("$t")
    echo "$t: FAILED (log: $log)"
    grep -E 'ERROR|fuzz check failed|SUMMARY' "$log" | head -5 | sed 's/^/  /'
    find "$build/artifacts/$t" -type f -newer "$stamp" |
      sed "s|^|  replay: $fuzzers/${t}_fuzzer |"
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]} (fuzz/README.md: what to do with a finding)" >&2
  exit 1
fi
