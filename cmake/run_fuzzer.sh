#!/usr/bin/env bash
# run_fuzzer.sh <fuzzer> <work-dir> [libFuzzer flags...] -- <corpus-dir>...
#
# One bounded fuzz run, the ctest fuzz.<name> that lmcache_add_fuzzer (cmake/LmcacheTargets.cmake)
# registers. The checked-in corpus folders are only read: the inputs libFuzzer finds go to a
# fresh <work-dir>/corpus (libFuzzer writes into its first folder), crashes to
# <work-dir>/artifacts/, and a failure ends with the command that replays it. A corpus folder
# that does not exist (a target without regressions yet) is skipped.
set -euo pipefail
bin=$1 work=$2
shift 2
flags=()
while (($#)) && [[ $1 != -- ]]; do
  flags+=("$1")
  shift
done
[[ ${1:-} == -- ]] && shift
corpora=()
for dir in "$@"; do
  [[ -d $dir ]] && corpora+=("$dir")
done
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
rc=0
"$bin" "${flags[@]}" -artifact_prefix="$work/artifacts/" "$work/corpus" "${corpora[@]}" || rc=$?
if ((rc != 0)); then
  for artifact in "$work"/artifacts/*; do
    [[ -e $artifact ]] && echo "run_fuzzer: replay with: $bin $artifact" >&2
  done
  echo "run_fuzzer: $(basename "$bin") failed (exit $rc); see fuzz/README.md" >&2
fi
exit "$rc"
