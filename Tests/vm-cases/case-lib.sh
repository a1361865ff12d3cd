# Tests/vm-cases/case-lib.sh — how every case script run inside the test VM starts. Source it with the
# results subfolder's name: `source "$(dirname "$0")/case-lib.sh" capture`. It refuses to run outside
# the VM (exit 2), makes R (CAMREC_VM_RESULTS/NAME, emptied) and gives ok/bad/check (counted in
# pass/fail; end with case_finish), elapsed (seconds since the start), on_host CMD (analysis tools run
# on the host), decoded_frames FILE, field LOG NAME (camrec's summary line), counter LOG NAME (its
# capture counters), nap SECONDS, wait_for SECONDS CMD... and frames_in_order (vivid's moving bars, read by Tests/tools/frame-steps.py).
if [[ ${CAMREC_VM:-} != 1 ]]; then
    echo "$(basename "$0"): run me inside the VM (its suite in Tests/suites does)" >&2
    exit 2
fi
R=${CAMREC_VM_RESULTS:?}/${1:?case-lib.sh needs the results subfolder name}
rm -rf "$R" && mkdir -p "$R"
pass=0 fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
T0=$EPOCHSECONDS
elapsed() { echo "$(( $EPOCHSECONDS - T0 ))s"; }
# wait_for SECONDS CMD...: runs CMD every WAIT_EVERY seconds (default 0.1) until it succeeds (0) or
# SECONDS of wall-clock time have passed (1). A deadline, not a count of tries: under a loaded TCG guest
# each try can itself take seconds.
wait_for() {
    local deadline=$(( $EPOCHSECONDS + $1 )); shift
    until "$@"; do (( $EPOCHSECONDS < deadline )) || return 1; nap "${WAIT_EVERY:-0.1}"; done
}
# on_host CMD...: runs CMD on the host instead (Tests/vm/host-tools.py, started by run.sh): only
# ffprobe, ffmpeg and /usr/bin/python3 Tests/tools/*.py, on finished files in the results share
# (same path on both sides), never with stdin. Each of those takes 4-8 s just to start under
# emulation, 0.1-0.3 s there. Its output, then its errors, then its exit status, as if run here.
# Bash builtins only (each process start costs the guest a fraction of a second).
ON_HOST=${CAMREC_VM_RESULTS:?}/.on-host
# A pipe nobody writes: `read -t` on it sleeps without starting a process (no /dev/fd here for <(:)).
NAP_FIFO=/tmp/case-lib-nap.$$
mkfifo "$NAP_FIFO" && exec {NAP}<>"$NAP_FIFO" && rm -f "$NAP_FIFO"
# nap SECONDS: sleeps without starting a process (/bin/sleep costs the emulated guest over a tenth of
# a second of CPU each time: a poll loop that slept 0.1 s with it kept the guest's CPU busy).
nap() { read -r -t "$1" -u "$NAP" || true; }
# uptime_ns VAR: the guest's monotonic clock in VAR, in ns to 10 ms (/proc/uptime: boot time, which a
# VM that never suspends keeps equal to CLOCK_MONOTONIC, the players' clock), without a process.
uptime_ns() { local up; read -r up _ </proc/uptime; printf -v "$1" '%d' "$(( 10#${up/./} * 10000000 ))"; }
on_host() {
    local id="$BASHPID-$EPOCHREALTIME" deadline=$((EPOCHSECONDS + 900)) rc line
    if [[ ! -d $ON_HOST ]]; then "$@"; return; fi   # run.sh without its helper: run here
    printf '%s\0' "$PWD" "$@" end-of-request >"$ON_HOST/$id.req" || return 125
    until [[ -e $ON_HOST/$id.rc ]]; do
        if ((EPOCHSECONDS > deadline)); then
            echo "on_host: no answer from the host for $1 in 900 s" >&2; return 124
        fi
        read -r -t 0.05 -u "$NAP"
    done
    while IFS= read -r line || [[ -n $line ]]; do printf '%s\n' "$line"; done <"$ON_HOST/$id.out"
    while IFS= read -r line || [[ -n $line ]]; do printf '%s\n' "$line"; done <"$ON_HOST/$id.err" >&2
    read -r rc <"$ON_HOST/$id.rc"
    return "$rc"
}
# Every check that reads a file through on_host trusts it to pass on output, errors and exit status:
# checked once per VM run (an error that went missing would make "decodes cleanly" pass on anything).
on_host_relays() {
    local out err rc
    out=$(on_host ffmpeg -hide_banner -version 2>/dev/null | head -1)
    err=$(on_host ffprobe -v error "$CAMREC_VM_RESULTS/no-such-file.h264" 2>&1 >/dev/null)
    on_host ffprobe -v error "$CAMREC_VM_RESULTS/no-such-file.h264" 2>/dev/null; rc=$?
    [[ $out == "ffmpeg version"* && $err == *"No such file"* && $rc == 1 ]] ||
        { echo "   on_host: out '$out', errors '$err', exit $rc"; return 1; }
}
[[ -d $ON_HOST ]] && check "on_host: ffmpeg on the host, its output, errors and exit status come back" on_host_relays
decoded_frames() {
    on_host ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" 2>/dev/null
}
# Field NAME of camrec's summary line ("camrec: finished … dropped=N") in a stderr log.
field() { value_in_last "$1" "camrec: finished " "$2"; }
# counter LOG NAME: NAME= of camrec's last "capture counters:" line in a stderr log.
counter() { value_in_last "$1" "capture counters: " "$2"; }
# value_in_last LOG TEXT NAME: NAME's value (digits and dots) after TEXT in the last line of LOG that
# holds TEXT. Bash builtins only, as on_host: grep | tail | grep | cut cost the guest half a second.
value_in_last() {
    local lines i line
    [[ -r $1 ]] || return 0
    mapfile -t lines <"$1"
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
        [[ ${lines[i]} == *"$2"* ]] || continue
        line=" ${lines[i]#*"$2"}"
        [[ $line =~ [^[:alnum:]_]$3=([0-9.]*) ]] && echo "${BASH_REMATCH[1]}"
        return 0
    done
}
# The independent reader of vivid's moving bars (no code shared with camrec). The VM runs the host's
# own /usr/bin/python3 (a pyenv shim would need the host's HOME).
frame_steps() { on_host /usr/bin/python3 Tests/tools/frame-steps.py "$@"; }
# vivid's "Move Right" moves the bars by ((width + 639) / 640) * 4 pixels every frame it makes,
# delivered or dropped (measured with v4l2-ctl: 4 px at 320 and 640 wide, 8 at 1280).
step_px() { echo $(( ($1 + 639) / 640 * 4 )); }
# frames_in_order NAME FILE WIDTH LOG [--at-most | --trailing K]: every camera frame between the first and the last
# picture is there, in order, except exactly as many as camrec reported as dropped= in LOG (measured
# from the pictures, not from camrec). Whether that count is itself right is each case's own check.
# --at-most for recordings a fault ends: frames dropped after the last picture leave no trace in
# the pictures (seen: 41 reported, 16 between pictures, the rest at the end under heavy load);
# --trailing K: exactly, but for up to K of them that may have come after the last picture.
frames_in_order() {
    local name=$1 file=$2 width=$3 log=$4 dropped report rc
    shift 4   # what is left: --at-most, or --trailing K (frame-steps.py)
    dropped=$(field "$log" dropped)
    report=$(frame_steps --step "$(step_px "$width")" --missing "${dropped:-0}" "$@" "$file" 2>&1)
    rc=$?
    echo "   $name pictures: $report" | head -4
    local but="the ${dropped:-?}"
    [[ ${1:-} == --at-most ]] && but="at most the ${dropped:-?}"
    [[ ${1:-} == --trailing ]] && but="the ${dropped:-?} (up to $2 after the last picture)"
    check "$name: the pictures show every camera frame in order but $but camrec reported dropped (moving bars)" \
        test $rc = 0 -a -n "$dropped"
}
# The capture node of vivid instance N (by bus info, so node numbering does not matter).
capture_node() {
    local n
    for n in /dev/video*; do
        v4l2-ctl -d "$n" -D 2>/dev/null | grep -q "platform:vivid-00$1" || continue
        v4l2-ctl -d "$n" -D 2>/dev/null | sed -n '/Device Caps/,$p' | grep -q 'Video Capture' && { echo "$n"; return; }
    done
}
# The summary line every case script ends with, and its exit status.
case_finish() {
    echo "$pass passed, $fail failed"
    [[ $fail -eq 0 ]]
}
