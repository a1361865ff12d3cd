#!/bin/bash
# Tests/vm-cases/vaapi-vm.sh — camrec's VA-API path inside the test VM, on vgem's real DRM render node
# (/dev/dri/renderD128) with the test VA driver: the path users take (libva's DRM backend), not X11.
# Run by Tests/suites/vaapi-vm.sh through Tests/vm/run.sh.
# Environment: CAMREC (the binary), CAMREC_VM_RESULTS (writable dir), LIBVA_DRIVER_NAME=camrec_test and
# LIBVA_DRIVERS_PATH (the built test driver). Ends with "N passed, N failed".
set -uo pipefail

source "$(dirname "$0")/case-lib.sh" vaapi
source "$(dirname "$0")/device-log.sh"
CAMREC=${CAMREC:?set CAMREC to the camrec binary}
: "${LIBVA_DRIVER_NAME:?}" "${LIBVA_DRIVERS_PATH:?}"
# Recordings go to the results share, where the host's tools read them (on_host): the share also
# takes big I_PCM streams faster than the VM's RAM-backed /tmp (measured: 212 against 61 MB/s).
# They are removed at the end.
W=$R/work
mkdir -p "$W" && chmod 1777 "$W"   # the permission cases run as nobody and write here
chmod 0755 "$CAMREC_VM_RESULTS" "$R"  # (mktemp -d made the results dir 0700: nobody could not reach $W)
NODE=/dev/dri/renderD128

STRICT=(-err_detect +crccheck+bitstream+buffer+explode)
decoded_frames() {
    on_host ffprobe -v error "${STRICT[@]}" -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" 2>/dev/null
}
profile_of() {
    on_host ffprobe -v error -select_streams v:0 -show_entries stream=profile,width,height -of csv=p=0 "$1" 2>/dev/null
}
idr_frames() {
    on_host ffmpeg -hide_banner -nostdin -loglevel trace -i "$1" -c copy -bsf:v trace_headers -f null - 2>&1 |
        sed -n 's/.*nal_unit_type .* = \([0-9]*\)$/\1/p' |
        awk '$1 == 1 || $1 == 5 { if ($1 == 5) printf "%d ", n; n++ }' | sed 's/ $//'
}
expected_idrs() {  # frames interval
    seq 0 "$2" $(($1 - 1)) | tr '\n' ' ' | sed 's/ $//'
}
# The stream contract checked by Tests/tools/annexb-check.py, which shares no code with camrec
# (the host's /usr/bin/python3: a pyenv shim would need the host's HOME).
annexb_check() { on_host /usr/bin/python3 Tests/tools/annexb-check.py "$@"; }

echo "== kernel $(uname -r); $(ls -l $NODE)"
echo "== $(readlink -f /sys/class/drm/renderD128/device)"
check "$NODE exists (vgem)" test -c $NODE

echo "== camrec encoders, default device ($(elapsed))"
"$CAMREC" encoders >"$R/encoders.txt" 2>&1
rc=$?
cat "$R/encoders.txt"
check "encoders: exit 0, the default device is $NODE, the test driver's vendor and EncSlice, auto uses VA-API" \
    eval "[[ $rc == 0 ]] && grep -q 'VA-API device: $NODE' '$R/encoders.txt' &&
        grep -q 'driver: camrec test VA driver' '$R/encoders.txt' &&
        grep -q 'VAProfileH264ConstrainedBaseline (--profile baseline): VAEntrypointEncSlice' '$R/encoders.txt' &&
        grep -q 'auto uses: VA-API' '$R/encoders.txt'"

# 1. The exact command a user types, with the test pattern.
echo "== camrec --test-pattern --encoder vaapi --vaapi-device $NODE --frames 200 out.h264 ($(elapsed))"
(cd "$W" && "$CAMREC" --test-pattern --encoder vaapi --vaapi-device $NODE --frames 200 out.h264) >"$R/tp.log" 2>&1
rc=$?
cat "$R/tp.log"
n=$(decoded_frames "$W/out.h264")
idrs=$(idr_frames "$W/out.h264")
"$CAMREC" inspect --summary "$W/out.h264" >"$R/tp.inspect" 2>&1
irc=$?
cat "$R/tp.inspect"
annexb_check --frames 200 --idr-interval 30 "$W/out.h264" >"$R/tp.annexb" 2>&1
arc=$?
tail -1 "$R/tp.annexb"
check "test pattern via $NODE: exit 0" test $rc = 0
check "test pattern: ffprobe decodes 200 frames (got ${n:-none}), $(profile_of "$W/out.h264")" test "${n:-0}" = 200
check "test pattern: IDRs at 0, 30, …, 180 (got: $idrs)" test "$idrs" = "$(expected_idrs 200 30)"
check "test pattern: annexb-check finds the contract kept (4-byte start codes, SPS+PPS right before each IDR, IDR every 30, 200 pictures), and so does camrec inspect" \
    test "$arc/$irc" = 0/0
rm -f "$W/out.h264"

# 2. Pixel identity through the DRM path (the host suite covers more sizes under X11).
echo "== pixel identity, 650x482 NV12 through $NODE ($(elapsed))"
on_host ffmpeg -hide_banner -nostdin -loglevel error -f lavfi -i testsrc2=s=650x482:r=30 -frames:v 10 -pix_fmt nv12 -f rawvideo -y "$W/in.nv12"
CAMREC_TEST_VA_COUNTS="$R/px.counts" "$CAMREC" --log-level info --input "$W/in.nv12" --input-format nv12 --size 650x482 \
    --keyframe-interval 4 --encoder vaapi --vaapi-device $NODE "$W/px.h264" >"$R/px.log" 2>&1
rc=$?
on_host ffmpeg -hide_banner -nostdin -loglevel error "${STRICT[@]}" -i "$W/px.h264" -f rawvideo -pix_fmt nv12 -y "$W/px.nv12"
ONE_PASS="1 CPU pass (source converted straight into the VA surface, vaDeriveImage)"
check "650x482 via $NODE: exit $rc, IDRs $(idr_frames "$W/px.h264"), decoded frames identical to the input, 1 CPU pass each" \
    eval "[[ $rc == 0 && '$(idr_frames "$W/px.h264")' == '0 4 8' ]] && cmp -s '$W/in.nv12' '$W/px.nv12' &&
        grep -qF 'VA-API upload: 10 frames took $ONE_PASS' '$R/px.log'"
# The driver's own counts (CAMREC_TEST_VA_COUNTS): no vaPutImage at all, one derived map per frame plus
# two at start (camrec's check of the mapping and the black first frame encoded inside start()).
count_of() { tr ' ' '\n' <"$1" 2>/dev/null | awk -F= -v f="$2" '$1 == f { n += $2 } END { print n + 0 }'; }
check "650x482 via $NODE, 1 CPU pass by the driver's counts: 0 vaPutImage, 12 derived maps ($(cat "$R/px.counts" 2>/dev/null))" \
    eval "[[ \$(count_of '$R/px.counts' put_images) == 0 && \$(count_of '$R/px.counts' derive_maps) == 12 ]]"

# 2b. Real drivers' derived images that are not the surface, through the DRM path: camrec checks the
# mapping at start and uses vaCreateImage + vaPutImage (10 frames + the black first frame = 11 puts).
for habit in wrong-pitch no-chroma map-fails; do
    CAMREC_TEST_VA_DERIVE_HABIT=$habit CAMREC_TEST_VA_COUNTS="$R/habit-$habit.counts" "$CAMREC" --log-level info \
        --input "$W/in.nv12" --input-format nv12 --size 650x482 --keyframe-interval 4 --encoder vaapi \
        --vaapi-device $NODE "$W/habit.h264" >"$R/habit-$habit.log" 2>&1
    rc=$?
    on_host ffmpeg -hide_banner -nostdin -loglevel error "${STRICT[@]}" -i "$W/habit.h264" -f rawvideo -pix_fmt nv12 -y "$W/habit.nv12"
    check "derive habit $habit via $NODE: exit $rc, frames identical, vaPutImage path said and counted ($(count_of "$R/habit-$habit.counts" put_images) puts)" \
        eval "[[ $rc == 0 ]] && cmp -s '$W/in.nv12' '$W/habit.nv12' &&
            grep -qF 'upload: 1 CPU pass into a VA image, then the driver copies once more (vaPutImage) because' '$R/habit-$habit.log' &&
            [[ \$(count_of '$R/habit-$habit.counts' put_images) == 11 ]]"
    rm -f "$W/habit.h264" "$W/habit.nv12"
done

# 3. auto on a machine with a working VA driver, default device.
echo "== --encoder auto, default device ($(elapsed))"
"$CAMREC" --test-pattern --size 640x480 --frames 10 "$W/auto.h264" >"$R/auto.log" 2>&1
rc=$?
cat "$R/auto.log"
check "auto picks VA-API on $NODE and says so" \
    eval "[[ $rc == 0 ]] && grep -q '^camrec: encoding on the GPU: h264_vaapi (VA-API on $NODE' '$R/auto.log' &&
        [[ \$(profile_of '$W/auto.h264') == 'Constrained Baseline,640,480' ]]"

# 4. Failures on the real node: exit 73, one line, no file. (Besides those below: a driver that takes no
# packed headers and writes no SPS/PPS, found by the first frame encoded inside start().)
fails() {  # name description message-regex env... -- args...
    local name=$1 what=$2 message=$3; shift 3
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
    (cd "$W" && env "${envs[@]}" "$CAMREC" --test-pattern --size 640x480 --frames 10 "$@" "$name.h264") >"$R/$name.log" 2>&1
    local rc=$?
    local lines; lines=$(grep -vc '^\[camrec_test_drv\]' "$R/$name.log")
    if [[ $rc == 73 && ! -e $W/$name.h264 && $lines == 1 ]] && grep -qE "^camrec: error: $message" "$R/$name.log"; then
        ok "$what: exit 73, no file: $(grep -v '^\[camrec_test_drv\]' "$R/$name.log")"
    else
        bad "$what: exit $rc (want 73), $lines lines, file $([[ -e $W/$name.h264 ]] && echo yes || echo no): $(head -3 "$R/$name.log")"
    fi
}
echo "== failures ($(elapsed))"
fails initfail "vaapi, driver fails to initialise" "the VA driver failed to load or initialise on $NODE: .*operation failed" \
    CAMREC_TEST_VA_INIT_FAIL=1 -- --encoder vaapi --vaapi-device $NODE
fails noencode "vaapi, decode-only driver" "the VA driver on $NODE \(camrec test VA driver.*\) has no H.264 encode entrypoint" \
    CAMREC_TEST_VA_NO_ENCODE=1 -- --encoder vaapi --vaapi-device $NODE
# No LIBVA_DRIVER_NAME: libva asks the kernel driver's name ("vgem") and finds no vgem_drv_video.so.
fails nodriver "vaapi, no VA driver for the GPU (vgem has none)" "the VA driver failed to load or initialise on $NODE" \
    -u LIBVA_DRIVER_NAME -- --encoder vaapi --vaapi-device $NODE
fails packed-none "vaapi, no packed headers and no SPS/PPS written" \
    "the VA driver \(camrec test VA driver.*\) writes no SPS/PPS and takes none from FFmpeg" \
    CAMREC_TEST_VA_PACKED_HEADERS=none -- --encoder vaapi --vaapi-device $NODE

# Permission denied on the node: as a user outside the node's group. nobody runs a copy of camrec and
# loads a copy of the driver from the VM's /tmp: a checkout in a 0700 directory (`git clone . "$(mktemp -d)"`)
# is closed to nobody, and libva would then fail to load the driver for a reason that is not the node's.
echo "== permission denied ($(elapsed))"
AS_NOBODY=$(mktemp -d /tmp/as-nobody.XXXXXX)
mkdir -p "$AS_NOBODY/drivers" && chmod 0755 "$AS_NOBODY" "$AS_NOBODY/drivers" &&
    install -m 0755 "$CAMREC" "$AS_NOBODY/camrec" &&
    install -m 0755 "$LIBVA_DRIVERS_PATH/${LIBVA_DRIVER_NAME}_drv_video.so" "$AS_NOBODY/drivers/" ||
    bad "cannot copy camrec and the test driver where nobody can read them"
NOBODY_CAMREC="$AS_NOBODY/camrec"
DRIVERS_FROM_CHECKOUT=$LIBVA_DRIVERS_PATH
export LIBVA_DRIVERS_PATH="$AS_NOBODY/drivers"
chgrp render $NODE 2>/dev/null || true
chmod 0660 $NODE
ls -l $NODE
setpriv --reuid=nobody --regid=nogroup --clear-groups "$NOBODY_CAMREC" --test-pattern --size 640x480 --frames 10 \
    --encoder vaapi --vaapi-device $NODE "$W/perm.h264" >"$R/perm.log" 2>&1
rc=$?
cat "$R/perm.log"
check "vaapi as a user outside the 'render' group: exit 73, no file, the hint to join the group" \
    eval "[[ $rc == 73 && ! -e '$W/perm.h264' ]] && grep -q \"permission denied on $NODE: join the 'render' group\" '$R/perm.log'"
setpriv --reuid=nobody --regid=nogroup --clear-groups "$NOBODY_CAMREC" --test-pattern --size 640x480 --frames 10 \
    "$W/perm-auto.h264" >"$R/perm-auto.log" 2>&1
rc=$?
cat "$R/perm-auto.log"
check "auto as that user: libx264, with the reason in one line" \
    eval "[[ $rc == 0 ]] && grep -q \"^camrec: encoding in software (libx264): VA-API can't be used: permission denied on $NODE\" '$R/perm-auto.log' &&
        [[ \$(profile_of '$W/perm-auto.h264') == High,640,480 ]]"
setpriv --reuid=nobody --regid=render --clear-groups "$NOBODY_CAMREC" --test-pattern --size 640x480 --frames 10 \
    --encoder vaapi --vaapi-device $NODE "$W/perm-ok.h264" >"$R/perm-ok.log" 2>&1
rc=$?
cat "$R/perm-ok.log"
check "vaapi as a member of the 'render' group: exit 0" test $rc = 0
chmod 0666 $NODE
export LIBVA_DRIVERS_PATH=$DRIVERS_FROM_CHECKOUT

# 5. The camera: vivid → camrec → h264_vaapi → libva → driver → stream, the exact user command.
if [[ -c /dev/video0 ]] && "$CAMREC" devices --device /dev/video0 >"$R/devices.txt" 2>&1; then
    echo "== camrec --device /dev/video0 --encoder vaapi --vaapi-device $NODE --frames 200 out.h264 ($(elapsed))"
    head -3 "$R/devices.txt"
    # vivid's moving bars show which camera frames the file holds (Tests/tools/frame-steps.py, no code
    # shared with camrec): exactly the ones camrec did not report as dropped.
    v4l2-ctl -d /dev/video0 -c osd_text_mode=2,horizontal_movement=5,vertical_movement=3
    # --log-level info adds the capture counters to the log (nothing else changes).
    device_log_start /dev/video0
    vcpu0=$(vcpu_sample)
    (cd "$W" && "$CAMREC" --log-level info --device /dev/video0 --encoder vaapi --vaapi-device $NODE --frames 200 out.h264) >"$R/cam.log" 2>&1
    rc=$?
    vcpu1=$(vcpu_sample)
    device_log_save "$R/cam.dmesg"
    width=$(on_host ffprobe -v error -select_streams v:0 -show_entries stream=width -of csv=p=0 "$W/out.h264")
    frames_in_order "camera" "$W/out.h264" "${width:-640}" "$R/cam.log"
    # The test VA driver encodes at once and one conversion pass per frame keeps up with vivid's 1280x720
    # 12.5 fps in the VM (0 dropped in every quiet run); beside a busy host the emulated CPU is starved
    # (11 dropped with a Swift build and stress-ng --cpu 1 beside the VM, 2026-11-24; 41 with the test
    # targets' build and a busy loop, 2026-11-26). Only frames vivid never delivered are excused, as gaps
    # in the kernel's log of its sequence numbers; what camrec drops itself is bounded.
    # OWN_BOUND: measured 0 in both recordings, with the host loaded by other builds and VMs (load ~12),
    # 2026-11-27; 1 leaves a frame's margin. Dropping every tenth frame takes 20 of 200. On top of it, the
    # frames' worth of CPU the host withheld from the VM during the recording, measured on the host (33
    # dropped in a run beside stress-ng and the other suites, 2026-11-29, pool_empty all of them).
    OWN_BOUND=1
    withheld=$(frames_withheld "camera" "$vcpu0" "$vcpu1" "$(frame_interval_ms /dev/video0)")
    camrec_own_drops "camera" "$R/cam.log" "$R/cam.dmesg" /dev/video0 "$((OWN_BOUND + withheld))"
    cat "$R/cam.log"
    n=$(decoded_frames "$W/out.h264")
    "$CAMREC" inspect --summary "$W/out.h264" >"$R/cam.inspect" 2>&1
    irc=$?
    cat "$R/cam.inspect"
    # The IDR interval is one second of the camera's rate, as the driver reports it (not camrec).
    rate=$(v4l2-ctl -d /dev/video0 -P | awk '/Frames per second/ {print $4}')
    # camrec rounds half up (12.5 fps → 13); printf would round half to even.
    gop=$(awk -v r="${rate:-0}" 'BEGIN { printf "%d", int(r + 0.5) }')
    annexb_check --frames 200 --idr-interval "${gop:-1}" "$W/out.h264" >"$R/cam.annexb" 2>&1
    arc=$?
    tail -1 "$R/cam.annexb"
    check "camera via $NODE: exit 0" test $rc = 0
    check "camera: ffprobe decodes 200 frames (got ${n:-none}; $(profile_of "$W/out.h264"))" test "${n:-0}" = 200
    check "camera: annexb-check finds the contract kept (IDR every $gop, 200 pictures), and so does camrec inspect" \
        test "$arc/$irc" = 0/0
    check "camera: IDRs every $gop frames from frame 0, device rate $rate fps (got: $(idr_frames "$W/out.h264"))" \
        test "$(idr_frames "$W/out.h264")" = "$(expected_idrs 200 "${gop:-1}")"
    rm -f "$W/out.h264"
    # The camera's frames are converted straight into the mapped VA surfaces: one CPU pass each.
    device_log_start /dev/video0
    vcpu0=$(vcpu_sample)
    (cd "$W" && "$CAMREC" --log-level info --device /dev/video0 --encoder vaapi --vaapi-device $NODE --frames 20 info.h264) \
        >"$R/cam-info.log" 2>&1
    rc=$?
    vcpu1=$(vcpu_sample)
    device_log_save "$R/cam-info.dmesg"
    grep -E 'VA-API|capture counters' "$R/cam-info.log"
    # Measured by camrec's capture counter: the one pass writes one NV12 frame per frame into the
    # surfaces (1280x720: 1382400 bytes), never more.
    size=$(on_host ffprobe -v error -show_entries stream=width,height -of csv=p=0 "$W/info.h264")
    frame_bytes=$(( ${size%,*} * ${size#*,} * 3 / 2 ))
    check "camera, --log-level info: the CPU wrote one frame ($frame_bytes bytes) per frame: cpu_bytes=$(counter "$R/cam-info.log" cpu_bytes) for delivered=$(counter "$R/cam-info.log" delivered)" \
        test "$(counter "$R/cam-info.log" delivered)/$(counter "$R/cam-info.log" cpu_bytes)" = "20/$((20 * frame_bytes))"
    check "camera, --log-level info: exit 0, 20 frames, each in $ONE_PASS" \
        eval "[[ $rc == 0 && \$(decoded_frames '$W/info.h264') == 20 ]] && grep -qF 'VA-API upload: 20 frames took $ONE_PASS' '$R/cam-info.log'"
    withheld=$(frames_withheld "camera, 20 frames" "$vcpu0" "$vcpu1" "$(frame_interval_ms /dev/video0)")
    camrec_own_drops "camera, 20 frames" "$R/cam-info.log" "$R/cam-info.dmesg" /dev/video0 "$((OWN_BOUND + withheld))"
    rm -f "$W/info.h264"
    # Issue 27 on the VA-API upload path: --on-camera-lost wait, one unplug (vivid is back once camrec, its
    # last user, has closed it), the same pool of mapped surfaces filled by the reopened camera.
    echo "== camera via VA-API, --on-camera-lost wait: an unplug and the return ($(elapsed))"
    (cd "$W" && exec env CAMREC_V4L2_PRIORITY=interactive "$CAMREC" --device /dev/video0 --encoder vaapi --vaapi-device $NODE \
        --on-camera-lost wait=30 --duration 60 gap.h264) >"$R/cam-gap.log" 2>&1 &
    rec=$!
    for ((i = 0; i < 300; i++)); do [[ -s $(ls "$W"/gap.h264.camrec-*.partial 2>/dev/null | head -1) ]] && break; nap 0.1; done
    nap 2
    v4l2-ctl -d /dev/video0 -c disconnect=1
    for ((i = 0; i < 200; i++)); do grep -q '^camrec: camera back' "$R/cam-gap.log" && break; nap 0.1; done
    nap 2
    kill -INT "$rec"; wait "$rec"; rc=$?
    grep -E '^camrec: (camera|finished)' "$R/cam-gap.log"
    gap_ok=1
    for f in gap.h264 gap-2.h264; do
        n=$(decoded_frames "$W/$f")
        [[ -n $n && $n -gt 0 && $n == "$(grep -F "output=$f " "$R/cam-gap.log" | grep -o 'frames=[0-9]*' | cut -d= -f2)" ]] || gap_ok=0
    done
    check "camera via VA-API, an unplug under --on-camera-lost wait: exit 0 ($rc), back, two files each decoding with every frame camrec wrote" \
        eval "[[ $rc == 0 && $gap_ok == 1 ]] && grep -q '^camrec: camera back after .* s as /dev/video0; recording on' '$R/cam-gap.log'"
    rm -f "$W"/gap*.h264
else
    bad "camrec --device /dev/video0 does not work in this VM: $(head -3 "$R/devices.txt" 2>/dev/null)"
fi

# Several render nodes, as on a hybrid laptop whose first node is a decode-only GPU (NVIDIA's VA driver)
# and whose second has no working VA driver. Two more nodes for vgem's device, made with mknod: each
# is a real DRM fd, and the test driver tells them apart by the path the client opened
# (CAMREC_TEST_VA_NODE_HABITS), so the first is decode-only and the second fails to initialise.
echo "== several render nodes: renderD128 decode-only, renderD129 no driver, renderD130 encodes ($(elapsed))"
majmin=$(stat -c '%t %T' $NODE)
mknod /dev/dri/renderD129 c $((16#${majmin% *})) $((16#${majmin#* })) &&
    mknod /dev/dri/renderD130 c $((16#${majmin% *})) $((16#${majmin#* })) || bad "mknod of two more render nodes failed"
export CAMREC_TEST_VA_NODE_HABITS=renderD128=no-encode,renderD129=init-fail
"$CAMREC" encoders >"$R/encoders-3.txt" 2>&1
rc=$?
cat "$R/encoders-3.txt"
check "encoders, three nodes: each listed; renderD128 cannot encode, renderD129 not usable, auto uses VA-API on renderD130" \
    eval "[[ $rc == 0 ]] && [[ \$(grep -c '^VA-API device: /dev/dri/renderD1[23][0-9]' '$R/encoders-3.txt') == 3 ]] &&
        grep -A8 '^VA-API device: /dev/dri/renderD128' '$R/encoders-3.txt' | grep -q 'H.264 encoding: no' &&
        grep -q '^VA-API device: /dev/dri/renderD129: not usable: the VA driver failed to load or initialise' '$R/encoders-3.txt' &&
        grep -q 'auto uses: VA-API on /dev/dri/renderD130' '$R/encoders-3.txt'"
(cd "$W" && "$CAMREC" --test-pattern --encoder vaapi --frames 30 --log-level info multi.h264) >"$R/multi.log" 2>&1
rc=$?
grep -E '^camrec: |recording ' "$R/multi.log"
check "three nodes, --encoder vaapi with no --vaapi-device: exit 0, 30 frames decoded, encoded on renderD130" \
    eval "[[ $rc == 0 && \$(decoded_frames '$W/multi.h264') == 30 ]] && grep -q 'VA-API on /dev/dri/renderD130' '$R/multi.log'"
check "three nodes: one line says renderD128 was skipped (no H.264 encode entrypoint) and renderD129 (driver failed to initialise)" \
    grep -qE '^camrec: skipped /dev/dri/renderD128: .*no H.264 encode entrypoint.*; skipped /dev/dri/renderD129: .*failed to load or initialise' "$R/multi.log"
rm -f "$W/multi.h264"
export CAMREC_TEST_VA_NODE_HABITS=renderD128=no-encode,renderD129=init-fail,renderD130=no-encode
(cd "$W" && "$CAMREC" --test-pattern --encoder vaapi --frames 30 none.h264) >"$R/multi-none.log" 2>&1
rc=$?
cat "$R/multi-none.log"
check "three nodes, none can encode: --encoder vaapi exits 73 naming all three, no file" \
    eval "[[ $rc == 73 && ! -e '$W/none.h264' ]] && grep -q 'none of the 3 render nodes can encode H.264: /dev/dri/renderD128: .*/dev/dri/renderD129: .*/dev/dri/renderD130: ' '$R/multi-none.log'"
(cd "$W" && "$CAMREC" --test-pattern --frames 30 multi-auto.h264) >"$R/multi-auto.log" 2>&1
rc=$?
cat "$R/multi-auto.log"
check "three nodes, none can encode: --encoder auto records 30 frames with libx264 and says why in one line" \
    eval "[[ $rc == 0 && \$(decoded_frames '$W/multi-auto.h264') == 30 ]] &&
        [[ \$(grep -c '^camrec: encoding in software (libx264): VA-API can.t be used: none of the 3 render nodes' '$R/multi-auto.log') == 1 ]]"
unset CAMREC_TEST_VA_NODE_HABITS
rm -f /dev/dri/renderD129 /dev/dri/renderD130 "$W/multi-auto.h264"

rm -rf "$W"
echo "== done ($(elapsed))"
case_finish
