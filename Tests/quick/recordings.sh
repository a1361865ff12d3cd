#!/bin/bash
# Tests/quick/recordings.sh — what `scripts/test.sh --quick` adds to `swift test`: one end-to-end
# recording for each output kind the XCTests do not record through the camrec binary: a container
# (MP4 and Matroska) and a media-server publish (RTMP to ffmpeg's own listener). The full suites
# (containers.sh, publish.sh) check these in depth; this is the inner loop's smoke test, seconds long.
# Not in Tests/suites, so the full run does not repeat it.
#
# Checks: every frame 0..59 is in the file or reaches the server, in order (the burned-in numbers,
# Tests/tools/pattern-counters.py), decodable, camrec exits 0.
#
# Environment: CAMREC=path   test this binary instead of building with `swift build`
#              KEEP=1        keep the work directory
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=quick-recordings
source Tests/lib/net-suite.sh

for ext in mp4 mkv; do
    "$CAMREC" --test-pattern --frames 60 --keyframe-interval 30 "$W/q.$ext" 2>"$W/$ext.log"; rc=$?
    check "$ext: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
    check "$ext: every frame 0..59, in order" counters_run "$W/q.$ext" 0 59
    check "$ext: decodes without an error" no_decode_errors "$W/q.$ext"
done

next_port
ffmpeg -v error -y -listen 1 -f flv -i "rtmp://127.0.0.1:$PORT/live/cam" -c copy -f mpegts "$W/rtmp.ts" 2>"$W/rtmp-server.log" &
SERVER=$!; PIDS+=($SERVER)
if wait_listen "$PORT"; then
    "$CAMREC" --test-pattern --frames 60 --keyframe-interval 30 "rtmp://127.0.0.1:$PORT/live/cam" 2>"$W/rtmp.log"; rc=$?
    wait_for "$SERVER" 20 >/dev/null
    check "rtmp to ffmpeg: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
    check "rtmp to ffmpeg: the server received every frame 0..59, in order" counters_run "$W/rtmp.ts" 0 59
    check "rtmp to ffmpeg: decodes without an error" no_decode_errors "$W/rtmp.ts"
else
    fail "rtmp to ffmpeg: the server never listened on $PORT (nothing else was checked)"
fi
finish
