# Tests/lib/vm-suite.sh — sourced by the suites that run cases in the test VM (Tests/vm/run.sh):
# what each does first (a camrec binary, a results folder) and last (the cases' summary line).
# Not a suite itself, so it lives outside Tests/suites.
#
# Environment: CAMREC=path  test this binary instead of building with `swift build -c release`
#              CAMREC_VM_RESULTS=dir  keep results (recordings, logs) there
#              CAMREC_VM_TIMEOUT=seconds  kill the VM after this long (default 1800: vm-capture took
#                                 895 s on a 2-core machine at load 7-9)

# vm_suite_start NAME: cd to the repository, find or build camrec (CAMREC, CAMREC_ABS) and
# make the results folder (RESULTS).
vm_suite_start() {
    SUITE=$1
    cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
    export PATH="/opt/swift/usr/bin:$PATH"
    # The release build, as users run it: the VM's emulated CPU is 10-30 times slower than this
    # machine's, and there the debug build's RGB→NV12 pass alone took longer than a frame at 5 fps
    # at 1280x720 (3-4 frames dropped of 6; 0 with the release build).
    if [[ -z ${CAMREC:-} ]]; then
        swift build -c release --product camrec 2>&1 | tail -n 3
        CAMREC="$(swift build -c release --show-bin-path)/camrec"
    fi
    [[ -x $CAMREC ]] || vm_suite_give_up "no camrec binary at $CAMREC"
    # The VM sees this machine's root at the same paths: an absolute path works inside it.
    CAMREC_ABS="$(cd "$(dirname "$CAMREC")" && pwd)/$(basename "$CAMREC")"
    RESULTS=${CAMREC_VM_RESULTS:-$(mktemp -d "/tmp/camrec-$SUITE.XXXXXX")}
    mkdir -p "$RESULTS"
    VM_T0=$(date +%s)
}

# A setup failure counts as one failed test, so the total never silently shrinks.
vm_suite_give_up() {
    echo "$SUITE: $*"
    echo "0 passed, 1 failed"
    exit 1
}

# vm_suite_run CASES [run.sh options...]: runs Tests/vm-cases/CASES in one VM boot with camrec
# given to it, keeping the log in RESULTS; sets VM_RC and VM_LOG.
vm_suite_run() {
    local cases=$1; shift
    VM_LOG="$RESULTS/$SUITE.log"
    Tests/vm/run.sh --timeout "${CAMREC_VM_TIMEOUT:-1800}" --results "$RESULTS" --env "CAMREC=$CAMREC_ABS" "$@" \
        -- "Tests/vm-cases/$cases" 2>&1 | tee "$VM_LOG"
    VM_RC=${PIPESTATUS[0]}
    echo "$SUITE: VM run took $(( $(date +%s) - VM_T0 )) s, exit $VM_RC"
}

# vm_suite_finish: ends with the cases' own summary line, printed again as the suite's last line
# (scripts/test.sh reads only that), or one failure if the VM run never got as far as printing one.
vm_suite_finish() {
    local line
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$VM_LOG" | tail -n 1)
    [[ -n $line ]] || vm_suite_give_up "the VM run ended without a result (exit $VM_RC)"
    echo "$line"
    exit "$VM_RC"
}
