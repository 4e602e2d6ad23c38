# cli_checks.sh: what the command-line tests share (sourced, never run; bash).
#
# Sets TMP (a fresh directory, removed on exit) and FAILED, and defines:
#   fail <message>                          reports a failure; the test goes on
#   run_checked <rc> <fragment> <command...> runs the command (stdout in $TMP/out, stderr in
#                                           $TMP/err) and fails unless it exits <rc>, its stderr
#                                           holds <fragment> ("" for any), and no raw exception
#                                           text ("std::", "bad_alloc", "terminate called") got
#                                           out; returns 0 when it passed
#   finish                                  exits 1 when anything failed (else returns)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0

fail() { echo "FAIL: $*" >&2; FAILED=1; }

run_checked() {
  local want=$1 fragment=$2; shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$? ok=0
  if [[ $rc -ne $want ]]; then
    fail "$*: exit $rc, want $want (stderr: $(head -c 600 "$TMP/err"))"
    ok=1
  elif [[ -n $fragment ]] && ! grep -qF -- "$fragment" "$TMP/err"; then
    fail "$*: stderr lacks '$fragment': $(head -c 600 "$TMP/err")"
    ok=1
  fi
  if grep -q "std::\|bad_alloc\|terminate called" "$TMP/err"; then
    fail "$*: raw exception text: $(head -c 600 "$TMP/err")"
    ok=1
  fi
  return $ok
}

finish() {
  if [[ $FAILED -ne 0 ]]; then exit 1; fi
}
