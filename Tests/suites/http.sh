#!/bin/bash
# Tests/suites/http.sh — `--http`: the live page in a real browser, the WebSocket that feeds it, the
# status API and the rules for who may connect (issue 13, first part).
#
# Checks: headless Chromium (Debian's chromium + chromium-driver, driven by Selenium:
# Tests/tools/browser-live.py) loads camrec's page and plays live video within seconds, advancing with
# the wall clock, under a second behind the buffered live edge, nothing corrupted, and the frame
# number burned into the picture (read back from the page's pixels) moving on; the MP4 recorded
# beside it holds every frame. The page's delay behind capture is printed (docs/PERFORMANCE.md). An independent WebSocket client (Tests/tools/ws-client.py, stdlib
# only) gets the codec string, an init segment and one fragment per frame, which ffprobe reads as
# MP4 starting on a key frame and holding consecutive burned-in frame numbers. /api/status answers
# JSON that agrees with the recording. Viewers that never read neither stall the recording nor keep
# camrec from ending; past the viewer limit, upgrades are refused. A non-loopback address without
# credentials, or an auth file that is a FIFO, is a usage error (64) and records nothing; with
# --http-auth-file, no or wrong credentials get 401 (a WebSocket upgrade is refused), the right ones
# 200; POST /api/keyframe puts an IDR into the file (and a second one within a second is refused),
# POST /api/rotate continues the recording in a new file from an IDR, as SIGHUP does; a port in use
# is 75 with nothing recorded.
#
# Environment: CAMREC=path   test this binary instead of building with `swift build`
#              KEEP=1        keep the work directory
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=http
NET_PORT_BASE=43000
source Tests/lib/net-suite.sh
TOOLS=$PWD/Tests/tools
[[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] || { fail "no /usr/bin/chromium or chromedriver (scripts/setup.sh --test installs them)"; finish; }
python3 -c 'import selenium' 2>/dev/null || { fail "no Selenium for python3 (scripts/setup.sh --test installs it)"; finish; }
WS="python3 $TOOLS/ws-client.py"
# field JSON NAME: one value of a JSON object.
field() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b) }'; }
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 < b) }'; }
http_code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# --- 1. The live page in Chromium, with an MP4 recorded beside it -----------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --size 640x360 --fps 30 --frames 600 --http "127.0.0.1:$P" "$W/rec.mp4" 2>"$W/live.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
LIVE=$(python3 "$TOOLS/browser-live.py" "http://127.0.0.1:$P/" 6 "$W/page.png" 2>"$W/browser.err") ||
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
wait_for $CAM 60; rc=$?
check "page: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
check "page: the MP4 beside it holds every frame 0..599 in order" counters_run "$W/rec.mp4" 0 599

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
check "status: frames counted so far ($(field "$STATUS" frames)), none dropped" \
    bash -c "[ '$(field "$STATUS" dropped)' = 0 ] && awk 'BEGIN { exit !(\"$(field "$STATUS" frames)\" + 0 > 0) }'"
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
check "websocket: the frames carry consecutive numbers ${first:-?}..$((${first:-0} + ${frames:-1} - 1))" counters_run "$W/live.mp4" "${first:-0}" $((${first:-0} + ${frames:-1} - 1))
wait_for $CAM 60; rc=$?
kill $HOLD 2>/dev/null
check "websocket: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
check "websocket: the file beside holds every frame 0..299" counters_run "$W/rec2.h264" 0 299

# --- 3. Viewers that never read, and the viewer limit ------------------------------------------------
next_port; P=$PORT
"$CAMREC" --test-pattern --size 1280x720 --fps 30 --frames 300 --bitrate 8000000 --http "$P" "$W/rec3.h264" 2>"$W/stuck.log" & CAM=$!; PIDS+=($CAM)
wait_listen "$P"
$WS hold 127.0.0.1 "$P" 40 30 >"$W/hold.json" & HOLD=$!; PIDS+=($HOLD)
wait_for $CAM 40; rc=$?
statuses=$(head -1 "$W/hold.json")
check "stuck viewers: 32 of 40 upgrades accepted, the rest refused ($statuses)" \
    bash -c "[ \"\$(python3 -c 'import json,sys; d=json.loads(sys.argv[1])[\"statuses\"]; print(d.get(\"101\",0), sum(v for k,v in d.items() if k!=\"101\"))' '$statuses')\" = '32 8' ]"
check "stuck viewers: camrec ends on its own with 32 viewers that never read (status $rc)" [ $rc -eq 0 ]
check "stuck viewers: the file beside holds every frame 0..299" counters_run "$W/rec3.h264" 0 299
check "stuck viewers: nothing dropped" grep -q "dropped=0" "$W/stuck.log"
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
"$CAMREC" --test-pattern --size 640x360 --frames 240 --http "0.0.0.0:$P" --http-auth-file "$W/auth" "$W/auth.h264" 2>"$W/auth.log" & CAM=$!; PIDS+=($CAM)
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
check "auth: an unknown path gets 404" [ "$(http_code -u 'viewer:pa:ss w0rd' "http://127.0.0.1:$P/etc/passwd")" = 404 ]
wait_for $CAM 40

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
check "rotate: rot.h264 holds frames 0..$((${split:-1} - 1))" counters_run "$W/rot.h264" 0 $((${split:-1} - 1))
check "rotate: a second file, rot-2.h264, was started" [ -s "$W/rot-2.h264" ]
check "rotate: the recording goes on in rot-2.h264, frames ${split:-?}..239" counters_run "$W/rot-2.h264" "${split:-0}" 239
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

finish
