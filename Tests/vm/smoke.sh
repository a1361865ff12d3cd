#!/bin/bash
# Tests/vm/smoke.sh — self-test of the test VM. Run it through run.sh:
#     Tests/vm/run.sh -- Tests/vm/smoke.sh
# It checks the vivid and vgem devices, a 200-frame capture + encode with ffmpeg, vivid's
# fault-injection controls, udevadm test, and a small tmpfs mount. Prints "N passed, N failed".
set -uo pipefail

if [[ ${CAMREC_VM:-} != 1 ]]; then
    echo "smoke.sh: run me inside the VM: Tests/vm/run.sh -- $0" >&2
    exit 2
fi
OUT=${CAMREC_VM_RESULTS:?}
pass=0 fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
T=$(date +%s.%N)
section() {   # section "title": prints the time the previous section took
    local now; now=$(date +%s.%N)
    echo "   ($(echo "$T $now" | awk '{printf "%.1f", $2 - $1}') s)"
    T=$now
    echo "== $*"
}
check() {   # check "description" command...
    local what=$1; shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}

echo "== kernel $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"

section "v4l2-ctl --list-devices"
v4l2-ctl --list-devices 2>&1 | tee "$OUT/list-devices.txt"
check "vivid is listed" grep -q 'vivid' "$OUT/list-devices.txt"
check "/dev/video0 is a character device" test -c /dev/video0

section "v4l2-ctl -d /dev/video0 --list-formats-ext (head)"
v4l2-ctl -d /dev/video0 --list-formats-ext >"$OUT/formats.txt" 2>&1
head -20 "$OUT/formats.txt"
check "video0 offers YUYV 640x480" \
    sh -c "grep -q \"'YUYV'\" '$OUT/formats.txt' && grep -q 'Size: Discrete 640x480' '$OUT/formats.txt'"

check "/dev/dri/renderD128 (vgem) is a character device" test -c /dev/dri/renderD128
check "renderD128 belongs to vgem" \
    sh -c 'readlink -f /sys/class/drm/renderD128/device | grep -q /vgem$'

# vivid keeps its current frame interval (5 fps after boot); 640x480 goes up to 25 fps.
section "capture 200 frames 640x480 at 25 fps → libx264"
rm -f "$OUT/smoke.h264"
t0=$(date +%s.%N)
ffmpeg -hide_banner -loglevel error -nostdin -y -f v4l2 -video_size 640x480 -framerate 25 -i /dev/video0 \
    -frames:v 200 -c:v libx264 -preset ultrafast "$OUT/smoke.h264" >"$OUT/ffmpeg.log" 2>&1
rc=$?
t1=$(date +%s.%N)
echo "ffmpeg took $(echo "$t0 $t1" | awk '{printf "%.1f", $2 - $1}') s (exit $rc)"
check "ffmpeg capture + encode exits 0" test "$rc" = 0
[[ $rc == 0 ]] || tail -20 "$OUT/ffmpeg.log"
frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames,width,height \
    -of default=nw=1 "$OUT/smoke.h264" 2>&1)
echo "$frames"
check "ffprobe decodes 200 frames" grep -qx 'nb_read_frames=200' <<<"$frames"
check "ffprobe sees 640x480" grep -qx 'height=480' <<<"$frames"

section "vivid controls (v4l2-ctl -d /dev/video0 -L)"
v4l2-ctl -d /dev/video0 -L >"$OUT/controls.txt" 2>&1
grep -cE '^ *[a-z_0-9]+ 0x' "$OUT/controls.txt" | sed 's/^/controls listed: /'
for c in disconnect percentage_of_dropped_buffers inject_v4l2_buf_flag_error \
    inject_vidioc_reqbufs_error inject_vidioc_streamon_error inject_vidioc_qbuf_error \
    inject_fatal_streaming_error wrap_sequence_number wrap_timestamp; do
    check "control $c exists" grep -qE "^ *$c 0x" "$OUT/controls.txt"
done

section "udevadm test /sys/class/video4linux/video0"
udevadm test /sys/class/video4linux/video0 >"$OUT/udevadm-test.txt" 2>&1
rc=$?
tail -12 "$OUT/udevadm-test.txt"
check "udevadm test exits 0" test "$rc" = 0
check "udevadm test sees the video4linux subsystem" grep -q 'SUBSYSTEM=video4linux' "$OUT/udevadm-test.txt"

section "small tmpfs (for disk-full tests)"
d=$(mktemp -d)
if mount -t tmpfs -o size=2m tmpfs "$d"; then
    ok "mount -t tmpfs -o size=2m"
    dd if=/dev/zero of="$d/fill" bs=64k count=100 2>"$OUT/dd.txt"
    check "writing 6 MB to a 2 MB tmpfs fails with ENOSPC" grep -q 'No space left on device' "$OUT/dd.txt"
    umount "$d"
else
    bad "mount -t tmpfs -o size=2m"
fi
rmdir "$d"

check "the host root is read-only" sh -c '! touch /usr/camrec-vm-ro-test 2>/dev/null'
check "/tmp is writable" sh -c 'f=$(mktemp) && rm "$f"'
check "loopback is up" sh -c 'ip -o addr show lo 2>/dev/null | grep -q 127.0.0.1 || grep -q "lo:" /proc/net/dev'

section "done"
echo "$pass passed, $fail failed"
((fail == 0))
