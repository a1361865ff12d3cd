#!/bin/bash
# Tests/suites/network.sh — camrec over TCP on loopback, with real sockets and independent peers
# (ffmpeg/ffprobe as receivers and senders, bash /dev/tcp clients as slow or garbage peers).
#
# Checks: push to `camrec receive --listen` gives the same bytes as the file (and both pass
# `camrec inspect`); ffmpeg receiving camrec's push and joining camrec's listener mid-recording
# decode from their first frame without errors; `camrec receive` from an ffmpeg server (3-byte start
# codes, B-frames); two receivers joining at different times plus a slow reader: the file and the
# fast ones unaffected, the slow one skipped to IDRs and still decodes; receivers and senders killed
# mid-stream, reconnects both ways; peers that send garbage; usage and bind errors; a receiver
# that never reads: a second interrupt stops the wait for it at once and the file is still finished.
#
# Environment: CAMREC=path   test this binary instead of building with `swift build`
#              KEEP=1        keep the work directory
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"

SUITE=network NET_PORT_BASE=21000
# pass/fail/check/finish, CAMREC, W, PIDS, next_port, wait_listen, wait_for, frames_of, stream-checks.sh.
source Tests/lib/net-suite.sh
for tool in timeout; do
    command -v "$tool" >/dev/null || { echo "network: $tool not found"; FAIL=1; finish; }
done

first_key() { ffprobe -v error -select_streams v:0 -show_entries frame=key_frame -of csv=p=0 "$1" 2>/dev/null | grep -m 1 -o '^[01]'; }
decode_errors() { ffmpeg -v error -i "$1" -f null - 2>&1; }
no_decode_errors() { local e; e=$(decode_errors "$1"); [[ -z $e ]] || { echo "$1: $e" | head -n 5; return 1; }; }
# camrec inspect, Tests/tools/annexb-check.py and ffprobe's key frames (Tests/lib/stream-checks.sh).
inspect_ok() { contract_ok "$@"; }
field() { grep -o "$2=[^ ]*" "$1" | tail -n 1 | cut -d= -f2; }
nonempty() { [[ -s $1 ]]; }

# strip_notes IN OUT: IN without camrec's timing notes (SEI with its UUID c4a3…; 4-byte codes only).
strip_notes() {
    python3 -c '
import sys
data = open(sys.argv[1], "rb").read()
units = data.split(b"\0\0\0\1")[1:]
note = bytes([6, 5, 49, 0xc4, 0xa3])
open(sys.argv[2], "wb").write(b"".join(b"\0\0\0\1" + u for u in units if not u.startswith(note)))
' "$1" "$2"
}

# --- 1. push to camrec receive --listen: the copy is the file, byte for byte ----------------------
next_port; P=$PORT
"$CAMREC" receive --listen "$P" "$W/copy.h264" 2>"$W/recv1.log" & R=$!; PIDS+=($R)
wait_listen "$P"
"$CAMREC" --test-pattern --fps 30 --size 640x360 --frames 90 --timing-sei "$W/out-timed.h264" "tcp://127.0.0.1:$P" 2>"$W/send1.log"
check "push: recording exits 0" [ $? -eq 0 ]
check "push: receive saw the sender end after 90 frames" wait_log "$W/recv1.log" "ended the stream after 90 frames"
kill -INT $R; wait_for $R 10; rc=$?
check "push: receive exits 0 after SIGINT (status $rc)" [ $rc -eq 0 ]
# --timing-sei puts the note in the file too; receive strips it, so the copy is the file without it.
strip_notes "$W/out-timed.h264" "$W/out.h264"
check "push: --timing-sei put one note in each of the file's 90 access units" \
    [ "$(python3 -c 'import sys; print(open(sys.argv[1],"rb").read().count(bytes([0,0,0,1,6,5,49,0xc4,0xa3])))' "$W/out-timed.h264")" = 90 ]
check "push: copy is byte-identical to the file without its notes" cmp -s "$W/out.h264" "$W/copy.h264"
check "push: file keeps the contract (inspect, annexb-check, ffprobe)" inspect_ok "$W/out.h264" --frames 90 --idr-interval 30
check "push: copy keeps the contract (inspect, annexb-check, ffprobe)" inspect_ok "$W/copy.h264" --frames 90 --idr-interval 30
dropped1=$(grep -o 'dropped=[0-9]*' "$W/send1.log" | tail -n 1 | cut -d= -f2)
check "push: every frame in the copy or reported dropped ($dropped1; burned-in numbers)" counters_account "$W/copy.h264" "$dropped1"
check "push: receive decoded 90 frames, no decode errors" \
    [ "$(field "$W/recv1.log" decoded)" = 90 -a "$(field "$W/recv1.log" decode_errors)" = 0 ]
check "push: receive reports latency" grep -q "latency_median=" "$W/recv1.log"
check "push: no temporary file left" [ -z "$(ls "$W" | grep partial)" ]

# --- 1b. a bare push (the default): the same copy, and receive says why it has no latency figures ---
next_port; P=$PORT
"$CAMREC" receive --listen "$P" "$W/copy-bare.h264" --latency-log "$W/bare.lat" 2>"$W/recv1b.log" & R=$!; PIDS+=($R)
wait_listen "$P"
"$CAMREC" --test-pattern --fps 30 --size 640x360 --frames 60 "$W/out-bare.h264" "tcp://127.0.0.1:$P" 2>"$W/send1b.log"
check "bare push: receive saw the sender end after 60 frames" wait_log "$W/recv1b.log" "ended the stream after 60 frames"
kill -INT $R; wait_for $R 10; rc=$?
check "bare push: receive exits 0 after SIGINT (status $rc)" [ $rc -eq 0 ]
check "bare push: copy is byte-identical to the file" cmp -s "$W/out-bare.h264" "$W/copy-bare.h264"
check "bare push: the file is bare (inspect: bare: yes)" grep -q "^bare: yes" <("$CAMREC" inspect --summary "$W/out-bare.h264")
check "bare push: receive says no latency figures were possible, and why" \
    grep -q "no latency figures: the sender sent no timing notes" "$W/recv1b.log"
check "bare push: receive's summary has no latency fields" bash -c "! grep -q latency_median= '$W/recv1b.log'"
check "bare push: --latency-log wrote no empty log (and says so)" \
    bash -c "[ ! -e '$W/bare.lat' ] && grep -q 'bare.lat not written' '$W/recv1b.log'"

# --- 2. ffmpeg receives camrec's push -------------------------------------------------------------
next_port; P=$PORT
timeout 40 ffmpeg -v error -f h264 -i "tcp://127.0.0.1:$P?listen" -c copy -f h264 "$W/ff-got.h264" 2>"$W/ff2.log" & F=$!; PIDS+=($F)
wait_listen "$P"
"$CAMREC" --test-pattern --fps 30 --size 640x360 --frames 60 "$W/out2.h264" "tcp://127.0.0.1:$P" 2>"$W/send2.log"
wait_for $F 20
check "ffmpeg receiver: got all 60 frames" [ "$(frames_of "$W/ff-got.h264")" = 60 ]
check "ffmpeg receiver: first frame is a key frame" [ "$(first_key "$W/ff-got.h264")" = 1 ]
check "ffmpeg receiver: decodes without errors" no_decode_errors "$W/ff-got.h264"
check "ffmpeg receiver: ffmpeg itself printed no error" [ ! -s "$W/ff2.log" ]

# --- 3. ffmpeg joins camrec's listener mid-recording ----------------------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --fps 30 --size 640x360 --keyframe-interval 150 --duration 6 "$W/out3.h264" --listen "127.0.0.1:$P" \
    2>"$W/send3.log" & S=$!; PIDS+=($S)
wait_listen "$P"; sleep 2
timeout 30 ffmpeg -v error -i "tcp://127.0.0.1:$P" -c copy -f h264 "$W/ff-mid.h264" 2>"$W/ff3.log" & F=$!; PIDS+=($F)
wait_for $S 30; rc=$?
wait_for $F 10
check "late ffmpeg: recording exits 0 (status $rc)" [ $rc -eq 0 ]
# ffmpeg reads far faster than 30 fps, so from the frame it joined at it has every frame the file
# has, to the last: the burned-in numbers match the file's from there on.
first=$(counters_of "$W/ff-mid.h264" | cut -d' ' -f1)
check "late ffmpeg: joined mid-recording (at frame ${first:-?}, not at the start)" [ "${first:-0}" -ge 1 ]
check "late ffmpeg: every frame of the file from the join to the last, in order" counters_tail "$W/ff-mid.h264" "$W/out3.h264"
check "late ffmpeg: first frame is a key frame" [ "$(first_key "$W/ff-mid.h264")" = 1 ]
check "late ffmpeg: decodes without errors" no_decode_errors "$W/ff-mid.h264"
check "late ffmpeg: the join asked for an IDR or met one on its way (GOP of 150 would mean waiting up to 5 s)" \
  grep -qE "IDR requested|an IDR is already on its way" "$W/send3.log"
check "late ffmpeg: file passes inspect" inspect_ok "$W/out3.h264"

# --- 4. camrec receive from an ffmpeg server (3-byte start codes, B-frames) -----------------------
ffmpeg -v error -f lavfi -i testsrc2=size=640x360:rate=30 -frames:v 90 -c:v libx264 -g 30 -bf 2 -f h264 "$W/src4.h264"
next_port; P=$PORT
timeout 30 ffmpeg -v error -re -i "$W/src4.h264" -c copy -f h264 "tcp://127.0.0.1:$P?listen" 2>"$W/ff4.log" & F=$!; PIDS+=($F)
wait_listen "$P"
timeout 30 "$CAMREC" receive "tcp://127.0.0.1:$P" "$W/from-ff.h264" --frames 90 2>"$W/recv4.log"; rc=$?
wait_for $F 10
check "from ffmpeg: receive exits 0 (status $rc)" [ $rc -eq 0 ]
check "from ffmpeg: 90 frames written" [ "$(field "$W/recv4.log" frames)" = 90 ]
check "from ffmpeg: no decode errors" [ "$(field "$W/recv4.log" decode_errors)" = 0 ]
check "from ffmpeg: copy decodes to 90 frames without errors" [ "$(frames_of "$W/from-ff.h264")" = 90 ]
check "from ffmpeg: copy decodes cleanly" no_decode_errors "$W/from-ff.h264"
check "from ffmpeg: copy keeps camrec's contract (4-byte start codes)" inspect_ok "$W/from-ff.h264"
# ffmpeg was asked for 2 B-frames: they pass through as they are, and inspect says so.
check "from ffmpeg: inspect names the B slices it passes on (-bf 2)" \
    grep -qE "^B slices: [1-9][0-9]* \(first in frame [0-9]+\)" <<<"$("$CAMREC" inspect "$W/from-ff.h264")"

# --- 5. two receivers joining at different times, and a slow reader -------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --fps 30 --size 640x360 --bitrate 3M --duration 10 --timing-sei "$W/out5-timed.h264" "tcp://127.0.0.1:$P?listen" \
    2>"$W/send5.log" & S=$!; PIDS+=($S)
wait_listen "$P"
"$CAMREC" receive "tcp://127.0.0.1:$P" "$W/r1.h264" --latency-log "$W/r1.lat" 2>"$W/r1.log" & R1=$!; PIDS+=($R1)
sleep 1
# The slow reader: 4 KiB every 100 ms (40 KiB/s, well under the 3 Mbit/s stream).
( exec 3<"/dev/tcp/127.0.0.1/$P"; while :; do dd bs=4096 count=1 <&3 >>"$W/slow.h264" 2>/dev/null; sleep 0.1; done ) & SLOW=$!; PIDS+=($SLOW)
sleep 2
"$CAMREC" receive "tcp://127.0.0.1:$P" "$W/r2.h264" 2>"$W/r2.log" & R2=$!; PIDS+=($R2)
wait_for $S 40; rc=$?
wait_log "$W/r1.log" "ended the stream|went away" 1 10; wait_log "$W/r2.log" "ended the stream|went away" 1 10
kill $SLOW 2>/dev/null; wait $SLOW 2>/dev/null
kill -TERM $R1 $R2; wait_for $R1 10; wait_for $R2 10
check "many receivers: recording exits 0 (status $rc)" [ $rc -eq 0 ]
frames5=$(grep -o 'output=[^ ]*out5-timed.h264 frames=[0-9]*' "$W/send5.log" | grep -o '[0-9]*$')
strip_notes "$W/out5-timed.h264" "$W/out5.h264"
# Receivers never cost the file a frame: every frame of the 10 s is in it or counted in dropped= (what
# a loaded machine's real-time source may drop, measured 0 on a quiet one).
dropped5=$(grep -o 'dropped=[0-9]*' "$W/send5.log" | tail -n 1 | cut -d= -f2)
check "many receivers: the file holds all 300 frames of 10 s but the $dropped5 reported dropped" \
    eval '[ $((${frames5:-0} + ${dropped5:-0})) = 300 ]'
check "many receivers: the file's frames are 0.. in order, the missing ones exactly those reported dropped" \
    counters_account "$W/out5.h264" "${dropped5:-0}"
check "many receivers: file decodes to the frames it holds" [ "$(frames_of "$W/out5.h264")" = "$frames5" ]
check "many receivers: file passes inspect" inspect_ok "$W/out5.h264"
for r in r1 r2; do
    check "many receivers: $r first frame is a key frame" [ "$(first_key "$W/$r.h264")" = 1 ]
    check "many receivers: $r decodes without errors" no_decode_errors "$W/$r.h264"
    check "many receivers: $r has no decode errors in receive's own check" [ "$(field "$W/$r.log" decode_errors)" = 0 ]
done
r1f=$(field "$W/r1.log" frames); r2f=$(field "$W/r2.log" frames)
check "many receivers: r1 (joined first) got nearly the whole recording ($r1f)" [ "${r1f:-0}" -ge $((frames5 - 45)) ]
check "many receivers: r2 (joined 3 s later) got the rest ($r2f)" [ "${r2f:-0}" -ge $((frames5 - 150)) -a "${r2f:-0}" -lt "$r1f" ]
# r1's latency while the slow reader was connected (from 2 s after r1 joined) against before it joined.
lat_p() { grep -v '^#' "$1" | awk -v a="$2" -v b="$3" 'NR > a && NR <= b { print $2 }' | sort -n | awk -v p="$4" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999); print (i ? v[i] : 0) / 1000 }'; }
before=$(lat_p "$W/r1.lat" 3 30 50); during=$(lat_p "$W/r1.lat" 60 1000 50); during99=$(lat_p "$W/r1.lat" 60 1000 99)
# Measured, not asserted (timings belong to benchmarks; docs/PERFORMANCE.md has the latency figures).
echo "r1 capture-to-received latency: median ${before} ms before the slow reader, ${during} ms (p99 ${during99} ms) with it"
check "many receivers: the slow reader was skipped ahead (logged)" grep -q "too slow, skipped" "$W/send5.log"
slow_skips=$(grep "too slow" "$W/send5.log" | grep -o 'receiver [^ ]*' | sort -u | wc -l)
check "many receivers: only one receiver (the slow one) was ever skipped" [ "$slow_skips" = 1 ]
check "many receivers: what the slow reader got starts at a key frame" [ "$(first_key "$W/slow.h264")" = 1 ]
n=$(frames_of "$W/slow.h264"); pics=$(pictures_in "$W/slow.h264")
# How many frames a reader at 40 KiB/s gets depends on its pace; what must hold is that every picture
# it was sent decodes (the last may be cut off when it stopped reading) and they are frames of the
# recording in order.
check "many receivers: the slow reader's stream decodes (${n:-0} frames of ${pics:-?} pictures, the last may be cut)" \
    eval '[ "${n:-0}" -ge 2 ] && [ "${n:-0}" -ge $((pics - 1)) ]'
check "many receivers: the slow reader's frames are the recording's, in order, with skips only" counters_increasing "$W/slow.h264" but-last
# Every access unit but the last (cut off when the reader stopped) decodes cleanly: compare with a copy
# cut at its last complete access unit, found with camrec receive's own reassembly.
next_port; P2=$PORT
"$CAMREC" receive --listen "$P2" "$W/slow-cut.h264" 2>"$W/slow-cut.log" & R=$!; PIDS+=($R)
wait_listen "$P2"
cat "$W/slow.h264" >"/dev/tcp/127.0.0.1/$P2"
wait_log "$W/slow-cut.log" "ended the stream|went away"; kill -INT $R; wait_for $R 10
check "many receivers: slow reader's stream, last (partial) frame aside, has no decode errors" \
    [ "$(field "$W/slow-cut.log" decode_errors)" = 0 ]
check "many receivers: and no decode errors in ffmpeg either" no_decode_errors "$W/slow-cut.h264"

# --- 6. receivers killed mid-stream; push reconnects to a restarted receiver ----------------------
next_port; P=$PORT
"$CAMREC" receive --listen "$P" "$W/k1.h264" 2>"$W/k1.log" & R=$!; PIDS+=($R)
wait_listen "$P"
"$CAMREC" --test-pattern --fps 30 --size 640x360 --duration 8 "$W/out6.h264" "tcp://127.0.0.1:$P" 2>"$W/send6.log" & S=$!; PIDS+=($S)
sleep 2; kill -9 $R; wait $R 2>/dev/null
sleep 1.5
"$CAMREC" receive --listen "$P" "$W/k2.h264" 2>"$W/k2.log" & R=$!; PIDS+=($R)
wait_for $S 30; rc=$?
wait_log "$W/k2.log" "ended the stream|went away"; kill -INT $R; wait_for $R 10
check "killed receiver: recording exits 0 (status $rc)" [ $rc -eq 0 ]
check "killed receiver: file complete, every frame in it or reported dropped (a receiver's death costs the file nothing)" \
    counters_account "$W/out6.h264" "$(grep -o 'dropped=[0-9]*' "$W/send6.log" | tail -n 1 | cut -d= -f2)"
check "killed receiver: file passes inspect" inspect_ok "$W/out6.h264"
check "killed receiver: sender said the receiver went away" grep -q "went away" "$W/send6.log"
check "killed receiver: sender reconnected" grep -q "reconnected" "$W/send6.log"
check "killed receiver: the second receiver got frames from a key frame" [ "$(first_key "$W/k2.h264")" = 1 ]
check "killed receiver: second receiver's copy decodes without errors" no_decode_errors "$W/k2.h264"
check "killed receiver: second receiver saw no decode errors" [ "$(field "$W/k2.log" decode_errors)" = 0 ]
check "killed receiver: the killed one left only its .partial file" [ ! -e "$W/k1.h264" ]
partial=$(ls "$W"/k1.h264.camrec-*.partial 2>/dev/null | head -n 1)
check "killed receiver: its .partial file decodes" no_decode_errors "$partial"

# A receiver that connects and resets at once, and ffmpeg killed mid-stream: the listener shrugs.
next_port; P=$PORT
"$CAMREC" --test-pattern --fps 30 --size 640x360 --duration 5 "$W/out6b.h264" --listen "$P" 2>"$W/send6b.log" & S=$!; PIDS+=($S)
wait_listen "$P"
( exec 3<>"/dev/tcp/127.0.0.1/$P"; exec 3>&- ) 2>/dev/null
ffmpeg -v error -i "tcp://127.0.0.1:$P" -f null - 2>/dev/null & F=$!; PIDS+=($F)
"$CAMREC" receive "tcp://127.0.0.1:$P" "$W/k3.h264" 2>"$W/k3.log" & R=$!; PIDS+=($R)
sleep 1.5; kill -9 $F; wait $F 2>/dev/null
wait_for $S 30; rc=$?
wait_log "$W/k3.log" "ended the stream|went away"; kill -TERM $R; wait_for $R 10
check "killed ffmpeg receiver: recording exits 0 (status $rc)" [ $rc -eq 0 ]
check "killed ffmpeg receiver: the other receiver decodes cleanly" no_decode_errors "$W/k3.h264"
check "killed ffmpeg receiver: file passes inspect" inspect_ok "$W/out6b.h264"

# --- 7. senders killed mid-stream; receive reconnects ---------------------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --fps 30 --size 640x360 "$W/s1.h264" --listen "127.0.0.1:$P" 2>"$W/s1.log" & S=$!; PIDS+=($S)
wait_listen "$P"
"$CAMREC" receive "tcp://127.0.0.1:$P" "$W/rs.h264" 2>"$W/rs.log" & R=$!; PIDS+=($R)
sleep 2; kill -9 $S; wait $S 2>/dev/null
check "killed sender: receive noticed the sender went away" wait_log "$W/rs.log" "went away|ended the stream"
check "killed sender: receive is still running" kill -0 $R
"$CAMREC" --test-pattern --fps 30 --size 640x360 --duration 3 "$W/s2.h264" --listen "127.0.0.1:$P" 2>"$W/s2.log" & S=$!; PIDS+=($S)
wait_for $S 30
wait_log "$W/rs.log" "ended the stream|went away" 2; kill -TERM $R; wait_for $R 10; rc=$?
check "killed sender: receive exits 0 after SIGTERM (status $rc)" [ $rc -eq 0 ]
check "killed sender: receive reconnected" [ "$(field "$W/rs.log" reconnects)" -ge 1 ]
check "killed sender: receive said the sender went away or ended" grep -q -E "went away|ended the stream" "$W/rs.log"
check "killed sender: the copy spans both senders and decodes cleanly" no_decode_errors "$W/rs.h264"
check "killed sender: the copy passes inspect" inspect_ok "$W/rs.h264"
check "killed sender: receive's own decode check agrees" [ "$(field "$W/rs.log" decode_errors)" = 0 ]

# A pushing sender killed mid-stream: receive --listen keeps its file and waits for the next one.
next_port; P=$PORT
"$CAMREC" receive --listen "$P" "$W/rl.h264" 2>"$W/rl.log" & R=$!; PIDS+=($R)
wait_listen "$P"
"$CAMREC" --test-pattern --fps 30 --size 640x360 "$W/s3.h264" "tcp://127.0.0.1:$P" 2>/dev/null & S=$!; PIDS+=($S)
sleep 2; kill -9 $S; wait $S 2>/dev/null
"$CAMREC" --test-pattern --fps 30 --size 640x360 --frames 30 "$W/s4.h264" "tcp://127.0.0.1:$P" 2>/dev/null
wait_log "$W/rl.log" "ended the stream after 30 frames"; kill -INT $R; wait_for $R 10; rc=$?
check "killed pusher: receive --listen exits 0 (status $rc)" [ $rc -eq 0 ]
check "killed pusher: receive took the second sender (reconnects=1)" [ "$(field "$W/rl.log" reconnects)" = 1 ]
check "killed pusher: the copy decodes cleanly" no_decode_errors "$W/rl.h264"

# --- 8. garbage ----------------------------------------------------------------------------------
# A receiver that sends garbage to camrec's listener.
next_port; P=$PORT
"$CAMREC" --test-pattern --fps 30 --size 640x360 --duration 3 "$W/g1.h264" --listen "$P" 2>"$W/g1.log" & S=$!; PIDS+=($S)
wait_listen "$P"
( exec 3<>"/dev/tcp/127.0.0.1/$P"; head -c 200000 /dev/urandom >&3; sleep 1; head -c 20000 <&3 >/dev/null ) 2>/dev/null & G=$!; PIDS+=($G)
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$P; cat >&3; head -c 1000 <&3 >/dev/null" 2>/dev/null
wait_for $S 20; rc=$?
wait $G 2>/dev/null
check "garbage receiver: recording exits 0 (status $rc)" [ $rc -eq 0 ]
check "garbage receiver: logged that it ignores what receivers send" grep -q "ignoring bytes the receiver sends" "$W/g1.log"
check "garbage receiver: file complete and valid" inspect_ok "$W/g1.h264"

# A sender that sends garbage to camrec receive --listen, then a real one.
next_port; P=$PORT
"$CAMREC" receive --listen "$P" "$W/g2.h264" 2>"$W/g2.log" & R=$!; PIDS+=($R)
wait_listen "$P"
head -c 12000000 /dev/urandom >"/dev/tcp/127.0.0.1/$P" 2>/dev/null
check "garbage sender: receive said it is not H.264" wait_log "$W/g2.log" "is not sending H.264"
check "garbage sender: receive still running" kill -0 $R
"$CAMREC" --test-pattern --fps 30 --size 640x360 --frames 30 "$W/g2src.h264" "tcp://127.0.0.1:$P" 2>/dev/null
wait_log "$W/g2.log" "ended the stream after 30 frames"; kill -INT $R; wait_for $R 10; rc=$?
check "garbage sender: receive exits 0 after the real sender (status $rc)" [ $rc -eq 0 ]
check "garbage sender: the real sender's stream is received intact" cmp -s "$W/g2src.h264" "$W/g2.h264"

# An ffmpeg server that sends noise (not H.264): receive --frames never completes, SIGTERM ends it.
next_port; P=$PORT
timeout 20 ffmpeg -v error -f lavfi -i "anoisesrc=r=48000:a=1" -f s16le "tcp://127.0.0.1:$P?listen" 2>/dev/null & F=$!; PIDS+=($F)
wait_listen "$P"
"$CAMREC" receive "tcp://127.0.0.1:$P" "$W/g3.h264" --frames 10 2>"$W/g3.log" & R=$!; PIDS+=($R)
wait_log "$W/g3.log" "not sending H.264"; kill -TERM $R; wait_for $R 10; rc=$?
kill $F 2>/dev/null; wait $F 2>/dev/null
check "noise sender: receive exits 65 (nothing was H.264) (status $rc)" [ $rc -eq 65 ]
check "noise sender: clear message" grep -q "not sending H.264" "$W/g3.log"
check "noise sender: no output file" [ ! -e "$W/g3.h264" ]

# --- 9. usage and socket errors -----------------------------------------------------------------
"$CAMREC" --test-pattern --frames 5 "tcp://127.0.0.1" 2>"$W/u1.log"; rc=$?
check "usage: tcp:// without a port is a usage error (status $rc)" [ $rc -eq 64 ]
"$CAMREC" --test-pattern --frames 5 "tcp://::1:9000" 2>"$W/u2.log"; rc=$?
check "usage: an IPv6 address without brackets is refused with a hint (status $rc)" eval '[ $rc -eq 64 ] && grep -q "brackets" "$W/u2.log"'
"$CAMREC" receive 2>"$W/u3.log"; rc=$?
check "usage: receive without a sender (status $rc)" [ $rc -eq 64 ]
next_port; P=$PORT
"$CAMREC" receive --listen "127.0.0.1:$P" 2>/dev/null & R=$!; PIDS+=($R)
wait_listen "$P"
"$CAMREC" --test-pattern --frames 5 "$W/u4.h264" --listen "127.0.0.1:$P" 2>"$W/u4.log"; rc=$?
kill -INT $R; wait_for $R 10
check "bind: a port in use fails with status 75 (status $rc)" [ $rc -eq 75 ]
check "bind: the message names bind() and the errno" grep -q "bind() on 127.0.0.1:$P: Address already in use" "$W/u4.log"
check "bind: nothing recorded" [ ! -e "$W/u4.h264" ]
"$CAMREC" --test-pattern --fps 30 --frames 30 "$W/u5.h264" "tcp://[::1]:$((NEXT_PORT + 1))" 2>"$W/u5.log"; rc=$?
check "unreachable receiver: the file is still recorded (status $rc)" eval '[ $rc -eq 0 ] && inspect_ok "$W/u5.h264" --frames 30'
check "unreachable receiver: the message says so" grep -q "not reachable yet" "$W/u5.log"
# IPv6 end to end, and a host name reaching a dual-stack listener.
next_port; P=$PORT
"$CAMREC" receive --listen "[::1]:$P" "$W/v6.h264" 2>"$W/v6r.log" & R=$!; PIDS+=($R)
wait_listen "$P"
"$CAMREC" --test-pattern --fps 30 --size 320x240 --frames 30 "$W/v6src.h264" "tcp://[::1]:$P" 2>"$W/v6s.log"
wait_log "$W/v6r.log" "ended the stream after 30 frames"; kill -INT $R; wait_for $R 10
check "IPv6: push to [::1], copy identical" cmp -s "$W/v6src.h264" "$W/v6.h264"
next_port; P=$PORT
"$CAMREC" receive --listen "$P" "$W/name.h264" 2>"$W/namer.log" & R=$!; PIDS+=($R)
wait_listen "$P"
"$CAMREC" --test-pattern --fps 30 --size 320x240 --frames 30 "$W/namesrc.h264" "tcp://localhost:$P" 2>"$W/names.log"
wait_log "$W/namer.log" "ended the stream after 30 frames"; kill -INT $R; wait_for $R 10
check "host name: localhost reaches the dual-stack listener, copy identical" cmp -s "$W/namesrc.h264" "$W/name.h264"

# Two interrupts while a receiver that never reads holds the end of the stream: one interrupt gives it
# up to 5 s to take what is queued; the second means stop waiting, and the file is still finished.
next_port; P=$PORT
"$CAMREC" --test-pattern --frames 100000 --bitrate 20000000 --listen "127.0.0.1:$P" "$W/twice.h264" 2>"$W/twice.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
$PEER never-read 127.0.0.1 "$P" 1 30 >/dev/null 2>&1 & NR=$!; PIDS+=($NR)
wait_log "$W/twice.log" "joined" 1 20 >/dev/null; sleep 3
check_two_interrupts "$CAM" "$W/twice.h264" "$W/twice.log" receiver "$P"
kill $NR 2>/dev/null; wait $NR 2>/dev/null

finish
