#!/bin/bash
# Tests/suites/browser.sh — camrec's MP4, QuickTime and Matroska recordings play in a real browser
# (issue 12): headless Chromium from Debian, driven by Selenium (Tests/tools/browser-play.py), opens
# each file in a <video> served over loopback HTTP and reports what the element saw.
#
# Checks, for each container: no media error; the picture size; the duration the file's frames span
# (200 at 30 fps); the video advances while it plays, with frames decoded and none corrupted; a seek
# to the middle lands there. Then the .partial a SIGKILL leaves behind (fragmented MP4, Matroska) plays
# as it is, once given its extension back.
#
# The live page over WebRTC (issue 52: WHEP at /whep, GStreamer's webrtcbin), with MSE beside it: one
# camrec serves WebRTC, with the test tone (--audio test: AAC, which the viewers get as camrec's one Opus
# encode of its samples: the WebRTC camrec runs with GStreamer's faad plugin hidden, an empty file bound over
# it with a registry of its own, so that a viewer decoding the AAC in its own pipeline could not play), another the same test
# pattern without sound and with libgstreamer hidden from it (an empty file
# bound over it in a mount namespace, as LibraryLoadingTests hide libx265). Both also send their stream
# to a TCP listen output with the timing SEI, whose capture time of each frame Tests/tools/browser-latency.py
# sets against the time the page shows that frame (requestVideoFrameCallback; the frame number burned
# into the picture says which): glass-to-browser latency, on one clock, WebRTC and MSE side by side.
# Checks: the page plays WebRTC and says so, the pictures' numbers rise, none corrupted, the answer
# states the profile-level-id of the stream's own SPS, the latency median within the bound; the sound
# plays (getStats: the audio track is Opus at 48000, its packets and samples over the seconds measured, little concealed) and
# each second's burst is heard within 350 ms of its white frame at the end of the seconds measured (Chromium
# lines the tracks up by their sender reports over some seconds: measured 450 ms at the start under load,
# a steady 175 ms at load 5, the sound taken through its Web Audio path); DELETE ends
# the session (the browser's getStats sees no RTP after it, camrec's UDP sockets close, a second DELETE
# is 404); a viewer killed with SIGKILL is cleaned up (its UDP sockets closed, its resource 404) within 30 s; without
# GStreamer camrec says in one line what to install, /whep answers 503 saying so, and the page plays
# MSE and says why; /whep refuses a wrong content type (415), a 100 KiB offer (413) and a non-SDP one (400).
#
# Environment: CAMREC=path   test this binary instead of building with `swift build`
#              KEEP=1        keep the work directory
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=browser
source Tests/lib/net-suite.sh
TOOLS=$PWD/Tests/tools
[[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] || { fail "no /usr/bin/chromium or chromedriver (scripts/setup.sh --test installs them)"; finish; }
python3 -c 'import selenium' 2>/dev/null || { fail "no Selenium for python3 (scripts/setup.sh --test installs it)"; finish; }

# play FILE: browser-play.py's JSON report of FILE played for 2 s, in $PLAY.
play() { PLAY=$(python3 "$TOOLS/browser-play.py" "$1" 2 2>"$W/browser.err") || PLAY="{\"error\": \"browser-play failed: $(tail -1 "$W/browser.err" | tr -d '"\\')\"}"; }
# field NAME: a value of the last report.
field() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$PLAY" "$1"; }
# near A B TOLERANCE: |A - B| <= TOLERANCE.
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; exit !(a != "" && d <= t && -d <= t) }'; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b) }'; }

for ext in mp4 mov mkv; do
    f=$W/rec.$ext
    "$CAMREC" --test-pattern --frames 200 --keyframe-interval 30 "$f" 2>"$W/$ext.log" || fail "$ext: camrec failed: $(tail -1 "$W/$ext.log")"
    play "$f"
    check "$ext in Chromium: no media error ($(field error) $(field message))" [ -z "$(field error)" ]
    check "$ext in Chromium: the picture is 1280x720 ($(field width)x$(field height))" [ "$(field width)x$(field height)" = 1280x720 ]
    check "$ext in Chromium: the duration is 200 frames at 30 fps, 6.667 s ($(field duration) s, within a frame)" \
        near "$(field duration)" 6.6667 0.034
    # Played for 2 s of wall time: the clock must move and frames must decode (loose bounds: CI is slow).
    check "$ext in Chromium: it plays: currentTime advanced $(field advanced) s (at least 0.5) in 2 s" \
        at_least "$(field advanced)" 0.5
    check "$ext in Chromium: $(field frames) frames decoded (at least 15), $(field corrupted) corrupted (none)" \
        bash -c "[ '$(field corrupted)' = 0 ] && awk 'BEGIN { exit !(\"$(field frames)\" + 0 >= 15) }'"
    check "$ext in Chromium: a seek to the middle (3.333 s) lands there ($(field seeked) s, within 0.1)" \
        near "$(field seeked)" 3.3333 0.1
done

# --- The .partial SIGKILL leaves: plays in the browser once renamed, as a user would after a crash ---
for ext in mp4 mkv; do
    mkdir -p "$W/kill-$ext"
    partial=$(killed_partial "$W/kill-$ext/k.$ext" "$W/kill-$ext.log")
    if [[ -z $partial ]]; then fail "$ext SIGKILL: no .partial left"; continue; fi
    cp "$partial" "$W/crashed.$ext"
    frames=$(frames_of "$W/crashed.$ext")
    play "$W/crashed.$ext"
    check "$ext SIGKILL .partial in Chromium: no media error ($(field error) $(field message))" [ -z "$(field error)" ]
    check "$ext SIGKILL .partial in Chromium: it plays: currentTime advanced $(field advanced) s (at least 0.5) in 2 s" \
        at_least "$(field advanced)" 0.5
    check "$ext SIGKILL .partial in Chromium: the duration covers the ${frames:-0} frames ffprobe counts ($(field duration) s, within 0.1)" \
        near "$(field duration)" "$(awk -v n="${frames:-0}" 'BEGIN { print n / 30 }')" 0.1
done

# --- The live page over WebRTC, and MSE beside it without GStreamer (issue 52) ------------------------
json_field() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null; }
# udp_of PID: the UDP sockets the kernel's table gives process PID.
udp_of() { ss -uanpH 2>/dev/null | grep -c "pid=$1,"; }
# latency URL TIMING_PORT [MODE]: browser-latency.py's JSON report (6 s of frames) in $REPORT.
latency() {
    REPORT=$(python3 "$TOOLS/browser-latency.py" "$1" 6 "$2" ${3:-} 2>"$W/latency.err") ||
        REPORT="{\"error\": \"browser-latency failed: $(tail -1 "$W/latency.err" | tr -d '"\\')\"}"
    echo "browser-latency: $REPORT"
}
r() { json_field "$REPORT" "$1"; }
GST_LIB=$(readlink -f "$(ldconfig -p | awk '/libgstreamer-1.0.so.0 .*x86-64/ { print $NF; exit }')")
FAAD=$(dirname "$GST_LIB")/gstreamer-1.0/libgstfaad.so
# GStreamer's faad plugin an empty file (and a registry of its own) for the command after it; exec'd, so
# the PID of the background job is the command's.
WITHOUT_FAAD=(unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$FAAD")
faad_there=$(GST_REGISTRY=$W/gst-registry.bin "${WITHOUT_FAAD[@]}" gst-inspect-1.0 faad 2>&1 | head -1)
check "GStreamer's faad is hidden from the WebRTC camrec ($FAAD; gst-inspect-1.0 there: $faad_there)" \
    bash -c '[[ -f $1 && $2 == "No such element or plugin"* ]]' _ "$FAAD" "$faad_there"
next_port; WP=$PORT; next_port; WT=$PORT; next_port; MP=$PORT; next_port; MT=$PORT
GST_REGISTRY=$W/gst-registry.bin "${WITHOUT_FAAD[@]}" "$CAMREC" --test-pattern --size 640x360 --fps 30 --duration 120 --timing-sei --audio test --http "127.0.0.1:$WP" \
    --listen "127.0.0.1:$WT" "$W/webrtc.ts" 2>"$W/webrtc.log" & WCAM=$!; PIDS+=($WCAM)
unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$GST_LIB" "$CAMREC" --test-pattern --size 640x360 \
    --fps 30 --duration 120 --timing-sei --http "127.0.0.1:$MP" --listen "127.0.0.1:$MT" 2>"$W/mse.log" & MCAM=$!; PIDS+=($MCAM)
wait_listen "$WP"; wait_listen "$WT"; wait_listen "$MP"; wait_listen "$MT"

# A viewer that vanishes without a word: its Chromium killed once the page plays WebRTC. What camrec holds
# for it is read from the kernel (its UDP sockets), polled beside the MSE run below.
latency "http://127.0.0.1:$WP/" "$WT" kill
killed_transport=$(r transport) killed_at=$(r killed_at) killed_resource=$(r resource) udp_killed=$(udp_of $WCAM)
( while (( $(udp_of $WCAM) > 0 )) && python3 -c "import sys, time; sys.exit(time.monotonic() - $killed_at > 40)"; do sleep 0.5; done
  python3 -c "import time; print(round(time.monotonic() - $killed_at, 1))" >"$W/cleaned" ) & CLEAN=$!; PIDS+=($CLEAN)

latency "http://127.0.0.1:$MP/" "$MT"
off_line=$(grep 'WebRTC is off' "$W/mse.log")
check "without GStreamer: camrec says in one line that WebRTC is off and what to install ($off_line)" \
    [ "$(grep -c 'WebRTC is off' "$W/mse.log")" = 1 -a -n "$(grep "install Debian's gstreamer1.0-plugins-bad gstreamer1.0-nice" <<<"$off_line")" ]
whep_off=$(curl -s -w ' %{http_code}' -H 'Content-Type: application/sdp' --data-binary 'v=0' "http://127.0.0.1:$MP/whep")
check "without GStreamer: POST /whep is 503 with the reason in one line ($whep_off)" \
    bash -c '[[ $1 == *" 503" && $1 == *"install Debian'"'"'s gstreamer1.0-plugins-bad"* ]]' _ "$whep_off"
check "without GStreamer: the page plays MSE and says why ($(r transport))" \
    bash -c '[[ $1 == "playing MSE"*"WebRTC is off"* ]]' _ "$(r transport)"
check "MSE: frame numbers in the picture rise from $(r counter_first) to $(r counter_last) (at least 135 frames in 6 s; not rising: $(r counters_not_rising)), $(r corrupted) corrupted (none)" \
    bash -c '[[ $1 == True && $4 == 0 ]] && (( $3 - $2 >= 135 ))' _ "$(r counters_rising)" "$(r counter_first)" "$(r counter_last)" "$(r corrupted)"
MSE_LATENCY=$(r latency_ms)
check "MSE: glass-to-browser latency measured on $(r latency_samples) frames (at least 100): median $(r latency_ms) ms, 90th percentile $(r latency_p90_ms) ms" \
    at_least "$(r latency_samples)" 100

wait $CLEAN 2>/dev/null
check "WebRTC viewer killed without closing: it played WebRTC ($killed_transport), camrec's $udp_killed UDP sockets for it closed $(cat "$W/cleaned" 2>/dev/null) s after (within 30 s)" \
    bash -c '[[ $1 == "playing WebRTC" ]] && (( $2 > 0 )) && awk -v s="$3" "BEGIN { exit !(s != \"\" && s <= 30) }"' _ "$killed_transport" "$udp_killed" "$(cat "$W/cleaned" 2>/dev/null)"
# A DELETE would end it if it were still there (200): 404 says camrec ended it itself.
killed_delete=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:$WP${killed_resource:-/whep/none}")
check "WebRTC viewer killed without closing: its session's resource (${killed_resource:-none}) answers DELETE with $killed_delete (404: ended)" \
    [ -n "$killed_resource" -a "$killed_delete" = 404 ]

latency "http://127.0.0.1:$WP/" "$WT" delete
WEBRTC_PROFILE=$(r answer_profile)
sleep 1
udp_deleted=$(udp_of $WCAM)
check "WebRTC: the page says it plays WebRTC ($(r transport)), 640x360 ($(r width)x$(r height))" \
    [ "$(r transport)" = "playing WebRTC" -a "$(r width)x$(r height)" = 640x360 ]
check "WebRTC: frame numbers in the picture rise from $(r counter_first) to $(r counter_last) (at least 135 frames in 6 s; not rising: $(r counters_not_rising)), $(r frames) decoded, $(r corrupted) corrupted (none)" \
    bash -c '[[ $1 == True && $4 == 0 ]] && (( $3 - $2 >= 135 ))' _ "$(r counters_rising)" "$(r counter_first)" "$(r counter_last)" "$(r corrupted)"
# Measured on loopback (2-core machine, other builds beside): see the commit. The target is 150 ms.
check "WebRTC: glass-to-browser latency on $(r latency_samples) frames: median $(r latency_ms) ms (at most 150; MSE beside it: $MSE_LATENCY ms), 90th percentile $(r latency_p90_ms) ms" \
    bash -c 'awk -v n="$1" -v m="$2" "BEGIN { exit !(n >= 100 && m != \"\" && m <= 150) }"' _ "$(r latency_samples)" "$(r latency_ms)"
# The test tone's sound: Opus at 48 kHz, 50 packets a second; the getStats counters over the seconds measured.
# With faad hidden, only camrec's shared Opus encode of the AAC recording's samples can sound here.
check "WebRTC with sound: the browser's audio track is $(r audio_codec) (audio/opus/48000), from an AAC recording with GStreamer's faad hidden" \
    [ "$(r audio_codec)" = audio/opus/48000 ]
check "WebRTC with sound: the browser's audio track got $(r audio_packets) packets, $(r audio_samples) samples in $(r audio_window) s (at least 90% of 48000 a second), $(r audio_concealed) concealed (at most 2%)" \
    python3 -c 'import sys; p, n, c, w = (float(x or 0) for x in sys.argv[1:]); sys.exit(not (w > 0 and p >= 45 * w and n >= 0.9 * 48000 * w and c <= 0.02 * n))' \
        "$(r audio_packets)" "$(r audio_samples)" "$(r audio_concealed)" "$(r audio_window)"
check "WebRTC with sound: the last second's burst is heard within 350 ms of its white frame (frame minus burst: $(r sync_ms) ms; $(r bursts) bursts, $(r flashes) white frames; at least 3 pairs)" \
    python3 -c 'import json, sys; p = json.loads(sys.argv[1] or "[]"); sys.exit(not (len(p) >= 3 and abs(p[-1]) <= 350))' "$(r sync_ms)"
check "WebRTC: DELETE on the session's resource is $(r delete_status); then the browser got $(r packets_after_delete) RTP packets (getStats, 1.5 s) and camrec holds $udp_deleted UDP sockets" \
    [ "$(r delete_status)" = 200 -a "$(r packets_after_delete)" = 0 -a "$udp_deleted" = 0 ]
check "WebRTC: a second DELETE on it is 404 ($(r delete_again_status))" [ "$(r delete_again_status)" = 404 ]
# Another client than Chromium: a GStreamer webrtcbin viewer (Tests/tools/whep-clients.py, no decoding)
# offers as GStreamer's whepsrc does, max-bundle, so its audio section is bundle-only (port 0). Its own
# RTP counts over 3 s after ICE connects: at 30 fps and Opus's 50 packets a second, 2 s of each at least.
gst_viewer=$(timeout 60 /usr/bin/python3 "$TOOLS/whep-clients.py" "http://127.0.0.1:$WP" 1 3 --sound 2>"$W/gst-viewer.err" | tail -1)
check "WebRTC to a GStreamer webrtcbin viewer offering max-bundle (audio bundle-only): picture and sound RTP (${gst_viewer:-no report}; at least 60 and 100 packets)" \
    python3 -c 'import json, sys; r = json.loads(sys.argv[1] or "{}"); p = (r.get("packets") or [{}])[0]; sys.exit(not (r.get("connected") == 1 and p.get("video", 0) >= 60 and p.get("audio", 0) >= 100))' "$gst_viewer"
head -c 102400 /dev/zero | tr '\0' a >"$W/big.sdp"
codes=$(for args in "-H Content-Type:text/plain --data-binary v=0" \
                    "-H Content-Type:application/sdp --data-binary @$W/big.sdp" \
                    "-H Content-Type:application/sdp --data-binary hello"; do
            curl -s -o "$W/whep.txt" -w '%{http_code}' $args "http://127.0.0.1:$WP/whep"; echo -n ":$(wc -l <"$W/whep.txt") "
        done)
check "WebRTC: /whep refuses a text/plain body, a 100 KiB offer and one that is not SDP, each in one line ($codes)" \
    [ "$codes" = "415:1 413:1 400:1 " ]
kill -INT $WCAM $MCAM 2>/dev/null
wait_for $WCAM 20 >/dev/null; wait_for $MCAM 20 >/dev/null
# The recording beside it (MPEG-TS: Annex B inside), read once written: the bytes after its first SPS's NAL header.
sps=$(python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); i = d.find(b"\x00\x00\x01\x67"); print(d[i + 4:i + 7].hex())' "$W/webrtc.ts" 2>/dev/null)
check "WebRTC: the answer states the stream's profile-level-id ($WEBRTC_PROFILE; the SPS: $sps)" [ -n "$sps" -a "$WEBRTC_PROFILE" = "$sps" ]

finish
