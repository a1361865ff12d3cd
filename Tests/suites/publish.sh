#!/bin/bash
# Tests/suites/publish.sh — publishing to media servers (issue 12): rtmp://, rtsp:// and srt://
# outputs, judged by real servers on loopback that share no code with camrec: ffmpeg's own RTMP,
# RTSP and SRT listeners, srt-live-transmit (Haivision's SRT tools), and nginx with the RTMP module
# (recording to FLV, fanning out to a viewer that pulls RTMP, and cutting HLS, served over HTTP as a
# player would fetch it).
#
# ffmpeg listeners that must start writing at once are run with -probesize 32 -analyzeduration 0
# (otherwise ffmpeg probes the stream for 5 s before it writes anything).
#
# Checks: each server receives every frame 0..149 in order, decodable, with key frames exactly at
# camrec's IDRs (H.264, and H.265 over RTSP and SRT; H.265 to RTMP is a usage error); a server killed mid-stream and started again gets the rest of the stream from an
# IDR to the last frame, and camrec says it reconnected (RTMP, RTSP and SRT); a server that accepts and never answers,
# or one stopped (SIGSTOP) after taking the first seconds of H.265 over RTSP, neither stalls the file
# recorded beside it nor keeps camrec from ending, and a second interrupt stops the wait for it at once; credentials and query
# values in a URL never reach stderr (at the default log level and with libav's own lines at debug);
# malformed URLs are usage errors (64) that leave no file.
#
# Environment: CAMREC=path   test this binary instead of building with `swift build`
#              KEEP=1        keep the work directory
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=publish
NET_PORT_BASE=22000
source Tests/lib/net-suite.sh
source Tests/lib/nginx-rtmp.sh
for tool in nginx srt-live-transmit curl; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || { fail "$tool not found (scripts/setup.sh --test installs it)"; finish; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
RTMP_MODULE=/usr/lib/nginx/modules/ngx_rtmp_module.so
[[ -f $RTMP_MODULE ]] || { fail "no $RTMP_MODULE (Debian's libnginx-mod-rtmp)"; finish; }

# Waits until something has UDP port $1 open (an SRT listener), read from /proc.
wait_udp() {
    local hex; hex=$(printf '%04X' "$1")
    for _ in $(seq 1 100); do
        if awk -v p=":$hex" 'substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' /proc/net/udp /proc/net/udp6 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "nothing has UDP port $1 open"; return 1
}
KEYS="0 30 60 90 120"
# Frames a live test pattern may drop in one case here (and must count): a CPU bound, not a
# correctness one (every case also checks that exactly the counted frames are missing), as a share
# of the frames the case records. Quiet, none; beside one busy loop in a full run (2026-11-25, 2-core
# machine, the VM lane beside it) the 640x360 libx265 encodes dropped up to 48% as many as they
# recorded (72 beside 150 to SRT; 87 beside 240 to an RTSP server stopped mid-stream): 60%.
drop_bound() { echo $(( $1 * 60 / 100 )); }
# server_up WHAT COMMAND...: the wait for a server is a check of its own (a server that never
# listens fails here instead of leaving its case out); its status is the command's.
server_up() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; return 1; fi; }

# publish NAME URL RECEIVED: camrec sends 150 frames (an IDR every 30) to URL while a server writes
# RECEIVED; the server ($SERVER, already started) must end by itself when the stream ends.
# PUBLISH_ARGS adds camrec options.
publish() {
    local name=$1 url=$2 received=$3 rc
    "$CAMREC" --test-pattern ${PUBLISH_ARGS:-} --frames 150 --keyframe-interval 30 "$url" 2>"$W/$name.log"; rc=$?
    wait_for "$SERVER" 20 >/dev/null; SERVER=
    check "$name: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
    local d; d=$(summary_dropped "$W/$name.log" "$url")
    check "$name: the summary says frames=150, dropped=${d:-none} (bound $(drop_bound 150))" summary_counts "$W/$name.log" "$url" 150 "$(drop_bound 150)"
    check "$name: the server received every frame from 0 in order, the numbers missing exactly the ${d:-none} reported dropped" \
        counters_account "$received" "${d:--1}"
    check "$name: key frames exactly at camrec's IDRs ($KEYS)" [ "$(key_frames "$received")" = "$KEYS" ]
    check "$name: decodes without an error" no_decode_errors "$received"
}

# --- 1. ffmpeg's listeners: RTMP, RTSP (ANNOUNCE/RECORD, interleaved TCP), SRT -------------------
next_port
ffmpeg -v error -y -listen 1 -f flv -i "rtmp://127.0.0.1:$PORT/live/cam" -c copy -f mpegts "$W/rtmp.ts" 2>"$W/rtmp-server.log" &
SERVER=$!; PIDS+=($SERVER)
server_up "rtmp to ffmpeg: the server listens on TCP port $PORT" wait_listen "$PORT" && publish "rtmp to ffmpeg" "rtmp://127.0.0.1:$PORT/live/cam" "$W/rtmp.ts"

next_port
ffmpeg -v error -y -rtsp_flags listen -i "rtsp://127.0.0.1:$PORT/cam" -c copy -f mpegts "$W/rtsp.ts" 2>"$W/rtsp-server.log" &
SERVER=$!; PIDS+=($SERVER)
server_up "rtsp to ffmpeg: the server listens on TCP port $PORT" wait_listen "$PORT" && publish "rtsp to ffmpeg" "rtsp://127.0.0.1:$PORT/cam" "$W/rtsp.ts"

next_port
ffmpeg -v error -y -i "srt://127.0.0.1:$PORT?mode=listener" -c copy -f mpegts "$W/srt.ts" 2>"$W/srt-server.log" &
SERVER=$!; PIDS+=($SERVER)
server_up "srt to ffmpeg: the server has UDP port $PORT" wait_udp "$PORT" && publish "srt to ffmpeg" "srt://127.0.0.1:$PORT" "$W/srt.ts"

# --- 1b. H.265 (issue 14): RTSP (RFC 7798 packets) and SRT (MPEG-TS) carry it; RTMP (FLV) cannot -
# (MPEG-TS lists the stream twice, once in its program: the first line is the one.)
codec_of() { ffprobe -v error -select_streams v:0 -show_entries stream=codec_name -of csv=p=0 "$1" | head -n 1; }
next_port
ffmpeg -v error -y -rtsp_flags listen -i "rtsp://127.0.0.1:$PORT/cam" -c copy -f mpegts "$W/rtsp-hevc.ts" 2>"$W/rtsp-hevc-server.log" &
SERVER=$!; PIDS+=($SERVER)
server_up "H.265 rtsp to ffmpeg: the server listens on TCP port $PORT" wait_listen "$PORT" && PUBLISH_ARGS="--codec hevc --size 640x360 --preset ultrafast" publish "H.265 rtsp to ffmpeg" "rtsp://127.0.0.1:$PORT/cam" "$W/rtsp-hevc.ts"
check "H.265 rtsp to ffmpeg: what the server received is H.265" [ "$(codec_of "$W/rtsp-hevc.ts")" = hevc ]

next_port
ffmpeg -v error -y -i "srt://127.0.0.1:$PORT?mode=listener" -c copy -f mpegts "$W/srt-hevc.ts" 2>"$W/srt-hevc-server.log" &
SERVER=$!; PIDS+=($SERVER)
server_up "H.265 srt to ffmpeg: the server has UDP port $PORT" wait_udp "$PORT" && PUBLISH_ARGS="--codec hevc --size 640x360 --preset ultrafast" publish "H.265 srt to ffmpeg" "srt://127.0.0.1:$PORT" "$W/srt-hevc.ts"
check "H.265 srt to ffmpeg: what the server received is H.265" [ "$(codec_of "$W/srt-hevc.ts")" = hevc ]

"$CAMREC" --test-pattern --codec hevc --frames 10 "rtmp://127.0.0.1:1/live/cam" "$W/rtmp-hevc.h265" 2>"$W/rtmp-hevc.log"; rc=$?
check "H.265 to rtmp://: usage error 64 (status $rc), no file, one line saying RTMP carries H.264 only" \
    bash -c "[ $rc -eq 64 ] && [ ! -e '$W/rtmp-hevc.h265' ] && grep -q 'RTMP (FLV) carries H.264 only; publish H.265 over rtsp:// or srt://' '$W/rtmp-hevc.log'"

# --- 2. srt-live-transmit: SRT as Haivision's own tools speak it ---------------------------------
next_port
srt-live-transmit -q -a:no "srt://127.0.0.1:$PORT?mode=listener" file://con >"$W/slt.ts" 2>"$W/slt-server.log" &
SERVER=$!; PIDS+=($SERVER)
server_up "srt to srt-live-transmit: the server has UDP port $PORT" wait_udp "$PORT" && publish "srt to srt-live-transmit" "srt://127.0.0.1:$PORT" "$W/slt.ts"

# --- 3. nginx-rtmp: records FLV and cuts HLS, served over HTTP ----------------------------------
N=$W/nginx
mkdir -p "$N/rec" "$N/hls" "$N/tmp"
next_port; RTMP_PORT=$PORT
next_port; HTTP_PORT=$PORT
{ nginx_conf_head "$N"; cat <<EOF; } >"$N/nginx.conf"
rtmp {
    server {
        listen 127.0.0.1:$RTMP_PORT;
        application live {
            live on;
            record all;
            record_path $N/rec;
            record_unique off;
            hls on;
            hls_path $N/hls;
            hls_fragment 1s;
            hls_playlist_length 60s;
            hls_cleanup off;
        }
    }
}
http {
    access_log off;
    client_body_temp_path $N/tmp; proxy_temp_path $N/tmp; fastcgi_temp_path $N/tmp;
    uwsgi_temp_path $N/tmp; scgi_temp_path $N/tmp;
    server {
        listen 127.0.0.1:$HTTP_PORT;
        location /hls { root $N; types { application/vnd.apple.mpegurl m3u8; video/mp2t ts; } }
    }
}
EOF
"$NGINX" -p "$N" -c "$N/nginx.conf" -e "$N/error.log" 2>"$N/stderr" &
NGINX_PID=$!; PIDS+=($NGINX_PID)
if wait_listen "$RTMP_PORT" && wait_listen "$HTTP_PORT"; then
    url="rtmp://127.0.0.1:$RTMP_PORT/live/cam"
    # A viewer pulling the stream from nginx, there before the camera: nginx fans out what camrec
    # publishes. (ffmpeg does not notice the end of a live RTMP stream: it stops at 150 frames.)
    ffmpeg -v error -y -probesize 32 -analyzeduration 0 -i "$url" -c copy -frames:v 150 -flush_packets 1 \
        -f mpegts "$W/nginx-viewer.ts" 2>"$W/nginx-viewer.log" &
    VIEWER=$!; PIDS+=($VIEWER)
    sleep 1
    "$CAMREC" --test-pattern --frames 150 --keyframe-interval 30 "$url" 2>"$W/nginx.log"; rc=$?
    wait_for "$VIEWER" 10 >/dev/null
    check "nginx-rtmp: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
    nd=$(summary_dropped "$W/nginx.log" "$url")
    check "nginx-rtmp: the summary says frames=150, dropped=${nd:-none} (bound $(drop_bound 150))" summary_counts "$W/nginx.log" "$url" 150 "$(drop_bound 150)"
    sleep 1  # nginx closes the recording and the last HLS fragment when the publisher has gone
    check "nginx-rtmp: its FLV recording holds every frame from 0 in order, the numbers missing exactly the ${nd:-none} reported dropped" \
        counters_account "$N/rec/cam.flv" "${nd:--1}"
    check "nginx-rtmp: its FLV recording has key frames exactly at $KEYS" [ "$(key_frames "$N/rec/cam.flv")" = "$KEYS" ]
    check "nginx-rtmp: a viewer pulling RTMP from nginx got every frame nginx recorded, in order" \
        counters_same "$W/nginx-viewer.ts" "$N/rec/cam.flv"
    check "nginx-rtmp: the viewer's key frames are exactly at $KEYS" [ "$(key_frames "$W/nginx-viewer.ts")" = "$KEYS" ]
    # A player's view: the playlist and its fragments fetched over HTTP, played one after another.
    curl -sf "http://127.0.0.1:$HTTP_PORT/hls/cam.m3u8" >"$W/cam.m3u8"
    : >"$W/hls.ts"
    for fragment in $(grep -v '^#' "$W/cam.m3u8"); do
        curl -sf "http://127.0.0.1:$HTTP_PORT/hls/$fragment" >>"$W/hls.ts"
    done
    check "nginx-rtmp: HLS over HTTP, $(grep -vc '^#' "$W/cam.m3u8") fragments, plays every frame nginx recorded, in order" \
        counters_same "$W/hls.ts" "$N/rec/cam.flv"
else
    fail "nginx-rtmp did not start: $(cat "$N/error.log" "$N/stderr" 2>/dev/null | head -3)"
fi
kill "$NGINX_PID" 2>/dev/null; wait "$NGINX_PID" 2>/dev/null

# --- 4. a server killed mid-stream and started again on the same port, for each protocol ---------
# ffmpeg as the server each time: $1 = protocol, $2 = URL, $3 = output file.
serve() {
    local input
    case $1 in
        rtmp) input=(-listen 1 -f flv -i "$2") ;;
        rtsp) input=(-rtsp_flags listen -i "$2") ;;
        srt) input=(-i "$2?mode=listener") ;;
    esac
    ffmpeg -v error -y -probesize 32 -analyzeduration 0 "${input[@]}" -c copy -flush_packets 1 -f mpegts "$3" 2>/dev/null &
    SERVER=$!; PIDS+=($SERVER)
}
starts_at_zero_and_rises() { [ "$(counters_of "$1" | cut -d' ' -f1)" = 0 ] && counters_increasing "$1" but-last; }
# SRT notices a vanished peer only after its idle timeout (5 s), so it records longer.
declare -A RESTART_FRAMES=([rtmp]=300 [rtsp]=300 [srt]=420)
for proto in rtmp rtsp srt; do
    next_port
    case $proto in
        rtmp) url="rtmp://127.0.0.1:$PORT/live/cam" ;;
        rtsp) url="rtsp://127.0.0.1:$PORT/cam" ;;
        srt) url="srt://127.0.0.1:$PORT" ;;
    esac
    n=${RESTART_FRAMES[$proto]}; last=$((n - 1))
    serve $proto "$url" "$W/first-$proto.ts"
    if [[ $proto == srt ]]; then wait_udp "$PORT"; else wait_listen "$PORT"; fi
    "$CAMREC" --test-pattern --frames "$n" --keyframe-interval 30 "$url" "$W/beside-restart-$proto.h264" 2>"$W/restart-$proto.log" &
    CAM=$!; PIDS+=($CAM)
    sleep 3
    kill -9 "$SERVER"; wait "$SERVER" 2>/dev/null
    sleep 1
    serve $proto "$url" "$W/second-$proto.ts"
    wait_for "$CAM" 40; rc=$?
    wait_for "$SERVER" 20 >/dev/null
    what="$proto server restarted"
    check "$what: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
    check "$what: camrec says it reconnected" grep -q "reconnected (connection #2)" "$W/restart-$proto.log"
    d=$(summary_dropped "$W/restart-$proto.log" "$W/beside-restart-$proto.h264")
    check "$what: the file beside it has all $n frames, dropped=${d:-none} (bound $(drop_bound "$n"))" \
        summary_counts "$W/restart-$proto.log" "$W/beside-restart-$proto.h264" "$n" "$(drop_bound "$n")"
    check "$what: the file beside it: every frame from 0 in order, the numbers missing exactly the ${d:-none} reported dropped" \
        counters_account "$W/beside-restart-$proto.h264" "${d:--1}"
    check "$what: the first server's frames start at 0 and rise" starts_at_zero_and_rises "$W/first-$proto.ts"
    first=$(counters_of "$W/second-$proto.ts"); first=${first%% *}
    check "$what: the second server's stream starts at a key frame (frame ${first:-none})" \
        [ "$(key_frames "$W/second-$proto.ts" | cut -d' ' -f1)" = 0 ]
    check "$what: the second server has every frame of the file beside it from ${first:-none} to its end, in order" \
        counters_tail "$W/second-$proto.ts" "$W/beside-restart-$proto.h264"
    # The one IDR asked for is the immediate reconnect's when the session broke; none while the server
    # was known to be down (the session resumed at the next IDR of camrec's cadence).
    idrs=$(key_frames "$W/beside-restart-$proto.h264")
    idr_counters=$(key_frame_counters "$W/beside-restart-$proto.h264")
    check "$what: the second server's first frame (${first:-none}) is an IDR of the file beside it ($idr_counters)" \
        grep -qw "${first:-none}" <<<"$idr_counters"
    check "$what: at most one IDR forced for it: the file beside has at most $((n / 30 + 1)) IDRs in $n frames ($(wc -w <<<"$idrs"))" \
        [ "$(wc -w <<<"$idrs")" -le $((n / 30 + 1)) ]
done

# --- 4b. a server that stops reading across the recording's end ------------------------------------
# ffmpeg's RTMP listener is stopped (SIGSTOP) once its kernel has taken 2.85 MB of the ~3.7 MB of 330
# frames, and continued once camrec has ended its side of the connection (camrec's socket in FIN-WAIT:
# its FIN sent, or queued behind the rest of the stream when the stopped listener's window is full, as
# in a full run beside stress-ng on 2026-11-29, where no FIN reached the listener in 10 s). Reading the rest,
# it acknowledges the third MiB (RTMP's bytes-read report, every MiB it reads). Against a closed socket
# that write brings a reset, and the listener stops there with the last frames unread: what it did before
# camrec half-closed the connection and read until the server closed (it kept 0..276 of 300). The listener
# is continued at once: camrec stops waiting for a server that says nothing for 2 s.
next_port
url="rtmp://127.0.0.1:$PORT/live/cam"
what="rtmp server stopped across the end"
serve rtmp "$url" "$W/stopped-rtmp.ts"
wait_listen "$PORT"
"$CAMREC" --test-pattern --frames 330 --keyframe-interval 30 "$url" "$W/beside-stopped.h264" 2>"$W/stopped.log" &
CAM=$!; PIDS+=($CAM)
taken=0
for ((i = 0; i < 600; i++)); do
    taken=$(ss -tni state established "( sport = :$PORT )" | grep -o 'bytes_received:[0-9]*' | head -n 1 | cut -d: -f2)
    ((${taken:-0} >= 2850000)) && { kill -STOP "$SERVER"; break; }
    sleep 0.05
done
check "$what: the server was stopped with 2.85-3.1 MB taken, short of the third MiB's report (${taken:-0} bytes)" \
    eval '((${taken:-0} >= 2850000 && ${taken:-0} < 3100000))'
fin=never
for ((i = 0; i < 100; i++)); do
    if ss -tn state fin-wait-1 state fin-wait-2 "( dport = :$PORT )" | grep -q 127.0.0.1; then fin="after $((i * 100)) ms"; break; fi
    sleep 0.1
done
kill -CONT "$SERVER"
wait_for "$CAM" 30; rc=$?
wait_for "$SERVER" 20 >/dev/null
check "$what: camrec exits 0 (status $rc)" [ $rc -eq 0 ]
check "$what: camrec ended its side of the connection while the server was stopped (its socket in FIN-WAIT $fin)" [ "$fin" != never ]
d=$(summary_dropped "$W/stopped.log" "$W/beside-stopped.h264")
check "$what: the file beside it: every frame from 0 in order, the numbers missing exactly the ${d:-none} reported dropped" \
    counters_account "$W/beside-stopped.h264" "${d:--1}"
check "$what: the server's recording has every frame of the file beside it, to the last" \
    counters_same "$W/stopped-rtmp.ts" "$W/beside-stopped.h264"

# --- 5. servers that accept and never answer --------------------------------------------------------
# ended_whole WHAT RC TOOK_MS FRAMES LOG FILE: camrec, recording FRAMES (at 30 fps) to FILE beside a server
# that holds the end, exited 0 within 5 s of its last frame (the wait a server gets to take what is queued,
# plus 2 s of slack), and FILE has every frame 0..FRAMES-1 in order but exactly the dropped ones. The last
# frame is the (FRAMES + dropped)th the test pattern made: frames dropped before the encoder (a busy
# machine) make the recording that much longer. TOOK_MS runs from FILE's first bytes (first_frame_ns),
# not from the launch: at a load of 7.6 in a CI-like run camrec's start (libx265, the handshake) took
# part of the slack and the H.265 case ended 20494 ms after its launch against a bound of 18733.
# first_frame_ns FILE PID: the time (ns) camrec (PID) first has bytes in FILE (its .partial while it
# records), polled every 50 ms; the time of giving up after 30 s.
first_frame_ns() {
    local i f
    for ((i = 0; i < 600; i++)); do
        for f in "$1.camrec-$2.partial" "$1"; do [[ -s $f ]] && { date +%s%N; return 0; }; done
        sleep 0.05
    done
    date +%s%N; return 1
}
ended_whole() {
    local what=$1 rc=$2 took=$3 n=$4 log=$5 file=$6 d
    d=$(summary_dropped "$log" "$file")
    local bound=$(( (n + ${d:-0}) * 1000 / 30 + 7000 ))
    check "$what: camrec exits 0 (status $rc)" [ "$rc" -eq 0 ]
    check "$what: camrec ends within 5 s of its last frame (took ${took} ms, bound $bound with ${d:-0} dropped)" [ "$took" -lt "$bound" ]
    check "$what: the file beside it has all $n frames, dropped=${d:-none} (bound $(drop_bound "$n"))" summary_counts "$log" "$file" "$n" "$(drop_bound "$n")"
    check "$what: the file's frames start at 0 in order, the numbers missing exactly the ${d:-none} reported dropped" \
        counters_account "$file" "${d:--1}"
}
for proto in rtmp rtsp; do
    next_port
    $PEER silent-server 127.0.0.1 "$PORT" 30 >"$W/silent-$proto.count" &
    SILENT=$!; PIDS+=($SILENT)
    wait_listen "$PORT"
    url="$proto://127.0.0.1:$PORT/live/cam"
    "$CAMREC" --test-pattern --frames 150 --keyframe-interval 30 "$url" "$W/beside-$proto.h264" 2>"$W/silent-$proto.log" &
    CAM=$!; PIDS+=($CAM)
    start=$(first_frame_ns "$W/beside-$proto.h264" "$CAM")
    wait_for "$CAM" 40; rc=$?
    took=$((($(date +%s%N) - start) / 1000000))
    ended_whole "$proto server that never answers" "$rc" "$took" 150 "$W/silent-$proto.log" "$W/beside-$proto.h264"
    check "$proto server that never answers: camrec says the server gave no answer" \
        grep -q "gave up: no answer in time" "$W/silent-$proto.log"
    check "$proto server that never answers: the summary says 0 frames reached it" \
        grep -qE "finished output=$proto://127\.0\.0\.1:$PORT/live/cam frames=0 " "$W/silent-$proto.log"
    kill "$SILENT" 2>/dev/null; wait "$SILENT" 2>/dev/null
done

# --- 5b. two interrupts while a server holds the end: the second means stop waiting ----------------
next_port
$PEER silent-server 127.0.0.1 "$PORT" 30 >/dev/null &
SILENT=$!; PIDS+=($SILENT)
wait_listen "$PORT"
"$CAMREC" --test-pattern --frames 100000 "rtmp://127.0.0.1:$PORT/live/cam" "$W/twice.h264" 2>"$W/twice.log" &
CAM=$!; PIDS+=($CAM)
wait_log "$W/twice.log" "encoding in" 1 20 >/dev/null; sleep 3
check_two_interrupts "$CAM" "$W/twice.h264" "$W/twice.log" server "$PORT"
kill "$SILENT" 2>/dev/null; wait "$SILENT" 2>/dev/null

# --- 5c. H.265 to a server stopped mid-stream: ffmpeg's RTSP listener takes the handshake and the first
# seconds, then is stopped (SIGSTOP) and never reads again. The file beside must not lose a frame and
# camrec must end on its own. (At this rate the loopback socket buffers take the rest of the stream, so
# this is not a full-socket case: section 5's servers never read at all.) 576x192, half the pixels of
# 640x360 (576 wide for the burned-in counters): at 640x360 libx265 kept only 240 of 458 frames at a busy
# moment of a full run beside stress-ng --cpu 1 (2026-11-30), and 112-148 in three other full runs, at or
# over the 60% that drop_bound allows; what the case is about is the file beside a stopped server.
next_port
ffmpeg -v error -y -rtsp_flags listen -i "rtsp://127.0.0.1:$PORT/cam" -c copy -f mpegts "$W/stopped-hevc-server.ts" 2>/dev/null &
SERVER=$!; PIDS+=($SERVER)
wait_listen "$PORT"
"$CAMREC" --test-pattern --codec hevc --size 576x192 --preset ultrafast --frames 240 --keyframe-interval 30 "rtsp://127.0.0.1:$PORT/cam" \
    "$W/beside-stopped.h265" 2>"$W/stopped-hevc.log" &
CAM=$!; PIDS+=($CAM)
start=$(first_frame_ns "$W/beside-stopped.h265" "$CAM")
wait_log "$W/stopped-hevc.log" "encoding in" 1 20 >/dev/null; sleep 2
kill -STOP "$SERVER"
wait_for "$CAM" 40; rc=$?
took=$((($(date +%s%N) - start) / 1000000))
ended_whole "H.265 rtsp server stopped mid-stream" "$rc" "$took" 240 "$W/stopped-hevc.log" "$W/beside-stopped.h265"
kill -CONT "$SERVER" 2>/dev/null; kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null

# --- 6. credentials never printed ------------------------------------------------------------------
next_port; SILENT_PORT=$PORT
$PEER silent-server 127.0.0.1 "$SILENT_PORT" 20 >/dev/null &
SILENT=$!; PIDS+=($SILENT)
wait_listen "$SILENT_PORT"
next_port; REFUSED=$PORT
for level in notice debug; do
    "$CAMREC" --test-pattern --frames 60 --log-level "$level" \
        "rtmp://alice:pw-s3cret@127.0.0.1:$SILENT_PORT/live/cam?token=tk-hunter2" \
        "rtsp://bob:pw-rtsp99@127.0.0.1:$REFUSED/cam" \
        "srt://127.0.0.1:$REFUSED?passphrase=pp-verysecret&streamid=sid-private" \
        "$W/cred-$level.h264" >/dev/null 2>"$W/cred-$level.log"; rc=$?
    check "credentials ($level): camrec exits 0 (status $rc)" [ $rc -eq 0 ]
    check "credentials ($level): no password, token, passphrase or stream id on stderr ($(wc -l <"$W/cred-$level.log") lines)" \
        bash -c "! grep -E 'pw-s3cret|tk-hunter2|pw-rtsp99|pp-verysecret|sid-private|alice|bob' '$W/cred-$level.log'"
    check "credentials ($level): the outputs are named with *** in their place" \
        grep -qF "rtmp://***@127.0.0.1:$SILENT_PORT/live/cam?token=***" "$W/cred-$level.log"
done
check "credentials (debug): libav's own lines were printed too (so their redaction was exercised)" \
    grep -qE '^\[(tcp|rtmp|rtsp|srt|libsrt) @' "$W/cred-debug.log"
kill "$SILENT" 2>/dev/null; wait "$SILENT" 2>/dev/null

# --- 7. malformed URLs: usage errors (64), no file, no secret in the message -------------------------
# bad_url_says LOG SHOWN WRONG: LOG is one line, "camrec: error: SHOWN: WRONG…", SHOWN being the URL as
# camrec may print it (credentials as ***) and WRONG what is wrong with it.
bad_url_says() {
    local line; line=$(cat "$1")
    [[ $(wc -l <"$1") -eq 1 && $line == "camrec: error: $2: $3"* ]] || { echo "stderr: $line"; return 1; }
}
while IFS='|' read -r url why shown wrong; do
    rm -f "$W/bad.h264"
    "$CAMREC" --test-pattern --frames 10 "$url" "$W/bad.h264" >/dev/null 2>"$W/bad.log"; rc=$?
    check "bad URL $url ($why): exit 64 (status $rc), no file, no password" \
        bash -c "[ $rc -eq 64 ] && [ ! -e '$W/bad.h264' ] && ! grep -q 'pw-x' '$W/bad.log'"
    check "bad URL $url ($why): one line, 'camrec: error: $shown: $wrong…'" bad_url_says "$W/bad.log" "$shown" "$wrong"
done <<'EOF'
rtmp://127.0.0.1|no path|rtmp://127.0.0.1|RTMP needs a path
rtmp://user:pw-x@127.0.0.1/|no path (password must not be echoed)|rtmp://***@127.0.0.1/|RTMP needs a path
srt://127.0.0.1|no port|srt://127.0.0.1|SRT needs a port
rtsp://127.0.0.1:70000/cam|port out of range|rtsp://127.0.0.1:70000/cam|the port must be 1 to 65535, got '70000'
rtsp://127.0.0.1:8554|no path|rtsp://127.0.0.1:8554|RTSP needs a path
rtmp://127.0.0.1:0/live/cam|port 0|rtmp://127.0.0.1:0/live/cam|the port must be 1 to 65535, got '0'
http://127.0.0.1/cam|a scheme camrec does not send to|http://127.0.0.1/cam|camrec sends to tcp://, rtsp://, rtmp:// and srt://
rtsp://[::1/cam|unclosed IPv6 bracket|rtsp://[::1/cam|an IPv6 address needs its closing ]
EOF

finish
