#!/usr/bin/env bash
# Tests/tools/run-xctests.sh XCTEST_BUNDLE — runs every XCTest case of the built test bundle
# (.build/release/camrecPackageTests.xctest) as two processes side by side, then prints both
# outputs whole, one after the other, and "N passed, N failed, N skipped" for all of them.
#
# Why: alone, the XCTests took 284 s of wall time for 156 s of CPU (2026-11-26): most end-to-end
# cases wait on real time (a live test pattern at 30 fps, a 2-s watchdog, a peer's timeout), so two
# at a time finish sooner without more work. The bundle is run directly: two `swift test` share one
# lock on .build and would run one after the other, each after ~15 s of loading manifests.
#
# The split: the classes in FIRST run in one process, every other class the bundle lists in the
# other, so together they are exactly the bundle's tests. FIRST holds about half the time of a
# quiet run (EventClipTests 81 s, UnattendedRecordingTests 34 s, ...; the rest 131 s). Test classes
# that listen take ports from ranges of their own, so the two processes never meet on one.
#
# A process that dies before its total (a crash) counts the cases that ended and one failure more,
# naming the case it died in, as scripts/test.sh does for one process. Stopped by SIGTERM (the
# suite's limit), both processes are stopped and their outputs printed, so the case that hung shows.
# Last come the failures again, one "FAIL: Class.testName (File.swift:LINE): message" line each:
# CI shows only the tail of a run, and the outputs above are thousands of lines.
set -uo pipefail
BUNDLE=${1:?usage: run-xctests.sh XCTEST_BUNDLE}
[[ -x $BUNDLE ]] || { echo "run-xctests.sh: no test bundle at $BUNDLE (build with --build-tests)"; echo "0 passed, 1 failed"; exit 1; }
FIRST=(EventClipTests UnattendedRecordingTests TriggerCommandTests ReceiveCutStreamTests
       SignalEndToEndTests InspectHEVCEndToEndTests)

classes=$("$BUNDLE" --list-tests | sed -n 's|^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)/.*|\1|p' | sort -u)
[[ -n $classes ]] || { echo "run-xctests.sh: $BUNDLE lists no tests"; echo "0 passed, 1 failed"; exit 1; }
a=() b=()
for c in $classes; do
    if [[ " ${FIRST[*]} " == *" ${c#*.} "* ]]; then a+=("$c"); else b+=("$c"); fi
done
# A class of FIRST that the bundle lacks is a test class gone: one failure, counted below.
missing=()
for c in "${FIRST[@]}"; do [[ " ${a[*]#*.} " == *" $c "* ]] || missing+=("$c"); done
((${#missing[@]} == 0)) || echo "run-xctests.sh: the bundle has no test class ${missing[*]} (named in FIRST); counted as one failure"

dir=$(mktemp -d /tmp/camrec-xctests.XXXXXX)
pids=()
# Both outputs whole; then, for a process stopped mid-case, that case's "started" line again, last,
# where scripts/test.sh looks for the test that hung.
show() {
    cat "$dir/1.log" "$dir/2.log"
    local n last
    for n in 1 2; do
        last=$(grep -oE "^Test Case '[^']+' (started|passed|failed|skipped)" "$dir/$n.log" | tail -n 1)
        [[ $last == *started ]] && echo "$last"
    done
}
# One line per failed case: its name, where its first assertion failed and that assertion's message.
say_failures() {
    local n name first count place
    for n in 1 2; do
        while IFS= read -r name; do
            first=$(grep -m 1 -F ": error: $name : " "$dir/$n.log")
            count=$(grep -cF ": error: $name : " "$dir/$n.log")
            place=$(sed -n 's|^.*/\([^/]*\.swift:[0-9]*\): error: .*|\1|p' <<<"$first")
            echo "FAIL: $name (${place:-no assertion}): ${first#*": error: $name : "}$( ((count > 1)) && echo " (and $((count - 1)) more)")" | cut -c1-400
        done < <(sed -n "s/^Test Case '\([^']*\)' failed .*/\1/p" "$dir/$n.log")
    done
}
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait; show; say_failures; rm -rf "$dir"; exit 143' TERM INT
(IFS=,; exec "$BUNDLE" "${a[*]}") >"$dir/1.log" 2>&1 </dev/null & pids+=($!)
(IFS=,; exec "$BUNDLE" "${b[*]}") >"$dir/2.log" 2>&1 </dev/null & pids+=($!)
wait "${pids[0]}"; wait "${pids[1]}"
show

passed=0 failed=0 skipped=0 died=()
((${#missing[@]} == 0)) || failed=1
for n in 1 2; do
    log=$dir/$n.log
    p=$(grep -cE "^Test Case '[^']+' passed" "$log"); f=$(grep -cE "^Test Case '[^']+' failed" "$log")
    s=$(grep -cE "^Test Case '[^']+' skipped" "$log")
    if ! grep -qE "^Test Suite 'Selected tests' (passed|failed)" "$log"; then
        f=$((f + 1))
        died+=("FAIL: process $n ended without its total (a crash?), in $(grep -oE "^Test Case '[^']+' started" "$log" | tail -n 1 | cut -d"'" -f2); counted as one more failure")
    fi
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
say_failures
((${#died[@]} == 0)) || printf '%s\n' "${died[@]}"
((${#missing[@]} == 0)) || echo "FAIL: the bundle has no test class ${missing[*]} (named in FIRST)"
rm -rf "$dir"
echo "XCTests in two processes: ${#a[@]} classes and ${#b[@]} classes"
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
