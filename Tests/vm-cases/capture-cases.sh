#!/bin/bash
# Tests/vm-cases/capture-cases.sh — camrec against vivid, inside the test VM. Run by
# Tests/suites/vm-capture.sh through Tests/vm/run.sh with vivid's parameters
# 'n_devs=2 multiplanar=1,2': instance 0 is a single-planar webcam, instance 1 a
# multi-planar one (and the one unplugged by the last case, so nothing runs after it).
# Environment: CAMREC (the binary), CAMREC_VM_RESULTS (writable dir). Ends with "N passed, N failed".
set -uo pipefail

source "$(dirname "$0")/case-lib.sh" capture
source "$(dirname "$0")/device-log.sh"
CAMREC_BIN=${CAMREC:?set CAMREC to the camrec binary}
# vivid draws frames in a kernel thread that competes for the VM's two emulated CPUs with
# x264; a USB webcam delivers from interrupts and is never starved like that. Running
# camrec niced keeps vivid on time, so the watchdog (2 s) sees a camera, not a CPU shortage.
CAMREC=(nice -n 10 "$CAMREC_BIN")
# camrec holds V4L2_PRIORITY_RECORD by default, and V4L2 shares priority across a device's
# nodes: no other program can set a control (EBUSY), vivid's fault injectors included. The
# fault cases therefore record with CAMREC_V4L2_PRIORITY=interactive (same capture code).
SHARED=(env CAMREC_V4L2_PRIORITY=interactive nice -n 10 "$CAMREC_BIN")
RUN=("${CAMREC[@]}")

output_node() {
    local n
    for n in /dev/video*; do
        v4l2-ctl -d "$n" -D 2>/dev/null | grep -q "platform:vivid-00$1" || continue
        v4l2-ctl -d "$n" -D 2>/dev/null | sed -n '/Device Caps/,$p' | grep -q 'Video Output' && { echo "$n"; return; }
    done
}
DEV=$(capture_node 0)
MDEV=$(capture_node 1)
OUTDEV=$(output_node 0)
echo "== capture nodes: single-planar $DEV, multi-planar $MDEV; output node $OUTDEV"
[[ -n $DEV && -n $MDEV && -n $OUTDEV ]] || { echo "vivid nodes not found"; v4l2-ctl --list-devices; echo "0 passed, 1 failed"; exit 1; }

# The independent Annex-B checker (Tests/tools/annexb-check.py, no code shared with camrec).
annexb_check() { on_host /usr/bin/python3 Tests/tools/annexb-check.py "$@"; }
# Waits until camrec has written at least N bytes to FILE (it is recording), up to S seconds.
wait_for_bytes() {
    local file=$1 bytes=$2 limit=$3 i
    for ((i = 0; i < limit * 10; i++)); do
        [[ -f $file && $(stat -c %s "$file") -ge $bytes ]] && return 0
        nap 0.1
    done
    return 1
}
# What camrec may drop itself (pool_empty=: every pool buffer still with the encoder; errored=) in a
# recording of these cases, beside what the case injects. Each case records at a rate and size the
# VM's emulated CPU keeps up with (640x480 at 10 fps, 1280x720 at 5 fps, --preset ultrafast), so
# camrec should drop nothing itself; frames the camera never delivered (vivid's thread late in the
# VM) are excused, as gaps in the kernel's own log of sequence numbers (device-log.sh).
# OWN_BOUND: measured 0 in every recording of these cases, with the host loaded by other builds and VMs
# (load ~12) and beside stress-ng --cpu 1 (load 13-15), 2026-11-27, but for the default recording at
# 1280x720, which now runs at 1 fps for that (below); 1 leaves a frame's margin. Dropping every tenth
# frame takes 10 of the 100 frames of the errored-buffer and refused-QBUF cases, 16 of the wrap's 160.
OWN_BOUND=1
# Beside a starved host the VM's one CPU can wait for a host core longer than it would have idled, and
# its encoder then falls behind the camera: 15 let go for an empty pool at 10 fps in CI's run of f66bd71
# (2026-11-30). The frames that wait is worth, measured by the host's scheduler (frames_withheld), are
# added to OWN_BOUND; on a host that kept the VM waiting no longer than its idle time that adds nothing.
# check_saved NAME FILE LOG [ERRORED [BOUND]]: a file written up to the end (or a fault) must decode
# and hold every frame camrec reported; camrec itself may have dropped ERRORED errored buffers (what
# the case injected, default 0) and at most BOUND (default OWN_BOUND) more, and what it excused as
# never delivered must be gaps in the camera's sequence numbers (camrec_own_drops, with the kernel's
# DQBUF log of the recording, LOG's .dmesg, of node REC_DEV); and the moving bars (every caller records
# 640 wide with them on) must miss exactly the dropped= frames. In a recording a fault or a signal
# ended (CUT_SHORT=1), a frame let go for an empty pool (or errored) just before the end has no later
# picture to leave a gap before, and neither has a gap in vivid's sequence just before it: so up to the
# frames the kernel's log shows after the (pool_empty= + errored= + 1)th-last buffer it handed out may be
# missing from that count (seen after SIGINT beside stress-ng: dropped=2, one a gap in vivid's
# sequence, one for an empty pool, and the bars showed the gap alone; and in CI's run of 819f077,
# 45 dropped, 27 gaps and 18 for an empty pool, the bars showed 25: 20 came after the last picture).
check_saved() {
    local name=$1 file=$2 log=$3 errored=${4:-0} bound=${5:-$OWN_BOUND} frames decoded dropped skipped empty
    frames=$(field "$log" frames)
    decoded=$(decoded_frames "$file")
    dropped=$(field "$log" dropped)
    skipped=$(counter "$log" skipped_by_device)
    empty=$(counter "$log" pool_empty)
    echo "   $name: summary frames=${frames:-none} dropped=${dropped:-none} (skipped by the device ${skipped:-?}, pool empty ${empty:-?}), ffprobe decodes ${decoded:-none}"
    check "$name: output decodes with every frame captured before the end (${decoded:-0} of ${frames:-?})" \
        test -n "$frames" -a "${frames:-0}" -gt 0 -a "${decoded:-x}" = "${frames:-y}"
    camrec_own_drops "$name" "$log" "${log%.err}.dmesg" "$REC_DEV" "$bound" "$errored"
    local errored_n let_go tail
    errored_n=$(counter "$log" errored)
    let_go=$(( ${empty:-0} + ${errored_n:-0} ))
    if [[ ${CUT_SHORT:-0} == 1 && $let_go -gt 0 ]]; then
        tail=$(on_host /usr/bin/python3 Tests/tools/dqbuf-sequences.py "${log%.err}.dmesg" "$REC_DEV" --tail "$let_go" |
            sed -n 's/.* tail=\([0-9]*\)$/\1/p')
        frames_in_order "$name" "$file" 640 "$log" --trailing "${tail:-$let_go}"
    else
        frames_in_order "$name" "$file" 640 "$log"
    fi
}

# Sets a vivid control while camrec records. A fault that was never injected must not let a
# case pass, so a failure here fails the case (the caller checks the status).
inject() {
    local out
    if ! out=$(v4l2-ctl -d "$1" -c "$2" 2>&1); then
        bad "could not inject $2 on $1: $out"
        return 1
    fi
}

# Still pictures make decoded frames comparable with raw ones: no text, no motion.
still() { v4l2-ctl -d "$1" -c osd_text_mode=2,horizontal_movement=3,vertical_movement=3; }
# Moving bars show which camera frames a recording holds (Tests/tools/frame-steps.py).
moving() { v4l2-ctl -d "$1" -c osd_text_mode=2,horizontal_movement=5,vertical_movement=3; }
still "$DEV"; still "$MDEV"

echo "== camrec devices ($(elapsed))"
"${CAMREC[@]}" devices >"$R/devices.txt" 2>&1
rc=$?
head -8 "$R/devices.txt"
check "devices exits 0" test $rc = 0
check "devices lists $DEV with NV12 and YUYV" \
    sh -c "grep -q '^$DEV: ' '$R/devices.txt' && grep -q ' NV12 ' '$R/devices.txt' && grep -q ' YUYV ' '$R/devices.txt'"
check "devices names $OUTDEV as not a capture device" grep -q "not capture devices:.*$OUTDEV (video output device)" "$R/devices.txt"
"${CAMREC[@]}" devices --device "$DEV" >"$R/devices-one.txt" 2>&1
# vivid is a platform device, not on USB: it is known by the bus info its driver reports, node 0.
check "devices says how $DEV is known again after an unplug: by vivid's bus info" \
    grep -qE '^  known again after an unplug by its bus info platform:vivid-[0-9]+ \(not a USB camera\), node 0$' "$R/devices-one.txt"
check "devices --device $DEV lists sizes with rates" grep -qE '^ +1280x720 +1, 2, 4, 5, 10, 12.5' "$R/devices-one.txt"

if [[ -z ${SKIP_DEFAULT:-} ]]; then
# docs/CAMERAS.md's first command at a rate the VM keeps up with: camrec's default choice on vivid is NV12
# 1280x720 (checked below) at 12.5 fps, and one emulated CPU encodes only ~8 fps of 1280x720 even
# with --preset ultrafast (measured: 100 frames dropped for 200 recorded, exactly the 100 the
# pictures miss). At 5 fps and ultrafast nothing is dropped on a quiet host, but beside stress-ng
# --cpu 1 on a host loaded by other builds and VMs (load 13-15) the encoder kept up with 2.8 fps, then
# 1.3: 114 of 200 let go with the pool empty at 5 fps, 31 of 100 at 2 fps (2026-11-27). So 1 fps:
# frames vivid never delivered (its thread late in the VM) are excused as gaps in the kernel's DQBUF
# log, and what camrec drops itself is bounded by OWN_BOUND. 20 frames (20 s; 50 took 50 s of the suite's
# budget, and twenty IDRs each with its SPS and PPS prove what fifty did).
echo "== default recording: camrec --device $DEV --frames 20 --fps 1 --preset ultrafast out.h264 ($(elapsed))"
moving "$DEV"
device_log_start "$DEV"
vcpu0=$(vcpu_sample)
timeout 400 "${CAMREC[@]}" --device "$DEV" --frames 20 --fps 1 --preset ultrafast --log-level info "$R/default.h264" 2>"$R/default.err"
rc=$?
withheld=$(frames_withheld "default recording" "$vcpu0" "$(vcpu_sample)" 1000)
device_log_save "$R/default.dmesg"
cat "$R/default.err"
still "$DEV"
check "default recording exits 0" test $rc = 0
check "ffprobe decodes 20 frames" test "$(decoded_frames "$R/default.h264")" = 20
frames_in_order "default recording" "$R/default.h264" 1280 "$R/default.err"
camrec_own_drops "default recording" "$R/default.err" "$R/default.dmesg" "$DEV" $((OWN_BOUND + withheld))
# NV12 is captured zero-copy: the camera writes into pool buffers, the CPU writes none of their bytes.
check "default recording: zero-copy, the CPU wrote 0 bytes into pool buffers (cpu_bytes=$(counter "$R/default.err" cpu_bytes))" \
    sh -c "grep -q 'capture: .*zero-copy' '$R/default.err' && test '$(counter "$R/default.err" cpu_bytes)' = 0"
# IDR every N frames, N = one second of the device's rate as the driver reports it (1 fps → 1).
fps=$(v4l2-ctl -d "$DEV" -P | awk '/Frames per second/ {print $4}')
gop=$(awk -v f="$fps" 'BEGIN { printf "%d", f + 0.5 }')
# One line per frame: ffprobe's csv adds a blank line after a frame with side data, so keep digits only.
keys=$(on_host ffprobe -v error -select_streams v:0 -show_entries frame=key_frame -of csv=p=0 "$R/default.h264" \
    | tr -cd '01\n' | grep -E '^[01]$' | awk '$1 == 1 {print NR - 1}' | tr '\n' ' ')
expected=$(seq 0 "$gop" 19 | tr '\n' ' ')
echo "   device rate $fps fps → IDR every $gop; key frames at: $keys"
check "an IDR every $gop frames (ffprobe's key-frame flags)" test "$keys" = "$expected"
annexb_check --frames 20 --idr-interval "$gop" "$R/default.h264" >"$R/default.annexb" 2>&1
rc=$?
tail -1 "$R/default.annexb"
check "annexb-check: 4-byte start codes, SPS+PPS right before each IDR, IDR every $gop, 20 pictures (exit $rc)" test $rc = 0
"${CAMREC[@]}" inspect --summary "$R/default.h264" >"$R/default.inspect" 2>&1
check "camrec inspect agrees: the contract is kept (exit 0)" test $? = 0
check "default recording is 1280x720" \
    test "$(on_host ffprobe -v error -show_entries stream=width,height -of csv=p=0 "$R/default.h264")" = "1280,720"
fi

# Records FORMAT at SIZE and compares the last decoded frame with a raw frame vivid sends
# (captured by v4l2-ctl, converted to yuv420p by ffmpeg). The picture is still, so this checks
# conversion fidelity; which frames and in what order is the moving-bars checks' job.
# Least PSNR, from what was measured (x264 at --qp 12 on a still pattern is deterministic):
# YUV layouts decode identical to ffmpeg's conversion (inf dB), so 60 dB still fails any shifted,
# swapped or mis-scaled plane; RGB 58.9 dB (camrec's and swscale's RGB→YUV rounding differ), bound
# 57; Bayer (libv4lconvert's demosaic vs vivid's YUYV of the same pattern) 43.3 dB for BA81 640x480
# and 45.6 dB for RGGB 1280x720, bounds 42 and 44: ~1.5 dB under each measurement.
psnr_case() {
    local dev=$1 fourcc=$2 ffpix=$3 size=$4 frames=$5
    local w=${size%x*} h=${size#*x} name="$fourcc-$size${6:-}"
    v4l2-ctl -d "$dev" -v "width=$w,height=$h,pixelformat=$fourcc" || { bad "$name: v4l2-ctl cannot set the format"; return; }
    rm -f "$R/$name.raw"
    timeout 60 v4l2-ctl -d "$dev" --stream-mmap=3 --stream-count=2 --stream-to="$R/$name.raw" 2>/dev/null
    device_log_start "$dev"
    # 5 fps: slow enough for the VM at every size (at vivid's 25 fps a few frames were dropped).
    timeout 120 "${CAMREC[@]}" --device "$dev" --pixel-format "$fourcc" --size "$size" --fps 5 --frames "$frames" \
        --encoder software --preset ultrafast --qp 12 --log-level info "$R/$name.h264" 2>"$R/$name.err"
    local rc=$?
    device_log_save "$R/$name.dmesg"
    if [[ $rc != 0 ]]; then bad "$name: camrec exited $rc: $(tail -1 "$R/$name.err")"; return; fi
    # NV12 is the pool's own format: vivid (which takes USERPTR and honours a longer bytesperline)
    # writes straight into pool buffers; every other format takes one conversion pass.
    # The log names the path; the counter measures it: bytes the CPU wrote into pool buffers,
    # 0 for zero-copy, one NV12 frame (w*h*3/2) per delivered frame for every other path.
    local delivered cpu_bytes frame_nv12=$((w * h * 3 / 2))
    delivered=$(counter "$R/$name.err" delivered) cpu_bytes=$(counter "$R/$name.err" cpu_bytes)
    if [[ $fourcc == NV12 || $fourcc == NM12 ]]; then
        check "$name: captured zero-copy into pool buffers, the CPU wrote 0 bytes of them (cpu_bytes=$cpu_bytes)" \
            sh -c "grep -q 'capture: .*zero-copy' '$R/$name.err' && test '$cpu_bytes' = 0"
    elif [[ $ffpix == bayer_* ]]; then
        check "$name: converted by libv4lconvert, then one pass: $frame_nv12 bytes per frame ($cpu_bytes for $delivered)" \
            sh -c "grep -q 'capture: .*libv4lconvert to YUV 4:2:0' '$R/$name.err' && test '$delivered' = $frames && test '$cpu_bytes' = $((frames * frame_nv12))"
    else
        check "$name: mmap and one conversion pass: $frame_nv12 bytes per frame ($cpu_bytes for $delivered)" \
            sh -c "grep -q 'capture: .*mmap, one conversion pass' '$R/$name.err' && test '$delivered' = $frames && test '$cpu_bytes' = $((frames * frame_nv12))"
    fi
    local raw_size frame_bytes
    raw_size=$(stat -c %s "$R/$name.raw" 2>/dev/null || echo 0)
    frame_bytes=$((raw_size / 2))
    tail -c "$frame_bytes" "$R/$name.raw" >"$R/$name.one.raw"
    # The reference: vivid's raw frame in its own format, converted to 4:2:0 by swscale in the same
    # ffmpeg that decodes the recording's last picture and measures the PSNR (one ffmpeg, on the host).
    # For the Bayer cases it is vivid's YUYV frame of the same still pattern.
    local ref=$R/$name.one.raw refpix=$ffpix
    if [[ -n ${REF_FROM:-} ]]; then
        ref=$R/$REF_FROM.one.raw refpix=yuyv422
    elif [[ $ffpix == yv12 ]]; then
        # FFmpeg has no YV12 (Y, V, U): reorder the planes into I420 by hand.
        local q=$((w * h / 4))
        { head -c $((w * h)) "$R/$name.one.raw"; tail -c "$q" "$R/$name.one.raw"
          head -c $((w * h + q)) "$R/$name.one.raw" | tail -c "$q"; } >"$R/$name.ref.yuv"
        ref=$R/$name.ref.yuv refpix=yuv420p
    fi
    local psnr
    psnr=$(on_host ffmpeg -hide_banner -nostdin -i "$R/$name.h264" -f rawvideo -pix_fmt "$refpix" -s "$size" -i "$ref" \
        -lavfi "[0:v]select='eq(n\,$((frames - 1)))',setpts=PTS-STARTPTS[a];[1:v]format=yuv420p[b];[a][b]psnr" -f null - 2>&1 \
        | grep -o 'average:[0-9.inf]*' | cut -d: -f2)
    local decoded
    decoded=$(decoded_frames "$R/$name.h264")
    echo "   $name: $decoded frames decoded, PSNR vs vivid's raw frame ${psnr:-none} dB, dropped=$(field "$R/$name.err" dropped)"
    local least=${MIN_PSNR:-60}
    check "$name: $frames frames and PSNR ${psnr:-none} dB > $least" \
        awk -v p="${psnr:-0}" -v d="${decoded:-0}" -v f="$frames" -v m="$least" 'BEGIN { exit !((p == "inf" || p > m) && d == f) }'
    # Drops the conversion path could cause (an errored or short buffer, a failed conversion, an empty
    # pool) are camrec's own: bounded. A frame the camera never delivered is excused as a gap in the
    # kernel's log, and the still pattern makes the PSNR check indifferent to it.
    camrec_own_drops "$name" "$R/$name.err" "$R/$name.dmesg" "$dev" "$OWN_BOUND"
}

if [[ -z ${SKIP_MATRIX:-} ]]; then
echo "== formats × sizes vs vivid's raw frames ($(elapsed))"
# Two sizes: 640x480 (a multiple of 16 both ways, as 1280x720 is) and 1920x1080 (1080 is not: the
# encoders' padded rows). All five at 1280x720 too took 50 s of the VM's time and reached no other
# code; YUYV at 1280x720 stays, below, as the RGGB case's reference.
for size in 640x480 1920x1080; do
    n=6; [[ $size == 1920x1080 ]] && n=3
    psnr_case "$DEV" YUYV yuyv422 "$size" $n
    psnr_case "$DEV" UYVY uyvy422 "$size" $n
    psnr_case "$DEV" NV12 nv12 "$size" $n
    psnr_case "$DEV" YU12 yuv420p "$size" $n
    MIN_PSNR=57 psnr_case "$DEV" RGB3 rgb24 "$size" $n
done
echo "== other layouts at 640x480 ($(elapsed))"
psnr_case "$DEV" NV21 nv21 640x480 4
psnr_case "$DEV" 422P yuv422p 640x480 4
MIN_PSNR=57 psnr_case "$DEV" BGR4 bgr0 640x480 4
echo "== multi-planar API ($MDEV) ($(elapsed))"
psnr_case "$MDEV" NM12 nv12 640x480 4
# Bayer: camrec has no converter of its own, libv4lconvert demosaics. The reference is vivid's
# YUYV frame of the same still pattern (FFmpeg's bayer_* import of vivid's raw frames swaps red
# and blue, so it can't serve): this checks colours and geometry through the whole path.
echo "== formats only libv4lconvert converts ($(elapsed))"
MIN_PSNR=42 REF_FROM=YUYV-640x480 psnr_case "$DEV" BA81 bayer_bggr8 640x480 4
psnr_case "$DEV" YUYV yuyv422 1280x720 3
MIN_PSNR=44 REF_FROM=YUYV-1280x720 psnr_case "$DEV" RGGB bayer_rggb8 1280x720 3
rm -f "$R/nv24.h264"
"${CAMREC[@]}" --device "$DEV" --pixel-format NV24 --frames 3 "$R/nv24.h264" 2>"$R/nv24.err"
rc=$?
cat "$R/nv24.err"
check "NV24 (neither camrec nor libv4lconvert converts it): exit 68, says so, no file" \
    sh -c "test $rc = 68 && grep -q 'cannot convert NV24 .*not even with libv4lconvert' '$R/nv24.err' && test ! -e '$R/nv24.h264'"
# libv4lconvert is opened on first use (Sources/CV4L2/CV4L2.c). Unreadable for this camrec only (a mount
# namespace lays an empty file over it): Bayer ends in one line naming its Debian package, 73, no file.
v4lconvert=$(readlink -f "$(ldconfig -p | awk '/libv4lconvert\.so\.0 .*x86-64/ {print $NF; exit}')")
rm -f "$R"/nov4lconvert.h264*
unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$v4lconvert" \
    "${CAMREC[@]}" --device "$DEV" --pixel-format BA81 --frames 3 "$R/nov4lconvert.h264" 2>"$R/nov4lconvert.err"
rc=$?
cat "$R/nov4lconvert.err"
check "BA81 with libv4lconvert unreadable: exit 73, one line naming Debian's libv4lconvert0, no file" \
    sh -c "test $rc = 73 && test \$(grep -c '^camrec: error:' '$R/nov4lconvert.err') = 1 &&
        grep -q '^camrec: error: cannot load libv4lconvert.so.0 (.*); install Debian.s libv4lconvert0 ' '$R/nov4lconvert.err' &&
        ! ls '$R'/nov4lconvert.h264* 2>/dev/null"
fi

echo "== errors before recording ($(elapsed))"
rm -f "$R/o1.h264"
"${CAMREC[@]}" --device "$OUTDEV" --frames 10 "$R/o1.h264" 2>"$R/o1.err"
rc=$?
cat "$R/o1.err"
check "output node $OUTDEV: exit 67" test $rc = 67
check "output node: says it is an output device and names the capture nodes" \
    grep -q "is a video output device, not a video capture device; capture devices here: .*$DEV" "$R/o1.err"
check "output node: no output file" test ! -e "$R/o1.h264"
rm -f "$R/o2.h264"
"${CAMREC[@]}" --device /dev/video99 --frames 10 "$R/o2.h264" 2>"$R/o2.err"
rc=$?
cat "$R/o2.err"
check "missing node: exit 66" test $rc = 66
check "missing node: clear message" grep -q "no such device /dev/video99" "$R/o2.err"
check "missing node: no output file" test ! -e "$R/o2.h264"
"${CAMREC[@]}" --device "$DEV" --size 1000x500 --frames 10 "$R/o3.h264" 2>"$R/o3.err"
rc=$?
cat "$R/o3.err"
check "unsupported size: exit 68 with the sizes offered" \
    sh -c "test $rc = 68 && grep -q 'sizes offered: .*1280x720' '$R/o3.err'"
"${CAMREC[@]}" --device "$DEV" --size 1920x1080 --fps 30 --frames 10 "$R/o4.h264" 2>"$R/o4.err"
rc=$?
cat "$R/o4.err"
check "unsupported rate: exit 68 with the rates offered" \
    sh -c "test $rc = 68 && grep -q 'rates offered at 1920x1080' '$R/o4.err'"

# Faults while recording run at 640x480 and 10 fps (the VM encodes that without dropping) in the background.
# start_recording NAME DEV [ARGS...]: starts camrec and returns once it has written a frame
# (its .partial file holds bytes), or after 60 s with a failed check.
start_recording() {
    local name=$1 dev=$2; shift 2
    rm -f "$R/$name.h264" "$R/$name.h264".camrec-*.partial
    REC_DEV=$dev
    device_log_start "$dev"
    VCPU_BEFORE=$(vcpu_sample)
    # --foreground: timeout(1) otherwise passes a signal it gets to the child and to its whole process
    # group, so one `kill -INT` reaches camrec twice ("interrupted twice", exit 130, seen under load
    # when camrec's signal thread took the first before the second arrived).
    timeout --foreground 120 "${RUN[@]}" --device "$dev" --size 640x480 --fps 10 --encoder software --preset ultrafast \
        --log-level info "$@" "$R/$name.h264" 2>"$R/$name.err" &
    REC=$!
    local i f
    for ((i = 0; i < 600; i++)); do
        for f in "$R/$name.h264".camrec-*.partial; do [[ -s $f ]] && return 0; done
        kill -0 "$REC" 2>/dev/null || break
        nap 0.1
    done
    bad "$name: camrec wrote no frame within 60 s (or ended first): $(tail -2 "$R/$name.err" | tr '\n' ' ')"
    return 1
}
# finish_recording NAME: waits for camrec and keeps the kernel's log of the recording; camrec's exit status.
# WITHHELD: the frames at start_recording's 10 fps the host's withholding of the VM's CPU was worth.
finish_recording() {
    local name=$1 rc
    wait "$REC"
    rc=$?
    WITHHELD=$(frames_withheld "$name" "$VCPU_BEFORE" "$(vcpu_sample)" 100)
    device_log_save "$R/$name.dmesg"
    echo "   $name: exit $rc; $(grep -v '^camrec: finished' "$R/$name.err" | tail -2 | tr '\n' ' ')"
    grep '^camrec: finished' "$R/$name.err" | sed 's/^/   /'
    return $rc
}

echo "== two camrec on one device ($(elapsed))"
moving "$DEV"   # check_saved reads the moving bars
start_recording first "$DEV" --duration 60
# The second at a lower priority (nice 19 to the first's 10): its start-up takes seconds of the VM's one
# emulated CPU, and the first then dropped frames for want of CPU (dropped=14 in a full run on a slow
# host), which is not what "unharmed" asks about: what the second does to the first through the device.
second_started=$(date +%s%N)
nice -n 19 "$CAMREC_BIN" --device "$DEV" --frames 10 --log-level info "$R/second.h264" 2>"$R/second.err"
rc=$?
second_ms=$((($(date +%s%N) - second_started) / 1000000))
first_alive=no; kill -0 "$REC" 2>/dev/null && first_alive=yes
cat "$R/second.err"
# "At once" proved by order, not by a clock: it returns while the first (60 s long) still
# records, and it never got as far as recording (no "recording" line).
check "second camrec exits 70 while the first still records (first still recording: $first_alive), before recording anything" \
    sh -c "test $rc = 70 && test $first_alive = yes && ! grep -q 'recording /dev' '$R/second.err'"
check "second camrec says the device is busy" grep -q "^camrec: error: $DEV is busy: another camrec is recording from it" "$R/second.err"
check "record priority: another program cannot change a control meanwhile (EBUSY)" \
    sh -c "v4l2-ctl -d '$DEV' -c brightness=100 2>&1 | grep -q 'Device or resource busy'"
check "second camrec creates no file" test ! -e "$R/second.h264"
kill -INT "$REC"
finish_recording first
check "first camrec unharmed: exit 0 after SIGINT" test $? = 0
# What the second could do to the first through the device (stop its stream, change its format,
# fail its buffers) shows as an exit other than 0, errored buffers or pictures missing that camrec
# did not report. Beside a busy host the VM's one emulated CPU, shared with the second's start-up
# (seconds under TCG), fell behind for the first: dropped=24, 8 of them never delivered by vivid
# itself (2026-11-26); and even at nice 19, 19 let go for an empty pool, each a gap in the moving bars
# (2026-11-29). The frames vivid never delivered are excused as gaps in the kernel's log; what camrec
# dropped itself may be OWN_BOUND and the frames of the second's run at the first's 10 fps (its wall
# time, measured outside camrec): more than that is not the second's doing.
starved=$(((second_ms * 10 + 999) / 1000))
echo "   the second camrec ran ${second_ms} ms: up to $starved frames of the first's 10 fps"
CUT_SHORT=1 check_saved "first camrec unharmed" "$R/first.h264" "$R/first.err" 0 $((OWN_BOUND + starved))
check "first camrec unharmed: no buffer came back errored (errored=$(counter "$R/first.err" errored))" test "$(counter "$R/first.err" errored)" = 0

moving "$DEV"
echo "== fault: percentage_of_dropped_buffers=30 ($(elapsed))"
v4l2-ctl -d "$DEV" -c percentage_of_dropped_buffers=30
device_log_start "$DEV"
vcpu0=$(vcpu_sample)
timeout 120 "${CAMREC[@]}" --device "$DEV" --size 320x180 --fps 10 --frames 30 --preset ultrafast --log-level info \
    "$R/drop.h264" 2>"$R/drop.err"
rc=$?
withheld=$(frames_withheld "dropped buffers" "$vcpu0" "$(vcpu_sample)" 100)
device_log_save "$R/drop.dmesg"
v4l2-ctl -d "$DEV" -c percentage_of_dropped_buffers=0
cat "$R/drop.err"
dropped=$(field "$R/drop.err" dropped)
check "dropped buffers: exit 0, 30 frames" sh -c "test $rc = 0 && test \"$(decoded_frames "$R/drop.h264")\" = 30"
# vivid drops each buffer with probability 0.3 (30 delivered, ~13 dropped on average; none at
# all has probability 0.7^30 ≈ 2e-5), and its bars move on for every frame it drops, so the
# pictures count the drops exactly: camrec must report that very number, and none as errored; and
# they are the device's drops (gaps in its sequence numbers), none of camrec's own.
check "dropped buffers: some injected drops happened (dropped=${dropped:-none})" test "${dropped:-0}" -ge 1
frames_in_order "dropped buffers" "$R/drop.h264" 320 "$R/drop.err"
check "dropped buffers: none reported as errored (errored=$(counter "$R/drop.err" errored))" test "$(counter "$R/drop.err" errored)" = 0
camrec_own_drops "dropped buffers" "$R/drop.err" "$R/drop.dmesg" "$DEV" $((OWN_BOUND + withheld))

RUN=("${SHARED[@]}")
echo "== fault: inject_v4l2_buf_flag_error ($(elapsed))"
# 100 frames (10 s at 10 fps) leave time to inject after the first frame; camrec ends by itself.
if start_recording flagerr "$DEV" --frames 100 && inject "$DEV" inject_v4l2_buf_flag_error=1; then
    finish_recording flagerr
    rc=$?
    check "errored buffer: dropped, recording goes on (exit $rc)" test $rc = 0
    check_saved "errored buffer" "$R/flagerr.h264" "$R/flagerr.err" 1 $((OWN_BOUND + WITHHELD))
    # One buffer was flagged: exactly one frame dropped, reported as errored, missing from the pictures.
    check "errored buffer: reported apart as errored=1 (got errored=$(field "$R/flagerr.err" errored))" \
        test "$(field "$R/flagerr.err" errored)" = 1
else
    kill "$REC" 2>/dev/null; wait "$REC" 2>/dev/null
fi

echo "== fault: inject_vidioc_qbuf_error ($(elapsed))"
if start_recording qbuferr "$DEV" --frames 100 && inject "$DEV" inject_vidioc_qbuf_error=1; then
    finish_recording qbuferr
    rc=$?
    check "refused QBUF: recording goes on (exit $rc)" test $rc = 0
    check_saved "refused QBUF" "$R/qbuferr.h264" "$R/qbuferr.err" 0 $((OWN_BOUND + WITHHELD))
    # vivid refuses one QBUF: camrec must have queued that buffer again on a retry, exactly once,
    # and (the ring holds 4 buffers, the retry comes within 20 ms) lost no frame meanwhile.
    check "refused QBUF: the buffer was queued again on retry (requeued_after_refusal=$(counter "$R/qbuferr.err" requeued_after_refusal), want 1)" \
        test "$(counter "$R/qbuferr.err" requeued_after_refusal)" = 1
else
    kill "$REC" 2>/dev/null; wait "$REC" 2>/dev/null
fi

echo "== fault: wrap_sequence_number ($(elapsed))"
# vivid then starts counting at 2^32 - 128: the sequence wraps at the 129th frame, so record 160.
v4l2-ctl -d "$DEV" -c wrap_sequence_number=1 || bad "could not set wrap_sequence_number"
# YUYV: the longest recording through the one-pass conversion path (the fault cases above record NV12,
# zero-copy), so that path's own drops are bounded over 160 frames too.
device_log_start "$DEV"
vcpu0=$(vcpu_sample)
timeout 120 "${CAMREC[@]}" --device "$DEV" --size 320x180 --fps 25 --frames 160 --pixel-format YUYV --preset ultrafast \
    --log-level info "$R/wrap.h264" 2>"$R/wrap.err"
rc=$?
withheld=$(frames_withheld "sequence wrap" "$vcpu0" "$(vcpu_sample)" 40)
device_log_save "$R/wrap.dmesg"
v4l2-ctl -d "$DEV" -c wrap_sequence_number=0
cat "$R/wrap.err"
check "sequence wrap: exit 0, 160 frames" sh -c "test $rc = 0 && test \"$(decoded_frames "$R/wrap.h264")\" = 160"
check "sequence wrap: camrec saw the 32-bit sequence wrap once (sequence_wraps=$(counter "$R/wrap.err" sequence_wraps))" \
    test "$(counter "$R/wrap.err" sequence_wraps)" = 1
# A wrap counted as drops would make dropped= differ from the frames the moving bars miss (a
# frame really lost under load is on both sides): frames_in_order checks they are equal.
frames_in_order "sequence wrap (not counted as drops)" "$R/wrap.h264" 320 "$R/wrap.err"
camrec_own_drops "sequence wrap" "$R/wrap.err" "$R/wrap.dmesg" "$DEV" $((OWN_BOUND + withheld))

RUN=("${CAMREC[@]}")
echo "== fault: inject_vidioc_streamon_error ($(elapsed))"
v4l2-ctl -d "$DEV" -c inject_vidioc_streamon_error=1 || bad "could not set inject_vidioc_streamon_error"
rm -f "$R/streamon.h264"
timeout 60 "${CAMREC[@]}" --device "$DEV" --size 640x480 --frames 10 --log-level info "$R/streamon.h264" 2>"$R/streamon.err"
rc=$?
cat "$R/streamon.err"
# Ordering by events: streaming never started (no "capture:" line, logged once STREAMON succeeds).
check "STREAMON refused: exit 71 before capture started (no 'capture:' line)" \
    sh -c "test $rc = 71 && ! grep -q 'capture: ' '$R/streamon.err'"
check "STREAMON refused: the error line names VIDIOC_STREAMON" \
    grep -q "^camrec: error: .*failed to start streaming (VIDIOC_STREAMON: " "$R/streamon.err"
check "STREAMON refused: no output file and no .partial left" \
    sh -c "test ! -e '$R/streamon.h264' && ! ls '$R'/streamon.h264.camrec-*.partial 2>/dev/null | grep -q ."
timeout 60 "${CAMREC[@]}" --device "$DEV" --size 640x480 --frames 5 "$R/after-streamon.h264" 2>/dev/null
check "the device works again after the refused STREAMON" test $? = 0

# fault_ends_recording NAME DEV CONTROL MESSAGE WHAT [ARGS...]: a fault camrec must notice by itself
# while recording (exit 71 with MESSAGE as its error line) and the file kept with every frame before it.
fault_ends_recording() {
    local name=$1 dev=$2 control=$3 message=$4 what=$5 rc
    shift 5
    if start_recording "$name" "$dev" --duration 60 "$@" && inject "$dev" "$control"; then
        finish_recording "$name"
        rc=$?
        # 71 means camrec noticed by itself (the 60-s --duration would end it with 0, the 120-s timeout with 124).
        check "$what: exit 71, by itself (got $rc)" test $rc = 71
        check "$what: the error line says so ($message)" grep -q "^camrec: error: $message" "$R/$name.err"
        CUT_SHORT=1 check_saved "$what" "$R/$name.h264" "$R/$name.err" 0 $((OWN_BOUND + WITHHELD))
    else
        kill "$REC" 2>/dev/null; wait "$REC" 2>/dev/null
    fi
}
RUN=("${SHARED[@]}")
echo "== fault: inject_fatal_streaming_error ($(elapsed))"
fault_ends_recording fatal "$DEV" inject_fatal_streaming_error=1 "$DEV reported a fatal streaming error" "fatal streaming error"
# recorded_through NAME WHAT PATTERN HOW: the recording's "capture:" log line shows the path it took.
recorded_through() { check "$2: it was recorded through $4" grep -q "capture: .*$3" "$R/$1.err"; }
# Capture paths as FOURCC|label|pattern of the "capture:" line|how it reads|file tag.
LIBV4LCONVERT_PATH="BA81|libv4lconvert path|libv4lconvert|libv4lconvert|bayer"
MMAP_PATH="YUYV|mmap path|mmap, one conversion pass|mmap and one conversion pass|yuyv"
ZERO_COPY_PATH="NV12|zero-copy path|zero-copy|zero-copy (USERPTR)|nv12"
# The same two faults on the libv4lconvert path (Bayer, which camrec cannot convert itself: the
# converter sits between DQBUF and the pool and must not hide the driver's errors) and on the mmap
# path (YUYV: vivid's own buffers, one conversion pass into the pool).
for capture_path in "$LIBV4LCONVERT_PATH" "$MMAP_PATH"; do
    IFS='|' read -r fourcc label pattern how tag <<<"$capture_path"
    echo "== fault: inject_fatal_streaming_error on the $label ($fourcc) ($(elapsed))"
    moving "$DEV"
    fault_ends_recording "fatal-$tag" "$DEV" inject_fatal_streaming_error=1 "$DEV reported a fatal streaming error" \
        "$label, fatal streaming error" --pixel-format "$fourcc"
    recorded_through "fatal-$tag" "$label, fatal streaming error" "$pattern" "$how"
    echo "== fault: disconnect on the $label ($fourcc) ($(elapsed))"
    fault_ends_recording "unplug-$tag" "$DEV" disconnect=1 "$DEV was disconnected while recording" \
        "$label, disconnect" --pixel-format "$fourcc"
    recorded_through "unplug-$tag" "$label, disconnect" "$pattern" "$how"
    wait_for 30 eval "v4l2-ctl -d '$DEV' -D >/dev/null 2>&1"
done

# stall_ends_recording NAME WHAT [ARGS...]: vivid keeps every buffer from now on
# (percentage_of_dropped_buffers=100: no frame and no error, the node open and streaming), which is a
# camera that stalls: the watchdog must end the recording with 72 after max(2 s, 4 frame intervals)
# (10 fps here: 2 s) and keep the file with every frame before it.
stall_ends_recording() {
    local name=$1 what=$2 rc t0 t1
    shift 2
    if start_recording "$name" "$DEV" --duration 60 "$@"; then
        t0=$EPOCHREALTIME
        if inject "$DEV" percentage_of_dropped_buffers=100; then
            finish_recording "$name"
            rc=$?
            t1=$EPOCHREALTIME
            echo "   $what: camrec ended $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s after the stall began"
            check "$what: exit 72, by itself (got $rc)" test $rc = 72
            check "$what: the error line says no frame came for at least the watchdog's 2 s" \
                grep -qE "^camrec: error: $DEV delivered no frame for ([2-9]|[1-9][0-9])(\.[0-9]+)? s; the camera stalled" "$R/$name.err"
            CUT_SHORT=1 check_saved "$what" "$R/$name.h264" "$R/$name.err" 0 $((OWN_BOUND + WITHHELD))
        else
            kill "$REC" 2>/dev/null; wait "$REC" 2>/dev/null
        fi
    fi
    v4l2-ctl -d "$DEV" -c percentage_of_dropped_buffers=0
}
moving "$DEV"
for capture_path in "$ZERO_COPY_PATH" "$MMAP_PATH" "$LIBV4LCONVERT_PATH"; do
    IFS='|' read -r fourcc label pattern how tag <<<"$capture_path"
    echo "== stall: vivid delivers nothing more, the $label ($fourcc) ($(elapsed))"
    stall_ends_recording "stall-$tag" "$label, stall" --pixel-format "$fourcc"
    recorded_through "stall-$tag" "$label, stall" "$pattern" "$how"
done

echo "== fault: disconnect ($MDEV, last: the node is gone afterwards) ($(elapsed))"
moving "$MDEV"
fault_ends_recording unplug "$MDEV" disconnect=1 "$MDEV was disconnected while recording" "disconnect"
# vivid plugs the device back in when its last user closes it: a new recording must work.
# Wait (up to 30 s) for the node to answer again rather than for a fixed time.
for ((i = 0; i < 300; i++)); do v4l2-ctl -d "$MDEV" -D >/dev/null 2>&1 && break; nap 0.1; done
timeout 60 "${CAMREC[@]}" --device "$MDEV" --size 640x480 --frames 5 "$R/replugged.h264" 2>"$R/replugged.err"
rc=$?
cat "$R/replugged.err"
check "recording again after vivid reconnects works (exit $rc)" test $rc = 0

echo "== done in $(elapsed)"
case_finish
