#!/usr/bin/env bash
# scripts/tsan.sh: camrec's in-process XCTests under ThreadSanitizer, one check per test class: the class
# passed AND TSan reported nothing in its process (TSan's exit code 66 or a "WARNING: ThreadSanitizer"
# line fails it, with the report printed). Ends with "N passed, N failed".
#
# Builds the test bundle in debug with `--sanitize=thread` into .build-tsan (its own scratch path, so it
# never rebuilds .build's release build), then runs each class of the modules below in a process of its
# own, two at a time (the classes mostly wait on threads and real time). A full build took 23 minutes on
# 2 cores shared with other builds (load 12-14, 2026-11-27), far more than the test command's 30 minutes
# have left: .ci/run runs this script before scripts/test.sh and hands it the log (CAMREC_TSAN_LOG),
# counted there as the suite "tsan".
#
# Left out, each for a reason:
#   - CamrecTests: end to end, they run the camrec binary as a child process, which this process's TSan
#     does not watch (and they take most of the XCTests' time); RecordingPlanTests is in-process and runs.
#   - VAAPIH264EncoderTests: they skip without the test VA driver's environment (vaapi-host runs them).
#   - MotionTests: one thread of pixel arithmetic, nothing to race; unoptimised and instrumented, its
#     scene tests ran over 4 minutes (2026-11-27) where the release build takes a second.
#   - fuzz (libFuzzer, a sanitizer of its own) and the VM and VA-API suites are not XCTests.
# Reports inside C libraries camrec does not build (libav*, libx264, libx265, libasound) are suppressed
# in Tests/tools/tsan.supp, each entry with its reason; camrec's own code has no suppression.
#
# usage: scripts/tsan.sh              build, then every class
#        scripts/tsan.sh CLASS...     build, then these classes only (Module.Class or Class)
#        scripts/tsan.sh --list BUNDLE   no build: the classes a full run would take from BUNDLE (test.sh
#                                        checks their number against EXPECTED_SUITES on every run)
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

MODULES=(AudioTests BitstreamTests CaptureTests ContainersTests EncoderTests FramesTests HTTPServerTests HubTests
         NetStreamTests OutputsTests ThreadingTests RTSPTests ReceiverTests RecorderTests SystemSupportTests CamrecTests)
LEFT_OUT=(CamrecTests.CommandLineErrorTests CamrecTests.EncoderStallTests CamrecTests.EventClipTests
          CamrecTests.FileTroubleEndToEndTests CamrecTests.HEVCRecordingEndToEndTests
          CamrecTests.HostileOptionsAndSignalsTests CamrecTests.HostileNamesTests
          CamrecTests.InspectHEVCEndToEndTests CamrecTests.LibraryLoadingTests CamrecTests.ReceiveCutStreamTests
          CamrecTests.RecordingEndToEndTests CamrecTests.SignalEndToEndTests CamrecTests.TriggerCommandTests
          CamrecTests.UnattendedRecordingTests EncoderTests.VAAPIH264EncoderTests)

# every_class BUNDLE: the classes of MODULES in BUNDLE, but those LEFT_OUT.
every_class() {
    "$1" --list-tests | sed -n 's|^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)/.*|\1|p' | sort -u |
        while read -r c; do
            [[ " ${MODULES[*]} " == *" ${c%%.*} "* && " ${LEFT_OUT[*]} " != *" $c "* ]] && echo "$c"
        done
}
if [[ ${1:-} == --list ]]; then every_class "$2"; exit; fi

t0=$(date +%s)
echo "== build: swift build --build-tests --sanitize=thread --scratch-path .build-tsan (debug)"
if ! CAMREC_TESTABLE=1 swift build --build-tests --sanitize=thread --scratch-path .build-tsan 2>&1 | tail -n 3; then
    echo "tsan.sh: the ThreadSanitizer build failed"; echo "0 passed, 1 failed"; exit 1
fi
bundle=.build-tsan/debug/camrecPackageTests.xctest
[[ -x $bundle ]] || { echo "tsan.sh: no test bundle at $bundle"; echo "0 passed, 1 failed"; exit 1; }
# A contended Synchronization.Mutex hands over inside libswiftSynchronization, which TSan does not
# instrument: Tests/tools/tsan-mutex.c tells TSan of it (without it, JPEGFeedTests had 37-45 reports
# of two accesses under one lock on every run, 2026-11-28; with it, none in 10).
shim=.build-tsan/libtsan-mutex.so
if ! clang -O2 -Wall -Werror -shared -fPIC -o "$shim" Tests/tools/tsan-mutex.c -ldl; then
    echo "tsan.sh: Tests/tools/tsan-mutex.c did not build"; echo "0 passed, 1 failed"; exit 1
fi
echo "== build took $(( $(date +%s) - t0 ))s"

# halt_on_error=0: every report of a class, not just the first. report_signal_unsafe=0: the tests that
# signal themselves (SIGHUP, SIGUSR1 handlers that only set a flag) are not what this run looks for.
export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 report_signal_unsafe=0 history_size=4 suppressions=$PWD/Tests/tools/tsan.supp ${TSAN_OPTIONS:-}"

if (($# > 0)); then
    classes=$(for c in "$@"; do [[ $c == *.* ]] && echo "$c" || "$bundle" --list-tests | sed -n "s|^\([A-Za-z0-9_]*\.$c\)/.*|\1|p"; done | sort -u)
else
    classes=$(every_class "$bundle")
fi
[[ -n $classes ]] || { echo "tsan.sh: $bundle lists none of these classes"; echo "0 passed, 1 failed"; exit 1; }

dir=$(mktemp -d /tmp/camrec-tsan.XXXXXX)
trap 'kill -TERM $(jobs -p) 2>/dev/null; wait; rm -rf "$dir"; exit 143' TERM INT
run_class() {
    local c=$1 t=$(date +%s) rc
    LD_PRELOAD=$PWD/$shim "$bundle" "$c" >"$dir/$c.log" 2>&1 </dev/null; rc=$?
    echo "$rc $(( $(date +%s) - t ))" >"$dir/$c.done"
}
t1=$(date +%s)
for c in $classes; do
    while (($(jobs -rp | wc -l) >= 2)); do wait -n; done
    run_class "$c" &
done
wait

# clean CLASS: its run (log and .done in $dir) passed its tests and TSan reported nothing.
clean() {
    local rc
    read -r rc _ <"$dir/$1.done"
    ((rc == 0)) && ! grep -q '^WARNING: ThreadSanitizer' "$dir/$1.log" &&
        grep -qE "^Test Suite '(Selected tests|$1)' passed" "$dir/$1.log"
}
# tell CLASS: what went wrong in its run, each report whole (up to 60 lines apiece) and the summaries.
tell() {
    local log=$dir/$1.log
    grep -E "^Test Case '[^']+' failed|error: " "$log" | head -n 20 | sed 's/^/    /'
    awk '/^WARNING: ThreadSanitizer/ { n = 60 } n > 0 { print "    " $0; n-- }' "$log" | head -n 400
    grep '^SUMMARY: ThreadSanitizer' "$log" | sort | uniq -c | sed 's/^/    /'
}
# A class that fails runs once more, alone, and passes if that run is clean; the first run's report is
# printed either way, so nothing is hidden. (A real race's report comes back on the next run, usually.)
passed=0 failed=0
for c in $classes; do
    read -r rc secs <"$dir/$c.done"
    reports=$(grep -c '^WARNING: ThreadSanitizer' "$dir/$c.log")
    tests=$(grep -cE "^Test Case '[^']+' passed" "$dir/$c.log")
    if clean "$c"; then
        echo "PASS: $c under ThreadSanitizer ($tests tests, ${secs}s)"; passed=$((passed + 1))
        continue
    fi
    echo "   $c: first run: exit $rc, $reports TSan reports, ${secs}s; running it again alone"
    tell "$c"
    mv "$dir/$c.log" "$dir/$c.first.log"
    run_class "$c"
    read -r rc2 secs2 <"$dir/$c.done"
    if clean "$c"; then
        echo "PASS: $c under ThreadSanitizer ($tests tests; clean on its second run, ${secs2}s: the first's report is above)"
        passed=$((passed + 1))
    else
        echo "FAIL: $c under ThreadSanitizer (twice: exit $rc, then $rc2, $(grep -c '^WARNING: ThreadSanitizer' "$dir/$c.log") TSan reports the second time)"
        failed=$((failed + 1))
        tell "$c"
    fi
done
rm -rf "$dir"
echo "ThreadSanitizer: $(wc -w <<<"$classes") classes in $(( $(date +%s) - t1 ))s, two at a time; the build $(( t1 - t0 ))s"
echo "$passed passed, $failed failed"
((failed == 0))
