#!/usr/bin/env bash
# The test command (README quick start, and what .ci/run calls).
#
#   scripts/test.sh            install missing Debian packages, then build and test, each test
#                              once, in the strictest build that registers it:
#                              1. Release: the tests the ASan+UBSan build does not register
#                                 (benchmarks, reports, packaging, the kit's standard-depth run
#                                 over the reference, the long campaigns), building only
#                                 what those tests run;
#                              2. ASan+UBSan: every other test, the kit's coverage gate among them
#                                 (built with LMCACHE_COVERAGE, conformance/coverage/README.md);
#                              3. TSan: the tests labelled "concurrency";
#                              4. fuzz (clang, libFuzzer): the fuzz targets only, each run for a
#                                 bounded number of inputs (label "fuzz", fuzz/README.md).
#   scripts/test.sh --quick    step 1 only, with every test the Release build registers.
#   scripts/test.sh --label L  restrict every step to ctest label L (unit, conformance, fault,
#                              slow); --label fuzz runs step 4 alone, any other label skips it.
#
# Build trees live under build/ (build/release, build/asan, build/tsan, build/fuzz). ccache and
# Ninja keep rebuilds cheap. Exits non-zero on the first failing step.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# ccache: share hits between clones (CI builds a fresh clone in another folder).
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
quick=0
label=""
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --label) label="$2"; shift ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "test.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

# Each step prints its name and, when the next one starts (or the script ends), how long it
# took, so that a CI log shows where the time goes.
started=$SECONDS step_started=$SECONDS step_name=""
end_step() {  # end_step [done|FAILED]
  [[ -n "$step_name" ]] && printf '==> %s %s: %d s (%d s in all)\n' "$step_name" "${1:-done}" \
    $((SECONDS - step_started)) $((SECONDS - started))
  step_name=""
}
step() { end_step; step_name=$*; step_started=$SECONDS; printf '\n==> %s\n' "$*"; }
trap 'rc=$?; if ((rc == 0)); then end_step; else end_step FAILED; fi; exit $rc' EXIT

step "Install missing Debian packages"
bash "$root/scripts/install-deps.sh"
jobs=$(nproc)
# The Release and ASan+UBSan steps run one test more than cores: the tests wait on each other's
# fds and threads more than they compute (Release ctest at -j2 used 128 % of 2 cores; ASan at -j3
# 184 %, 7 min 44 s). The longest tests carry a COST, so that ctest starts them first.
busy_jobs=$((jobs + 1))
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}

# configure <dir> <cmake args...>: a Ninja build tree, its log in <dir>.configure.log.
configure() {
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -G Ninja -DLMCACHE_WERROR=ON "$@" >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; return 1; }
}

# configure_and_build <dir> [--target T] <cmake args...>
configure_and_build() {
  local dir=$1; shift
  local target=()
  if [[ "${1:-}" == --target ]]; then target=(--target "$2"); shift 2; fi
  configure "$dir" "$@"
  cmake --build "$dir" -j "$jobs" "${target[@]}"
}

# test_names <dir> [ctest args...]: the names of the tests <dir> registers, one a line.
test_names() {
  local dir=$1; shift
  ctest --test-dir "$dir" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p'
}

# names_regex: an anchored ctest regex matching exactly the names on stdin (none: matches none).
names_regex() {
  local names
  names=$(sed 's/[][\\.^$*+?(){}|]/\\&/g' | paste -sd'|')
  [[ -n "$names" ]] || names='$.'
  printf '^(%s)$' "$names"
}

# run_tests <dir> [ctest args...]; CTEST_JOBS (default: the core count) tests at once.
run_tests() {
  local dir=$1; shift
  local args=(--test-dir "$dir" --output-on-failure -j "${CTEST_JOBS:-$jobs}" --no-tests=error)
  [[ -n "$label" ]] && args+=(-L "$label")
  ctest "${args[@]}" "$@"
}

mkdir -p "$root/build"
san_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1"
           -DLMCACHE_BUILD_BENCH=OFF)

# The fuzz targets (fuzz/README.md): a clang build of their own with LMCACHE_BUILD_FUZZERS, only
# the fuzz targets built (scripts/fuzz.sh, the longer run, configures build/fuzz the same way).
fuzz_step() {
  step "Fuzz build (clang, libFuzzer, ASan+UBSan) and the bounded fuzz runs"
  configure_and_build "$root/build/fuzz" --target lmcache_fuzzers \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    -DLMCACHE_BUILD_FUZZERS=ON -DLMCACHE_BUILD_TESTS=OFF -DLMCACHE_BUILD_BENCH=OFF \
    -DLMCACHE_ENABLE_CUDA=OFF
  ctest --test-dir "$root/build/fuzz" --output-on-failure -j "$jobs" --no-tests=error -L fuzz
}
if [[ "$label" == fuzz ]]; then
  fuzz_step
  exit 0
fi

asan_flags=(-DLMCACHE_SANITIZE=address -DLMCACHE_COVERAGE=ON "${san_flags[@]}")
if ((quick)); then
  step "Release build and every test"
  configure_and_build "$root/build/release" -DCMAKE_BUILD_TYPE=Release
  run_tests "$root/build/release"
  exit 0
fi

# Each test runs once, in the strictest build that registers it: a test the ASan+UBSan build
# registers runs there (the sanitizers see everything Release would, and more), so the Release
# step runs what that build leaves out (benchmarks, reports, packaging, the kit's standard-depth
# run over the reference, the long campaigns) and the tests labelled "standard" (the mutation
# suite and the bases' suites, at standard depth here and quick under ASan). Configuring the
# ASan+UBSan tree first is what lists its tests.
# The Release step builds only what its own tests run or load (and, for the packaging tests,
# what the tree installs; scripts/testing/targets_for_tests.py): the unit-test binaries the
# ASan+UBSan step runs are not built twice.
step "Release build and the tests the ASan+UBSan step does not run as they run here"
configure "$root/build/release" -DCMAKE_BUILD_TYPE=Release
configure "$root/build/asan" "${asan_flags[@]}"
sanitized_elsewhere=$(comm -23 <(test_names "$root/build/asan" | sort) \
                               <(test_names "$root/build/release" -L '^standard$' | sort))
release_targets=$(comm -13 <(sort <<<"$sanitized_elsewhere") \
                           <(test_names "$root/build/release" | sort) |
                  python3 "$root/scripts/testing/targets_for_tests.py" "$root/build/release")
# shellcheck disable=SC2086  # one target a word
cmake --build "$root/build/release" -j "$jobs" --target $release_targets
CTEST_JOBS=$busy_jobs run_tests "$root/build/release" -E "$(names_regex <<<"$sanitized_elsewhere")"

step "ASan+UBSan build (with the coverage gate) and every other test"
configure_and_build "$root/build/asan" "${asan_flags[@]}"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp:print_suppressions=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
CTEST_JOBS=$busy_jobs \
  run_tests "$root/build/asan"

step "TSan build and the concurrency tests"
configure_and_build "$root/build/tsan" --target lmcache_concurrency_tests \
  -DLMCACHE_SANITIZE=thread "${san_flags[@]}"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  run_tests "$root/build/tsan" -L concurrency

if [[ -z "$label" ]]; then
  fuzz_step
fi
