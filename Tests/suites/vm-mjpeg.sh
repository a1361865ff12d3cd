#!/bin/bash
# Tests/suites/vm-mjpeg.sh — camrec recording a real V4L2 MJPEG node in the test VM: v4l2loopback
# (built for the VM's kernel by Tests/vm/v4l2loopback.sh) fed by ffmpeg and by a small writer
# that sends damaged frames; and cameras that encode H.264 and H.265 themselves (--encoder camera), also through
# every output at once (Tests/vm-cases/camera-outputs.sh). One VM boot runs every case (Tests/vm-cases/mjpeg-cases.sh).
# Ends with the cases' "N passed, N failed" line; a setup or VM failure counts as one failure.
# Environment: see Tests/lib/vm-suite.sh (CAMREC, CAMREC_VM_RESULTS).
set -uo pipefail
source "$(dirname "$0")/../lib/vm-suite.sh"
vm_suite_start vm-mjpeg
# The kernel's log holds its DQBUF log of each recording (Tests/vm-cases/device-log.sh): 16 MiB, not 128 KiB.
export CAMREC_VM_APPEND="${CAMREC_VM_APPEND:-} log_buf_len=16M"
echo "vm-mjpeg: camrec $CAMREC, results in $RESULTS"
ko=$(Tests/vm/v4l2loopback.sh) || vm_suite_give_up "cannot build v4l2loopback for the VM's kernel"
writer=$RESULTS/mjpeg-writer
gcc -O2 -Wall -o "$writer" Tests/fixtures/mjpeg-writer.c || vm_suite_give_up "cannot build Tests/fixtures/mjpeg-writer.c"
# Numbered frames for the camera of the last case: camrec's test pattern (a frame number burned into
# every picture) as 300 JPEGs, and the numbers they hold (read by Tests/tools/pattern-counters.py).
pattern=$RESULTS/numbered.mjpeg
if "$CAMREC" --test-pattern --size 640x480 --frames 300 --qp 10 --preset ultrafast --overwrite "$RESULTS/numbered.h264" 2>/dev/null &&
    ffmpeg -nostdin -v error -y -i "$RESULTS/numbered.h264" -c:v mjpeg -q:v 3 -pix_fmt yuvj422p -f mjpeg "$pattern" &&
    python3 Tests/tools/pattern-counters.py "$RESULTS/numbered.h264" >"${pattern%.mjpeg}.counters"; then :
else rm -f "$pattern"; fi
# A camera's own streams for the cameras that encode (cases 8-9): 600 frames of 320x240 at 20 fps (camrec
# takes 300; the rest for frames v4l2loopback skips under load, so the camera never runs dry), one slice
# per picture, no B-frames, an IDR every 30, an AUD in every access unit (the feeder splits there) and SEI.
streams=$RESULTS/camera-stream
ffmpeg -nostdin -v error -f lavfi -i testsrc2=size=320x240:rate=20 -frames:v 600 -c:v libx264 -preset ultrafast -threads 1 \
    -g 30 -keyint_min 30 -sc_threshold 0 -bf 0 -x264-params aud=1 -f h264 -y "$streams.h264" &&
    ffmpeg -nostdin -v error -f lavfi -i testsrc2=size=320x240:rate=20 -frames:v 600 -c:v libx265 -preset ultrafast \
        -x265-params aud=1:keyint=30:min-keyint=30:scenecut=0:bframes=0:open-gop=0:repeat-headers=1:frame-threads=1:log-level=error \
        -f hevc -y "$streams.h265" || rm -f "$streams".*
# The cameras of every output (Tests/vm-cases/camera-outputs.sh): the numbered pictures above as a camera's own
# H.264 and H.265, their top 128 lines (the numbers; small, to keep the VM's CPU for two recordings at once), an IDR
# every 20, no B-frames, AUD and SEI; made while the VM boots and runs the cases before.
numbered=$RESULTS/numbered-camera
( [[ -s $RESULTS/numbered.h264 ]] &&
    ffmpeg -nostdin -v error -i "$RESULTS/numbered.h264" -fps_mode passthrough -vf crop=640:128:0:0 -c:v libx264 -preset ultrafast -threads 1 \
        -g 20 -keyint_min 20 -sc_threshold 0 -bf 0 -x264-params aud=1 -f h264 -y "$numbered.h264" &&
    ffmpeg -nostdin -v error -i "$RESULTS/numbered.h264" -fps_mode passthrough -vf crop=640:128:0:0 -c:v libx265 -preset ultrafast \
        -x265-params aud=1:keyint=20:min-keyint=20:scenecut=0:bframes=0:open-gop=0:repeat-headers=1:frame-threads=1:log-level=error \
        -f hevc -y "$numbered.h265" &&
    python3 Tests/tools/pattern-counters.py "$numbered.h264" >"$numbered.counters"; : >"$numbered.ready" ) &
# Its RTSP servers (18491 for H.264, 18492 for H.265 in the VM), for ffmpeg on the host.
rtsp_ports=$(python3 -c 'import socket; s = [socket.socket() for _ in "ab"]; [x.bind(("127.0.0.1", 0)) for x in s]; print(":".join(str(x.getsockname()[1]) for x in s))')
# The host's viewers of /stream.mjpg (mjpeg-parts.py, Chromium) reach camrec in the VM (port 18481) through a forwarded port.
mjpeg_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
vm_suite_run mjpeg-cases.sh --vivid 'n_devs=1 node_types=0x1' --env "LOOPBACK_KO=$ko" --env "MJPEG_WRITER=$writer" \
    --env "PATTERN_MJPEG=$pattern" --env "CAMERA_STREAMS=$streams" --forward "$mjpeg_port:18481" --env "MJPEG_PORT=$mjpeg_port" \
    --env "CAMERA_NUMBERED=$numbered" --forward "${rtsp_ports%:*}:18491" --forward "${rtsp_ports#*:}:18492" --env "CAMERA_RTSP_PORTS=$rtsp_ports"
wait
vm_suite_finish
