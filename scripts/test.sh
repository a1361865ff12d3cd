#!/usr/bin/env bash
# Runs every test: Swift unit and end-to-end tests on this machine, then the suites
# that need the vivid VM or the test VA driver. Ends with "N passed, N failed, N skipped".
#
# It fails (besides any failed check) when:
#   - an XCTest is skipped that is not in EXPECTED_SKIPS below;
#   - a suite in EXPECTED_SUITES is missing, or runs far fewer checks than listed (under half);
#   - a suite (or `swift test`) runs longer than its time limit: the log says which test hung;
#   - CI is set together with SKIP_DEFAULT, SKIP_MATRIX or SKIP_XCTEST (they leave cases out).
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

# Suites every run must have: name, about how many checks it runs, time limit in seconds.
# A suite running under half its count fails (a case list that silently shrank); over or
# under by a quarter is only reported, so the list can be brought up to date.
# Add a line here with each new Tests/suites/NAME.sh; a suite that runs but is not listed is reported.
EXPECTED_SUITES=(
  "swift-tests        257  2400"   # XCTest cases (swift test), the expected skips not counted
  "network             95  1200"
  "vaapi-host          73   900"
  "vaapi-vm            30  1200"
  "vm-capture         124  2400"
  "vm-mjpeg            17  1200"
  "vm-unattended       36  1200"
  "fuzz                 3   900"
  "hostile-input       23   900"
  "readme-promises     28   900"
  "seed-receivers      58  1200"
  "network-load        10  1200"
  "containers         130   900"
  "publish             99   600"
  "browser             24   600"
  "http                98   600"
)
# XCTests `swift test` skips on purpose: the VA-API backend's unit tests need the test VA driver
# selected in their environment (LIBVA_DRIVER_NAME, LIBVA_DRIVERS_PATH, CAMREC_VA_TEST_DISPLAY);
# Tests/suites/vaapi-host.sh runs these three with it and fails if they skip there.
EXPECTED_SKIPS=(
  "VAAPIH264EncoderTests.testUploadRecyclesAtOnceAndForcedKeyframesAreIDRs"
  "VAAPIH264EncoderTests.testSurfacePoolWritesInPlaceAndReleasesSurfacesOfUnencodedBuffers"
  "VAAPIH264EncoderTests.testProfileIsTheBestTheDriverHasAtOrBelowTheOneAskedFor"
)

passed=0
failed=0
skipped=0
logdir=$(mktemp -d /tmp/camrec-test.XXXXXX)

problem() { failed=$((failed + 1)); echo "== test.sh: $*; counted as one failure"; }

if [[ -n ${CI:-} ]]; then
  for v in SKIP_DEFAULT SKIP_MATRIX SKIP_XCTEST; do
    [[ -z ${!v:-} ]] || problem "$v is set in CI (it leaves test cases out)"
  done
fi

# Adds a suite's counts from its last summary line: "N passed, N failed" (our scripts) or
# XCTest's "Executed N tests, with N failures", whichever comes last in its output.
# Sets `ran` to the checks the suite ran (passed + failed).
count() {
  local log=$1 name=$2 p f s=0 plain xc line
  plain=$(grep -nE '^(.*: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  xc=$(grep -nE 'Executed [0-9]+ tests?, with' "$log" | tail -n 1)
  if [[ -n "$plain" && ( -z "$xc" || ${plain%%:*} -gt ${xc%%:*} ) ]]; then
    line=${plain#*:}
    p=$(sed -E 's/.*\b([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.*\b([0-9]+) failed.*/\1/' <<<"$line")
    if [[ $line =~ ([0-9]+)\ skipped ]]; then s=${BASH_REMATCH[1]}; fi
  elif [[ -n "$xc" ]]; then
    line=${xc#*:}
    local total
    total=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$line")
    s=$(grep -oE '[0-9]+ tests? skipped' <<<"$line" | grep -oE '^[0-9]+' || echo 0)
    f=$(sed -E 's/.*and ([0-9]+) failures?.*|.*with ([0-9]+) failures?.*/\1\2/' <<<"$line")
    p=$((total - f - s))
  else
    p=0; f=1; echo "test.sh: suite '$name' printed no summary; counted as one failure" >&2
  fi
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  ran=$((p + f))
  echo "== $name: $p passed, $f failed, $s skipped"
}

# XCTest names its skipped cases "Test Case 'Class.test' skipped"; any not expected fails the run.
check_skips() {
  local log=$1 name
  while read -r name; do
    local expected=0 e
    for e in "${EXPECTED_SKIPS[@]}"; do [[ $name == "$e" ]] && expected=1; done
    if [[ $expected == 1 ]]; then
      echo "== expected skip: $name (needs the test VA driver's environment; vaapi-host runs it)"
    else
      problem "unexpected skip: $name ($(grep -m1 -A2 "$name" "$log" | grep -m1 -i skip | cut -c1-200))"
    fi
  done < <(grep -oE "Test Case '[^']+' skipped" "$log" | sed -E "s/Test Case '([^']+)' skipped/\1/" | sort -u)
}

# Names the test that hung: XCTest's last "started" case without an end, or our suites' last check.
report_hang() {
  local log=$1 name=$2 limit=$3 last
  last=$(grep -oE "Test Case '[^']+' (started|passed|failed|skipped)" "$log" | tail -n 1)
  if [[ $last == *started ]]; then
    problem "$name ran over its ${limit}s limit and was stopped; the test that hung: ${last% started}"
  else
    problem "$name ran over its ${limit}s limit and was stopped; its last lines (the next check hung):"
    tail -n 5 "$log" | sed 's/^/      /'
  fi
}

# Runs one suite under its time limit; its output is shown and kept in $logdir.
suite() {
  local name=$1 limit=$2; shift 2
  echo "== $name: $* (limit ${limit}s)"
  local log="$logdir/$name.log"
  # -k: a suite that ignores SIGTERM is killed 30 s later.
  timeout -k 30 "$limit" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  ran=0
  count "$log" "$name"
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    report_hang "$log" "$name" "$limit"
  elif [[ $rc -ne 0 ]] && ! grep -qE '[1-9][0-9]* failed|with [1-9][0-9]* failures?' "$log"; then
    problem "$name exited $rc without a counted failure"
  fi
}

# Expected count and time limit of a listed suite ("" when it is not listed).
listed() {
  local entry n c t
  for entry in "${EXPECTED_SUITES[@]}"; do
    read -r n c t <<<"$entry"
    [[ $n == "$1" ]] && { echo "$c $t"; return; }
  done
}

# Compares the checks a suite ran with the list.
check_count() {
  local name=$1 expected c
  expected=$(listed "$name")
  if [[ -z $expected ]]; then
    echo "== $name is not in EXPECTED_SUITES (ran $ran checks): add it to scripts/test.sh"
    return
  fi
  read -r c _ <<<"$expected"
  if ((ran * 2 < c)); then
    problem "$name ran $ran checks, under half of the ~$c listed"
  elif ((ran * 4 < c * 3 || ran * 4 > c * 5)); then
    echo "== $name ran $ran checks, ~$c listed: update EXPECTED_SUITES in scripts/test.sh"
  fi
}

if ! swift build 2>&1 | tail -n 30; then :; fi
read -r _ limit <<<"$(listed swift-tests)"
suite swift-tests "$limit" swift test
check_skips "$logdir/swift-tests.log"
check_count swift-tests
seen=(swift-tests)
for s in Tests/suites/*.sh; do
  [[ -e "$s" ]] || continue
  name=$(basename "$s" .sh)
  limit=$(listed "$name"); limit=${limit#* }
  suite "$name" "${limit:-1200}" bash "$s"
  check_count "$name"
  seen+=("$name")
done
for entry in "${EXPECTED_SUITES[@]}"; do
  read -r name _ <<<"$entry"
  [[ " ${seen[*]} " == *" $name "* ]] || problem "the suite $name (Tests/suites/$name.sh) is listed but missing"
done

echo "logs: $logdir"
echo "expected skips: ${#EXPECTED_SKIPS[@]} VA-API unit tests in swift test (run by vaapi-host with the test driver)"
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
