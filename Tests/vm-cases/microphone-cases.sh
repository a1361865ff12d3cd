#!/bin/bash
# Tests/vm-cases/microphone-cases.sh — `--audio DEVICE` from a real ALSA driver inside the test VM:
# snd-aloop's loopback card (what Tests/tools/click-player.py plays into hw:Loopback,0,N is captured from
# hw:Loopback,1,N; the player logs the monotonic time it played each click, from its own hardware
# timestamps) and snd-dummy (a card with narrower formats), with vivid as the camera. The judge is
# Tests/tools/mic-sync.py (FFmpeg's tools and the player's log; no camrec code): each click must be
# in the recording at the time it was played, against the video frames' capture times, ±10 ms.
# Cases: clicks in Matroska and MP4 at once; the loopback's clock 0.5% fast ("PCM Rate Shift 100000"
# at 100500: 0.5% slow) for 40 s, where counting samples would be 200 ms off; overruns forced by stopping camrec
# (SIGSTOP) for 3 s, longer than its 2 s buffer; segments; the camera unplugged and back (vivid's disconnect); the device errors (missing, busy, refused channels and rate, --audio
# camera on a camera that has none); `camrec devices` listing the microphones.
# Run by Tests/suites/vm-microphone.sh. Environment: CAMREC, CAMREC_VM_RESULTS. Ends with "N passed, N failed".
set -uo pipefail

source "$(dirname "$0")/case-lib.sh" microphone
CAMREC_BIN=${CAMREC:?set CAMREC to the camrec binary}
DEV=$(capture_node 0)
check "a vivid capture node" test -n "$DEV"
check "snd-aloop and snd-dummy cards" grep -q Loopback /proc/asound/cards
WAIT_EVERY=0.25
PLAYER=(nice -n -5 python3 Tests/tools/click-player.py)

# play SUBDEVICE SECONDS LOG: clicks into hw:Loopback,0,SUBDEVICE in the background (PLAYER_PID).
play() {
    "${PLAYER[@]}" "hw:CARD=Loopback,DEV=0,SUBDEV=$1" "$2" "$3" 2>"$3.err" &
    PLAYER_PID=$!
    # Its first click is a second in; camrec starts once the player has the device (its log exists).
    wait_for 30 test -e "$3"
}
stop_player() { kill "$PLAYER_PID" 2>/dev/null; wait "$PLAYER_PID" 2>/dev/null; }
# synced FILE CAMREC_LOG CLICK_LOG MIN [LOST [ANCHOR]]: every click inside FILE within ±10 ms of when it
# was played (but at most LOST, played while camrec could not read); ANCHOR 2: the file after a return.
synced() {
    local out
    out=$(on_host /usr/bin/python3 Tests/tools/mic-sync.py "$1" "$2" "$3" "$4" 10 "${5:-0}" "${6:-1}" 2>&1); local rc=$?
    echo "$out" | tail -n 4 | sed 's/^/   /'
    return $rc
}
edges() { on_host /usr/bin/python3 Tests/tools/av-edges.py "$1" 0.03 >/dev/null; }
one_error_line() { [[ $(grep -c '^camrec: error:' "$1") == 1 ]]; }

echo "== clicks through snd-aloop into Matroska and MP4 at once ($(elapsed))"
play 0 45 "$R/clicks.log"
"$CAMREC_BIN" --device "$DEV" --size 320x180 --audio hw:CARD=Loopback,DEV=1,SUBDEV=0 --duration 20 --log-level debug \
    "$R/clicks.mkv" "$R/clicks.mp4" 2>"$R/clicks.err"
rc=$?
stop_player
check "a 20 s recording with the loopback's microphone ends with 0 (got $rc)" test "$rc" = 0
check "camrec says where the sound goes" grep -q "camrec: sound goes into $R/clicks.mkv, $R/clicks.mp4" "$R/clicks.err"
for f in clicks.mkv clicks.mp4; do
    check "$f: every click played in the 20 s is in the sound at its time, ±10 ms (at least 15)" synced "$R/$f" "$R/clicks.err" "$R/clicks.log" 15
    check "$f: the sound starts and ends with the picture, within 30 ms" edges "$R/$f"
done
check "the track is AAC at the device's 48 kHz, mono" \
    test "$(on_host ffprobe -v error -select_streams a:0 -show_entries stream=codec_name,sample_rate,channels -of csv=p=0 "$R/clicks.mkv")" = "aac,48000,1"
check "no overruns reported" grep -q "the microphone hw:CARD=Loopback,DEV=1,SUBDEV=0: .*; no overruns" "$R/clicks.err"

echo "== the loopback's clock 0.5% fast for 40 s ($(elapsed))"
amixer -q -c Loopback cset iface=PCM,name='PCM Rate Shift 100000',device=0,subdevice=1 100500
amixer -q -c Loopback cset iface=PCM,name='PCM Rate Shift 100000',device=1,subdevice=1 100500
play 1 70 "$R/shift.log"
"$CAMREC_BIN" --device "$DEV" --size 320x180 --audio hw:CARD=Loopback,DEV=1,SUBDEV=1 --duration 40 --log-level debug \
    "$R/shift.mkv" 2>"$R/shift.err"
rc=$?
stop_player
check "a 40 s recording with the clock shifted ends with 0 (got $rc)" test "$rc" = 0
check "shift.mkv: every click in 40 s at its time, ±10 ms (at least 35; counting samples would be 200 ms off at the end)" \
    synced "$R/shift.mkv" "$R/shift.err" "$R/shift.log" 35
# aloop's shift divides the cable's rate: 100500 runs it 0.5% slow.
ppm=$(sed -n 's/.*its clock ran \([0-9]*\) ppm slow.*/\1/p' "$R/shift.err")
echo "   measured: ${ppm:-nothing} ppm slow"
check "camrec measured the clock 0.5% slow: 4500..5500 ppm (got ${ppm:-nothing})" test "${ppm:-0}" -ge 4500 -a "${ppm:-0}" -le 5500
check "shift.mkv: the sound starts and ends with the picture, within 30 ms" edges "$R/shift.mkv"

echo "== overruns: camrec stopped for 3 s mid-recording (its buffer holds 2 s) ($(elapsed))"
play 2 60 "$R/xrun.log"
"$CAMREC_BIN" --device "$DEV" --size 320x180 --audio hw:CARD=Loopback,DEV=1,SUBDEV=2 --duration 20 --log-level debug \
    "$R/xrun.mkv" 2>"$R/xrun.err" &
cam=$!
# Recording, not starting up (which takes seconds under emulation): the first frame is on the timeline.
WAIT_EVERY=0.1 wait_for 60 grep -q "timeline: frame" "$R/xrun.err"
nap 6
kill -STOP "$cam"; nap 3; kill -CONT "$cam"
wait "$cam"; rc=$?
stop_player
check "the recording stopped for 3 s ends with 0 (got $rc)" test "$rc" = 0
n=$(sed -n 's/.*; \([0-9]*\) overruns\{0,1\} (samples lost.*/\1/p' "$R/xrun.err")
check "camrec counted the overrun (${n:-none})" test "${n:-0}" -ge 1
# ALSA discards what its buffer held when it overran: 3 s are lost, so 3 or 4 clicks.
check "xrun.mkv: every click before and after the overrun at its time ±10 ms (at least 14; at most 4 lost in it)" \
    synced "$R/xrun.mkv" "$R/xrun.err" "$R/xrun.log" 14 4
silence=$(sed -n 's/.*1 overrun (samples lost; \([0-9]*\) ms of silence.*/\1/p' "$R/xrun.err")
check "… the silence put in its place is the 3 s lost, 2.9..3.6 s (${silence:-none} ms)" test "${silence:-0}" -ge 2900 -a "${silence:-0}" -le 3600
check "xrun.mkv: the sound starts and ends with the picture, within 30 ms" edges "$R/xrun.mkv"

echo "== segments ($(elapsed))"
"$CAMREC_BIN" --device "$DEV" --size 320x180 --audio hw:CARD=Loopback,DEV=1,SUBDEV=3 --duration 9 --segment 3 \
    "$R/seg-{n}.mkv" 2>"$R/seg.err"
rc=$?
segments=("$R"/seg-*.mkv)
check "--segment 3 for 9 s: three files (exit $rc, ${#segments[@]} files)" test "$rc" = 0 -a "${#segments[@]}" = 3
for f in "${segments[@]}"; do check "$(basename "$f"): sound starts and ends with its picture, within 30 ms" edges "$f"; done

echo "== the camera lost and back under --on-camera-lost wait, the microphone recording on ($(elapsed))"
# Each file's sound must start and end with its picture, and the clicks in the second (timed from the
# timeline's second anchor, the first frame after the return) must be where they belong too.
play 5 80 "$R/return.log"
# Priority "interactive": with camrec's default (record) vivid's disconnect control is refused (EBUSY).
env CAMREC_V4L2_PRIORITY=interactive "$CAMREC_BIN" --device "$DEV" --size 320x180 --audio hw:CARD=Loopback,DEV=1,SUBDEV=5 --on-camera-lost wait=30 \
    --log-level debug "$R/return.mkv" 2>"$R/return.err" &
cam=$!
WAIT_EVERY=0.1 wait_for 60 grep -q "timeline: frame" "$R/return.err"
nap 6
v4l2-ctl -d "$DEV" -c disconnect=1
wait_for 30 grep -q '^camrec: camera back' "$R/return.err"
nap 6
kill -INT "$cam"; wait "$cam"; rc=$?
stop_player
check "lost and back: exit 0 ($rc), two files" test "$rc" = 0 -a -s "$R/return.mkv" -a -s "$R/return-2.mkv"
for f in return.mkv return-2.mkv; do check "$f: the sound starts and ends with its picture, within 30 ms" edges "$R/$f"; done
check "return.mkv: every click before the loss at its time ±10 ms (at least 4)" synced "$R/return.mkv" "$R/return.err" "$R/return.log" 4
check "return-2.mkv: every click after the return at its time ±10 ms (at least 4)" synced "$R/return-2.mkv" "$R/return.err" "$R/return.log" 4 0 2

echo "== device errors: one line, its exit status, no file ($(elapsed))"
# refused CODE NAME ARGS...: camrec exits CODE with one error line and creates no file.
refused() {
    local code=$1 name=$2; shift 2
    "$CAMREC_BIN" --device "$DEV" --size 320x180 --frames 10 "$@" "$R/$name.mkv" 2>"$R/$name.err"
    local rc=$?
    sed -n 's/^camrec: error: /   /p' "$R/$name.err"
    # No file of the name at all: neither the recording nor a leftover (camrec writes NAME.camrec-PID.partial).
    [[ $rc == "$code" ]] && one_error_line "$R/$name.err" && ! compgen -G "$R/$name.mkv*" >/dev/null
}
check "no such card: 66" refused 66 missing --audio hw:CARD=Nope,DEV=0
check "snd-dummy records 1 or 2 channels: --audio-channels 8 is refused with 68" refused 68 channels --audio hw:CARD=Dummy,DEV=0 --audio-channels 8
check "snd-dummy records up to 48 kHz: --audio-rate 96000 is refused with 68" refused 68 rate --audio hw:CARD=Dummy,DEV=0 --audio-rate 96000
check "--audio camera on vivid (no USB device, no microphone): 66" refused 66 camera --audio camera
check "… and it says the camera is not a USB camera" grep -q "not a USB camera" "$R/camera.err"
arecord -q -D hw:CARD=Loopback,DEV=1,SUBDEV=4 -f S16_LE -r 48000 -c 1 /dev/null &
holder=$!
wait_for 20 grep -qs RUNNING /proc/asound/card0/pcm1c/sub4/status
check "a microphone another program records from: 70 (busy)" refused 70 busy --audio hw:CARD=Loopback,DEV=1,SUBDEV=4
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null

echo "== camrec devices lists the microphones ($(elapsed))"
"$CAMREC_BIN" devices >"$R/devices.out" 2>&1
sed -n '/^microphones/,$p' "$R/devices.out" | sed 's/^/   /'
check "camrec devices names the loopback's two capture devices and snd-dummy's by the names --audio takes" \
    grep -q -e "hw:CARD=Loopback,DEV=0 " "$R/devices.out"
check "… hw:CARD=Loopback,DEV=1" grep -q "hw:CARD=Loopback,DEV=1 " "$R/devices.out"
check "… hw:CARD=Dummy,DEV=0" grep -q "hw:CARD=Dummy,DEV=0 " "$R/devices.out"

case_finish
