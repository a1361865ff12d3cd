#!/usr/bin/env bash
# Runs every test: Swift unit and end-to-end tests on this machine, then the suites
# that need the vivid VM or the test VA driver. Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

passed=0
failed=0
logdir=$(mktemp -d /tmp/camrec-test.XXXXXX)

# Adds a suite's counts from its last "N passed, N failed" or XCTest summary line.
count() {
  local log=$1 name=$2 p f line
  line=$(grep -E '^(.*: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [[ -n "$line" ]]; then
    p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<<"$line")
  else
    line=$(grep -E 'Executed [0-9]+ tests?, with [0-9]+ failures?' "$log" | tail -n 1)
    if [[ -n "$line" ]]; then
      local total; total=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$line")
      f=$(sed -E 's/.*with ([0-9]+) failures?.*/\1/' <<<"$line"); p=$((total - f))
    else
      p=0; f=1; echo "test.sh: suite '$name' printed no summary; counted as one failure" >&2
    fi
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
