#!/bin/bash
# Tests/vm-cases/mjpeg-cases.sh — camrec recording a real V4L2 MJPEG capture node, inside the
# test VM. vivid has no MJPEG, so v4l2loopback (built by Tests/vm/v4l2loopback.sh) makes one:
# a writer (ffmpeg, or Tests/fixtures/mjpeg-writer for damaged frames) feeds it MJPEG, and
# camrec captures from it with mmap streaming like from a UVC webcam. Run by
# Tests/suites/vm-mjpeg.sh through Tests/vm/run.sh.
# Environment: CAMREC (the binary), LOOPBACK_KO (the module), MJPEG_WRITER (the fixture binary),
# PATTERN_MJPEG (numbered JPEGs, with the numbers in the .counters file beside it),
# CAMERA_STREAMS (PATH.h264 and PATH.h265: a camera's own streams), CAMERA_NUMBERED and CAMERA_RTSP_PORTS
# (Tests/vm-cases/camera-outputs.sh),
# CAMREC_VM_RESULTS (writable dir). Ends with "N passed, N failed".
set -uo pipefail

source "$(dirname "$0")/case-lib.sh" mjpeg
source "$(dirname "$0")/device-log.sh"
CAMREC_BIN=${CAMREC:?set CAMREC to the camrec binary}
# Niced, as in capture-cases.sh: the writer must stay on time while camrec decodes and encodes.
CAMREC=(nice -n 10 "$CAMREC_BIN")

# One node per case: with exclusive_caps=1 a node is an output until a writer runs, then a
# capture node, as webcam programs expect (camrec refuses nodes that are both); but once a
# write()-ing writer has gone it stays a capture node, and a second writer can't set a format.
if ! insmod "${LOOPBACK_KO:?}" devices=6 video_nr=20,21,22,23,24,25 exclusive_caps=1,1,1,1,1,1 \
        card_label="camrec MJPEG loopback"; then
    echo "cannot load $LOOPBACK_KO"; dmesg | tail -5; echo "0 passed, 1 failed"; exit 1
fi

# Frame numbers of the keyframes, space-separated (ffprobe prints an empty line after a frame
# with side data, so only non-empty lines count as frames).
keyframes() {
    on_host ffprobe -v error -select_streams v:0 -show_entries frame=key_frame -of csv=p=0 "$1" 2>/dev/null |
        awk -F, '$1 == "" { next } { if ($1 == 1) { printf "%s%d", sep, n; sep = " " } n++ }'
}
# Waits (up to 60 s: ffmpeg starts slowly under emulation) until the writer has made the node a
# capture node.
wait_capture() {
    local limit=$(( $EPOCHSECONDS + 60 ))
    while (( $EPOCHSECONDS < limit )); do
        v4l2-ctl -d "$DEV" -D 2>/dev/null | sed -n '/Device Caps/,$p' | grep -q 'Video Capture' && return 0
        kill -0 "$WRITER" 2>/dev/null || return 1
        nap 0.2
    done
    return 1
}
WRITER=
stop_writer() {
    [[ -n $WRITER ]] && kill "$WRITER" 2>/dev/null && wait "$WRITER" 2>/dev/null
    WRITER=
    # v4l2loopback turns back into an output node when its writer closes.
    nap 0.5
}
trap stop_writer EXIT
# PSNR (average over Y, U, V) of frame N of an H.264 file against a reference yuv420p frame.
psnr_of() {
    local file=$1 n=$2 ref=$3 size=$4 name=$5
    on_host ffmpeg -nostdin -v error -i "$file" -vf "select=eq(n\,$n)" -frames:v 1 -f rawvideo -pix_fmt yuv420p -y "$R/$name.got.yuv"
    on_host ffmpeg -nostdin -hide_banner -f rawvideo -pix_fmt yuv420p -s "$size" -i "$R/$name.got.yuv" \
        -f rawvideo -pix_fmt yuv420p -s "$size" -i "$ref" -lavfi psnr -f null - 2>&1 |
        grep -o 'average:[0-9.inf]*' | cut -d: -f2
}
# The reference picture: what ffmpeg itself makes of the JPEG, as limited-range yuv420p (swscale
# converts full → limited range, as camrec does).
reference() {
    on_host ffmpeg -nostdin -v error -i "$1" -f rawvideo -pix_fmt yuv420p -y "$2"
}

# A still, detailed picture (testsrc2's first frame) as the camera's JPEG: every frame the
# same, so which frames camrec catches does not matter for the comparison.
on_host ffmpeg -nostdin -v error -f lavfi -i testsrc2=size=640x480 -frames:v 1 -pix_fmt yuvj422p -q:v 3 -y "$R/cam422.jpg"
on_host ffmpeg -nostdin -v error -f lavfi -i testsrc2=size=352x288 -frames:v 1 -pix_fmt yuvj420p -q:v 3 -y "$R/cam420.jpg"
reference "$R/cam422.jpg" "$R/cam422.ref.yuv"
reference "$R/cam420.jpg" "$R/cam420.ref.yuv"

# The writers send 10 frames a second and camrec encodes with --preset ultrafast, to keep the load
# light. v4l2loopback's buffer sequence numbers jump (measured: 71 "dropped" within 0.6 s of a 10 fps
# writer, 40 for 60 recorded): its sequence is the count of frames written, and a reader more than
# two behind is moved on to the newest. Those frames were never delivered to camrec and are excused,
# as gaps in the kernel's DQBUF log (device-log.sh); what camrec drops itself (a frame it could not
# decode is errored=, a frame with no pool buffer free is pool_empty=) is bounded in every recording.
# Its first buffer is often one no frame was written into yet (sequence 0, bytesused = the whole
# buffer in the kernel's log), which camrec cannot decode (errored=): excused as the device's too,
# from that log.
# OWN_BOUND: measured 0 in every recording of cases 1-6, with the host loaded by other builds and VMs
# (load 12-15), 2026-11-27; 1 leaves a frame's margin. Dropping every tenth frame takes 6 of 60.
OWN_BOUND=1
# 1. ffmpeg as the camera: 4:2:2 JPEGs (what UVC webcams send) at 640x480, 10 fps.
DEV=/dev/video20
echo "== ffmpeg writes 640x480 yuvj422p MJPEG into $DEV ($(elapsed))"
ffmpeg -nostdin -v error -re -loop 1 -framerate 10 -i "$R/cam422.jpg" -c:v copy -f v4l2 "$DEV" &
WRITER=$!
if wait_capture; then
    "$CAMREC_BIN" devices --device "$DEV" >"$R/devices.out" 2>&1
    cat "$R/devices.out" | sed 's/^/   /'
    check "camrec devices: MJPG listed as usable" grep -qE '^  [ ] MJPG ' "$R/devices.out"
    check "camrec devices: records MJPG 640x480 by default" grep -q 'camrec records MJPG 640x480' "$R/devices.out"
    "$CAMREC_BIN" devices >"$R/devices-all.out" 2>&1
    check "camrec devices (all): lists $DEV with MJPG" grep -qE '^  [ ] MJPG ' "$R/devices-all.out"

    device_log_start "$DEV"
    "${CAMREC[@]}" --device "$DEV" --frames 60 --keyframe-interval 20 --preset ultrafast --log-level info --overwrite "$R/default.h264" \
        >"$R/default.out" 2>"$R/default.err"
    rc=$?
    device_log_save "$R/default.dmesg"
    cat "$R/default.err" | sed 's/^/   /'
    check "default recording exits 0" test "$rc" = 0
    decoded=$(decoded_frames "$R/default.h264")
    check "default recording: 60 frames decode (${decoded:-none})" test "${decoded:-0}" = 60
    kf=$(keyframes "$R/default.h264")
    check "default recording: IDRs at 0 20 40 (got: ${kf:-none})" test "$kf" = "0 20 40"
    psnr=$(psnr_of "$R/default.h264" 30 "$R/cam422.ref.yuv" 640x480 default)
    # Measured 53.56 dB (the same still JPEG every frame; x264 is deterministic): 1 dB margin.
    check "default recording: frame 30 vs ffmpeg's decode of the JPEG, PSNR ${psnr:-none} dB > 52.5" \
        awk -v p="${psnr:-0}" 'BEGIN { exit !(p == "inf" || p > 52.5) }'
    camrec_own_drops "default recording" "$R/default.err" "$R/default.dmesg" "$DEV" "$OWN_BOUND" full
else
    bad "v4l2loopback never became a capture node with ffmpeg writing"
fi
stop_writer

# 2. --pixel-format mjpeg, 4:2:0 JPEGs at another size.
DEV=/dev/video21
echo "== ffmpeg writes 352x288 yuvj420p MJPEG; camrec --pixel-format mjpeg ($(elapsed))"
ffmpeg -nostdin -v error -re -loop 1 -framerate 10 -i "$R/cam420.jpg" -c:v copy -f v4l2 "$DEV" &
WRITER=$!
if wait_capture; then
    device_log_start "$DEV"
    "${CAMREC[@]}" --device "$DEV" --pixel-format mjpeg --size 352x288 --frames 30 --keyframe-interval 10 \
        --preset ultrafast --log-level info --overwrite "$R/p420.h264" >"$R/p420.out" 2>"$R/p420.err"
    rc=$?
    device_log_save "$R/p420.dmesg"
    cat "$R/p420.err" | sed 's/^/   /'
    decoded=$(decoded_frames "$R/p420.h264")
    check "--pixel-format mjpeg 352x288: exits 0 with 30 frames (rc $rc, ${decoded:-none} frames)" \
        test "$rc" = 0 -a "${decoded:-0}" = 30
    psnr=$(psnr_of "$R/p420.h264" 29 "$R/cam420.ref.yuv" 352x288 p420)
    # Measured 52.51 dB: 1 dB margin.
    check "--pixel-format mjpeg 352x288: last frame PSNR ${psnr:-none} dB > 51.5" \
        awk -v p="${psnr:-0}" 'BEGIN { exit !(p == "inf" || p > 51.5) }'
    camrec_own_drops "--pixel-format mjpeg 352x288" "$R/p420.err" "$R/p420.dmesg" "$DEV" "$OWN_BOUND" full
else
    bad "v4l2loopback never became a capture node (4:2:0 writer)"
fi
stop_writer

# 3. A camera with USB trouble: good frames mixed with truncated and garbage ones.
DEV=/dev/video22
echo "== mjpeg-writer: good, truncated and garbage frames ($(elapsed))"
size422=$(stat -c %s "$R/cam422.jpg")
head -c $((size422 / 2)) "$R/cam422.jpg" >"$R/truncated.jpg"
head -c 30000 /dev/urandom >"$R/garbage.bin"
"${MJPEG_WRITER:?}" "$DEV" 640 480 10 120 "$R/cam422.jpg" "$R/truncated.jpg" "$R/cam422.jpg" "$R/garbage.bin" &
WRITER=$!
if wait_capture; then
    device_log_start "$DEV"
    "${CAMREC[@]}" --device "$DEV" --frames 30 --keyframe-interval 10 --preset ultrafast --log-level info --overwrite "$R/mixed.h264" \
        >"$R/mixed.out" 2>"$R/mixed.err"
    rc=$?
    device_log_save "$R/mixed.dmesg"
    cat "$R/mixed.err" | grep -v '^\[mjpeg' | sed 's/^/   /'
    decoded=$(decoded_frames "$R/mixed.h264")
    dropped=$(field "$R/mixed.err" dropped)
    check "damaged frames: recording goes on and exits 0 with 30 frames (rc $rc, ${decoded:-none} frames)" \
        test "$rc" = 0 -a "${decoded:-0}" = 30
    errored=$(field "$R/mixed.err" errored)
    # The writer alternates good and damaged frames, and camrec stops on a good one (the 30th it
    # records), so every damaged frame it saw has a good frame after it: one it recorded, or one it
    # lost (a sequence gap or an empty pool, counted in dropped but not in errored). Errored frames
    # are part of dropped. So 1 <= errored <= 30 + (dropped - errored); in the emulated VM (here and on CI)
    # decoding the damaged frames is slow enough that v4l2loopback skips 10: errored=31, dropped=41.
    lost=$(( ${dropped:-0} - ${errored:-0} ))
    check "damaged frames: counted as errored, 1 to 30 + $lost lost otherwise (errored=${errored:-none}, dropped=${dropped:-none})" \
        sh -c "test '${errored:-0}' -ge 1 -a '${errored:-0}' -le $((30 + lost)) -a '$lost' -ge 0"
    psnr=$(psnr_of "$R/mixed.h264" 29 "$R/cam422.ref.yuv" 640x480 mixed)
    # Measured 53.27 dB: 1 dB margin (a damaged frame decoded would be far lower).
    check "damaged frames: the frames recorded are the good ones, PSNR ${psnr:-none} dB > 52.2" \
        awk -v p="${psnr:-0}" 'BEGIN { exit !(p == "inf" || p > 52.2) }'
    # The damaged frames camrec could not decode are its errored= (bounded above); nothing else of its own.
    camrec_own_drops "damaged frames" "$R/mixed.err" "$R/mixed.dmesg" "$DEV" "$OWN_BOUND" "${errored:-0}"
else
    bad "v4l2loopback never became a capture node (mjpeg-writer)"
fi
stop_writer

# 4. Only garbage: frames keep coming, none decodes; that ends like a stalled camera (72).
DEV=/dev/video23
echo "== mjpeg-writer: garbage only ($(elapsed))"
"$MJPEG_WRITER" "$DEV" 640 480 15 120 "$R/garbage.bin" "$R/truncated.jpg" &
WRITER=$!
if wait_capture; then
    device_log_start "$DEV"
    "${CAMREC[@]}" --device "$DEV" --frames 30 --log-level info --overwrite "$R/garbage.h264" >"$R/garbage.out" 2>"$R/garbage.err"
    rc=$?
    device_log_save "$R/garbage.dmesg"
    cat "$R/garbage.err" | sed 's/^/   /'
    check "garbage only: exits 72 (stalled), got $rc" test "$rc" = 72
    check "garbage only: says the camera sent only unusable MJPEG frames" \
        grep -q 'delivered only unusable MJPEG frames' "$R/garbage.err"
    # Every frame it took from the camera is errored= (undecodable), none dropped otherwise.
    camrec_own_drops "garbage only" "$R/garbage.err" "$R/garbage.dmesg" "$DEV" "$OWN_BOUND" "$(counter "$R/garbage.err" errored)"
else
    bad "v4l2loopback never became a capture node (garbage writer)"
fi
stop_writer

# 5. A camera that stops sending (its writer frozen, the node still open): the watchdog ends the
# recording with 72 and the file keeps every frame recorded. With --stall-timeout 6 (the default is 2 s at
# this rate), it waits that long: the exit comes at least 4 s after the freeze, measured here (the writer,
# writing every 0.1 s while camrec's file grew, may have been starved for up to 2 s before it froze).
DEV=/dev/video24
echo "== ffmpeg writes, then freezes: a stalled camera ($(elapsed))"
ffmpeg -nostdin -v error -re -loop 1 -framerate 10 -i "$R/cam422.jpg" -c:v copy -f v4l2 "$DEV" &
WRITER=$!
if wait_capture; then
    rm -f "$R/stall.h264"
    device_log_start "$DEV"
    "${CAMREC[@]}" --device "$DEV" --frames 1000 --preset ultrafast --log-level info --stall-timeout 6 \
        "$R/stall.h264" >"$R/stall.out" 2>"$R/stall.err" &
    rec=$!
    # Freeze the writer once camrec has written a frame (its .partial file holds bytes).
    for ((i = 0; i < 600; i++)); do
        for f in "$R"/stall.h264.camrec-*.partial; do [[ -s $f ]] && break 2; done
        nap 0.1
    done
    kill -STOP "$WRITER"; frozen=$EPOCHREALTIME
    wait "$rec"
    rc=$? ended=$EPOCHREALTIME
    waited=$(( (${ended/./} - ${frozen/./}) / 1000 ))
    device_log_save "$R/stall.dmesg"
    kill -CONT "$WRITER"
    cat "$R/stall.err" | sed 's/^/   /'
    check "stalled camera: exit 72 (got $rc)" test "$rc" = 72
    check "stalled camera: the error line says no frame came" \
        grep -q "^camrec: error: $DEV delivered no frame for [0-9.]* s; the camera stalled" "$R/stall.err"
    check "stalled camera, --stall-timeout 6: the exit came at least 4 s after the writer froze (${waited} ms)" \
        test "$waited" -ge 4000
    frames=$(field "$R/stall.err" frames)
    decoded=$(decoded_frames "$R/stall.h264")
    check "stalled camera: the file is saved and decodes every frame recorded (${decoded:-none} of ${frames:-none})" \
        sh -c "test -n '$frames' && test '${frames:-0}' -gt 0 && test '${decoded:-x}' = '$frames'"
    camrec_own_drops "stalled camera" "$R/stall.err" "$R/stall.dmesg" "$DEV" "$OWN_BOUND" full
else
    bad "v4l2loopback never became a capture node (stall writer)"
fi
stop_writer

# 6. Which frames of an MJPEG camera a recording holds: the writer sends camrec's own test pattern
# (a frame number burned into every picture, made on the host by Tests/suites/vm-mjpeg.sh and read back
# by Tests/tools/pattern-counters.py, no code shared with camrec) as JPEGs at 10 fps. camrec's dropped=
# can't be the measure here (v4l2loopback's sequence numbers, above), so the pictures are: between the
# first and the last recorded, every frame the camera sent must be there, in order, but those camrec
# counted as dropped (it may count more: v4l2loopback's sequence numbers). Lost were 0 on a quiet host,
# 14 of 74 (all counted) in a full run beside a busy host process, where the VM's emulated CPU decoded
# and encoded too slowly (2026-11-25): of those only the frames v4l2loopback never delivered are
# excused (gaps in the kernel's DQBUF log), what camrec dropped itself is bounded (camrec_own_drops).
DEV=/dev/video25
echo "== ffmpeg writes numbered 640x480 MJPEG frames at 10 fps: which ones camrec records ($(elapsed))"
if [[ -s ${PATTERN_MJPEG:-} && -s ${PATTERN_MJPEG%.mjpeg}.counters ]]; then
    ffmpeg -nostdin -v error -re -framerate 10 -f mjpeg -i "$PATTERN_MJPEG" -c:v copy -f v4l2 "$DEV" &
    WRITER=$!
    if wait_capture; then
        device_log_start "$DEV"
        "${CAMREC[@]}" --device "$DEV" --frames 60 --preset ultrafast --log-level info --overwrite "$R/numbered.h264" \
            >"$R/numbered.out" 2>"$R/numbered.err"
        rc=$?
        device_log_save "$R/numbered.dmesg"
        grep '^camrec: \(error\|finished\)' "$R/numbered.err" | sed 's/^/   /'
        on_host /usr/bin/python3 Tests/tools/pattern-counters.py "$R/numbered.h264" >"$R/numbered.counters"
        # Frames the camera sent between the first and the last recorded (the writer's own list, which
        # has gaps where the host's test pattern dropped one), against those recorded.
        report=$(awk 'NR == FNR { sent[++n] = $1; next }
            { got[++m] = $1; if ($1 == "?" || (m > 1 && $1 <= got[m - 1])) bad = 1 }
            END {
                if (m == 0 || bad) { print "unreadable or out of order"; exit 1 }
                for (i = 1; i <= n; i++) if (sent[i] >= got[1] && sent[i] <= got[m]) between++
                print m " recorded of " between " sent between frame " got[1] " and " got[m] ", lost " between - m
            }' "${PATTERN_MJPEG%.mjpeg}.counters" "$R/numbered.counters")
        order=$?
        lost=$(grep -o 'lost [0-9-]*' <<<"$report" | cut -d' ' -f2)
        echo "   numbered frames: $report (camrec's dropped=$(field "$R/numbered.err" dropped))"
        check "numbered MJPEG: exits 0 with 60 frames (rc $rc, $(grep -c . "$R/numbered.counters") decoded)" \
            test "$rc" = 0 -a "$(grep -c . "$R/numbered.counters")" = 60
        check "numbered MJPEG: the frame numbers rise, each recorded once (pattern-counters.py)" test "$order" = 0
        between=$(grep -o 'of [0-9]* sent' <<<"$report" | cut -d' ' -f2)
        dropped=$(field "$R/numbered.err" dropped)
        check "numbered MJPEG: every frame lost between the first and the last recorded counted as dropped (lost ${lost:-?} of the ${between:-?} sent, dropped=${dropped:-?})" \
            test -n "$lost" -a -n "$dropped" -a -n "$between" -a "${lost:-99}" -ge 0 -a "${lost:-99}" -le "${dropped:--1}"
        camrec_own_drops "numbered MJPEG" "$R/numbered.err" "$R/numbered.dmesg" "$DEV" "$OWN_BOUND" full
    else
        bad "v4l2loopback never became a capture node (numbered writer)"
    fi
    stop_writer
else
    bad "no numbered MJPEG stream from the suite (PATTERN_MJPEG=${PATTERN_MJPEG:-unset})"
fi

# 7. Whether camrec keeps an MJPEG camera's own frame times: v4l2loopback (built by Tests/vm/v4l2loopback.sh
# to say its timestamps are CLOCK_MONOTONIC, as uvcvideo does) stamps each frame while the writer's
# write() runs, and the writer (Tests/tools/loopback-feeder.py) logs the monotonic time just before and
# after each, with the frame's number drawn in the picture. Tests/tools/frame-times.py then holds each
# recorded picture's time in the Matroska file to its write, with nothing from camrec. camrec is stopped
# three times for 0.4 s meanwhile: the frame it takes from the driver after each stop is up to a frame
# interval (100 ms) old, so a recorder that stamped frames when it dequeued them would be that far off.
# Eight buffers (v4l2loopback's default is two): the writer fills them in turn whether or not a reader
# still holds one, and a picture overwritten while camrec decodes it would carry another's timestamp.
# 60 s of numbered pictures, each number once: beside stress-ng the starved VM took 24 s from the writer's
# start to camrec's first frame, and a 25 s writer ended under it (camrec: the camera stalled).
echo "== the MJPEG camera's own frame times: numbered JPEGs written at logged times ($(elapsed))"
stop_writer
DEV=/dev/video26
if wait_for 10 rmmod v4l2loopback 2>/dev/null &&
    insmod "$LOOPBACK_KO" devices=1 video_nr=26 exclusive_caps=1 max_buffers=8 card_label="camrec MJPEG loopback" &&
    on_host /usr/bin/python3 Tests/tools/loopback-feeder.py --make "$R/stamped.yuyv" --size 320x240 --frames 600 &&
    on_host ffmpeg -nostdin -v error -f rawvideo -pix_fmt yuyv422 -s 320x240 -i "$R/stamped.yuyv" \
        -c:v mjpeg -q:v 3 -pix_fmt yuvj422p -f mjpeg -y "$R/stamped.mjpeg"; then
    nice -n -5 /usr/bin/python3 Tests/tools/loopback-feeder.py "$DEV" "$R/stamped.feed" --size 320x240 --fps 10 \
        --seconds 60 --mjpeg "$R/stamped.mjpeg" &
    WRITER=$!
    if wait_capture; then
        "${CAMREC[@]}" --device "$DEV" --size 320x240 --frames 80 --preset ultrafast --overwrite "$R/stamped.mkv" \
            >"$R/stamped.out" 2>"$R/stamped.err" &
        rec=$!
        # Recording (its .partial file holds bytes), then three stops.
        stamped_partial() { local f; for f in "$R"/stamped.mkv.camrec-*.partial; do [[ -s $f ]] && return 0; done; return 1; }
        wait_for 60 stamped_partial
        for stop in 1 2 3; do
            nap 1.3
            kill -STOP "$rec"; nap 0.4; kill -CONT "$rec"
        done
        wait "$rec"; rc=$?
        grep '^camrec: \(error\|finished\)' "$R/stamped.err" | sed 's/^/   /'
        decoded=$(decoded_frames "$R/stamped.mkv")
        check "MJPEG frame times: exits 0 with 80 frames (rc $rc, ${decoded:-none} decoded)" test "$rc" = 0 -a "${decoded:-0}" = 80
        report=$(on_host /usr/bin/python3 Tests/tools/frame-times.py "$R/stamped.mkv" "$R/stamped.feed" 1 2>&1); trc=$?
        echo "$report" | head -6 | sed 's/^/   /'
        check "MJPEG frame times: every picture is recorded at the time the camera stamped it, within its write() and 1 ms of Matroska rounding, across three 0.4 s stops of camrec (frame-times.py)" \
            test "$trc" = 0
    else
        bad "v4l2loopback never became a capture node (numbered feeder)"
    fi
    stop_writer
else
    bad "could not load v4l2loopback again as $DEV with numbered JPEGs"
fi

# 8-9. A camera that encodes H.264 (then H.265) itself, recorded with --encoder camera (chosen by
# --pixel-format H264/HEVC): v4l2loopback fed the access units of a libx264/libx265 stream made on the host
# (Tests/suites/vm-mjpeg.sh: AUD in every access unit, SEI, 3-byte start codes) by
# Tests/tools/loopback-feeder.py --params-once, which sends the SPS/PPS (VPS) with the first access unit
# only and keeps the stream it wrote. The feeder holds back its second access unit until camrec has
# written the first (its .partial file holds bytes): v4l2loopback hands a reader the oldest of the last
# three writes, so camrec gets the only one with parameter sets, as from a camera that starts streaming.
# v4l2loopback has no codec controls, so this is also the camera without them. Under load v4l2loopback
# moves a reader more than two frames behind on to the newest (frames never delivered, as a USB camera
# loses them): camrec then leaves the pictures out up to the camera's next IDR, and slices-match.py allows
# exactly that. The truths: the stream the feeder wrote (Tests/tools/slices-match.py),
# Tests/tools/annexb-check.py, ffmpeg's decoder, and the kernel's /proc (thread names, CPU ticks).
# ticks PID: utime + stime of a process so far (/proc/PID/stat), in 1/100 s.
ticks() { local line; read -r line <"/proc/$1/stat" || return 1; set -- ${line##*) }; echo $(( ${12} + ${13} )); }
# times_total FILE: the children's user + system time from bash's `times` (its second line), in 1/100 s.
times_total() {
    local lines
    mapfile -t lines <"$1"
    [[ ${lines[2]:-} =~ ^([0-9]+)m([0-9]+)\.([0-9]+)s\ ([0-9]+)m([0-9]+)\.([0-9]+)s ]] || return 1
    echo $(( (10#${BASH_REMATCH[1]} + 10#${BASH_REMATCH[4]}) * 6000 + (10#${BASH_REMATCH[2]} + 10#${BASH_REMATCH[5]}) * 100
        + (10#${BASH_REMATCH[3]} + 10#${BASH_REMATCH[6]}) / 10 ))
}
# recording NAME ARGS...: camrec in the background, its pid in R/NAME.pid, then `rc=N` and `times` in R/NAME.times.
recording() {
    local name=$1; shift
    ( nice -n "${RECORD_NICE:-0}" "$CAMREC_BIN" "$@" >"$R/$name.out" 2>"$R/$name.err" & echo $! >"$R/$name.pid"; wait $!; echo "rc=$?"; times ) >"$R/$name.times" &
}
# camera_stream CODEC EXT DEV PORT
camera_stream() {
    local codec=$1 ext=$2 dev=$3 port=$4 name=cam-$1 hevc= pid= rec enc= i cpu0= enc0= line joiner reader= src
    src=${CAMERA_STREAMS:?}.$ext
    [[ $codec == hevc ]] && hevc=--hevc
    echo "== a camera that encodes ${codec^^} itself, 320x240 at 20 fps: --pixel-format ${codec^^} ($(elapsed))"
    if [[ ! -s $src ]]; then bad "no ${codec^^} stream from the suite ($src)"; return; fi
    DEV=$dev
    nice -n -5 /usr/bin/python3 Tests/tools/loopback-feeder.py "$DEV" "$R/$name.feed" --size 320x240 --fps 20 \
        --stream "$src" --codec "$codec" --params-once --steady --sent "$R/$name.sent" --hold "$R/$name.hold" &
    WRITER=$!
    if ! wait_capture; then bad "v4l2loopback never became a ${codec^^} capture node"; stop_writer; return; fi
    recording "$name" --device "$DEV" --pixel-format "${codec^^}" --frames 300 --listen "127.0.0.1:$port" --log-level info "$R/$name.$ext"
    rec=$!
    written() { local f; for f in "$R/$1".camrec-*.partial; do [[ -s $f ]] && return 0; done; return 1; }
    wait_for 60 written "$name.$ext"
    [[ -s $R/$name.pid ]] && pid=$(<"$R/$name.pid")
    # From here on camrec only passes frames on: its ticks now, and its threads.
    if [[ -n $pid ]] && cpu0=$(ticks "$pid"); then
        for i in /proc/"$pid"/task/*/comm; do read -r line <"$i"; echo "$line"; done >"$R/$name.threads"
    fi
    : >"$R/$name.hold"
    if [[ $codec == h264 ]]; then
        # Beside it, under the same load, camrec encoding its test pattern at the same size and rate (libx264
        # ultrafast), 300 frames measured the same way: from its first frame written. Niced: on one emulated
        # CPU it would otherwise take the camera's turn, and v4l2loopback skip frames camrec had no time for
        # (measured at load 15 without: 166 of the camera's frames never reached it).
        RECORD_NICE=10 recording encoded --test-pattern --size 320x240 --fps 20 --frames 300 --preset ultrafast "$R/encoded.h264"
        enc=$!
    fi
    # A receiver joining 3 s in (60 frames; the camera's IDRs come every 30): with no FORCE_KEY_FRAME it waits for the next.
    nap 3
    if exec {joiner}<>"/dev/tcp/127.0.0.1/$port"; then
        cat <&"$joiner" >"$R/$name-joiner.$ext" &
        reader=$!
        exec {joiner}>&-
    fi
    if [[ -n $enc ]] && wait_for 60 written encoded.h264 && pid=$(<"$R/encoded.pid") && enc0=$(ticks "$pid"); then
        for i in /proc/"$pid"/task/*/comm; do read -r line <"$i"; echo "$line"; done >"$R/encoded.threads"
    fi
    wait "$rec"
    [[ -n $reader ]] && wait "$reader"
    stop_writer
    mapfile -t lines <"$R/$name.times"
    [[ ${lines[*]} =~ rc=([0-9]+) ]] && rc=${BASH_REMATCH[1]} || rc=none
    grep '^camrec: \(error\|warning\|finished\|the camera\)' "$R/$name.err" | sed 's/^/   /'
    decoded=$(decoded_frames "$R/$name.$ext")
    match=$(on_host /usr/bin/python3 Tests/tools/slices-match.py "$R/$name.sent" "$R/$name.$ext" $hevc --from-first --gaps-to-idr --torn-by-writer 2>&1); mrc=$?
    local slices=-1 missing=-1
    [[ $match =~ slices=([0-9]+)\ first=0\ missing=([0-9]+) ]] && slices=${BASH_REMATCH[1]} missing=${BASH_REMATCH[2]}
    # 300 frames taken from the camera; when v4l2loopback skipped some (missing), the pictures after them up to
    # the next IDR are left out, so fewer than 300, but never fewer than 300 less all the missing ones.
    check "${codec^^} camera: exits 0 with 300 frames from the camera, every slice a picture that decodes (rc $rc, ${decoded:-none} decoded, ${slices} slices; ${missing} of the camera's left out or never delivered)" \
        sh -c "test '$rc' = 0 -a '${decoded:-0}' = '$slices' && if [ '$missing' = 0 ]; then test '$slices' = 300; else test '$slices' -lt 300 -a '$slices' -ge \$((300 - $missing)); fi"
    check "${codec^^} camera: the capture says the camera's stream is copied as it is" grep -q "${codec^^} 320x240 .*copied as it is" "$R/$name.err"
    check "${codec^^} camera: no encoder thread runs (/proc/PID/task: $(paste -sd, "$R/$name.threads" 2>/dev/null); no encode-*)" \
        sh -c "test -s '$R/$name.threads' && ! grep -q '^encode' '$R/$name.threads'"
    check "${codec^^} camera: camrec says once that the camera has no codec controls and joiners wait for its next IDR" \
        test "$(grep -c 'the camera has none of the codec controls camrec uses' "$R/$name.err")" = 1
    "$CAMREC_BIN" inspect "$R/$name.$ext" >"$R/$name.inspect" 2>&1
    check "${codec^^} camera: camrec inspect says the contract is OK ($(grep -m1 -o 'stream contract: [A-Z]*' "$R/$name.inspect"))" \
        grep -q '^stream contract: OK' "$R/$name.inspect"
    check "${codec^^} camera: every slice is the camera's, byte for byte, in order from its first (but those v4l2loopback overwrote while camrec copied them, counted as torn); any stretch left out ends at an IDR ($match)" \
        test "$mrc" = 0
    sent=$(on_host /usr/bin/python3 Tests/tools/slices-match.py "$R/$name.sent" "$R/$name.sent" $hevc --count-units 2>&1)
    report=$(on_host /usr/bin/python3 Tests/tools/annexb-check.py "$R/$name.$ext" $hevc 2>&1); arc=$?
    errors=$(on_host ffmpeg -nostdin -v error -i "$R/$name.$ext" -f null - 2>&1 | head -3)
    check "${codec^^} camera: the camera sent its parameter sets once, with AUD and SEI ($sent); the recording has them before every IDR, 4-byte start codes, bare (annexb-check: ${report##*$'\n'}), and decodes with no error${errors:+ ($errors)}" \
        sh -c "test $arc = 0 && test -z '${errors//\'/}' && echo '$sent' | grep -q 'parameter_sets_once=yes aud=[1-9][0-9]* sei=[1-9]'"
    report=$(on_host /usr/bin/python3 Tests/tools/annexb-check.py "$R/$name-joiner.$ext" $hevc 2>&1); arc=$?
    errors=$(on_host ffmpeg -nostdin -v error -i "$R/$name-joiner.$ext" -f null - 2>&1 | head -3)
    joined=$(decoded_frames "$R/$name-joiner.$ext")
    check "${codec^^} camera: a TCP receiver joining 3 s in starts at an IDR with its parameter sets and decodes ${joined:-no} frames with no error (annexb-check: ${report##*$'\n'})${errors:+ ($errors)}" \
        test "$arc" = 0 -a -z "$errors" -a "${joined:-0}" -gt 100
    if [[ -n $enc ]]; then
        wait "$enc"
        local passing=none encoding=none total
        total=$(times_total "$R/$name.times") && [[ -n $cpu0 ]] && passing=$(( total - cpu0 ))
        total=$(times_total "$R/encoded.times") && [[ -n $enc0 ]] && encoding=$(( total - enc0 ))
        echo "   CPU ticks (1/100 s) for 300 frames after the first, side by side: camera's stream ${passing}, camrec encoding ${encoding}"
        # Measured 2026-11-27: see the commit. The camera's run also serves a TCP receiver; at 320x240 x264
        # ultrafast costs little, so the margin asked is a half.
        check "H264 camera: CPU after the first frame (${passing} ticks) is below half of camrec encoding 300 frames of the same size and rate beside it (${encoding} ticks), whose threads show its encoder ($(grep -m1 '^encode' "$R/encoded.threads" 2>/dev/null))" \
            sh -c "test '$passing' != none -a '$encoding' != none && test \$(( $passing * 2 )) -lt '$encoding' && grep -qx encode-h264 '$R/encoded.threads'"
    fi
}
stop_writer
if wait_for 10 rmmod v4l2loopback 2>/dev/null &&
    insmod "$LOOPBACK_KO" devices=2 video_nr=27,28 exclusive_caps=1,1 max_buffers=8 card_label="camrec H.264 loopback"; then
    camera_stream h264 h264 /dev/video27 9731
    camera_stream hevc h265 /dev/video28 9732
else
    bad "could not load v4l2loopback again for the H.264 and H.265 cameras"
fi

# 10. /stream.mjpg and /snapshot.jpg serve the MJPEG camera's own JPEGs, neither decoded nor encoded: the
# numbered JPEGs of case 7 written again at 10 fps (--steady: a burst after a stall of the emulated CPU would lap
# v4l2loopback's ring and overwrite a buffer camrec still reads, a torn part), camrec recording with --http on the port the suite
# forwards (MJPEG_PORT on the host). On the host: Tests/tools/mjpeg-parts.py splits the multipart stream
# itself and looks each part up among the JPEGs fed; headless Chromium opens the stream as a user would and reads the numbers it shows
# (browser-mjpeg.py); and a viewer that never reads stays connected through the recording, whose frames
# ffprobe counts. /snapshot.jpg is asked for with the feeder stopped (below).
echo "== /stream.mjpg and /snapshot.jpg from the MJPEG camera's own JPEGs ($(elapsed))"
stop_writer
DEV=/dev/video27
SERVED=("$R/served.mkv")
if [[ -z ${MJPEG_PORT:-} ]]; then
    bad "no MJPEG_PORT: Tests/suites/vm-mjpeg.sh runs this with a port forwarded for the viewers"
elif [[ -s $R/stamped.mjpeg ]] && wait_for 10 rmmod v4l2loopback 2>/dev/null &&
    insmod "$LOOPBACK_KO" devices=1 video_nr=27 exclusive_caps=1 max_buffers=8 card_label="camrec MJPEG loopback"; then
    nice -n -5 /usr/bin/python3 Tests/tools/loopback-feeder.py "$DEV" "$R/served.feed" --size 320x240 --fps 10 \
        --seconds 40 --mjpeg "$R/stamped.mjpeg" --pause "$R/served.pause" --steady &
    WRITER=$!
    if wait_capture; then
        "${CAMREC[@]}" --device "$DEV" --size 320x240 --frames 150 --preset ultrafast --stall-timeout 60 --http 0.0.0.0:18481 --http-insecure \
            --overwrite "${SERVED[@]}" >"$R/served.out" 2>"$R/served.err" &
        rec=$!
        wait_for 60 grep -q 'live view on' "$R/served.err"
        url=http://127.0.0.1:$MJPEG_PORT
        on_host /usr/bin/python3 Tests/tools/mjpeg-parts.py "$url/stream.mjpg" --never-read 30 >"$R/never.json" 2>&1 &
        never=$!
        on_host python3 Tests/tools/browser-mjpeg.py "$url/stream.mjpg" 5 >"$R/browser.json" 2>"$R/browser.err" &
        browser=$!
        on_host /usr/bin/python3 Tests/tools/mjpeg-parts.py "$url/stream.mjpg" --parts 30 --fed "$R/stamped.mjpeg" --ring 8 >"$R/parts.json" 2>&1
        last_written() { local line last=; while IFS= read -r line; do last=$line; done <"$R/served.feed"; last=${last#frame }; echo "${last%% *}"; }
        # A field of a tool's one line of JSON (a string, number, list or null), with bash alone.
        json() { local v; v=$(<"$1"); [[ $v =~ \"$2\":\ (\"[^\"]*\"|\[[^]]*\]|[^,\}]*) ]] || return 0
            v=${BASH_REMATCH[1]}; v=${v#\"}; v=${v%\"}; [[ $v == null ]] || echo "$v"; }
        # The snapshot: the feeder stops (--pause) and says the last picture it wrote, the newest camrec can have;
        # /snapshot.jpg is asked for until it is that picture's JPEG, at most 40 times. A camrec behind on the one
        # emulated CPU answers with an older one first (the H.264 camera's snapshot was seen 7 frames behind the
        # feeder in a CI run, its capture starved for 2 s); one that serves anything but the newest never gives it.
        # camrec runs with --stall-timeout 60, so the stopped camera is not a stalled one (2 s by default).
        : >"$R/served.pause"
        paused=; wait_for 30 test -s "$R/served.pause.at" && read -r paused <"$R/served.pause.at"
        snaps=()
        for ((try = 0; try < 40; try++)); do
            on_host /usr/bin/python3 Tests/tools/mjpeg-parts.py "$url/snapshot.jpg" --snapshot --fed "$R/stamped.mjpeg" >"$R/snapshot.json" 2>&1
            snap=$(json "$R/snapshot.json" fed_index)
            snaps+=("${snap:-none}")
            [[ -n $paused && $snap == "$paused" ]] && break
            nap 0.2
        done
        after=$(last_written)
        rm -f "$R/served.pause"
        wait "$browser"
        wait "$rec"; rc=$?
        wait "$never"
        # rising MIN COUNT LIST: a JSON list of at least COUNT numbers, each at least MIN and above the one before.
        rising() { local list=${3#[}; list=${list%]}; local -a n; IFS=', ' read -r -a n <<<"$list"
            (( ${#n[@]} >= $2 )) || return 1; local i; for ((i = 0; i < ${#n[@]}; i++)); do
                (( n[i] >= $1 )) && { (( i == 0 )) || (( n[i] > n[i - 1] )); } || return 1; done; }
        sed 's/^/   /' "$R/parts.json" "$R/snapshot.json" "$R/never.json" "$R/browser.json"
        check "/stream.mjpg: 30 parts framed as multipart/x-mixed-replace with each Content-Length (mjpeg-parts.py: $(json "$R/parts.json" framing), $(json "$R/parts.json" parts) parts)" \
            test "$(json "$R/parts.json" framing)/$(json "$R/parts.json" parts)" = "ok/[30]"
        fed=$(json "$R/parts.json" fed_index)
        # A part that is no fed JPEG is looked at as v4l2loopback's tear (mjpeg-parts.py --ring: the feeder's
        # next lap of its 8-buffer ring written into the buffer camrec had dequeued), to say which it was.
        # Two of three full runs beside stress-ng served one such part while /stream.mjpg's copy was taken
        # from the camera's buffer after the decode; it is now the decoder's own copy, taken first.
        check "/stream.mjpg: every part byte-identical to a JPEG fed to the camera, each a later one (fed pictures: $fed; torn by the loopback, [place, fed, written over it by]: $(grep -o '"torn": \[[^a-z]*\]' "$R/parts.json" | cut -c9-))" \
            rising 0 30 "$fed"
        # In order: no answer is an older picture than one already served (each a fed JPEG, byte for byte).
        in_order=yes previous=-1
        for snap in "${snaps[@]}"; do [[ $snap =~ ^[0-9]+$ ]] && ((snap >= previous)) && previous=$snap || in_order=no; done
        check "/snapshot.jpg: with the camera stopped at its picture ${paused:-?}, the camera's JPEG of it, byte for byte; the answers reach it and never go back (fed pictures: ${snaps[*]}; the feeder's newest when the last came: ${after:-?})" \
            test -n "$paused" -a "${snaps[${#snaps[@]}-1]}" = "$paused" -a "$in_order" = yes -a "${after:-x}" = "$paused"
        shown=$(json "$R/browser.json" numbers)
        check "Chromium shows /stream.mjpg with its number advancing (numbers read: $shown; error: $(json "$R/browser.json" error))" \
            eval 'test -z "$(json "$R/browser.json" error)" && rising 0 3 "$shown"'
        decoded=$(decoded_frames "${SERVED[0]}")
        check "a viewer that never reads held nothing up: the recording exits 0 with 150 frames (rc $rc, ${decoded:-none} decoded by ffprobe; the viewer was dropped after $(json "$R/never.json" closed_after) s)" \
            test "$rc" = 0 -a "${decoded:-0}" = 150
    else
        bad "v4l2loopback never became a capture node (served feeder)"
    fi
    stop_writer
else
    bad "could not load v4l2loopback again as $DEV with numbered JPEGs"
fi

# 11. A camera's own H.264 and H.265 through every output at once (Tests/vm-cases/camera-outputs.sh).
stop_writer
source "$(dirname "$0")/camera-outputs.sh"

echo "== done ($(elapsed))"
case_finish
