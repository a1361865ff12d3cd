#!/bin/bash
# Tests/vm-cases/unattended-cases.sh — camrec as cron, systemd and udev run it, against vivid inside
# the test VM (run by Tests/suites/vm-unattended.sh with vivid's defaults: /dev/video0 captures,
# /dev/video1 is an output node). The crontab line is taken from docs/UNATTENDED.md and the service's
# ExecStart from systemd/camrec@.service, so what the docs show is what runs here.
# Environment: CAMREC (the binary), CAMREC_VM_RESULTS (writable dir). Ends with "N passed, N failed".
set -uo pipefail
source "$(dirname "$0")/case-lib.sh" unattended
source "$(dirname "$0")/device-log.sh"
CAMREC=${CAMREC:?set CAMREC to the camrec binary}
# As in capture-cases.sh, camrec runs niced: vivid draws frames in a kernel thread that competes with
# x264 for the one emulated CPU, and un-niced runs dropped frames even on a quiet host.
NICE=(nice -n 10)
decodes_clean() { [[ -z $(on_host ffmpeg -v error -i "$1" -f null - 2>&1) ]]; }
first_is_key() { on_host ffprobe -v error -select_streams v:0 -show_entries frame=key_frame -of csv=p=0 "$1" 2>/dev/null | grep -v '^$' | head -1 | grep -q '^1'; }
# Waits until a file matching the pattern exists (with a third argument, -s: holds bytes). camrec
# opens the camera (and takes its lock) before it creates its .partial file, so the .partial's
# presence means "recording"; bytes in it mean a frame was encoded and written.
wait_for_file() {  # pattern seconds [-s]
    local i f test=${3:--f}
    for ((i = 0; i < $2 * 10; i++)); do
        for f in $1; do test "$test" "$f" && return 0; done
        nap 0.1
    done
    return 1
}
# decodes_as_summary NAME FILE LOG [WIDTH]: the file decodes without an error, into as many frames as
# camrec's summary line says it wrote. The recordings run at rates one emulated CPU keeps up with when
# the host is busy (--fps 2 at 1280x720, 10 at 640x480 and 320x180, --preset ultrafast; at vivid's
# full rates 79 frames were dropped in the cron run). How many frames the VM's CPU could not keep up with depends on
# what else the host runs (0 quiet; 49 in the first --wait run beside stress-ng; 4 of 9 in the service's
# start-up beside a busy CI host), so drops are counted, not bounded: with WIDTH (vivid's moving bars
# on) the pictures miss exactly the dropped= frames (frame-steps.py). Without WIDTH (the noise
# pattern, which shows no frame numbers) only the decode is checked. Of those drops only the frames
# vivid never delivered are excused, as gaps in the kernel's log (device-log.sh); what camrec drops
# itself is bounded by OWN_BOUND in every recording (camrec_own_drops).
# OWN_BOUND: measured 0 in every recording here with the host loaded by other builds and VMs (load
# ~12), 2026-11-27. Beside stress-ng --cpu 1 as well (load 15) camrec let frames go with the pool
# empty at 1280x720 5 fps (cron: 53 of 93; the service 2) and at 640x480 10 fps (--wait: 96 while
# the others started; the full disk's noise 2): hence 2 fps, 320x180 and 5 fps there. 1 leaves a
# frame's margin; dropping every tenth frame takes 4 of the cron run's 40.
OWN_BOUND=1
decodes_as_summary() {
    local name=$1 file=$2 log=$3 width=${4:-} frames decoded
    frames=$(field "$log" frames)
    decoded=$(decoded_frames "$file")
    check "$name: $(basename "$file") decodes cleanly, ${decoded:-no} frames as the summary says (${frames:-none})" \
        eval "test -n '$frames' && test '${decoded:-x}' = '$frames' && decodes_clean '$file'"
    [[ -z $width ]] || frames_in_order "$name" "$file" "$width" "$log"
}
DEV=/dev/video0
v4l2-ctl -d "$DEV" -D | grep -q 'Video Capture' || { echo "no vivid capture node at $DEV"; echo "0 passed, 1 failed"; exit 1; }
# Moving bars (vivid's test pattern), so the recordings are no trivially small still frames.
v4l2-ctl -d "$DEV" -c osd_text_mode=2,horizontal_movement=5

echo "== udev rules: the capture node gets the link and mode, the output node doesn't"
mkdir -p /run/udev/rules.d && cp udev/70-camrec.rules /run/udev/rules.d/
udevadm test /sys/class/video4linux/video0 >"$R/udev-video0.txt" 2>&1
udevadm test /sys/class/video4linux/video1 >"$R/udev-video1.txt" 2>&1
grep -E 'DEVLINKS|camrec|MODE|GROUP|ID_V4L_CAPABILITIES' "$R/udev-video0.txt" | head -8
check "udev: video0 (capture) gets a /dev/camrec/ link" grep -qE 'DEVLINKS=.*camrec/by-(id|path)/.*-index0' "$R/udev-video0.txt"
video_gid=$(getent group video | cut -d: -f3)
check "udev: video0 gets group video ($video_gid) and mode 0660 from 70-camrec.rules" \
    sh -c "grep -qE '70-camrec.rules:[0-9]+ GROUP $video_gid\$' '$R/udev-video0.txt' && grep -qE '70-camrec.rules:[0-9]+ MODE 0660\$' '$R/udev-video0.txt'"
check "udev: video1 (output) gets no camrec link" sh -c "! grep -q 'camrec/' '$R/udev-video1.txt'"

echo "== udev autostart: 71-camrec-autostart.rules asks systemd for camrec@video0.service"
# systemd starts the units a device's SYSTEMD_WANTS names once the device is tagged "systemd";
# udevadm test shows both properties (the service itself is run from its ExecStart below).
cp udev/71-camrec-autostart.rules /run/udev/rules.d/
udevadm test --action=add /sys/class/video4linux/video0 >"$R/udev-auto-video0.txt" 2>&1
udevadm test --action=add /sys/class/video4linux/video1 >"$R/udev-auto-video1.txt" 2>&1
grep -E '^(SYSTEMD_WANTS|TAGS|CURRENT_TAGS)=' "$R/udev-auto-video0.txt"
check "udev autostart: video0 (capture, index 0) wants camrec@video0.service and is tagged systemd" \
    sh -c "grep -qx 'SYSTEMD_WANTS=camrec@video0.service' '$R/udev-auto-video0.txt' && grep -qE '^TAGS=.*:systemd:' '$R/udev-auto-video0.txt'"
check "udev autostart: video1 (output) wants no camrec service" sh -c "! grep -q 'SYSTEMD_WANTS=.*camrec' '$R/udev-auto-video1.txt'"
check "udev autostart: the unit it names exists (systemd/camrec@.service)" test -f systemd/camrec@.service
rm -f /run/udev/rules.d/70-camrec.rules /run/udev/rules.d/71-camrec-autostart.rules

echo "== the default source is /dev/video0 (docs/CAMERAS.md: camrec without --device)"
device_log_start "$DEV"
"${NICE[@]}" "$CAMREC" --frames 20 --size 640x480 --fps 10 --preset ultrafast --log-level info "$R/default-source.h264" 2>"$R/default-source.log"
rc=$?
device_log_save "$R/default-source.dmesg"
grep -E '^camrec: (error|finished)|capture: ' "$R/default-source.log"
check "no --device: records from /dev/video0 (exit $rc, the capture line names it)" \
    sh -c "test $rc = 0 && grep -q 'capture: /dev/video0 ' '$R/default-source.log'"
decodes_as_summary "no --device" "$R/default-source.h264" "$R/default-source.log" 640
camrec_own_drops "no --device" "$R/default-source.log" "$R/default-source.dmesg" "$DEV" "$OWN_BOUND"

echo "== the crontab line of docs/UNATTENDED.md, run as cron runs it, twice overlapping"
line=$(grep -E '^[0-9*][0-9* ]* /.*camrec --device' docs/UNATTENDED.md | head -1)
echo "   crontab: $line"
# Fields 6… are the command; cron turns \% into % and runs it with /bin/sh, a minimal
# environment, no terminal, in the home directory. Only the binary, the output root and the
# length change here.
# --fps 2 --preset ultrafast: camrec's default 1280x720 at 12.5 fps is more than one emulated CPU
# encodes (79 frames were dropped; see decodes_as_summary), and so was 5 fps beside stress-ng --cpu 1
# on a loaded host (53 of 93 let go with the pool empty, 2026-11-27).
cmd=$(echo "$line" | cut -d' ' -f6- | sed -e 's/\\%/%/g' -e "s#/usr/local/bin/camrec#$CAMREC#" \
      -e "s#/var/lib/camrec#$R/var#" -e 's/--duration 60/--duration 20 --fps 2 --preset ultrafast/')
cron() { (cd / && setsid "${NICE[@]}" env -i PATH=/usr/bin:/bin SHELL=/bin/sh HOME=/root LOGNAME=root /bin/sh -c "$cmd" </dev/null >"$1" 2>&1); }
device_log_start "$DEV"
cron "$R/cron-1.log" & first=$!
wait_for_file "$R/var/clips/*/*.partial" 60 || echo "   (first run did not start writing in 60 s)"
cron "$R/cron-2.log"; rc2=$?
# "At once" means it did not wait for the camera: the first run is still recording when it returns.
# (No wall-clock limit: under emulation starting a process alone takes seconds.)
if kill -0 $first 2>/dev/null; then first_still_running=yes; else first_still_running=no; fi
wait $first; rc1=$?
device_log_save "$R/cron.dmesg"
cat "$R/cron-1.log" "$R/cron-2.log"
check "cron: the first run records and exits 0 (got $rc1)" test "$rc1" = 0
check "cron: the overlapping run exits with 70 (got $rc2) while the first still records ($first_still_running)" \
    test "$rc2" = 70 -a "$first_still_running" = yes
files=( "$R"/var/clips/*/morning-*.h264 )
check "cron: exactly one recording, under the dated directory (${#files[@]})" test "${#files[@]}" = 1 -a -f "${files[0]}"
decodes_as_summary "cron" "${files[0]}" "$R/cron-1.log" 1280
SUMMARY_ONLY=1 camrec_own_drops "cron" "$R/cron-1.log" "$R/cron.dmesg" "$DEV" "$OWN_BOUND"
check "cron: the busy run says so in one line" grep -q "camrec: error: .*busy" "$R/cron-2.log"
check "cron: off a terminal the first run prints only its summary" test "$(grep -vc '^camrec: \(finished\|encoding in\)' "$R/cron-1.log")" = 0

echo "== --wait: an overlapping run waits for the camera instead"
# Ordered by events, not by a clock: the first run records until SIGINT; a second run with --wait 60
# says it is waiting; a third with --wait 1 runs out meanwhile; then the first is stopped and the
# second gets the camera. The kernel's log holds both recordings: the first's stream, then the second's.
# 320x180: at 640x480 the first run let 96 frames go with the pool empty while the others started,
# beside stress-ng --cpu 1 on a loaded host (2026-11-27); waiting is what this case is about.
device_log_start "$DEV"
"${NICE[@]}" "$CAMREC" --device "$DEV" --size 320x180 --fps 10 --preset ultrafast --duration 120 --log-level info "$R/wait-1.h264" 2>"$R/wait-1.log" & first=$!
wait_for_file "$R/wait-1.h264.camrec-*.partial" 60
# The runs that only start and wait get the least CPU (nice 19): in the one emulated CPU their start-up
# (seconds each) would otherwise take it from the recording (49 dropped with stress-ng beside the VM).
WAITER=(nice -n 19)
"${WAITER[@]}" "$CAMREC" --device "$DEV" --size 320x180 --fps 10 --preset ultrafast --duration 2 --wait 60 --log-level info "$R/wait-2.h264" 2>"$R/wait-2.log" & second=$!
for ((i = 0; i < 600; i++)); do grep -q "waiting up to 60 s" "$R/wait-2.log" && break; nap 0.1; done
check "--wait 60: the second run says it is waiting for the camera" grep -q "waiting up to 60 s" "$R/wait-2.log"
"${WAITER[@]}" "$CAMREC" --device "$DEV" --size 320x180 --fps 10 --preset ultrafast --duration 2 --wait 1 "$R/wait-short.h264" 2>"$R/wait-short.log"; rc_short=$?
if kill -0 $first 2>/dev/null; then first_still_running=yes; else first_still_running=no; fi
cat "$R/wait-short.log"
check "--wait 1 runs out while the first still records ($first_still_running): exit 70 (got $rc_short), the busy error, no file" \
    sh -c "test $rc_short = 70 -a $first_still_running = yes && grep -q 'waiting up to 1 s' '$R/wait-short.log' &&
        grep -q '^camrec: error: $DEV is busy: another camrec is recording from it' '$R/wait-short.log' && test ! -e '$R/wait-short.h264'"
# camrec trigger finds the recording by the camera's lock, through a link as /dev/v4l/by-id/… names are.
ln -sf "$DEV" "$R/camera-link"
"${WAITER[@]}" "$CAMREC" trigger --device "$R/camera-link" 2>"$R/trigger.log"; rc_trigger=$?
wait_for 30 grep -q "SIGUSR1 ignored" "$R/wait-1.log"
cat "$R/trigger.log"
check "camrec trigger --device (a link to $DEV) signals the camrec recording it, pid $first (exit $rc_trigger; it says SIGUSR1 ignored: no --event-output)" \
    sh -c "test $rc_trigger = 0 && grep -q 'event trigger sent to camrec pid $first ' '$R/trigger.log' && grep -q 'SIGUSR1 ignored' '$R/wait-1.log'"
kill -INT $first
wait $first; rc1=$?
wait $second; rc2=$?
device_log_save "$R/wait.dmesg"
cat "$R/wait-1.log" "$R/wait-2.log"
"${WAITER[@]}" "$CAMREC" trigger --device "$DEV" 2>"$R/trigger-none.log"; rc_none=$?
cat "$R/trigger-none.log"
check "camrec trigger --device $DEV with no camrec recording it: exit 78 (got $rc_none), one line" \
    sh -c "test $rc_none = 78 && grep -q '^camrec: error: no process is recording $DEV' '$R/trigger-none.log'"
check "--wait: the first (stopped by SIGINT) and the waiting second both exit 0 ($rc1, $rc2)" test "$rc1" = 0 -a "$rc2" = 0
decodes_as_summary "--wait, first run" "$R/wait-1.h264" "$R/wait-1.log" 320
decodes_as_summary "--wait, second run" "$R/wait-2.h264" "$R/wait-2.log" 320
camrec_own_drops "--wait, first run" "$R/wait-1.log" "$R/wait.dmesg" "$DEV" "$OWN_BOUND" 0 1
camrec_own_drops "--wait, second run" "$R/wait-2.log" "$R/wait.dmesg" "$DEV" "$OWN_BOUND" 0 2

echo "== systemd/camrec@.service's ExecStart with SIGHUP (systemctl reload) and SIGTERM (systemctl stop)"
exec_start=$(sed -n '/^ExecStart=/,/[^\\]$/p' systemd/camrec@.service | sed -e 's/^ExecStart=//' -e 's/\\$//' | tr -d '\n' | tr -s ' ')
svc=$(echo "$exec_start" | sed -e 's/%I/video0/g' -e 's/%i/video0/g' -e 's/%%/%/g' \
      -e "s#/usr/local/bin/camrec#$CAMREC --fps 2 --preset ultrafast --log-level info#" -e "s#/var/lib/camrec#$R/var#")
echo "   ExecStart (with --fps 2 --preset ultrafast as for cron, and --log-level info for the capture counters): $svc"
device_log_start "$DEV"
# No subshell: $! must be camrec itself (env and sh exec into it), as systemd's MAINPID is.
"${NICE[@]}" env -i PATH=/usr/bin:/bin sh -c "cd / && exec $svc" </dev/null >"$R/svc.log" 2>&1 & pid=$!
# Signals follow events, not a clock: SIGHUP once the first file holds a frame, SIGTERM once
# the first file is finished under its own name and the second holds a frame.
wait_for_file "$R/var/video0/*/*.partial" 60 -s || echo "   (no frame in the first file within 60 s)"
kill -HUP $pid
wait_for_file "$R/var/video0/*/video0-*.h264" 60 || echo "   (the first file was not finished within 60 s)"
wait_for_file "$R/var/video0/*/*.partial" 60 -s || echo "   (no frame in the second file within 60 s)"
kill -TERM $pid
wait $pid; rc=$?
device_log_save "$R/svc.dmesg"
cat "$R/svc.log"
check "service: SIGTERM ends it with 0 (got $rc)" test "$rc" = 0
on_disk=( "$R"/var/video0/*/video0-*.h264 )
# The files in the order camrec finished them (its summary lines), not by name: when the SIGHUP comes
# within the second the recording started, the second is video0-HHMMSS-2.h264, which sorts first.
# (Bash alone: the guest has no /dev/fd for a process substitution, and each process costs it.)
segs=()
while IFS= read -r line; do
    [[ $line =~ finished\ output=([^ ]+\.h264) ]] && segs+=("${BASH_REMATCH[1]}")
done <"$R/svc.log"
check "service: SIGHUP started a second file (${#on_disk[@]} on disk, ${#segs[@]} finished)" \
    test "${#on_disk[@]}" = 2 -a "${#segs[@]}" = 2
for f in "${segs[@]}"; do
    check "service: $(basename "$f") decodes, starts with an IDR, has its .pts" \
        eval "decodes_clean '$f' && [ -f '${f%.h264}.pts' ]"
    check "service: $(basename "$f") starts with an IDR" first_is_key "$f"
done
# The two files are one recording cut by SIGHUP: together they hold every camera frame between their
# first and last picture but those counted in dropped= (a running total: the last line has the run's).
# At most: frames lost while camrec started leave no trace in the pictures.
cat "${segs[@]}" >"$R/svc-both.h264"
frames_in_order "service, both files" "$R/svc-both.h264" 1280 "$R/svc.log" --at-most
camrec_own_drops "service" "$R/svc.log" "$R/svc.dmesg" "$DEV" "$OWN_BOUND"
check "service: no .partial file left" sh -c "! ls $R/var/video0/*/*.partial 2>/dev/null | grep -q ."

echo "== a disk that fills up while recording from the camera"
# vivid's noise pattern: frames that don't compress, so 300 kB fill in seconds (moving bars
# compress to ~250 bytes a frame and took minutes).
v4l2-ctl -d "$DEV" -c test_pattern=21
mkdir -p "$R/small" && mount -t tmpfs -o size=300k tmpfs "$R/small"
device_log_start "$DEV"
"${NICE[@]}" "$CAMREC" --device "$DEV" --size 640x480 --fps 5 --preset ultrafast --keyframe-interval 10 --log-level info "$R/small/cam-{n}.h264" 2>"$R/full.log"; rc=$?
device_log_save "$R/full.dmesg"
v4l2-ctl -d "$DEV" -c test_pattern=0
cat "$R/full.log"
check "full disk: exit 77 (got $rc)" test "$rc" = 77
check "full disk: the file is under its final name" test -f "$R/small/cam-1.h264"
# The tmpfs is the VM's own (the host sees the empty folder under it): the host's ffmpeg reads a
# byte-for-byte copy in the share.
mkdir -p "$R/small-copy" && cp "$R/small/cam-1.h264" "$R/small-copy/"
decodes_as_summary "full disk" "$R/small-copy/cam-1.h264" "$R/full.log"
camrec_own_drops "full disk" "$R/full.log" "$R/full.dmesg" "$DEV" "$OWN_BOUND"
umount "$R/small"

case_finish
