#!/bin/bash
# Tests/suites/seed-receivers.sh — camrec's stream as the receivers of its design documents read it.
#
# Two small receivers written from ../shared/seeds (Tests/fixtures/seed-receivers): seed004 splits the
# stream at 00 00 01, gathers SPS/PPS/SEI with the IDR and hands every other NAL unit alone to a bare
# libavcodec decoder (it never delivers the very last unit); seed001 knows NAL types 1/5/7/8 only,
# rejects 3-byte start codes, builds an avcC from SPS+PPS and takes the unit right after the PPS as
# the IDR. Each writes an MD5 per decoded picture; the truth is ffmpeg's own decode of camrec's file
# (`-f framemd5`), so every picture must match the picture at the same place there.
#
# Cases, for libx264 on one core and on two (taskset) and for VA-API (the test driver under Xvfb):
# camrec's file read by both; camrec pushing to both at once; both joining a listening camrec late
# (they must get every frame from the IDR their join asked for to the end). Plus the independent
# checker (Tests/tools/annexb-check.py) and `camrec inspect` on the same file.
#
# And seed 001's method itself, ported line for line (seed001-literal.c: the first NAL unit after the
# 4-byte code of each access unit decides; SPS, then PPS within fixed windows, then the rest is the IDR;
# anything else before a format description is dropped), handed one access unit at a time, with
# camrec's default options, libx264 and VA-API: from camrec's file, from camrec pushing to it, and
# joining a listening camrec late. Every decoded picture's burned-in counter is read back
# (Tests/tools/pattern-counters.py, from the receiver's own y4m) and must be exactly the expected run.
#
# Environment: CAMREC=path  test this binary instead of building with `swift build`
#              CAMREC_VA_TEST_DISPLAY=:N  X display for the VA-API cases (default :97)
#              KEEP=1       keep the work directory
# Ends with "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
REPO=$(pwd)
DISP=${CAMREC_VA_TEST_DISPLAY:-:97}
FRAMES=200

PASS=0 FAIL=0 SKIP=0
source Tests/lib/checks.sh
source Tests/lib/stream-checks.sh   # counters_account

for tool in ffmpeg gcc pkg-config python3 taskset Xvfb; do
    command -v "$tool" >/dev/null || { echo "seed-receivers: $tool not found"; FAIL=1; finish; }
done
if [[ -z ${CAMREC:-} ]]; then
    swift build --product camrec 2>&1 | tail -n 3
    CAMREC="$(swift build --show-bin-path)/camrec"
fi
[[ -x $CAMREC ]] || { echo "seed-receivers: no camrec binary at $CAMREC"; FAIL=1; finish; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/camrec-seed-receivers.XXXXXX")
XVFB_PID=
cleanup() {
    jobs -p | xargs -r kill 2>/dev/null
    if [[ -n $XVFB_PID ]]; then kill "$XVFB_PID" 2>/dev/null; wait "$XVFB_PID" 2>/dev/null; fi
    if [[ ${KEEP:-0} == 1 ]]; then echo "seed-receivers: work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

SRC=Tests/fixtures/seed-receivers
for r in seed001 seed004; do
    gcc -O2 -Wall -o "$WORK/$r" "$SRC/$r-receiver.c" $(pkg-config --cflags --libs libavcodec libavutil) \
        || { echo "seed-receivers: building $r failed"; FAIL=1; finish; }
done
gcc -O2 -Wall -o "$WORK/seed001-literal" "$SRC/seed001-literal.c" $(pkg-config --cflags --libs libavcodec libavutil) \
    || { echo "seed-receivers: building seed001-literal failed"; FAIL=1; finish; }
CHECKER="python3 $REPO/Tests/tools/annexb-check.py"

# A fresh port in PORT (not $(…): a subshell would not advance the counter).
NEXT_PORT=$((29000 + RANDOM % 3000))
next_port() { NEXT_PORT=$((NEXT_PORT + 1)); PORT=$NEXT_PORT; }

# wait_for COMMAND...: polls COMMAND every 0.1 s, at most 30 s; fails if it never holds.
wait_for() { for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done; return 1; }

# reference FILE OUT: ffmpeg's MD5 of each decoded picture of FILE, one per line (the truth).
reference() { ffmpeg -v error -nostdin -i "$1" -f framemd5 - | grep -v '^#' | awk -F', *' '{print $6}' >"$2"; }

# same_as_reference_from K COUNT GOT REF: GOT holds exactly COUNT lines, equal to REF's lines K…K+COUNT-1.
same_as_reference_from() {
    [[ $(wc -l <"$3") -eq $2 ]] && cmp -s "$3" <(tail -n +$(($1 + 1)) "$4" | head -n "$2")
}

# recorded_counted LOG FILE: camrec's summary says FRAMES frames went to FILE, and the burned-in counters of
# FILE's pictures (Tests/tools/pattern-counters.py) rise from 0 with exactly the frames it reported dropped
# missing, at most a tenth. The test pattern is paced like a camera: beside stress-ng a late join's IDR
# made it drop (x264-join-2-cores, full run, 2026-11-28), which is not what these cases are about; the
# receivers are held to the file, picture for picture.
recorded_counted() {
    local log=$1 file=$2 line dropped
    line=$(grep -F "finished output=$file frames=$FRAMES " "$log" | tail -n 1)
    dropped=$(grep -o 'dropped=[0-9]*' <<<"$line" | cut -d= -f2)
    [[ -n $dropped ]] && ((dropped <= FRAMES / 10)) || { echo "$log: ${line:-no summary of $FRAMES frames}"; return 1; }
    counters_account "$file" "$dropped"
}

# recorded_check TEXT LOG FILE RC: camrec's recording of FILE, checked by recorded_counted; where the pictures are
# too narrow for the burned-in counters (NARROW=1: the VA-API cases' 320x180, pattern-counters.py needs 576
# pixels), by its summary alone, with none dropped.
recorded_check() {
    if [[ ${NARROW:-0} == 1 ]]; then
        check "$1, none dropped (status $4)" grep -q "output=$3 frames=$FRAMES .*dropped=0" "$2"
    else
        check "$1, the burned-in counters missing exactly the frames it reported dropped (status $4)" recorded_counted "$2" "$3"
    fi
}

# listening LOG: a receiver said it listens.
listening() { grep -q "listening" "$1" 2>/dev/null; }

# The file and push cases: one recording to a file and pushed to both receivers at once.
# file_and_push LABEL PREFIX... -- CAMREC-ARGS...
file_and_push() {
    local label=$1; shift
    local prefix=()
    while [[ $1 != -- ]]; do prefix+=("$1"); shift; done; shift
    local d="$WORK/$label"; mkdir -p "$d"
    local p1 p4; next_port; p1=$PORT; next_port; p4=$PORT
    "$WORK/seed001" --listen "$p1" --md5 "$d/push001.md5" 2>"$d/push001.log" & local r1=$!
    "$WORK/seed004" --listen "$p4" --md5 "$d/push004.md5" 2>"$d/push004.log" & local r4=$!
    check "$label: the seed-001 receiver listens" wait_for listening "$d/push001.log"
    check "$label: the seed-004 receiver listens" wait_for listening "$d/push004.log"
    "${prefix[@]}" "$CAMREC" --frames $FRAMES --overwrite "$@" "$d/rec.h264" \
        "tcp://127.0.0.1:$p1" "tcp://127.0.0.1:$p4" >"$d/camrec.log" 2>&1
    local rc=$?
    wait $r1 $r4
    recorded_check "$label: camrec recorded $FRAMES frames to a file and two pushes" "$d/camrec.log" "$d/rec.h264" "$rc"
    reference "$d/rec.h264" "$d/ref.md5"
    check "$label: ffmpeg decodes all $FRAMES pictures of camrec's file" test "$(wc -l <"$d/ref.md5")" -eq $FRAMES
    check "$label: independent checker: 4-byte codes, SPS PPS right before each IDR, 1 slice per picture, IDR every 30" \
        $CHECKER "$d/rec.h264" --frames $FRAMES --idr-interval 30 --slices 1
    check "$label: camrec inspect passes the file" "$CAMREC" inspect --summary "$d/rec.h264"
    "$WORK/seed001" --file "$d/rec.h264" --md5 "$d/file001.md5" 2>"$d/file001.log"
    "$WORK/seed004" --file "$d/rec.h264" --md5 "$d/file004.md5" 2>"$d/file004.log"
    check "$label: seed-001 receiver decodes all $FRAMES pictures of the file, each equal to ffmpeg's" \
        same_as_reference_from 0 $FRAMES "$d/file001.md5" "$d/ref.md5"
    check "$label: seed-004 receiver decodes 199 pictures of the file (all but the undelivered last), each equal" \
        same_as_reference_from 0 $((FRAMES - 1)) "$d/file004.md5" "$d/ref.md5"
    check "$label: seed-001 receiver gets all $FRAMES pictures of the push, each equal to ffmpeg's decode of the file" \
        same_as_reference_from 0 $FRAMES "$d/push001.md5" "$d/ref.md5"
    check "$label: seed-004 receiver gets 199 pictures of the push, each equal" \
        same_as_reference_from 0 $((FRAMES - 1)) "$d/push004.md5" "$d/ref.md5"
    check "$label: neither receiver rejected a unit or had a decode error" \
        bash -c "grep -h 'pictures=' '$d'/*.log | grep -qv 'send_errors=0 rejected=0' && exit 1 || exit 0"
}

# partial_over FILE BYTES: camrec's temporary file for FILE holds more than BYTES.
partial_over() {
    local f; for f in "$1".*partial "$1"; do [[ -f $f && $(stat -c %s "$f") -gt $2 ]] && return 0; done; return 1
}

# The late-join case: both receivers connect to a listening camrec once BYTES of the stream are
# recorded; each must get every picture from the IDR its join asked for to the end.
# late_join LABEL BYTES PREFIX... -- CAMREC-ARGS...
late_join() {
    local label=$1 bytes=$2; shift 2
    local prefix=()
    while [[ $1 != -- ]]; do prefix+=("$1"); shift; done; shift
    local d="$WORK/$label"; mkdir -p "$d"
    local p; next_port; p=$PORT
    "${prefix[@]}" "$CAMREC" --frames $FRAMES --overwrite "$@" --listen "127.0.0.1:$p" "$d/rec.h264" >"$d/camrec.log" 2>&1 &
    local c=$!
    wait_for partial_over "$d/rec.h264" "$bytes"
    "$WORK/seed001" --connect "127.0.0.1:$p" --md5 "$d/join001.md5" 2>"$d/join001.log" & local r1=$!
    "$WORK/seed004" --connect "127.0.0.1:$p" --md5 "$d/join004.md5" 2>"$d/join004.log" & local r4=$!
    wait $c; local rc=$?
    wait $r1 $r4
    recorded_check "$label: camrec recorded $FRAMES frames while serving" "$d/camrec.log" "$d/rec.h264" "$rc"
    reference "$d/rec.h264" "$d/ref.md5"
    local idrs; idrs=$($CHECKER "$d/rec.h264" --json --slices 1 | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["idr_pictures"])))')
    local r n k
    for r in 001 004; do
        n=$(wc -l <"$d/join$r.md5")
        # Where its first picture stands in the file: it must be an IDR after the start (a late join).
        k=$(grep -nxF -m1 "$(head -n 1 "$d/join$r.md5")" "$d/ref.md5" | cut -d: -f1)
        k=$(( ${k:-0} - 1 ))
        local last=$FRAMES; [[ $r == 004 ]] && last=$((FRAMES - 1))
        check "$label: seed-$r receiver joined late at an IDR (picture $k; IDRs at ${idrs// /,})" \
            bash -c "[[ $k -gt 0 && ' $idrs ' == *' $k '* ]]"
        check "$label: seed-$r receiver got every picture from there to $((last - 1)) ($n), each equal to ffmpeg's decode" \
            bash -c "[[ $k -gt 0 && $((k + n)) -eq $last ]] && cmp -s '$d/join$r.md5' <(tail -n +$((k + 1)) '$d/ref.md5' | head -n $n)"
    done
}

# catch PORT OUT: accepts one TCP connection on 127.0.0.1:PORT (waiting at most 60 s) and writes what
# arrives to OUT.
catch() {
    python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
s.settimeout(60)  # a camrec that never connects (it refused its options) must not hang the suite
print("listening", file=sys.stderr, flush=True)
c,_=s.accept(); f=open(sys.argv[2], "wb")
while True:
    b=c.recv(65536)
    if not b: break
    f.write(b)' "$1" "$2"
}

# What goes on the wire: by default camrec's stream bare (parameter sets and slices only); with
# --timing-sei its timing SEI heads each access unit (ahead of SPS in IDR ones).
wire() {
    local label=$1; shift
    local d="$WORK/$label"; mkdir -p "$d"
    next_port; local p=$PORT
    catch "$p" "$d/wire.h264" 2>"$d/catch.log" & local r=$!
    check "$label: the catcher listens" wait_for listening "$d/catch.log"
    "$CAMREC" --test-pattern --size 320x180 --frames 60 "$@" "tcp://127.0.0.1:$p" >"$d/camrec.log" 2>&1
    wait $r
    # The timing SEI makes the stream not bare: the checker is told so, and checks the rest.
    local not_bare=(); [[ " $* " == *" --timing-sei "* ]] && not_bare=(--not-bare)
    $CHECKER "$d/wire.h264" --json --frames 60 "${not_bare[@]}" >"$d/wire.json"
}
wire "wire-timing-sei" --timing-sei
check "wire: with --timing-sei the stream keeps the rest of the contract (checker with --not-bare: 4-byte codes, SPS PPS right before each IDR slice, 1 slice per picture)" \
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["ok"] and 6 in r["unit_types"] else 1)' \
    "$WORK/wire-timing-sei/wire.json"
check "wire: with --timing-sei every access unit starts with camrec's timing SEI (60 SEI units, first unit an SEI)" \
    bash -c "[[ \$(python3 -c 'import sys; d=open(sys.argv[1],\"rb\").read(); print(d.count(bytes([0,0,0,1,6,5,49,0xc4,0xa3])), d[4] & 31)' '$WORK/wire-timing-sei/wire.h264') == '60 6' ]]"
wire "wire-bare"
check "wire: by default camrec sends only NAL types 1, 5, 7 and 8, keeping the contract" \
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["ok"] and r["unit_types"] == [1, 5, 7, 8] else 1)' \
    "$WORK/wire-bare/wire.json"

# camrec inspect and the independent checker both flag ffmpeg's own libx264 stream: two slices per
# picture (zerolatency on 2 cores) and x264's SEI between PPS and IDR.
ffmpeg -v error -nostdin -f lavfi -i testsrc2=size=640x360:rate=30 -frames:v 60 -c:v libx264 -tune zerolatency \
    -threads 2 -g 30 -y "$WORK/ffmpeg.h264"
"$CAMREC" inspect --summary "$WORK/ffmpeg.h264" >"$WORK/ffmpeg-inspect.txt" 2>&1; rc=$?
check "inspect: ffmpeg's libx264 stream breaks the contract (status $rc)" test $rc -eq 1
check "inspect: it names the slices (2 per picture)" grep -q "60 of 60 pictures are cut into more than one slice NAL unit" "$WORK/ffmpeg-inspect.txt"
check "inspect: it names the SEI between PPS and IDR" grep -q "frame 0: SEI stands between the PPS and the IDR slice" "$WORK/ffmpeg-inspect.txt"
check "inspect: it prints slices per picture" grep -q "^slices per picture: 2$" "$WORK/ffmpeg-inspect.txt"
check "independent checker agrees: ffmpeg's stream fails" bash -c "! $CHECKER '$WORK/ffmpeg.h264' >/dev/null"

PATTERN=(--test-pattern --size 640x360)
file_and_push "x264-1-core" taskset -c 0 -- "${PATTERN[@]}" --encoder software
file_and_push "x264-2-cores" taskset -c 0,1 -- "${PATTERN[@]}" --encoder software
# About 50 frames of 640x360 at the default rate (0.1 bit per pixel): clearly after the start.
late_join "x264-join-1-core" 150000 taskset -c 0 -- "${PATTERN[@]}" --encoder software
late_join "x264-join-2-cores" 150000 taskset -c 0,1 -- "${PATTERN[@]}" --encoder software

# --- Seed 001's method, literally -------------------------------------------------------------------
COUNTERS="python3 $REPO/Tests/tools/pattern-counters.py"

# counters_from Y4M FILE K: the burned-in counters of Y4M's pictures are exactly those of FILE's pictures from
# picture K (0-based) to the last (recorded_counted holds FILE's own to 0.. with its drops accounted).
counters_from() { [[ $1 == *.y4m && -s $1 ]] && cmp -s <($COUNTERS "$1") <($COUNTERS "$2" | tail -n +$(($3 + 1))); }

# literal_said LOG PICTURES DROPPED: the literal receiver's summary says PICTURES decoded, DROPPED
# dropped, none not understood and no decode error.
literal_said() { grep -q "^seed001-literal: pictures=$2 .* dropped=$3 not_understood=0 send_errors=0$" "$1"; }

# literal_file_and_push LABEL PREFIX... -- CAMREC-ARGS...: camrec records to a file and pushes to the
# literal receiver listening; then the literal receiver reads the file.
literal_file_and_push() {
    local label=$1; shift
    local prefix=()
    while [[ $1 != -- ]]; do prefix+=("$1"); shift; done; shift
    local d="$WORK/$label"; mkdir -p "$d"
    next_port; local p=$PORT
    "$WORK/seed001-literal" --listen "$p" --md5 "$d/push.md5" --y4m "$d/push.y4m" 2>"$d/push.log" & local r=$!
    check "$label: the literal seed-001 receiver listens" wait_for listening "$d/push.log"
    "${prefix[@]}" "$CAMREC" --frames $FRAMES --overwrite "$@" "$d/rec.h264" "tcp://127.0.0.1:$p" >"$d/camrec.log" 2>&1
    local rc=$?
    wait $r
    recorded_check "$label: camrec recorded $FRAMES frames to the file and the push" "$d/camrec.log" "$d/rec.h264" "$rc"
    reference "$d/rec.h264" "$d/ref.md5"
    "$WORK/seed001-literal" --file "$d/rec.h264" --md5 "$d/file.md5" --y4m "$d/file.y4m" 2>"$d/file.log"
    check "$label: literal seed-001 receiver, camrec's file: $FRAMES of $FRAMES pictures, each equal to ffmpeg's decode; 0 access units dropped or not understood ($(tail -n 1 "$d/file.log"))" \
        eval 'literal_said "$d/file.log" $FRAMES 0 && same_as_reference_from 0 $FRAMES "$d/file.md5" "$d/ref.md5"'
    check "$label: literal seed-001 receiver, camrec's file: the burned-in counters are the file's (0.. in order), each once" \
        counters_from "$d/file.y4m" "$d/rec.h264" 0
    check "$label: literal seed-001 receiver, camrec pushing: $FRAMES of $FRAMES pictures, each equal to ffmpeg's decode of the file; 0 access units dropped or not understood ($(tail -n 1 "$d/push.log"))" \
        eval 'literal_said "$d/push.log" $FRAMES 0 && same_as_reference_from 0 $FRAMES "$d/push.md5" "$d/ref.md5"'
    check "$label: literal seed-001 receiver, camrec pushing: the burned-in counters are the file's (0.. in order), each once" \
        counters_from "$d/push.y4m" "$d/rec.h264" 0
}

# literal_late_join LABEL BYTES PREFIX... -- CAMREC-ARGS...: the literal receiver connects to a listening
# camrec once BYTES of the stream are recorded; it must decode every picture from the IDR its join got
# to the last one.
literal_late_join() {
    local label=$1 bytes=$2; shift 2
    local prefix=()
    while [[ $1 != -- ]]; do prefix+=("$1"); shift; done; shift
    local d="$WORK/$label"; mkdir -p "$d"
    next_port; local p=$PORT
    "${prefix[@]}" "$CAMREC" --frames $FRAMES --overwrite "$@" --listen "127.0.0.1:$p" "$d/rec.h264" >"$d/camrec.log" 2>&1 &
    local c=$!
    wait_for partial_over "$d/rec.h264" "$bytes"
    "$WORK/seed001-literal" --connect "127.0.0.1:$p" --md5 "$d/join.md5" --y4m "$d/join.y4m" 2>"$d/join.log" & local r=$!
    wait $c; local rc=$?
    wait $r
    recorded_check "$label: camrec recorded $FRAMES frames while serving" "$d/camrec.log" "$d/rec.h264" "$rc"
    reference "$d/rec.h264" "$d/ref.md5"
    local idrs; idrs=$($CHECKER "$d/rec.h264" --json --slices 1 | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["idr_pictures"])))')
    local n k c
    n=$(wc -l <"$d/join.md5")
    # Where its first picture stands in the file (a picture's place, not its counter: the two differ
    # after a drop), and the counter burned into it.
    k=$(grep -nxF -m1 "$(head -n 1 "$d/join.md5")" "$d/ref.md5" | cut -d: -f1); k=$(( ${k:-0} - 1 ))
    c=$($COUNTERS "$d/join.y4m" 2>/dev/null | head -n 1); [[ $c =~ ^[0-9]+$ ]] || c=-1
    check "$label: literal seed-001 receiver joined late, its first picture an IDR of the file (picture $k, counter $c; IDRs at ${idrs// /,})" \
        bash -c "[[ $k -gt 0 && ' $idrs ' == *' $k '* ]]"
    check "$label: literal seed-001 receiver decoded every picture from there to the last ($n pictures), each equal to ffmpeg's decode of the file; 0 access units dropped or not understood ($(tail -n 1 "$d/join.log"))" \
        eval '[[ $k -gt 0 && $((k + n)) -eq $FRAMES ]] && literal_said "$d/join.log" $n 0 && same_as_reference_from $k $n "$d/join.md5" "$d/ref.md5"'
    check "$label: literal seed-001 receiver's burned-in counters are the file's from picture $k (counter $c) on, each once, in order" \
        eval '[[ $k -gt 0 ]] && counters_from "$d/join.y4m" "$d/rec.h264" $k'
}

# literal_timing_sei LABEL CAMREC-ARGS...: with --timing-sei every access unit on TCP begins with an SEI;
# seed 001 reads the SEI as the frame's type and, having no format description, drops every one.
literal_timing_sei() {
    local label=$1; shift
    if ! "$CAMREC" help record 2>/dev/null | grep -qE -- '^ +--timing-sei'; then
        skip "$label: this camrec has no --timing-sei"
        return
    fi
    local d="$WORK/$label"; mkdir -p "$d"
    next_port; local p=$PORT
    "$WORK/seed001-literal" --listen "$p" --md5 "$d/push.md5" 2>"$d/push.log" & local r=$!
    wait_for listening "$d/push.log"
    "$CAMREC" --frames 30 --timing-sei "$@" "tcp://127.0.0.1:$p" >"$d/camrec.log" 2>&1
    wait $r
    check "$label: with --timing-sei the literal receiver decodes nothing over TCP (30 of 30 access units dropped), as seed 001 would ($(tail -n 1 "$d/push.log"))" \
        literal_said "$d/push.log" 0 30
}

# 640x360: the counters need a picture at least 576 pixels wide.
literal_file_and_push "literal-x264" -- "${PATTERN[@]}" --encoder software
# About 50 frames of 640x360 at the default rate (0.1 bit per pixel): clearly after the start.
literal_late_join "literal-x264-join" 150000 -- "${PATTERN[@]}" --encoder software
literal_timing_sei "literal-x264-timing-sei" "${PATTERN[@]}" --encoder software

# literal_event_clip LABEL CAMREC-ARGS...: an event clip (--event-output, SIGUSR1) plays alone in the
# literal seed-001 receiver: every picture of it, each equal to ffmpeg's decode of the clip, its counters
# one run without a gap (the test pattern is paced: a frame the camera side dropped is in no file, so
# the run is checked against the continuous recording beside it).
literal_event_clip() {
    local label=$1; shift
    local d="$WORK/$label"; mkdir -p "$d"
    "$CAMREC" "$@" --duration 7 --pre-roll 2 --post-roll 2 --event-output "$d/ev/{n}.h264" "$d/cont.h264" >"$d/camrec.log" 2>&1 &
    local c=$!
    wait_for partial_over "$d/cont.h264" 300000
    sleep 1
    kill -USR1 $c
    wait $c; local rc=$?
    check "$label: camrec made one event clip and exited 0 (status $rc)" \
        eval '[[ $rc -eq 0 && -f "$d/ev/1.h264" && ! -e "$d/ev/2.h264" ]] && grep -q "event 1 started at frame" "$d/camrec.log"'
    [[ -f $d/ev/1.h264 ]] || return
    reference "$d/ev/1.h264" "$d/ref.md5"
    local n; n=$(wc -l <"$d/ref.md5")
    "$WORK/seed001-literal" --file "$d/ev/1.h264" --md5 "$d/file.md5" --y4m "$d/file.y4m" 2>"$d/file.log"
    check "$label: literal seed-001 receiver, the clip alone: $n of $n pictures, each equal to ffmpeg's decode; 0 access units dropped or not understood ($(tail -n 1 "$d/file.log"))" \
        eval '[[ $n -gt 60 ]] && literal_said "$d/file.log" $n 0 && same_as_reference_from 0 $n "$d/file.md5" "$d/ref.md5"'
    local first last
    first=$($COUNTERS "$d/file.y4m" 2>/dev/null | head -n 1); last=$($COUNTERS "$d/file.y4m" 2>/dev/null | tail -n 1)
    check "$label: the clip's counters ($first..$last) are the continuous recording's frames from $first to $last, each once" \
        eval '[[ $first =~ ^[0-9]+$ && $last =~ ^[0-9]+$ ]] && cmp -s <($COUNTERS "$d/file.y4m") <(python3 "$REPO/Tests/tools/pattern-counters.py" "$d/cont.h264" | awk -v a=$first -v b=$last "\$1 >= a && \$1 <= b")'
}
literal_event_clip "literal-x264-event-clip" "${PATTERN[@]}" --encoder software --keyframe-interval 15

# VA-API through the test driver (lossless I_PCM).
DRVDIR=$(Tests/fixtures/va-test-driver/build.sh | tail -n 1)
if [[ ! -f $DRVDIR/camrec_test_drv_video.so ]]; then
    fail "VA-API: the test driver did not build"
else
    for v in $(env | sed -n 's/^\(CAMREC_TEST_VA_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
    export LIBVA_DRIVER_NAME=camrec_test LIBVA_DRIVERS_PATH=$DRVDIR
    num=${DISP#:}
    if [[ ! -S /tmp/.X11-unix/X$num ]]; then
        rm -f "/tmp/.X$num-lock"
        Xvfb "$DISP" -nolisten tcp -noreset -screen 0 640x480x24 >"$WORK/xvfb.log" 2>&1 &
        XVFB_PID=$!
        wait_for test -S "/tmp/.X11-unix/X$num" || fail "VA-API: Xvfb did not start on $DISP"
    fi
    # 320x180: the lossless test driver sends ~86 KB a frame, and nothing may drop on a loaded machine.
    VA=(--test-pattern --size 320x180 --encoder vaapi --vaapi-device "$DISP")
    NARROW=1 file_and_push "vaapi" taskset -c 0,1 -- "${VA[@]}"
    NARROW=1 late_join "vaapi-join" 3500000 taskset -c 0,1 -- "${VA[@]}"
    # The literal receiver at 640x360 (its counters need 576 pixels): ~350 KB a frame; join after ~50.
    VA_LITERAL=(--test-pattern --size 640x360 --encoder vaapi --vaapi-device "$DISP")
    literal_file_and_push "literal-vaapi" -- "${VA_LITERAL[@]}"
    literal_late_join "literal-vaapi-join" 17000000 -- "${VA_LITERAL[@]}"
    literal_timing_sei "literal-vaapi-timing-sei" "${VA_LITERAL[@]}"
fi

finish
