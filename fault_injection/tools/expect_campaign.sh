#!/usr/bin/env bash
# expect_campaign.sh violation <invariant> <campaign> [args...]
#   Runs the campaign and passes when it exits non-zero AND its output names the invariant
#   ("VIOLATION [<invariant>]").
# expect_campaign.sh reproducible <campaign> [args...]
#   Runs the campaign twice with the same arguments (which must include --seed) and passes when
#   both pass and report the same fingerprint.
# expect_campaign.sh integrity <campaign> [args...]
#   Runs a campaign whose --serde has an integrity stage and passes when it passes (0
#   violations) AND the integrity serde refused at least one damaged frame
#   (corruption_never_loads checked at least once).
# expect_campaign.sh damage_past_frame <campaign> [args...]
#   Runs a campaign and passes when it passes (0 violations) AND at least one load-time damage
#   lay past the serialized frame (summary: "damage past the serialized frame (harmless): N",
#   N > 0): the campaign met the case and did not count it as a violation.
set -u
mode=${1:?usage: $0 violation|reproducible|integrity|damage_past_frame ...}; shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case "$mode" in
  violation)
    invariant=${1:?invariant}; shift
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    tail -n 40 "$tmp/out"
    if [[ $rc -eq 0 ]]; then echo "FAIL: the campaign passed; expected a [$invariant] violation"; exit 1; fi
    if [[ $rc -eq 2 ]]; then echo "FAIL: bad command line: $(cat "$tmp/err")"; exit 1; fi
    if ! grep -q "VIOLATION \[$invariant\]" "$tmp/out"; then
      echo "FAIL: exit $rc but no [$invariant] violation in the output"; exit 1
    fi
    echo "OK: exit $rc with a [$invariant] violation"
    ;;
  reproducible)
    "$@" --json "$tmp/a.json" >"$tmp/a.out" 2>&1 || { cat "$tmp/a.out"; echo "FAIL: first run"; exit 1; }
    "$@" --json "$tmp/b.json" >"$tmp/b.out" 2>&1 || { cat "$tmp/b.out"; echo "FAIL: second run"; exit 1; }
    fa=$(grep -o '"fingerprint": "[0-9a-f]*"' "$tmp/a.json")
    fb=$(grep -o '"fingerprint": "[0-9a-f]*"' "$tmp/b.json")
    ia=$(grep -A 20 '"faults_injected"' "$tmp/a.json" | tr -d ' \n')
    ib=$(grep -A 20 '"faults_injected"' "$tmp/b.json" | tr -d ' \n')
    echo "run 1: $fa"; echo "run 2: $fb"
    if [[ -z "$fa" || "$fa" != "$fb" || "$ia" != "$ib" ]]; then
      echo "FAIL: the same seed gave different campaigns"; diff "$tmp/a.json" "$tmp/b.json"; exit 1
    fi
    echo "OK: same seed, same fingerprint and fault counts"
    ;;
  integrity)
    "$@" >"$tmp/out" 2>&1
    rc=$?
    tail -n 40 "$tmp/out"
    if [[ $rc -ne 0 ]]; then echo "FAIL: the campaign failed (exit $rc)"; exit 1; fi
    n=$(awk '$1 == "corruption_never_loads" {print $2}' "$tmp/out")
    if [[ -z "$n" || "$n" -eq 0 ]]; then
      echo "FAIL: no damaged frame was refused (corruption_never_loads never checked)"; exit 1
    fi
    echo "OK: 0 violations, $n damaged frames refused by the integrity serde"
    ;;
  damage_past_frame)
    "$@" >"$tmp/out" 2>&1
    rc=$?
    grep "^VIOLATION" "$tmp/out" | head -n 5
    tail -n 40 "$tmp/out"
    if [[ $rc -ne 0 ]]; then echo "FAIL: the campaign failed (exit $rc)"; exit 1; fi
    n=$(sed -n 's/^damage past the serialized frame (harmless): \([0-9]*\)$/\1/p' "$tmp/out")
    if [[ -z "$n" || "$n" -eq 0 ]]; then
      echo "FAIL: no load-time damage lay past the frame (the case was not reproduced)"; exit 1
    fi
    echo "OK: 0 violations, $n damages past the frame judged harmless"
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
