#!/usr/bin/env bash
# icount_kernels_cli_test.sh <lmcache-icount> <lmcache-bench-kernels>
#
# The command lines of the two measuring tools: an unknown argument, a name that selects no
# workload and a filter that does not compile or matches nothing are usage errors (exit 2, a
# message naming it), never a silent run of something else or of nothing.
set -u
ICOUNT=${1:?usage: $0 <lmcache-icount> <lmcache-bench-kernels>}
KERNELS=${2:?usage: $0 <lmcache-icount> <lmcache-bench-kernels>}
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/testing/cli_checks.sh"

# An unknown --only name beside a known one was ignored: the known one ran, exit 0.
known=$("$ICOUNT" --list | head -n 1)
[[ -n $known ]] || fail "lmcache-icount --list names no workload"
run_checked 2 "--only 'no/such/workload' names no workload" "$ICOUNT" --only "$known" --only no/such/workload
run_checked 2 "unknown argument '--bogus'" "$ICOUNT" --bogus
run_checked 2 "--only needs a workload name" "$ICOUNT" --only

# Google Benchmark prints an error for a filter that does not compile and runs nothing: that was
# exit 0; an unknown flag was exit 1.
run_checked 2 "no benchmark matches --benchmark_filter" "$KERNELS" "--benchmark_filter=("
run_checked 2 "no benchmark matches --benchmark_filter" "$KERNELS" --benchmark_filter=no_such_kernel
run_checked 2 "unrecognized command-line flag: --bogus" "$KERNELS" --bogus

finish
echo "lmcache-icount / lmcache-bench-kernels CLI: all checks passed"
