#!/usr/bin/env bash
# Runs every test: Swift unit and end-to-end tests on this machine, then the suites
# that need the vivid VM or the test VA driver. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

passed=0
failed=0
logdir=$(mktemp -d /tmp/camrec-test.XXXXXX)

# Adds a suite's counts from its last summary line: "N passed, N failed" (our scripts) or
# XCTest's "Executed N tests, with N failures", whichever comes last in its output.
count() {
  local log=$1 name=$2 p f plain xc line
  plain=$(grep -nE '^(.*: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  xc=$(grep -nE 'Executed [0-9]+ tests?, with' "$log" | tail -n 1)
  if [[ -n "$plain" && ( -z "$xc" || ${plain%%:*} -gt ${xc%%:*} ) ]]; then
    line=${plain#*:}
    p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<<"$line")
  elif [[ -n "$xc" ]]; then
    line=${xc#*:}
    local total skipped
    total=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$line")
    skipped=$(grep -oE '[0-9]+ tests? skipped' <<<"$line" | grep -oE '^[0-9]+' || echo 0)
    f=$(sed -E 's/.*and ([0-9]+) failures?.*|.*with ([0-9]+) failures?.*/\1\2/' <<<"$line")
    p=$((total - f - ${skipped:-0}))
  else
    p=0; f=1; echo "test.sh: suite '$name' printed no summary; counted as one failure" >&2
  fi
  passed=$((passed + p)); failed=$((failed + f))
  echo "== $name: $p passed, $f failed"
}

suite() {
  local name=$1; shift
  echo "== $name: $*"
  local log="$logdir/$name.log"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  count "$log" "$name"
  if [[ $rc -ne 0 ]] && ! grep -qE '[1-9][0-9]* failed|with [1-9][0-9]* failures?' "$log"; then
    failed=$((failed + 1)); echo "== $name exited $rc without a counted failure; counted as one"
  fi
}

if ! swift build 2>&1 | tail -n 30; then :; fi
suite swift-tests swift test
for s in Tests/suites/*.sh; do
  [[ -e "$s" ]] || continue
  suite "$(basename "$s" .sh)" bash "$s"
done

echo "logs: $logdir"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
