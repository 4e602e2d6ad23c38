#!/usr/bin/env bash
# concurrency_subset.sh <gtest-binary> run|expect-some|expect-none [<build dir>]
#
# The TSan subset is chosen by name, never by a list: every gtest case whose full name contains
# "Concurrency" (a suite `FooConcurrency`, or an instantiation `XConcurrency/Suite`) is a
# concurrency case. lmcache_add_test (cmake/LmcacheTargets.cmake) registers
#   run          in the TSan build, for a binary declared CONCURRENCY: runs just those cases;
#   expect-some  in other builds, for a binary declared CONCURRENCY: fails when none matches
#                (a renamed suite cannot silently leave the TSan run), or when a case is defined
#                in a *_test.cc whose text does not say "Concurrency" (the TSan build compiles
#                only the test sources that do; source paths relative to <build dir>);
#   expect-none  in other builds, for every other binary: fails when one matches (a
#                concurrency case in a binary TSan never runs).
set -euo pipefail
bin=$1 mode=$2
filter='*Concurrency*'
# --gtest_list_tests prints each case indented by two spaces under its suite.
count=$("$bin" --gtest_list_tests --gtest_filter="$filter" | grep -c '^  ' || true)
name=$(basename "$bin")
case "$mode" in
  run)
    if ((count == 0)); then
      echo "$name: declared CONCURRENCY but no gtest case name contains 'Concurrency'" >&2
      exit 1
    fi
    exec "$bin" --gtest_filter="$filter"
    ;;
  expect-some)
    if ((count == 0)); then
      echo "$name: declared CONCURRENCY but no gtest case name contains 'Concurrency'," \
           "so TSan would run nothing of it" >&2
      exit 1
    fi
    if [[ -n "${3:-}" ]]; then
      json=$(mktemp)
      trap 'rm -f "$json"' EXIT
      "$bin" --gtest_list_tests --gtest_filter="$filter" --gtest_output="json:$json" >/dev/null
      while IFS= read -r file; do
        [[ $file == /* ]] || file="$3/$file"
        # A path this script cannot resolve (a generator that compiles elsewhere) is not judged.
        [[ -f $file ]] || continue
        if [[ $file == *_test.cc ]] && ! grep -q Concurrency "$file"; then
          echo "$name: a concurrency case is defined in $file, whose text does not say" \
               "'Concurrency', so the TSan build leaves that source out" >&2
          exit 1
        fi
      done < <(grep -o '"file": "[^"]*"' "$json" | sed 's/^"file": "//; s/"$//; s|\\/|/|g' | sort -u)
    fi
    echo "$name: $count concurrency cases (run under TSan)"
    ;;
  expect-none)
    if ((count != 0)); then
      echo "$name: $count gtest cases are named *Concurrency* but the binary is not declared" \
           "CONCURRENCY in its lmcache_add_test, so TSan never runs them" >&2
      exit 1
    fi
    echo "$name: no concurrency cases"
    ;;
  *)
    echo "concurrency_subset.sh: mode must be run, expect-some or expect-none (got '$mode')" >&2
    exit 2
    ;;
esac
