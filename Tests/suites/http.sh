#!/bin/bash
# Tests/suites/http.sh — `--http`: the live page in a real browser, the WebSocket that feeds it, the
# status API, the snapshot, the metrics, the recordings it serves and the rules for who may connect (issue 13).
#
# Checks: headless Chromium (Debian's chromium + chromium-driver, driven by Selenium:
# Tests/tools/browser-live.py) loads camrec's page and plays live video within seconds, advancing with
# the wall clock, under a second behind the buffered live edge, nothing corrupted, and the frame
# number burned into the picture (read back from the page's pixels) moving on; the MP4 recorded
# beside it holds every frame from 0, the numbers missing exactly those it reported dropped (a live source on a busy machine drops some). The page's delay behind capture is printed (docs/PERFORMANCE.md). An independent WebSocket client (Tests/tools/ws-client.py, stdlib
# only) gets the codec string, an init segment and one fragment per frame, which ffprobe reads as
# MP4 starting on a key frame and holding consecutive burned-in frame numbers. /api/status answers
# JSON that agrees with the recording. Viewers that never read neither stall the recording nor keep
# camrec from ending; past the viewer limit, upgrades are refused. A non-loopback address without
# credentials, or an auth file that is a FIFO, is a usage error (64) and records nothing; with
# --http-auth-file, no or wrong credentials get 401 (a WebSocket upgrade is refused), the right ones
# 200 (snapshot, metrics and recordings too: 401 without); POST /api/keyframe puts an IDR into the file (and a second one within a second is refused),
# POST /api/rotate continues the recording in a new file from an IDR, as SIGHUP does; a port in use
# is 75 with nothing recorded. /snapshot.jpg is a 640x360 JPEG (ffprobe) of the newest frame: its
# burned-in number is the frame it names, and lies between the frames encoded before and after the
# request. /metrics parses with prometheus_client's own parser, every family with its type, frames
# rising with the clock, every encoded frame in both histograms, a TCP receiver counted. The finished
# segments are listed with their sizes on disk and ffprobe's durations, served byte for byte, in
# ranges and as downloads; traversal spellings, a symlink out of the directory and a FIFO named like a
# segment get 404. On an emulated phone screen (390x844) the page needs no sideways scrolling, lists
# the recordings, plays one in the page and shows the answer to "Key frame now". 200 idle connections
# neither stop the status or a snapshot nor keep camrec from ending with every frame recorded; a 64 MiB
# request body and a 4 MB header cost camrec under 16 MiB of peak memory. A connection that sends
# nothing, half a request head, or nothing after a request is closed by the server after 15 s while
# camrec serves on (section 1). /stream.mjpg from the test pattern (section 8): 20 viewers at once get
# well-framed parts, byte-identical across viewers for each frame, one JPEG a frame, and camrec's CPU
# a second within twice that with one JPEG a frame, every frame reaching them; ?fps= rates the parts and refuses 0,
# negative, non-finite, huge and non-numeric values with 400; a viewer that never reads is dropped
# (the kernel's table of the connection says when) while every frame is recorded.
# /live.m3u8 (section 9): the first request answered within 3 s; the playlist's type, version, EXT-X-MAP,
# numbering and target duration; every segment starts with a key frame (ffprobe), holds the recording's
# own burned-in numbers, its EXTINF and PROGRAM-DATE-TIME agreeing with them; ffmpeg and GStreamer's
# hlsdemux decode every segment they fetch with no error, nothing left out; Chromium plays it itself; the
# window moves on; the page uses ManagedMediaSource where MediaSource is missing, remote playback off; a
# fetcher that never reads holds nothing up. Beside sections 8 and 9 (section 10): a minute of the page through
# netem 50 ms ± 20 ms and 1% loss in the test VM, over MSE and over WebRTC at once, each ends within 0.5 s
# of live, live being the test pattern's clock as an independent reader of a --listen output finds it.
#
# Environment: CAMREC=path   test this binary instead of building with `swift build`
#              KEEP=1        keep the work directory
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=http
NET_PORT_BASE=14000
source Tests/lib/net-suite.sh
TOOLS=$PWD/Tests/tools
[[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] || { fail "no /usr/bin/chromium or chromedriver (scripts/setup.sh --test installs them)"; finish; }
python3 -c 'import selenium' 2>/dev/null || { fail "no Selenium for python3 (scripts/setup.sh --test installs it)"; finish; }
WS="python3 $TOOLS/ws-client.py"
# field JSON NAME: one value of a JSON object.
field() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b) }'; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b) }'; }
between() { at_least "$1" "$2" && below "$1" "$3"; }
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b) }'; }
http_code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
# The test pattern is a live source: on a busy machine it drops frames it could not deliver in time and
# counts them (dropped=). Checks on the recordings account for them instead of asking for none: the
# frames start at 0 and rise, and the numbers missing are exactly the dropped= camrec reported.
# Measured (2-core machine): 0 in every recording on a quiet machine; with `stress-ng --cpu 1` beside,
# 0 in all five recordings of one run (network-load and two more suites running beside it too). Bound:
# 9 (0.3 s of frames) per recording.
MAX_DROPPED=9
# dropped_of LOG: the dropped= of the last finished line in LOG (the recording's total; empty if none).
dropped_of() { grep -o 'finished output=.* dropped=[0-9]*' "$1" | tail -n 1 | grep -o '[0-9]*$'; }
# accounts FILE COUNT LOG: FILE holds COUNT frames, their numbers from 0 and rising, the numbers missing
# exactly the dropped= LOG reports, that at most MAX_DROPPED, and no finished line in LOG with errored frames.
accounts() {
    local n d; n=$(frames_of "$1") d=$(dropped_of "$3")
    [[ $n == "$2" ]] || { echo "$1: $n frames (want $2)"; return 1; }
    [[ -n $d ]] && ((d <= MAX_DROPPED)) || { echo "$3: dropped=${d:-none} (bound $MAX_DROPPED)"; return 1; }
    ! grep 'finished output=' "$3" | grep -qE 'errored=[1-9]' || { echo "$3: errored frames"; return 1; }
    counters_account "$1" "$d"
}

# --- 1. The live page in Chromium, with an MP4 recorded beside it -----------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --size 640x360 --fps 30 --frames 600 --http "127.0.0.1:$P" "$W/rec.mp4" 2>"$W/live.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
# Connections that hold a slot without asking for anything: one that connects and says nothing,
# one that sends half a request head, one left idle after a request (keep-alive). The server closes
# each after 15 s; the probe then asks for the status on a new connection, to show it was still up.
python3 -c 'import json, socket, sys, threading, time, urllib.request
def closed_after(first):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.settimeout(30)
    if first: s.sendall(first)
    if first.endswith(b"\r\n\r\n"): s.recv(65536)
    t = time.time()
    try: return round(time.time() - t, 1) if s.recv(65536) == b"" else None
    except OSError: return None
got = {}
probes = [threading.Thread(target=lambda k=k, b=b: got.update({k: closed_after(b)}))
          for k, b in (("silent", b""), ("half", b"GET /api/sta"), ("idle", b"GET /api/status HTTP/1.1\r\nHost: camrec\r\n\r\n"))]
for p in probes: p.start()
for p in probes: p.join()
got["still_up"] = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/status", timeout=5).status
print(json.dumps(got))' "$P" >"$W/stall.json" 2>"$W/stall.err" & STALL=$!; PIDS+=($STALL)
# ?mse: the page's MSE player, whose buffered edge these checks read (WebRTC: Tests/suites/browser.sh).
LIVE=$(python3 "$TOOLS/browser-live.py" "http://127.0.0.1:$P/?mse" 6 "$W/page.png" 2>"$W/browser.err") ||
    LIVE="{\"error\": \"browser-live failed: $(tail -1 "$W/browser.err" | tr -d '"\\')\"}"
echo "browser: $LIVE"
check "page: Chromium plays the live video, no media error ($(field "$LIVE" error))" [ -z "$(field "$LIVE" error)" ]
check "page: the picture is 640x360 ($(field "$LIVE" width)x$(field "$LIVE" height))" [ "$(field "$LIVE" width)x$(field "$LIVE" height)" = 640x360 ]
check "page: it starts within 5 s of loading ($(field "$LIVE" started_after) s)" below "$(field "$LIVE" started_after)" 5
# 6 s of wall time: a live view that stalls or falls back to buffering gains much less.
check "page: currentTime advanced $(field "$LIVE" advanced) s in 6 s of wall time (at least 4.5)" at_least "$(field "$LIVE" advanced)" 4.5
check "page: it stays under 1 s behind the buffered live edge (at most $(field "$LIVE" behind_max) s)" below "$(field "$LIVE" behind_max)" 1
check "page: $(field "$LIVE" frames) frames decoded (at least 100), $(field "$LIVE" corrupted) corrupted (none)" \
    bash -c "[ '$(field "$LIVE" corrupted)' = 0 ] && awk 'BEGIN { exit !(\"$(field "$LIVE" frames)\" + 0 >= 100) }'"
first=$(field "$LIVE" counter_first) last=$(field "$LIVE" counter_last)
# The burned-in number on the page, read back from its pixels: the picture itself moves on.
check "page: the frame number in the picture went from ${first:-?} to ${last:-?} (at least 135 frames: 4.5 s at 30 fps)" \
    at_least "$(( ${last:-0} - ${first:-0} ))" 135
echo "page: picture on the page behind capture by $(field "$LIVE" latency_ms) ms (median of $(field "$LIVE" counters_read) samples)"
wait $STALL 2>/dev/null
STALLED=$(cat "$W/stall.json")
# From both sides: a server closing at once, or after 1 s, fails as surely as one that never closes. The
# server's 15 s start at accept, the probe's clock just after connect (after its request for half and
# idle), so the probe can only see a little less than 15 s: 14 allows a second of thread scheduling on a
# busy machine. Measured 15.1, 15.0, 15.0 (silent, half, idle; 2-core machine, other builds running).
check "stalled connections: a connection that never sends a byte, closed by the server after $(field "$STALLED" silent) s (15 s: 14 to 18)" \
    between "$(field "$STALLED" silent)" 14 18
check "stalled connections: half a request head, closed by the server after $(field "$STALLED" half) s (15 s: 14 to 18)" \
    between "$(field "$STALLED" half)" 14 18
check "stalled connections: a connection idle after a request, closed by the server after $(field "$STALLED" idle) s (15 s: 14 to 18)" \
    between "$(field "$STALLED" idle)" 14 18
check "stalled connections: camrec still served a new one afterwards ($(field "$STALLED" still_up))" [ "$(field "$STALLED" still_up)" = 200 ]
wait_for $CAM 60; rc=$?
check "page: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
live_dropped=$(dropped_of "$W/live.log")
check "page: the MP4 beside it holds 600 frames from 0 in order, the missing numbers exactly the ${live_dropped:-?} reported dropped (at most $MAX_DROPPED), none errored" \
    accounts "$W/rec.mp4" 600 "$W/live.log"

# --- 2. The WebSocket as an independent client sees it, and /api/status ------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --size 640x360 --fps 30 --frames 300 --http "$P" "$W/rec2.h264" 2>"$W/ws.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
$WS hold 127.0.0.1 "$P" 1 5 >"$W/one.json" & HOLD=$!; PIDS+=($HOLD)
sleep 1
STATUS=$(curl -s "http://127.0.0.1:$P/api/status")
echo "status: $STATUS"
check "status: JSON with the size 640x360 and 30 fps" \
    [ "$(field "$STATUS" width)x$(field "$STATUS" height)@$(field "$STATUS" framesPerSecond)" = "640x360@30" ]
st_frames=$(field "$STATUS" frames) st_dropped=$(field "$STATUS" dropped)
check "status: one viewer watching ($(field "$STATUS" viewers))" [ "$(field "$STATUS" viewers)" = 1 ]
REC=$($WS record 127.0.0.1 "$P" 3 "$W/live.mp4")
echo "websocket: $REC"
check "websocket: upgraded (status $(field "$REC" status))" [ "$(field "$REC" status)" = 101 ]
codecs=$(python3 -c 'import json, sys; print(json.loads(json.loads(sys.argv[1])["text"][0])["codecs"])' "$REC" 2>/dev/null)
sps=$(ffprobe -v error -select_streams v:0 -show_entries stream=profile,level -of csv=p=0 "$W/live.mp4")
# avc1.PPCCLL: profile_idc 0x64 is High, level_idc 0x1E is 30 (level 3.0), as ffprobe reads the SPS.
check "websocket: the first message names the codec as the SPS says ($codecs; ffprobe: $sps)" \
    [ "$codecs" = "avc1.6400$(printf '%02X' "${sps#High,}" 2>/dev/null)" -a "${sps%%,*}" = High ]
frames=$(frames_of "$W/live.mp4")
check "websocket: one fragment per frame after the init segment ($(field "$REC" binary) messages, $frames frames)" \
    [ "$(field "$REC" binary)" = "$((${frames:-0} + 1))" ]
first_key=$(ffprobe -v error -select_streams v:0 -show_entries frame=key_frame -of csv=p=0 "$W/live.mp4" | head -1)
check "websocket: it starts on a key frame" [ "$first_key" = 1 ]
check "websocket: ffmpeg decodes it without an error" no_decode_errors "$W/live.mp4"
first=$(counters_of "$W/live.mp4" | cut -d' ' -f1)
wait_for $CAM 60; rc=$?
kill $HOLD 2>/dev/null
check "websocket: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
check "websocket: the frames are a run of the recording's from ${first:-?}, none left out, in order" \
    counters_slice "$W/live.mp4" "$W/rec2.h264"
ws_dropped=$(dropped_of "$W/ws.log")
# The status came 1 s into the recording: what it counted dropped then is part of the recording's total.
check "status: frames counted so far (${st_frames:-?}), dropped so far (${st_dropped:-?}) no more than the recording's dropped=${ws_dropped:-?} at the end" \
    bash -c "[[ '$st_frames' =~ ^[0-9]+$ && '$st_dropped' =~ ^[0-9]+$ && '$ws_dropped' =~ ^[0-9]+$ ]] && [ $((${st_frames:-0})) -gt 0 ] && [ ${st_dropped:-1} -le ${ws_dropped:-0} ]"
check "websocket: the file beside holds 300 frames from 0 in order, the missing numbers exactly the ${ws_dropped:-?} reported dropped (at most $MAX_DROPPED), none errored" \
    accounts "$W/rec2.h264" 300 "$W/ws.log"

# --- 3. Viewers that never read, and the viewer limit ------------------------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --size 1280x720 --fps 30 --frames 300 --bitrate 8000000 --http "$P" "$W/rec3.h264" 2>"$W/stuck.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
$WS hold 127.0.0.1 "$P" 40 30 >"$W/hold.json" & HOLD=$!; PIDS+=($HOLD)
wait_for $CAM 40; rc=$?
statuses=$(head -1 "$W/hold.json")
# Refused means the server answered with an HTTP error status, not any status that is not 101: a
# connection closed without an answer (0) is not a refusal. (The answer is 400 today, though
# LiveHTTPServer throws 503 "N viewers are watching already": Hummingbird's upgrade path turns it into 400.)
check "stuck viewers: 32 of 40 upgrades answered 101, the other 8 answered by the server with an error status 400-599 ($statuses)" \
    bash -c "[ \"\$(python3 -c 'import json,sys; d=json.loads(sys.argv[1])[\"statuses\"]; print(d.get(\"101\",0), sum(v for k,v in d.items() if 400 <= int(k) < 600), sum(v for k,v in d.items() if not (k == \"101\" or 400 <= int(k) < 600)))' '$statuses')\" = '32 8 0' ]"
check "stuck viewers: camrec ends on its own with 32 viewers that never read (status $rc)" [ $rc -eq 0 ]
stuck_dropped=$(dropped_of "$W/stuck.log")
check "stuck viewers: the file beside holds 300 frames from 0 in order, the missing numbers exactly the ${stuck_dropped:-?} reported dropped (at most $MAX_DROPPED), none errored" \
    accounts "$W/rec3.h264" 300 "$W/stuck.log"
check "stuck viewers: the encoder never waited for them: no more dropped (${stuck_dropped:-?}) than a recording without viewers may drop ($MAX_DROPPED)" \
    test -n "$stuck_dropped" -a "${stuck_dropped:-99}" -le "$MAX_DROPPED"
kill $HOLD 2>/dev/null; wait $HOLD 2>/dev/null

# --- 4. Who may connect -----------------------------------------------------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --frames 30 --http "0.0.0.0:$P" "$W/open.h264" 2>"$W/open.log"; rc=$?
check "non-loopback without credentials: usage error 64 (status $rc), nothing recorded" [ $rc -eq 64 -a ! -e "$W/open.h264" ]
check "non-loopback without credentials: the line names --http-auth-file and --http-insecure" \
    grep -q -- "--http-auth-file.*--http-insecure" "$W/open.log"
# A FIFO as the auth file would block a plain open forever: refused at once instead.
mkfifo "$W/auth.fifo"
timeout -s KILL 20 "$CAMREC" --test-pattern --frames 30 --http "0.0.0.0:$P" --http-auth-file "$W/auth.fifo" "$W/fifo.h264" 2>"$W/fifo.log"; rc=$?
check "auth file that is a FIFO: usage error 64 (status $rc), nothing recorded" [ $rc -eq 64 -a ! -e "$W/fifo.h264" ]
check "auth file that is a FIFO: the line says it is not a regular file" grep -q "auth.fifo is not a regular file" "$W/fifo.log"
printf 'viewer:pa:ss w0rd\n' >"$W/auth"
next_port; P=$PORT
# It records until the checks are done (then SIGINT): 240 frames, 8 s, ended before the last five
# requests in a CI-like run at a load of 7.6 (each answered 000, no connection).
"$CAMREC" --test-pattern --size 640x360 --duration 120 --http "0.0.0.0:$P" --http-auth-file "$W/auth" "$W/auth.h264" 2>"$W/auth.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
check "auth: no credentials get 401" [ "$(http_code "http://127.0.0.1:$P/")" = 401 ]
check "auth: a wrong password gets 401" [ "$(http_code -u viewer:nope "http://127.0.0.1:$P/api/status")" = 401 ]
check "auth: the right ones get the page (200)" [ "$(http_code -u 'viewer:pa:ss w0rd' "http://127.0.0.1:$P/")" = 200 ]
check "auth: the right ones get the status (200)" [ "$(http_code -u 'viewer:pa:ss w0rd' "http://127.0.0.1:$P/api/status")" = 200 ]
R=$($WS record 127.0.0.1 "$P" 1 "$W/noauth.mp4")
check "auth: a WebSocket without credentials is refused ($(field "$R" status)), no video ($(field "$R" binary) messages)" \
    [ "$(field "$R" status)" != 101 -a "$(field "$R" binary)" = 0 ]
R=$($WS record 127.0.0.1 "$P" 2 "$W/authed.mp4" 'viewer:pa:ss w0rd')
check "auth: a WebSocket with them gets video ($(field "$R" binary) messages)" at_least "$(field "$R" binary)" 10
for path in /snapshot.jpg /metrics /api/recordings /recordings/0/auth.h264; do
    code=$(http_code -m 10 "http://127.0.0.1:$P$path")
    check "auth: $path without credentials gets 401 ($code)" [ "$code" = 401 ]
done
code=$(http_code -m 10 -u 'viewer:pa:ss w0rd' "http://127.0.0.1:$P/metrics")
check "auth: /metrics with them gets 200 ($code)" [ "$code" = 200 ]
code=$(http_code -m 10 -u 'viewer:pa:ss w0rd' "http://127.0.0.1:$P/etc/passwd")
check "auth: an unknown path gets 404 ($code)" [ "$code" = 404 ]
alive=no; kill -INT $CAM 2>/dev/null && alive=yes
wait_for $CAM 40; rc=$?
check "auth: camrec was still running after the requests ($alive) and exits 0 at the interrupt (status $rc)" [ $alive = yes -a $rc -eq 0 ]

# --- 5. Actions: POST /api/keyframe and /api/rotate -------------------------------------------------
# Without --http's viewers and with --keyframe-interval 1000, the only IDRs after frame 0 are the ones asked for.
next_port; P=$PORT
"$CAMREC" --test-pattern --size 640x360 --fps 30 --frames 240 --keyframe-interval 1000 --http "$P" "$W/rot.h264" 2>"$W/rot.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"; sleep 1.5
first=$(curl -s -X POST -o "$W/kf1.json" -w '%{http_code}' "http://127.0.0.1:$P/api/keyframe")
second=$(curl -s -X POST -o "$W/kf2.json" -w '%{http_code}' "http://127.0.0.1:$P/api/keyframe")
check "keyframe: POST /api/keyframe answers 202 ($first: $(cat "$W/kf1.json"))" [ "$first" = 202 ]
check "keyframe: a second one within a second answers 429 ($second: $(cat "$W/kf2.json"))" [ "$second" = 429 ]
sleep 1.5
rotated=$(curl -s -X POST -o "$W/rot.json" -w '%{http_code}' "http://127.0.0.1:$P/api/rotate")
check "rotate: POST /api/rotate answers 202 naming the one file output ($rotated: $(cat "$W/rot.json"))" \
    bash -c "[ '$rotated' = 202 ] && grep -q '1 file output starts' '$W/rot.json'"
check "rotate: a GET does nothing ($(http_code "http://127.0.0.1:$P/api/rotate"))" [ "$(http_code "http://127.0.0.1:$P/api/rotate")" != 202 ]
wait_for $CAM 40; rc=$?
check "actions: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
keys=$(key_frames "$W/rot.h264")
check "keyframe: the first file has IDRs at frame 0 and at the one asked for, no others ($keys)" \
    bash -c "set -- $keys; [ \$# -eq 2 ] && [ \$1 -eq 0 ] && [ \$2 -ge 30 ]"
split=$(frames_of "$W/rot.h264")
rot_dropped=$(dropped_of "$W/rot.log")
cat "$W/rot.h264" "$W/rot-2.h264" >"$W/rot-both.h264" 2>/dev/null
both=$(frames_of "$W/rot-both.h264")
check "rotate: rot.h264's ${split:-?} frames and rot-2.h264's make ${both:-?}, the 240 recorded, dropped=${rot_dropped:-?} (at most $MAX_DROPPED)" \
    bash -c "[ '$both' = 240 ] && [ -n '$rot_dropped' ] && [ ${rot_dropped:-99} -le $MAX_DROPPED ]"
check "rotate: a second file, rot-2.h264, was started" [ -s "$W/rot-2.h264" ]
check "rotate: the recording goes on in rot-2.h264 exactly where rot.h264 ended: one run from 0 across both files" \
    counters_account "$W/rot-both.h264" "${rot_dropped:--1}"
check "rotate: rot-2.h264 starts on its only IDR ($(key_frames "$W/rot-2.h264"))" [ "$(key_frames "$W/rot-2.h264")" = 0 ]
next_port; P=$PORT
"$CAMREC" --test-pattern --size 640x360 --frames 90 --http "$P" 2>"$W/nofile.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
nofile=$(curl -s -X POST -o "$W/nofile.json" -w '%{http_code}' "http://127.0.0.1:$P/api/rotate")
check "rotate: with no file outputs it answers 409 ($nofile: $(cat "$W/nofile.json"))" [ "$nofile" = 409 ]
wait_for $CAM 40

# --- 6. A port in use -------------------------------------------------------------------------------
next_port; P=$PORT
python3 -c 'import socket, sys, time; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(20)' "$P" & BLOCK=$!; PIDS+=($BLOCK)
wait_listen "$P"
"$CAMREC" --test-pattern --frames 30 --http "127.0.0.1:$P" "$W/inuse.h264" 2>"$W/inuse.log"; rc=$?
check "port in use: exit 75 (status $rc), nothing recorded" [ $rc -eq 75 -a ! -e "$W/inuse.h264" ]
check "port in use: one line saying so" grep -q "cannot serve HTTP on 127.0.0.1:$P: Address already in use" "$W/inuse.log"
kill $BLOCK 2>/dev/null

# --- 7. Snapshot, metrics, recordings, a phone, and 200 idle connections ----------------------------
next_port; P=$PORT; next_port; L=$PORT
mkdir -p "$W/shelf"; echo "secret: not a recording" >"$W/secret.txt"
# Names the pattern produces but camrec never wrote: a symlink out of the directory, and a FIFO.
ln -s ../secret.txt "$W/shelf/seg-99.mp4"; mkfifo "$W/shelf/seg-98.mp4"
# Ended by SIGINT after its last check (not by a frame count: on a busy machine the checks before take
# longer than any fixed length); at most 9000 frames.
"$CAMREC" --test-pattern --size 640x360 --fps 30 --frames 9000 --segment 3 --listen "$L" --http "$P" "$W/shelf/seg-{n}.mp4" \
    --event-output "$W/events/{n}.mp4" 2>"$W/shelf.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
while s.recv(65536): pass' "$L" & RECV=$!; PIDS+=($RECV)
sleep 2
U="http://127.0.0.1:$P"
before=$(field "$(curl -s "$U/api/status")" frames)
snap=$(curl -s -D "$W/snap.head" -o "$W/snap.jpg" -w '%{http_code}' "$U/snapshot.jpg")
after=$(field "$(curl -s "$U/api/status")" frames)
frame=$(grep -i '^x-camrec-frame:' "$W/snap.head" | tr -dc 0-9)
check "snapshot: 200 with Content-Type image/jpeg ($snap)" bash -c "[ '$snap' = 200 ] && grep -qi '^content-type: image/jpeg' '$W/snap.head'"
check "snapshot: ffprobe reads a 640x360 JPEG ($(ffprobe -v error -show_entries stream=codec_name,width,height -of csv=p=0 "$W/snap.jpg"))" \
    [ "$(ffprobe -v error -show_entries stream=codec_name,width,height -of csv=p=0 "$W/snap.jpg")" = "mjpeg,640,360" ]
shown=$(python3 "$TOOLS/pattern-counters.py" "$W/snap.jpg")
check "snapshot: the number burned into the picture is the frame it names (${shown:-?} = ${frame:-?})" [ -n "$frame" -a "$shown" = "$frame" ]
# The newest frame: no older than the last one encoded when it was asked for, no newer than the last when it came.
check "snapshot: frame ${frame:-?} is the newest, within $((${before:-1} - 1))..$((${after:-1} - 1)) (frames encoded around the request)" \
    bash -c "[ -n '$frame' ] && [ '$frame' -ge $((${before:-1} - 1)) ] && [ '$frame' -le $((${after:-1} - 1)) ]"
# Two scrapes with no clock between them (a second across two Python start-ups measured the machine's
# load): M1, then a wait until /api/status has counted 30 frames more, then M2 between two snapshots
# whose burned-in frame numbers bracket it (a snapshot shows frame F once F+1 frames are counted, as
# the check above has it).
snapshot_frame() { curl -s -o "$W/$1.jpg" "$U/snapshot.jpg" && python3 "$TOOLS/pattern-counters.py" "$W/$1.jpg"; }
M1=$(python3 "$TOOLS/metrics-read.py" "$U/metrics")
e1_status=$(python3 -c 'import json, sys; print(int(json.loads(sys.argv[1]).get("samples", {}).get("camrec_frames_encoded_total", 0)))' "$M1" 2>/dev/null)
for _ in $(seq 300); do
    [[ $(field "$(curl -s "$U/api/status")" frames) -ge $((${e1_status:-0} + 30)) ]] && break
    sleep 0.1
done
fb=$(snapshot_frame snap-before); M2=$(python3 "$TOOLS/metrics-read.py" "$U/metrics"); fc=$(snapshot_frame snap-after)
# sample JSON KEY: one sample's value, as prometheus_client's parser read it.
sample() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get("samples", {}).get(sys.argv[2]); print("" if v is None else int(v))' "$1" "$2" 2>/dev/null; }
check "metrics: prometheus_client's parser reads it ($(field "$M1" error)), served as text/plain version 0.0.4" \
    bash -c "[ -z '$(field "$M1" error)' ] && grep -q 'text/plain; version=0.0.4' <<<'$(field "$M1" content_type)'"
types=$(python3 -c 'import json, sys; t = json.loads(sys.argv[1])["types"]; print(" ".join(f"{k}={t.get(k)}" for k in sys.argv[2:]))' "$M1" \
    camrec_frames_captured camrec_frames_encoded camrec_frames_dropped camrec_frames_errored camrec_output_bytes \
    camrec_output_skipped_frames camrec_output_reconnects camrec_output_receivers camrec_encode_seconds camrec_capture_to_outputs_seconds 2>/dev/null)
check "metrics: every family with its type ($types)" [ "$types" = "camrec_frames_captured=counter camrec_frames_encoded=counter camrec_frames_dropped=counter camrec_frames_errored=counter camrec_output_bytes=counter camrec_output_skipped_frames=counter camrec_output_reconnects=counter camrec_output_receivers=gauge camrec_encode_seconds=histogram camrec_capture_to_outputs_seconds=histogram" ]
e1=$(sample "$M1" camrec_frames_encoded_total) e2=$(sample "$M2" camrec_frames_encoded_total)
check "metrics: frames encoded rose by at least 30 between scrapes (${e1:-?} -> ${e2:-?}) and lies within the burned-in numbers of the snapshots around the second scrape, $((${fb:-0} + 1))..$((${fc:-0} + 1))" \
    bash -c "[ -n '$e1' -a -n '$e2' -a -n '$fb' -a -n '$fc' ] && [ $((${e2:-0} - ${e1:-0})) -ge 30 ] && [ ${e2:-0} -ge $((${fb:-0} + 1)) ] && [ ${e2:-0} -le $((${fc:-0} + 1)) ]"
c=$(sample "$M2" camrec_encode_seconds_count) l=$(sample "$M2" camrec_capture_to_outputs_seconds_count)
# The histograms are fed just after the counter in the same frame: a scrape may fall between.
check "metrics: each encoded frame is in both histograms (encoded ${e2:-?}, encode time ${c:-?}, capture to outputs ${l:-?})" \
    bash -c "[ -n '$c' -a -n '$l' ] && [ ${c:-0} -le ${e2:-0} -a ${c:-0} -ge $((${e2:-0} - 1)) ] && [ ${l:-0} -le ${e2:-0} -a ${l:-0} -ge $((${e2:-0} - 1)) ]"
check "metrics: the TCP receiver is counted ($(sample "$M2" "camrec_output_receivers{kind=\"listen\",output=\"tcp://:$L?listen\"}") receiver on tcp://:$L?listen)" \
    [ "$(sample "$M2" "camrec_output_receivers{kind=\"listen\",output=\"tcp://:$L?listen\"}")" = 1 ]
fb=$(sample "$M2" "camrec_output_frames_total{kind=\"file\",output=\"$W/shelf/seg-{n}.mp4\"}")
check "metrics: the file output has written frames, at most those encoded (${fb:-?} of ${e2:-?})" \
    bash -c "[ -n '$fb' ] && [ ${fb:-0} -gt 0 -a ${fb:-0} -le ${e2:-0} ]"
m_dropped=$(sample "$M2" camrec_frames_dropped_total) m_errored=$(sample "$M2" camrec_frames_errored_total)
sleep 5
LIST=$(curl -s "$U/api/recordings")
names=$(python3 -c 'import json, sys; print(" ".join(sorted(r["name"] for r in json.loads(sys.argv[1])["recordings"])))' "$LIST" 2>/dev/null)
check "recordings: the finished segments are listed and nothing else ($names)" \
    bash -c "grep -qxE 'seg-1.mp4 seg-2.mp4( seg-[3-9].mp4)*' <<<'$names'"
# Segments end at the first IDR after 3 s: ffprobe says how long each one really is.
sizes=$(python3 -c 'import json, os, subprocess, sys
for r in json.loads(sys.argv[1])["recordings"]:
    path = os.path.join(sys.argv[2], r["name"])
    probed = float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path],
                                  capture_output=True, text=True).stdout)
    print(r["name"], r["bytes"] == os.path.getsize(path), r["durationSeconds"] is not None and abs(r["durationSeconds"] - probed) < 0.01,
          r["url"] == "/recordings/0/" + r["name"])' "$LIST" "$W/shelf" 2>&1)
check "recordings: each one's size is its size on disk, its duration ffprobe's, its URL under /recordings/0/ ($(tr '\n' ';' <<<"$sizes"))" \
    bash -c "[ -n '$sizes' ] && ! grep -q False <<<'$sizes'"
code=$(curl -s -o "$W/got.mp4" -w '%{http_code}' "$U/recordings/0/seg-1.mp4")
check "recordings: GET serves seg-1.mp4 byte for byte ($code)" cmp -s "$W/got.mp4" "$W/shelf/seg-1.mp4"
code=$(curl -s -r 100-199 -D "$W/range.head" -o "$W/range.bin" -w '%{http_code}' "$U/recordings/0/seg-1.mp4")
check "recordings: a range request gets 206 and exactly bytes 100..199 ($code)" \
    bash -c "[ '$code' = 206 ] && cmp -s '$W/range.bin' <(tail -c +101 '$W/shelf/seg-1.mp4' | head -c 100)"
check "recordings: ?download asks the browser to save it as seg-1.mp4" \
    bash -c "curl -s -D - -o /dev/null '$U/recordings/0/seg-1.mp4?download' | grep -qi '^content-disposition: attachment; filename=\"seg-1.mp4\"'"
for path in /recordings/0/../secret.txt /recordings/0/%2e%2e/secret.txt /recordings/0/..%2fsecret.txt /recordings/0/%2E%2E%2Fsecret.txt \
            /recordings/0/seg-99.mp4 /recordings/0/%2fetc%2fpasswd /recordings/0//etc/passwd /recordings/1/seg-1.mp4 /recordings/-1/seg-1.mp4 \
            "/recordings/0/seg-1.mp4%00.txt" /recordings/0/./seg-1.mp4 /recordings/../../etc/passwd; do
    code=$(curl -s --path-as-is -m 5 -o "$W/trav.out" -w '%{http_code}' "$U$path")
    check "traversal: $path gets 404 ($code), nothing from outside" bash -c "[ '$code' = 404 ] && ! grep -q secret '$W/trav.out'"
done
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$U/recordings/0/seg-98.mp4")
check "recordings: a FIFO named like a segment is not listed and answers 404 at once ($code)" \
    bash -c "[ '$code' = 404 ] && ! grep -q seg-98 <<<'$names'"
# An event whose label looks like markup: the page must show it as text, beside the clip's first picture.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$U/api/events?label=%3Cb%3Efront%3C%2Fb%3E+door")
check "events: POST /api/events starts one (201, got $code)" [ "$code" = 201 ]
PAGE=$(python3 "$TOOLS/browser-page.py" "$U/" 2 "$W/phone.png" 2>"$W/page.err") ||
    PAGE="{\"error\": \"browser-page failed: $(tail -1 "$W/page.err" | tr -d '"\\')\"}"
echo "phone: $PAGE"
check "phone: the page works on a 390x844 screen ($(field "$PAGE" error))" [ -z "$(field "$PAGE" error)" ]
check "phone: it lists the recordings ($(python3 -c 'import json, sys; print(len(json.loads(sys.argv[1]).get("rows") or []))' "$PAGE") rows, at least 2)" \
    python3 -c 'import json, sys; sys.exit(len(json.loads(sys.argv[1]).get("rows") or []) < 2)' "$PAGE"
check "phone: nothing needs sideways scrolling ($(field "$PAGE" overflow) px) and the live video is as wide as the screen ($(field "$PAGE" video_width) of $(field "$PAGE" window_width))" \
    [ "$(field "$PAGE" overflow)" = 0 -a "$(field "$PAGE" video_width)" = 390 -a "$(field "$PAGE" window_width)" = 390 ]
check "phone: 'play' plays the newest recording in the page ($(field "$PAGE" played) s in 1.5 s, at least 1.0; $(field "$PAGE" played_src))" \
    bash -c "at_least() { awk -v a=\"\$1\" -v b=\"\$2\" 'BEGIN { exit !(a != \"\" && a + 0 >= b) }'; }; at_least '$(field "$PAGE" played)' 1.0 && grep -q '/recordings/0/seg-' <<<'$(field "$PAGE" played_src)'"
check "phone: the event is listed, its label as text ($(python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get("events"))' "$PAGE"); elements $(python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get("event_html"))' "$PAGE"))" \
    python3 -c 'import json, sys; p = json.loads(sys.argv[1]); e = p.get("events") or [[]]
sys.exit(not (len(e) == 1 and "#1 http · <b>front</b> door" in e[0] and p.get("event_html") == ["img", "td", "tr"]))' "$PAGE"
check "phone: the event's thumbnail is shown, 320x180 (a 640x360 picture halved; $(field "$PAGE" thumbnail))" \
    python3 -c 'import json, sys; sys.exit(json.loads(sys.argv[1]).get("thumbnail") != [320, 180])' "$PAGE"
check "phone: 'Key frame now' shows the server's answer ($(field "$PAGE" answer))" grep -q "IDR" <<<"$(field "$PAGE" answer)"
# Requests far larger than any camrec takes: neither is held in memory (peak RSS, before and after).
hwm0=$(vm_hwm_kb $CAM)
big=$(head -c 67108864 /dev/zero | curl -s -m 30 -o /dev/null -w '%{http_code}' -X POST --data-binary @- "$U/api/keyframe")
python3 -c 'import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.settimeout(2)
try: s.sendall(b"GET /api/status HTTP/1.1\r\nHost: camrec\r\nX-Big: " + b"x" * 4_000_000 + b"\r\n\r\n"); s.recv(100)
except OSError: pass' "$P"
hwm1=$(vm_hwm_kb $CAM)
check "request sizes: a 64 MiB POST body and a 4 MB header raise camrec's peak memory by $(( (${hwm1:-0} - ${hwm0:-0}) / 1024 )) MiB (under 16; POST answered $big)" \
    bash -c "[ -n '$hwm0' -a -n '$hwm1' ] && [ $(( ${hwm1:-0} - ${hwm0:-0} )) -lt 16384 ] && [ '$big' = 202 -o '$big' = 429 ]"
check "request sizes: the status still answers afterwards (200)" [ "$(http_code -m 5 "$U/api/status")" = 200 ]
python3 -c 'import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(200)]
print(len(held), flush=True); time.sleep(6)' "$P" >"$W/idle.out" & IDLE=$!; PIDS+=($IDLE)
for _ in $(seq 50); do [ -s "$W/idle.out" ] && break; sleep 0.1; done
check "200 idle connections: all 200 were accepted ($(cat "$W/idle.out"))" [ "$(cat "$W/idle.out")" = 200 ]
check "200 idle connections: the status still answers (200)" [ "$(http_code -m 5 "$U/api/status")" = 200 ]
check "200 idle connections: a snapshot still comes (200)" [ "$(http_code -m 10 "$U/snapshot.jpg")" = 200 ]
kill -INT $CAM
wait_for $CAM 60; rc=$?
kill $IDLE $RECV 2>/dev/null
check "shelf: camrec exits 0 with the idle connections still open (status $rc)" [ $rc -eq 0 ]
# The frames the segments' summary lines count, all together.
shelf_frames=$(grep -oE 'finished output=[^ ]*/shelf/seg-[0-9]+\.mp4 frames=[0-9]+' "$W/shelf.log" | grep -v 'seg-9[89]\.mp4' |
    grep -o '[0-9]*$' | awk '{ n += $1 } END { print n + 0 }')
all=$(for f in $(ls "$W"/shelf/seg-{?,??}.mp4 | grep -v 'seg-9[89]' | sort -V); do counters_of "$f"; echo; done | tr '\n' ' ' | tr -s ' ' | sed 's/ $//')
shelf_dropped=$(dropped_of "$W/shelf.log")
# The second scrape came mid-recording: what it counted dropped then is part of the recording's total.
check "metrics: nothing errored (${m_errored:-?}), dropped so far (${m_dropped:-?}) no more than the recording's dropped=${shelf_dropped:-?} at the end (at most $MAX_DROPPED)" \
    bash -c "[[ '$m_errored' = 0 && '$m_dropped' =~ ^[0-9]+$ && '$shelf_dropped' =~ ^[0-9]+$ ]] && [ ${m_dropped:-1} -le ${shelf_dropped:-0} -a ${shelf_dropped:-99999} -le $MAX_DROPPED ]"
check "shelf: the segments hold the ${shelf_frames:-?} frames their summaries count (at least 300) from 0 in order, the missing numbers exactly the ${shelf_dropped:-?} reported dropped" \
    awk -v d="${shelf_dropped:--1}" -v n="${shelf_frames:-0}" '{ for (i = 1; i <= NF; i++) if ($i == "?" || (i > 1 && $i <= $(i - 1))) bad = 1 }
        END { exit bad || NF != n || n < 300 || $1 != 0 || $NF + 1 - NF != d }' <<<"$all"


# --- 8. /stream.mjpg from the test pattern: one JPEG encode per frame, shared by every viewer -----------
# 1280x720 at 15 fps. A viewer that never reads (Tests/tools/mjpeg-parts.py --never-read) joins first: it
# fills the kernel's buffers (about 3 MB) in some 7 s and camrec drops it 5 s later (measured 11.3-12.3 s).
# Meanwhile camrec's CPU time (/proc/PID/stat) in two windows: the never-reading viewer alone (one JPEG a
# frame made, none taken off the socket), then 20 viewers reading 20 parts each. Once it is dropped, SIGINT. The parts are split and compared by mjpeg-parts.py.
next_port; P=$PORT; U="http://127.0.0.1:$P"
"$CAMREC" --test-pattern --size 1280x720 --fps 15 --frames 9000 --http "127.0.0.1:$P" "$W/mjpeg.mkv" 2>"$W/mjpeg.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$CAM/stat" 2>/dev/null; }
now() { date +%s.%N; }
python3 "$TOOLS/mjpeg-parts.py" "$U/stream.mjpg" --never-read 30 >"$W/mjpeg-never.json" & NEVER=$!; PIDS+=($NEVER)
sleep 0.5
c2=$(cpu_ticks) t2=$(now); sleep 2; c3=$(cpu_ticks) t3=$(now)
twenty=$(python3 "$TOOLS/mjpeg-parts.py" "$U/stream.mjpg" --parts 20 --viewers 20)
c4=$(cpu_ticks) t4=$(now)
slow=$(python3 "$TOOLS/mjpeg-parts.py" "$U/stream.mjpg?fps=2" --parts 4)
refused=$(for q in 0 -1 nan inf 1e9 abc; do curl -s -o "$W/fps.body" -w '%{http_code}' "$U/stream.mjpg?fps=$q"; echo " $q $(grep -c . "$W/fps.body")"; done)
wait $NEVER
kill -INT $CAM
wait_for $CAM 60; rc=$?
echo "   20 viewers: $twenty"; echo "   ?fps=2: $slow"; echo "   never reading: $(cat "$W/mjpeg-never.json")"
check "?fps= of 0, -1, nan, inf, 1e9 and abc: each refused with 400 and a one-line reason ($(echo $refused))" \
    bash -c "[ \"\$(grep -c '^400 .* 1\$' <<<'$refused')\" = 6 ]"
check "/stream.mjpg, 20 viewers at once: each got 20 parts framed as multipart/x-mixed-replace (framing: $(field "$twenty" framing))" \
    [ "$(field "$twenty" framing)/$(field "$twenty" parts)" = "ok/[20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20]" ]
check "20 viewers: each frame's parts byte-identical for all of them, one JPEG a frame ($(field "$twenty" distinct_jpegs) distinct JPEGs for $(field "$twenty" frames) frames, $(field "$twenty" frames_with_several_jpegs) frames with several)" \
    bash -c "[ '$(field "$twenty" frames_with_several_jpegs)' = 0 ] && [ '$(field "$twenty" distinct_jpegs)' = '$(field "$twenty" frames)' ] && [ '$(field "$twenty" frames)' -ge 20 ]"
# camrec's CPU a second with one JPEG a frame made (the never-reading viewer's window) and with the 20
# viewers: about the same when they share one encode a frame, and they then get every frame between their
# first and last (the union of their parts has no gap). An encode per viewer (a breakage: 21 encodes a
# frame) kept the CPU a second about the same but slowed the pictures to 2 a second, gaps between them.
rates=$(awk -v c="$c2" -v d="$c3" -v e="$c4" -v tc="$t2" -v td="$t3" -v te="$t4" \
    'BEGIN { printf "%.1f %.1f", (d - c) / (td - tc), (e - d) / (te - td) }')
read -r r_one r_twenty <<<"$rates"
# Every frame: every one the recording beside them holds in that span (a paced source on a busy machine
# drops a frame now and then, from the file as from the viewers; measured once beside stress-ng).
span=$(counters_of "$W/mjpeg.mkv" | tr ' ' '\n' | awk -v f="$(field "$twenty" first_frame)" -v l="$(field "$twenty" last_frame)" \
    'f != "" && l != "" && $1 >= f && $1 <= l { n++ } END { print n + 0 }')
check "20 viewers cost one JPEG encode a frame: camrec's CPU ${r_twenty:-?} ticks/s against ${r_one:-?} with one JPEG a frame (at most twice), and they got every frame from $(field "$twenty" first_frame) to $(field "$twenty" last_frame) that the recording holds ($(field "$twenty" frames) of ${span:-?})" \
    awk -v o="$r_one" -v t="$r_twenty" -v n="$(field "$twenty" frames)" -v s="${span:-0}" 'BEGIN { exit !(o != "" && t != "" && t <= 2 * o && n == s && s >= 20) }'
step=$(awk -v f="$(field "$slow" first_frame)" -v l="$(field "$slow" last_frame)" 'BEGIN { if (f == "" || l == "") exit; printf "%.1f", (l - f) / 3 }')
check "?fps=2 from a 15 fps source: 4 parts about 7.5 frames apart (frames $(field "$slow" first_frame)..$(field "$slow" last_frame), ${step:-?} apart)" \
    awk -v s="${step:-0}" -v p="$(field "$slow" parts)" 'BEGIN { exit !(p == "[4]" && s >= 6.5 && s <= 8.5) }'
closed=$(field "$(cat "$W/mjpeg-never.json")" closed_after)
recorded=$(grep -o 'finished output=.* frames=[0-9]*' "$W/mjpeg.log" | grep -o '[0-9]*$')
held=$(accounts "$W/mjpeg.mkv" "${recorded:-0}" "$W/mjpeg.log"); held_rc=$?
check "a viewer that never reads is dropped (after ${closed:-never} s) and held nothing up: camrec exits 0 (status $rc), its ${recorded:-?} frames in the file by ffprobe, numbers from 0 rising ($held)" \
    bash -c "[ $rc -eq 0 ] && [ -n '$closed' ] && [ ${recorded:-0} -ge 150 ] && [ $held_rc -eq 0 ]"


# --- 9. HLS: /live.m3u8 ------------------------------------------------------------------------------
# A 24 s recording at 640x360, 30 fps, an IDR a second. While it runs, at once: ffmpeg and GStreamer's
# hlsdemux play the playlist for about 8 and 10 s, decoding every segment they fetch; the page plays with
# ManagedMediaSource in place of MediaSource (as on an iPhone); Chromium is asked to play the playlist
# natively; a fetcher asks for a segment and never reads; 7 s in, Tests/tools/hls-check.py reads the
# playlist and every segment in it. And 13 s after the first request the window (6 segments of about a
# second) has moved on, the segment that left it last still served (RFC 8216 6.2.2: for its own duration
# plus the playlist's, about 7 s), and 21 s after it the first segment is gone.
next_port; P=$PORT; U="http://127.0.0.1:$P"
"$CAMREC" --test-pattern --size 640x360 --fps 30 --keyframe-interval 30 --frames 720 --http "127.0.0.1:$P" "$W/hls.h264" 2>"$W/hls.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
t_ask=$(now)
first_code=$(curl -s -o "$W/first.m3u8" -w '%{http_code}' -m 15 "$U/live.m3u8")
first_wait=$(awk -v a="$t_ask" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
timeout 40 ffmpeg -v error -i "$U/live.m3u8" -t 8 -map 0:v:0 -c:v rawvideo -pix_fmt gray -f nut -y "$W/hls-ff.nut" 2>"$W/hls-ff.err" & FF=$!; PIDS+=($FF)
timeout -s INT 12 gst-launch-1.0 souphttpsrc location="$U/live.m3u8" ! hlsdemux ! decodebin ! videoconvert \
    ! video/x-raw,format=I420 ! y4menc ! filesink location="$W/hls-gst.y4m" >"$W/hls-gst.out" 2>&1 & GST=$!; PIDS+=($GST)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /live.m3u8 HTTP/1.1\r\nHost: camrec\r\n\r\n"); time.sleep(1)
head = s.recv(65536).decode(errors="replace"); segment = [l for l in head.split("\n") if l.endswith(".m4s")][-1].strip()
for _ in range(3): s.sendall(b"GET " + segment.encode() + b" HTTP/1.1\r\nHost: camrec\r\n\r\n")
time.sleep(15)' "$P" 2>"$W/slow.err" & SLOW=$!; PIDS+=($SLOW)
(sleep 7; python3 "$TOOLS/hls-check.py" "$U/live.m3u8" "$W/hls-segments" 30 >"$W/hls-check.json" 2>"$W/hls-check.err") & CHECKER=$!; PIDS+=($CHECKER)
# 13 s after the first request the window has moved on: at most 6 segments, the one before them still
# served; 21 s after it the first is gone.
(while awk -v a="$t_ask" -v b="$(now)" 'BEGIN { exit !(b - a < 13) }'; do sleep 0.5; done
 curl -s -m 15 "$U/live.m3u8" >"$W/late.m3u8"
 left=$(( $(sed -n 's/^#EXT-X-MEDIA-SEQUENCE://p' "$W/late.m3u8" | tr -d '\r') - 1 ))
 curl -s -o /dev/null -w "$left %{http_code}" "$U/hls/$left.m4s" >"$W/recent"
 while awk -v a="$t_ask" -v b="$(now)" 'BEGIN { exit !(b - a < 21) }'; do sleep 0.5; done
 curl -s -o /dev/null -w '%{http_code}' "$U/hls/0.m4s" >"$W/gone") & LATE=$!; PIDS+=($LATE)
MMS=$(python3 "$TOOLS/browser-edge.py" "$U/?mse" 5 --managed 2>"$W/mms.err") ||
    MMS="{\"error\": \"browser-edge failed: $(tail -1 "$W/mms.err" | tr -d '"\\')\"}"
# After the page, not beside it: two Chromiums beside ffmpeg, GStreamer and the netem minute made the
# recording drop 23 frames at load 14-17.
python3 "$TOOLS/browser-hls.py" "$U" /live.m3u8 5 >"$W/native.json" 2>"$W/native.err"
wait $FF; ff_rc=$?
wait $GST
wait $CHECKER && HLS=$(cat "$W/hls-check.json") ||
    HLS="{\"error\": \"hls-check failed: $(tail -1 "$W/hls-check.err" | tr -d '"\\')\"}"
echo "   HLS playlist: $HLS"; echo "   ManagedMediaSource page: $MMS"
# Not a check of camrec: whether this Chromium plays HLS itself (156 answers canPlayType "maybe", then fails with 4).
echo "   Chromium given /live.m3u8 in a <video>, no script: $(cat "$W/native.json")"
wait $LATE
wait_for $CAM 40; rc=$?
kill $SLOW 2>/dev/null; wait $SLOW 2>/dev/null
# in_recording NUMBERS: the frame numbers in file NUMBERS (one a line) are a run of the recording's own,
# from the first of them, with nothing left out (the recording may have dropped a frame: so may they).
in_recording() {
    local want; want=$(counters_of "$W/hls.h264" | tr ' ' '\n' | awk -v f="$(head -1 "$1")" '$1 == f { on = 1 } on' | head -n "$(wc -l <"$1")")
    [[ -s $1 && $want == "$(cat "$1")" ]]
}
check "/live.m3u8: the first request, which starts the packager, answered 200 within 3 s ($first_code after $first_wait s), an #EXTM3U playlist" \
    eval "[ '$first_code' = 200 ] && at_most '$first_wait' 3 && [ \"\$(head -1 '$W/first.m3u8')\" = '#EXTM3U' ]"
check "/live.m3u8: type application/vnd.apple.mpegurl, version 7, EXT-X-MAP, segment numbers following EXT-X-MEDIA-SEQUENCE ($(field "$HLS" media_sequence)), no EXTINF over EXT-X-TARGETDURATION $(field "$HLS" target) ($(field "$HLS" over_target))" \
    [ "$(field "$HLS" content_type)/$(field "$HLS" version)/$(field "$HLS" numbered)/$(field "$HLS" over_target)" = "application/vnd.apple.mpegurl/7/True/0" -a -n "$(field "$HLS" map)" ]
check "HLS segments: each of the $(field "$HLS" segments) begins with a key frame by ffprobe ($(field "$HLS" first_key)); their $(field "$HLS" frames) burned-in numbers, none unreadable ($(field "$HLS" unreadable)), are the recording's own across the window, nothing left out" \
    eval "[ '$(field "$HLS" first_key)' = '$(field "$HLS" segments)' ] && [ '$(field "$HLS" segments)' -ge 2 ] && [ '$(field "$HLS" unreadable)' = 0 ] && in_recording '$W/hls-segments/numbers'"
check "HLS segments: EXTINF is each segment's span of frame numbers at 30 fps (off by $(field "$HLS" extinf_error_ms) ms, at most 34: a frame)" \
    at_most "$(field "$HLS" extinf_error_ms)" 34
# The newest segment listed ends at the IDR that closed it: at most a picture group (1 s) before the fetch.
# PROGRAM-DATE-TIME is each first frame's capture time: measured 0-13 ms off the frame numbers, 52 at load
# 12-15 (the pattern's frames made late), so 100 (3 frames).
check "HLS PROGRAM-DATE-TIME: consecutive segments apart by their frame numbers at 30 fps (off by $(field "$HLS" pdt_error_ms) ms, at most 100); the newest ends $(field "$HLS" live_age) s before the fetch by this machine's clock (0 to 1.5)" \
    eval "at_most '$(field "$HLS" pdt_error_ms)' 100 && between '$(field "$HLS" live_age)' -0.05 1.5"
{ counters_of "$W/hls-ff.nut" | tr ' ' '\n'; echo; } >"$W/hls-ff.numbers"
check "ffmpeg -i /live.m3u8: $(wc -l <"$W/hls-ff.numbers") frames decoded (at least 200) with no error ($(head -c 200 "$W/hls-ff.err")), the recording's own numbers with nothing left out" \
    eval "[ $ff_rc -eq 0 ] && [ ! -s '$W/hls-ff.err' ] && at_least \$(wc -l <'$W/hls-ff.numbers') 200 && in_recording '$W/hls-ff.numbers'"
{ counters_of "$W/hls-gst.y4m" | tr ' ' '\n'; echo; } >"$W/hls-gst.numbers"
check "GStreamer souphttpsrc ! hlsdemux: $(wc -l <"$W/hls-gst.numbers") frames decoded (at least 150), no error or warning ($(grep -m1 -E 'ERROR|WARNING' "$W/hls-gst.out")), the recording's own numbers with nothing left out" \
    eval "! grep -qE 'ERROR|WARNING' '$W/hls-gst.out' && at_least \$(wc -l <'$W/hls-gst.numbers') 150 && in_recording '$W/hls-gst.numbers'"
NATIVE=$(cat "$W/native.json")
native_first=$(field "$NATIVE" counter_first) native_last=$(field "$NATIVE" counter_last)
native_moved=$(( ${native_last:-0} - ${native_first:-0} ))
# Chromium 156 plays HLS itself (its canPlayType says "maybe"); the page still takes MSE where it has it.
check "Chromium plays /live.m3u8 itself in a <video> (canPlayType $(field "$NATIVE" can_play_type)): no error ($(field "$NATIVE" error)), $(field "$NATIVE" frames) frames, $(field "$NATIVE" corrupted) corrupted, the picture's number from ${native_first:-?} to ${native_last:-?} (at least 90 on: 3 of its 5 s)" \
    eval "[ -z '$(field "$NATIVE" error)' ] && [ '$(field "$NATIVE" corrupted)' = 0 ] && [ -n '$native_first' ] && at_least $native_moved 90"
check "the page where only ManagedMediaSource exists: it used it ($(field "$MMS" managed_used)) with remote playback off ($(field "$MMS" disable_remote_playback)), played ($(field "$MMS" frames) frames, error $(field "$MMS" error), numbers backwards $(field "$MMS" counters_backwards)) and says so ($(field "$MMS" shown_text))" \
    eval "[ '$(field "$MMS" managed_used)/$(field "$MMS" disable_remote_playback)/$(field "$MMS" error)/$(field "$MMS" counters_backwards)' = 1/True//0 ] && at_least '$(field "$MMS" frames)' 60 && grep -q ManagedMediaSource <<<'$(field "$MMS" shown_text)'"
late_segments=$(grep -c '\.m4s$' "$W/late.m3u8")
read -r recent_seq recent_code <"$W/recent"
check "the HLS window moved on: 13 s after the first request the playlist lists $late_segments segments (1 to 6), segment $recent_seq, which just left it, is still served ($recent_code: 200), and 21 s after it the first is gone ($(cat "$W/gone"): 404)" \
    eval "[ $late_segments -ge 1 -a $late_segments -le 6 ] && [ '$recent_seq' -ge 1 ] && [ '$recent_code' = 200 ] && [ '$(cat "$W/gone")' = 404 ]"
hls_dropped=$(dropped_of "$W/hls.log")
check "HLS fetchers, Chromium and one that never reads held nothing up: camrec exits 0 (status $rc) and the file beside holds 720 frames from 0, the missing exactly the ${hls_dropped:-?} reported dropped (at most $MAX_DROPPED)" \
    eval "[ $rc -eq 0 ] && accounts '$W/hls.h264' 720 '$W/hls.log'"

# --- 10, after the rest: the live page on a bad network ---------------------------------------------------
# Alone, not beside other sections: beside sections 1-4 (booting the emulated VM takes a core, Chromium and
# camrec more) their recordings dropped 19-299 frames at load 22-25; beside 8 and 9 the VM, which stands in
# for the network, lagged under the HLS players' load (its relay never got 2536 of the picture's packets,
# the WebRTC page 5.8 s behind at the end, load 7), and at niceness -10 it took from them instead (their
# recording dropped 61 frames).
# Two Chromiums watch the page for 60 s, one over MSE and one over WebRTC, at once, through `netem delay
# 50ms 20ms loss 1%` in the test VM (Tests/lib/netem-live.sh; this machine's kernel has no netem), each
# picture held against live by the test pattern's own clock, read outside camrec
# (Tests/tools/pattern_clock.py); the checks are at the end. Ten minutes of the same are
# Tests/soak/live-edge.sh, run by hand. Without the page's catch-up MSE ended 633 ms behind capture (it
# rose from 400 to 600 ms in the first 20 s, one stall after another), with it 200 ms.
source Tests/lib/netem-live.sh
EDGE_PORTS=(); for _ in 1 2 3 4 5; do next_port; EDGE_PORTS+=($PORT); done
netem_live 60 edge "${EDGE_PORTS[*]}"

echo "   bad network, load $(cut -d' ' -f1-3 /proc/loadavg): MSE $(cat "$W/edge-mse.json" 2>/dev/null); WebRTC $(cat "$W/edge-webrtc.json" 2>/dev/null); $(grep 'relayed' "$W/edge-vm.log")"
# What the stand-in network itself held WebRTC's picture beyond netem's delay near the end (netem_held).
HELD=$(netem_held edge 60)
held_ms=$(field "$HELD" held_ms)
echo "   the stand-in network, WebRTC's picture: $(head -1 "$W/edge-transit.txt" 2>/dev/null); $(sed -n "s/^stream //p" "$W/edge-transit.txt" 2>/dev/null | tr "\n" ";"); beyond the least, the 95th percentile of each 10 s $(field "$HELD" p95_by_10s) ms"
# WebRTC's frame count is held to 1200 of the minute's 1800 through netem's 1% loss. When the stand-in
# network itself loses more (the emulated VM starved: at load 8.8 in CI's run of 819f077, 2026-11-30, 1142
# of the picture's 3083 packets never reached the relay and the page showed 1188 frames), the bound is
# scaled by the share of the picture's packets that came back out of the VM over netem's 99%, counted on
# this host as they went in and out (udp-transit.py: packets camrec numbered and never sent are not
# excused; they are gaps on the way in).
read -r _ in_packets in_gaps out_packets <<<"$(awk -v types=" $(field "$(cat "$W/edge-webrtc.json" 2>/dev/null)" answer_h264_types) " \
    '$1 == "stream" { split($2, id, "/"); if (index(types, " " id[2] " ")) print $2, $4, $6, $8 }' "$W/edge-transit.txt" 2>/dev/null | sort -k2 -n | tail -1)"
webrtc_frames=$(awk -v i="${in_packets:-0}" -v o="${out_packets:-0}" 'BEGIN { c = (i > 0) ? o / i / 0.99 : 1; if (c > 1) c = 1; printf "%d", 1200 * c + 0.999 }')
carried="the stand-in network carried ${out_packets:-?} of the ${in_packets:-?} packets of the picture camrec sent into it (${in_gaps:-?} numbered and never sent)"
for kind in MSE WebRTC; do
    EDGE_R=$(cat "$W/edge-${kind,,}.json" 2>/dev/null)
    [[ $kind == MSE ]] && plays="'playing MSE'*" || plays="'playing WebRTC'"
    # A sample of WebRTC's picture read a lower number than the one before once in a minute (the http suite,
    # before NACK/RTX) and once in ten (a soak); never since in 28 minutes at 0-5% loss with and without
    # NACK/RTX, nor in any of 23 900 presented pictures each read (requestVideoFrameCallback). The cause is
    # not known (docs/HTTP.md, "Keeping up with live"), so WebRTC is held to what was measured, at most one;
    # MSE to none. Each presented picture's counts are printed to tell, if it comes again, which layer it was.
    backwards=$(field "$EDGE_R" counters_backwards)
    [[ $kind == MSE ]] && allowed=0 least=1200 through="" || allowed=1 least=$webrtc_frames through="; $carried"
    each=$(python3 -c 'import json, sys; e = json.loads(sys.argv[1]).get("each") or {}
print("%s presented, numbers back %s %s, mediaTime back %s, RTP time back %s" % tuple(e.get(k) for k in
      ("presented", "numbers_back", "back_at", "media_time_back", "rtp_back")))' "$EDGE_R" 2>/dev/null)
    check "bad network (netem 50 ms ± 20 ms, 1% loss), $kind: the page played it through for 60 s ($(field "$EDGE_R" transport); error $(field "$EDGE_R" error), $(field "$EDGE_R" frames) frames, $(field "$EDGE_R" corrupted) corrupted, numbers backwards ${backwards:-?} (at most $allowed; of each picture: $each); at least $least frames$through)" \
        eval "[[ -z '$(field "$EDGE_R" error)' && '$(field "$EDGE_R" transport)' == $plays ]] && [ '$(field "$EDGE_R" corrupted)' = 0 ] && at_most '$backwards' $allowed && at_least '$(field "$EDGE_R" frames)' $least"
    # WebRTC's bound: 0.5 s and what the stand-in network held its packets beyond netem's delay in the last
    # 30 s (the most of each 10 s's 95th percentile); MSE's, over TCP with its own catch-up, 0.5 s alone.
    if [[ $kind == MSE ]]; then bound=500 beyond=""; else
        bound=$(( 500 + ${held_ms:-0} )) beyond=" and the ${held_ms:-?} ms the stand-in network held its packets beyond netem's delay in the last 30 s (timed on this host going into the VM and out)"
    fi
    check "bad network, $kind: at the end the picture is within 0.5 s of live by the pattern's clock (read outside camrec from $(field "$EDGE_R" truth_frames) pictures, $(field "$EDGE_R" truth_unread) unreadable, spread $(field "$EDGE_R" truth_spread_ms) ms)$beyond: behind by $(field "$EDGE_R" end_behind_ms_median) ms, the median of the last 10 s (at most $bound; by 10 s: $(field "$EDGE_R" behind_ms_by_10s))" \
        eval "at_most '$(field "$EDGE_R" end_behind_ms_median)' $bound && at_least '$(field "$EDGE_R" truth_frames)' 1500 && [ '$(field "$EDGE_R" truth_unread)/$(field "$EDGE_R" truth_backwards)' = 0/0 ]"
done
# What camrec sent the browser, read from the RTP headers by the relay in the VM (udp-relay.py: SRTP leaves
# them in the clear), one "rtp SSRC/PT packets N timestamps back K" a stream: the picture's, on the H.264
# payload type of camrec's answer, and RTX's, on its rtx type. (Not "the most packets": through a loaded
# machine Chromium once asked for so much again that RTX carried 2276 packets to the picture's 1934, and
# RTX's timestamps go back by design, a packet sent again being older than the one before it.)
EDGE_R=$(cat "$W/edge-webrtc.json" 2>/dev/null)
relay_streams() {  # relay_streams "PT ...": the relay's streams on those types, "SSRC/PT PACKETS BACK MISSING LATE" each
    grep -o 'rtp [0-9]*/[0-9]* packets [0-9]* timestamps back [0-9]* missing [0-9]* late [0-9]*' "$W/edge-vm.log" |
        awk -v types=" $1 " '{ split($2, id, "/"); if (index(types, " " id[2] " ")) print $2, $4, $7, $9, $11 }'
}
read -r rtp_ssrc rtp_packets rtp_back rtp_missing rtp_late <<<"$(relay_streams "$(field "$EDGE_R" answer_h264_types)" | sort -k2 -n | tail -1)"
# Not checked, said: loss and lag that arose before the network under test (in the VM's own forwarding).
echo "   the picture's packets at the relay, before netem: ${rtp_missing:-?} never came, and they came up to ${rtp_late:-?} ms later than their RTP time's earliest"
rtx_packets=$(relay_streams "$(field "$EDGE_R" answer_rtx_types)" | awk '{ n += $2 } END { print n + 0 }')
check "bad network, WebRTC: camrec's RTP timestamps never went back: of the ${rtp_packets:-0} packets of its picture (SSRC/PT ${rtp_ssrc:-none}) the relay read, ${rtp_back:-?} had a lower timestamp than the packet before by sequence number (none allowed; at least 1500 read)" \
    eval "[ '$rtp_back' = 0 ] && at_least '$rtp_packets' 1500"
# Through the 1% loss Chromium asks for each packet it misses (NACK) and camrec sends it again on RTX
# (RFC 4588; NACKs come also for packets netem's jitter only reordered). Chromium's own counters say so.
check "bad network, WebRTC: lost packets are sent again: the answer offers NACK ($(field "$EDGE_R" answer_nack)) and RTX for H.264 ($(field "$EDGE_R" answer_rtx)); Chromium lost $(field "$EDGE_R" packets_lost) packets, sent $(field "$EDGE_R" nack_count) NACKs and received $(field "$EDGE_R" retransmitted_received) packets again (at least 1; the relay passed $rtx_packets on RTX), $(field "$EDGE_R" freeze_count) freezes" \
    eval "[ '$(field "$EDGE_R" answer_nack)/$(field "$EDGE_R" answer_rtx)' = True/True ] && at_least '$(field "$EDGE_R" nack_count)' 1 && at_least '$(field "$EDGE_R" retransmitted_received)' 1"

finish
