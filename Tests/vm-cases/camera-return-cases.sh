#!/bin/bash
# Tests/vm-cases/camera-return-cases.sh — a camera that goes away and comes back (issue 27), inside the
# test VM with vivid: `--on-camera-lost wait` over three unplugs (vivid's disconnect control; vivid
# plugs the node back in once camrec, its last user, has closed it), with a TCP receiver (ffmpeg), a
# media server (nginx-rtmp), the live status and a browser on the live page (the host's Chromium)
# watching throughout; `wait=SECONDS` giving up with 71 while a different camera (the second vivid instance) is never taken
# for the lost one; a multi-planar camera; a recording with sound (--audio test) across a return; a v4l2loopback camera
# sending MJPEG that stalls, is removed and comes back under another number.
# Run by Tests/suites/vm-camera-return.sh through Tests/vm/run.sh with vivid 'n_devs=2 multiplanar=1,2'.
# Environment: CAMREC (the binary), CAMREC_VM_RESULTS (writable dir), LOOPBACK_KO (v4l2loopback.ko).
# Ends with "N passed, N failed".
set -uo pipefail

source "$(dirname "$0")/case-lib.sh" camera-return
source "$(dirname "$0")/device-log.sh"
CAMREC_BIN=${CAMREC:?set CAMREC to the camrec binary}
# Priority "interactive": vivid's fault controls are set by v4l2-ctl while camrec records (see
# capture-cases.sh). Niced, so vivid's kernel thread keeps its pace beside x264 on the emulated CPU.
RUN=(env CAMREC_V4L2_PRIORITY=interactive nice -n 10 "$CAMREC_BIN")
# Polls (curl, ls, grep: each a process start under TCG) every quarter second, not every tenth: they
# run un-niced beside camrec and took the CPU it needed to reopen the camera and encode its first
# picture back. The recording with receivers is 320x180 for the same reason.
WAIT_EVERY=0.25
DEV=$(capture_node 0)
OTHER=$(capture_node 1)
echo "== vivid capture nodes: $DEV (the camera), $OTHER (another camera)"
check "two vivid capture nodes" test -n "$DEV" -a -n "$OTHER"
# Moving bars: Tests/tools/frame-steps.py reads which camera frames each file holds.
for d in "$DEV" "$OTHER"; do v4l2-ctl -d "$d" -c osd_text_mode=2,horizontal_movement=5,vertical_movement=3; done
# framemd5 FILE OUT: the MD5 of every picture ffmpeg decodes from FILE, one a line, into OUT (on the host).
framemd5() {
    on_host ffmpeg -nostdin -v error -i "$1" -map 0:v:0 -f framemd5 -y "$2.framemd5" &&
        awk -F', *' '!/^#/ { print $NF }' "$2.framemd5" >"$2"
}

HTTP_PORT=18480 TCP_PORT=18481
# The browser: the host's Chromium (Debian's took 120-167 s to load a blank page inside this VM)
# watches the live page through run.sh --forward BROWSER_PORT:HTTP_PORT, so the page is served on
# the VM's NIC too (qemu's restricted user network: nothing but the forwarded port reaches it).
HTTP_BIND=127.0.0.1 HTTP_OPEN=()
[[ -n ${BROWSER_PORT:-} ]] && HTTP_BIND=0.0.0.0 HTTP_OPEN=(--http-insecure)
# The time the host kept the VM's CPUs waiting for a core (each on average) in the MS ms after the camera
# was free again the Nth time: Tests/tools/vcpu-wait.py over the samples the suite records on the host,
# from the host's own stamp on the marker made as the holder let go. The VM cannot see that time (its
# clock runs on while its CPU is not run): on a busy host it is where a latency beyond camrec's went.
# 0 without samples: no time is left out that was not measured.
host_waited() {
    local ms
    [[ $2 =~ ^[0-9]+$ ]] || { echo 0; return; }
    ms=$(on_host /usr/bin/python3 Tests/tools/vcpu-wait.py --waited "$CAMREC_VM_RESULTS/vcpu-wait.txt" "$B/released-$1" "$2" 2>/dev/null)
    [[ $ms =~ ^[0-9]+$ ]] && echo "$ms" || echo 0
}
# three_within_beside LIMIT MS1 MS2 MS3: each MS, less the host's wait in its window (host_waited), at most LIMIT.
# Sets WAITED to the three waits, for the check's name.
three_within_beside() {
    local limit=$1 n=0 ms w
    shift; WAITED=()
    for ms; do n=$((n + 1)); WAITED+=("$(host_waited "$n" "$ms")"); done
    (( $# == 3 )) || return 1
    n=0
    for ms; do
        w=${WAITED[$n]}; n=$((n + 1))
        [[ $ms =~ ^[0-9]+$ ]] && (( ms - w <= limit )) || return 1
    done
}
status_json() { curl -s --max-time 2 "http://127.0.0.1:$HTTP_PORT/api/status"; }
# A field of /api/status (a number or a string), read with sed: python's start-up is slow under TCG.
status_field() { status_json | sed -n "s/.*\"$1\" *: *\"\{0,1\}\([^,\"}]*\).*/\1/p"; }
camera_is() { [[ $(status_field camera) == "$1" ]]; }
# Waits up to $2 seconds for the status field camera to be $1.
await_camera() { wait_for "$2" camera_is "$1"; }
has_frames() { [[ $(status_field frames) =~ ^[1-9] ]]; }
# Access units camrec has sent to the --listen output's receivers (from /metrics).
tcp_sent() { curl -s --max-time 2 "http://127.0.0.1:$HTTP_PORT/metrics" | sed -n 's/^camrec_output_frames_total{.*output="tcp:[^}]*} \([0-9]*\).*/\1/p'; }
tcp_receiving() { [[ $(tcp_sent) =~ ^[1-9] ]]; }
partial_written() { [[ -s $(ls "$1".camrec-*.partial 2>/dev/null | head -1) ]]; }
# vivid plugs an unplugged node back in once its last user closes it: hold_open DEV opens it from
# another process (HOLDER) and returns once that has it open; let_go closes it and sets RELEASED (ns)
# to the moment just before (the earliest the camera can be free again: times measured from it are
# never short). Released on demand, not after a fixed sleep: under load the
# unplug and camrec's notice of it can take longer than any fixed hold.
hold_open() {
    sleep 600 3<"$1" 2>/dev/null &
    HOLDER=$!
    wait_for 10 eval "ls -l /proc/$HOLDER/fd 2>/dev/null | grep -q ' -> $1\$'"
}
let_go() { RELEASED=$(date +%s%N); kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null; }
# sleep_rest MS SINCE_NS: sleeps until MS milliseconds have passed since SINCE_NS (no time if they have).
sleep_rest() {
    local ms=$(( $1 - ($(date +%s%N) - $2) / 1000000 ))
    (( ms > 0 )) && nap "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
    return 0
}

# A media server: nginx with the RTMP module (the host's, as the publish suite runs it), recording what
# camrec publishes to an FLV file.
N=$R/nginx
mkdir -p "$N/rec" "$N/tmp"
RTMP_PORT=19350
source "$(dirname "$0")/../lib/nginx-rtmp.sh"
{ nginx_conf_head "$N" 16; cat <<EOF; } >"$N/nginx.conf"
http { access_log off; client_body_temp_path $N/tmp; proxy_temp_path $N/tmp; fastcgi_temp_path $N/tmp; uwsgi_temp_path $N/tmp; scgi_temp_path $N/tmp; }
rtmp { server { listen 127.0.0.1:$RTMP_PORT; application live { live on; record all; record_path $N/rec; record_unique off; } } }
EOF
# The VM's root is read-only: nginx opens its compiled-in log path at start whatever the configuration says.
for d in /var/log/nginx /var/lib/nginx; do [[ -d $d ]] && ! mountpoint -q $d && mount -t tmpfs -o mode=0755 tmpfs $d; done
nginx -p "$N" -c "$N/nginx.conf" -e "$N/error.log" 2>"$N/stderr" &
NGINX=$!
wait_for 20 eval "(exec 3<>/dev/tcp/127.0.0.1/$RTMP_PORT) 2>/dev/null"

echo "== --on-camera-lost wait: three unplugs in a 75-second --segment 10 recording ($(elapsed))"
# Every output at once: segmented raw and MP4 files, a media server, two TCP receivers and a browser.
# A loss closes the segment being written; after the return segments go on under the next names.
mkdir -p "$R/rec"
# vivid drops 5% of its frames (sequence gaps, which camrec counts in dropped=): so every stretch
# between returns has drops for the moving bars to see and for the total to carry across a return.
v4l2-ctl -d "$DEV" -c percentage_of_dropped_buffers=5 || bad "could not set percentage_of_dropped_buffers on $DEV"
timeout --foreground 300 "${RUN[@]}" --device "$DEV" --size 320x180 --fps 10 --encoder software --preset ultrafast \
    --on-camera-lost wait --segment 10 --on-camera-change "echo \"\$CAMREC_CAMERA_EVENT \$CAMREC_DEVICE\" >>'$R/changes.txt'" \
    --http "$HTTP_BIND:$HTTP_PORT" "${HTTP_OPEN[@]}" --listen "127.0.0.1:$TCP_PORT" --log-level info "$R/rec/rec-{n}.h264" "$R/rec/rec-{n}.mp4" \
    "rtmp://127.0.0.1:$RTMP_PORT/live/cam" 2>"$R/rec.err" &
REC=$!
VCPU_BEFORE=$(vcpu_sample)
wait_for 60 has_frames
REC_START=$(date +%s%N)   # the first frame, near enough: the unplugs and the end are timed from it
# The receiver: ffmpeg reads the bare stream from the socket for the whole recording, never reconnecting.
timeout 280 ffmpeg -hide_banner -nostdin -loglevel error -f h264 -i "tcp://127.0.0.1:$TCP_PORT" -c copy -f h264 "$R/receiver.h264" \
    2>"$R/receiver.err" &
RECEIVER=$!
# A second receiver, independent of both, notes when each IDR arrives (Tests/tools/idr-arrivals.py):
# how soon after the camera is free again a receiver has a picture to start from.
/usr/bin/python3 Tests/tools/idr-arrivals.py 127.0.0.1 "$TCP_PORT" "$R/arrivals.h264" "$R/idr-times.txt" \
    2>"$R/arrivals.err" &
ARRIVALS=$!
# The first unplug comes once the receivers get pictures (it starts at the next IDR): under load ffmpeg
# can take seconds to connect, and then the whole first stretch would pass it by.
wait_for 60 tcp_receiving
# The browser on the host plays the live page throughout; it and this script mark their moments with
# files in $B (Tests/tools/browser-return.py): the two machines share no clock.
B="$R/browser"; mkdir -p "$B"; BROWSER=
if [[ -n ${BROWSER_PORT:-} ]]; then
    # ?mse: the forwarded TCP port carries no WebRTC (UDP); the page's MSE player is what this watches.
    on_host python3 Tests/tools/browser-return.py "http://127.0.0.1:$BROWSER_PORT/?mse" "$B" 3 150 \
        >"$R/browser.txt" 2>"$R/browser.err" &
    BROWSER=$!
    wait_for 60 test -e "$B/started" || bad "the browser did not start playing the live page within 60 s: $(tail -2 "$R/browser.err" | tr '\n' ' ')"
else
    bad "no BROWSER_PORT: Tests/suites/vm-camera-return.sh runs this with a port forwarded for the browser"
fi
nap 1
# Each time, another program holds the node open across the unplug: vivid stays unplugged until its
# last user closes it, so the camera is away for 3 s from the unplug (and at least until /api/status
# has shown it lost), not only while camrec reopens.
# What camrec holds that a loss and return could leak: descriptors that are not sockets (camera nodes,
# pipes, files other than the recordings, which come and go with the segments), plus kernel-event
# netlink sockets (protocol 15 in /proc/net/netlink); TCP sockets come and go with the status polls.
held() {
    local inodes plain
    plain=$(ls -l /proc/"$1"/fd 2>/dev/null | grep -c -v -e 'socket:' -e '^total' -e " -> $R/rec/")
    inodes=$(ls -l /proc/"$1"/fd 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]/\1/p' | tr '\n' ' ')
    echo $((plain + $(awk -v ins=" $inodes" 'NR > 1 && $2 == 15 && index(ins, " " $NF " ") { n++ } END { print n + 0 }' /proc/net/netlink)))
}
# The fewest held over a second: a descriptor that is only passing through (the --on-camera-change
# command's pipes, a segment being closed) is not left behind; one that is stays in every sample.
held_settled() {
    local best= n i
    for i in 1 2 3 4 5 6; do
        n=$(held "$1")
        [[ -z $best || $n -lt $best ]] && best=$n
        nap 0.2
    done
    ls -l /proc/"$1"/fd >"$R/fds-$2.txt" 2>&1
    echo "$best"
}
lost_ok=0 back_ok=0 back_times= fds= released_at=()
camrec_pid=
# timeout's child (env and nice exec camrec).
for p in $(pgrep -P "$REC"); do [[ $(readlink "/proc/$p/exe") == "$(readlink -f "$CAMREC_BIN")" ]] && camrec_pid=$p; done
for n in 1 2 3; do
    sleep_rest $((n * 20000 - 12000)) "$REC_START"   # unplugs 8, 28 and 48 s in (or at once, if later)
    hold_open "$DEV"
    unplugged=$(date +%s%N)
    v4l2-ctl -d "$DEV" -c disconnect=1 || bad "could not unplug $DEV ($n)"
    if await_camera lost 10; then lost_ok=$((lost_ok + 1)); fi
    sleep_rest 3000 "$unplugged"
    : >"$B/released-$n"
    let_go
    released=$RELEASED
    released_at+=("$released")
    # Not polled in the first second back: the polls would compete with camrec reopening the camera,
    # the time the receivers' check measures.
    nap 1
    if await_camera present 10; then
        back_ok=$((back_ok + 1))
        back_times+="$(( ($(date +%s%N) - released) / 1000000 )) "
    fi
    fds+="$(held_settled "$camrec_pid" "$n") "
done
echo "   back after the holder let go, as /api/status showed it (ms, first looked at after 1 s): $back_times"
check "the live status showed the camera lost during each of the 3 gaps ($lost_ok)" test $lost_ok = 3
check "and present again within 10 s after each ($back_ok)" test $back_ok = 3
read -r fds1 fds2 fds3 <<<"$fds"
check "no descriptor left behind by a loss and return: camrec holds as many (other than TCP sockets) after the third as after the first ($fds)" \
    test -n "$fds1" -a "$fds1" != 0 -a "$fds1" = "$fds2" -a "$fds2" = "$fds3"
losses=$(status_field cameraLosses) returns=$(status_field cameraReturns)
check "/api/status counted 3 losses and 3 returns ($losses, $returns)" test "$losses/$returns" = 3/3
metrics=$(curl -s --max-time 2 "http://127.0.0.1:$HTTP_PORT/metrics")
check "/metrics: camrec_camera_losses_total 3, camrec_camera_returns_total 3, camera present" \
    eval "grep -q '^camrec_camera_losses_total 3' <<<\"\$metrics\" && grep -q '^camrec_camera_returns_total 3' <<<\"\$metrics\" &&
        grep -q '^camrec_camera_present 1' <<<\"\$metrics\""
# The browser ends by itself 2 s after its third new picture (or after 150 s), before camrec does.
[[ -n $BROWSER ]] && { wait "$BROWSER"; sed 's/^/   browser: /' "$R/browser.txt"; tail -3 "$R/browser.err" | sed 's/^/   browser: /'; }
browser() { sed -n "s/^$1=//p" "$R/browser.txt" 2>/dev/null; }
check "a browser on the live page (the host's Chromium) showed the camera lost during each of the 3 gaps ($(browser lost_shown))" \
    test "$(browser lost_shown)" = 3
# 1.5 s, not the receivers' 1 s: the browser's picture comes 150-600 ms after the receivers' IDR in
# the same runs (the fragment muxed and sent over the WebSocket, Chromium resuming after the stall):
# 296-902 ms in five runs, 1152 ms once beside a busy host process, under the VM's emulated CPU.
# The time the host kept the VM waiting is left out (three_within_beside): under CI's load the third
# return's picture came after 2086 ms, its receiver's IDR after 1022, while /api/status took 6.2 s to
# answer the polls that had answered in 2.7 and 3.4 s after the first two.
pictures_ok=0; three_within_beside 1500 $(browser picture_ms) && pictures_ok=1
check "and a new picture within 1.5 s of the camera being free again beside the time the host kept the VM's CPUs waiting then, each time, on the same page and stream connection (ms: $(browser picture_ms); the host's wait: ${WAITED[*]}; connection closed: $(browser socket_closed); same page: $(browser same_page); corrupted: $(browser corrupted); error: $(browser error))" \
    eval "(( pictures_ok )) && [[ \$(browser socket_closed)/\$(browser same_page)/\$(browser corrupted)/\$(browser error) == no/yes/0/none ]]"
sleep_rest 75000 "$REC_START"
kill -INT "$REC"
wait "$REC"; rc=$?
VCPU_AFTER=$(vcpu_sample)
nap 1
kill "$RECEIVER" "$ARRIVALS" 2>/dev/null; wait "$RECEIVER" "$ARRIVALS" 2>/dev/null
v4l2-ctl -d "$DEV" -c percentage_of_dropped_buffers=0
grep -v '^camrec: finished' "$R/rec.err" | grep -v 'capture counters' | tail -12 | sed 's/^/   /'
check "the recording ends with 0 at the interrupt, after three unplugs (got $rc)" test $rc = 0
check "stderr says each loss and each return (3 and 3)" \
    eval "[[ \$(grep -c '^camrec: camera lost ([123]): .*was disconnected while recording' '$R/rec.err') == 3 &&
            \$(grep -c '^camrec: camera back after .* s as $DEV; recording on' '$R/rec.err') == 3 ]]"
check "--on-camera-change ran for each: lost, returned (3 each, in turn)" \
    eval "[[ \$(cat '$R/changes.txt' 2>/dev/null | tr '\n' ' ') == 'lost $DEV returned $DEV lost $DEV returned $DEV lost $DEV returned $DEV ' ]]"
# Each loss line ("camera lost (N)", not the retry note after it) is followed by a raw file's
# finished line before the return: the segment ended at the loss.
check "each loss ended the segment being written" \
    eval "(( \$(awk '/^camrec: camera lost \\(/ { lost = 1 } /^camrec: finished output=.*\\.h264 / && lost { closed++; lost = 0 }
        /^camrec: camera back/ { lost = 0 } END { print closed + 0 }' '$R/rec.err') == 3 ))"
# The raw files in the order camrec finished them, with the frames it says each holds, and the
# stretch of camera each belongs to (0 before the first return, 1 after it, ...).
files=() later=0 back=0
declare -A FRAMES DECODED STRETCH
while read -r line; do
    case $line in
        "camrec: camera back"*) back=$((back + 1)) ;;
        "camrec: finished output=$R/rec/"*.h264" "*)
            f=${line#camrec: finished output=}; f=${f%% *}
            frames=$(grep -o '\bframes=[0-9]*' <<<"$line" | cut -d= -f2)
            files+=("$f"); FRAMES[$f]=$frames STRETCH[$f]=$back
            ((back)) && later=$((later + frames)) ;;
    esac
done <<<"$(grep -E '^camrec: (camera back|finished)' "$R/rec.err")"   # no /dev/fd for <(...) here
all=1 total=0 idr_first=1 mp4_all=1
for f in "${files[@]}"; do
    DECODED[$f]=$(decoded_frames "$f")
    first=$(on_host ffprobe -v error -select_streams v:0 -show_frames -read_intervals '%+#1' -show_entries frame=key_frame,pict_type -of csv=p=0 "$f" 2>/dev/null | head -1)
    mp4=$(on_host ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "${f%.h264}.mp4" 2>/dev/null)
    echo "   ${f#"$R/"}: camrec frames=${FRAMES[$f]:-none}, ffprobe decodes ${DECODED[$f]:-none}, first picture ${first:-none}; its MP4 twin ${mp4:-none}"
    [[ ${FRAMES[$f]:-0} -gt 0 && ${DECODED[$f]} == "${FRAMES[$f]}" ]] || all=0
    [[ $first == 1,I* ]] || idr_first=0
    [[ -n $mp4 && $mp4 == "${DECODED[$f]}" ]] || mp4_all=0
    total=$((total + ${DECODED[$f]:-0}))
done
check "${#files[@]} raw files (3 losses and segment boundaries: at least 7), each decoding alone with every frame camrec wrote, and no other" \
    eval "[[ $all == 1 && ${#files[@]} -ge 7 && \$(ls '$R'/rec/*.h264 | wc -l) == ${#files[@]} ]] && ! ls '$R'/rec/*.partial >/dev/null 2>&1"
check "the MP4 output beside it: the same files, each with the same frames as its raw twin" \
    eval "[[ $mp4_all == 1 && \$(ls '$R'/rec/*.mp4 | wc -l) == ${#files[@]} ]]"
check "each file starts with a key frame" test $idr_first = 1
# Which camera frames the files hold, from their pictures (vivid's moving bars, Tests/tools/frame-steps.py):
# the files of one stretch, joined in order, must show every frame the camera made from the first
# picture to the last, but those camrec counted in dropped=: across segment boundaries and each return
# the total must carry on. A frame lost after a stretch's last picture (the camera went) leaves no
# gap to see: up to pool_empty= + errored= of them may be missing from the pictures' count.
counters=$(grep -o 'capture counters: .*' "$R/rec.err" | tail -1)
echo "   ${counters:-no capture counters}"
dropped=$(counter "$R/rec.err" dropped) empty=$(counter "$R/rec.err" pool_empty) errored=$(counter "$R/rec.err" errored)
skipped=$(counter "$R/rec.err" skipped_by_device)
seen=0 steps_ok=1
for ((s = 0; s <= back; s++)); do
    : >"$R/stretch-$s.h264"
    for f in "${files[@]}"; do [[ ${STRETCH[$f]} == "$s" ]] && cat "$f" >>"$R/stretch-$s.h264"; done
    report=$(frame_steps --step "$(step_px 320)" --missing "${dropped:-0}" --at-most --json "$R/stretch-$s.h264" 2>&1) || steps_ok=0
    missing=$(sed -n 's/.*"missing": \([0-9]*\).*/\1/p' <<<"$report")
    echo "   stretch $s pictures: ${missing:-?} camera frames missing $(sed -n 's/.*"problems": \(.*\)}/\1/p' <<<"$report" | cut -c1-200)"
    [[ -n $missing ]] || steps_ok=0
    seen=$((seen + ${missing:-0}))
done
check "the pictures of the $((back + 1)) stretches show every camera frame in order but the dropped=${dropped:-?} camrec reported in all, $seen seen missing (up to pool_empty=${empty:-?} + errored=${errored:-?} after a stretch's last picture)" \
    eval "[[ $steps_ok == 1 && -n '$dropped' && -n '$empty' && -n '$errored' ]] && (( seen <= dropped && seen >= dropped - empty - errored ))"
# camrec's own drops (no pool buffer free, the encoder behind) at 320x180, 10 fps: 0 in a run beside
# other VM suites; 17 of 1722 (1%) with stress-ng --cpu 1 beside as well (load 12, vivid itself
# skipping 45%). At most 2% of the frames delivered: a recorder losing one frame in ten fails. Beside
# a starved host (31 of 965 in CI's run of 819f077, 2026-11-30) the frames the time the host kept the
# VM's CPUs waiting beyond their idle time is worth (frames_withheld) are excused too.
delivered=$(counter "$R/rec.err" delivered)
withheld=$(frames_withheld "the recording" "$VCPU_BEFORE" "$VCPU_AFTER" 100)
check "camrec itself dropped at most 2% of the ${delivered:-?} frames delivered for want of a pool buffer, and the $withheld the host withheld the VM's CPUs for (pool_empty=${empty:-?}; vivid skipped ${skipped:-?})" \
    eval "[[ -n '$empty' && -n '$delivered' ]] && (( ${empty:-1} * 50 <= ${delivered:-0} + 50 * $withheld ))"
nap 1   # nginx closes its recording when the publisher has gone
kill "$NGINX" 2>/dev/null; wait "$NGINX" 2>/dev/null
# What the receivers got, from their own files: each picture's MD5 as ffmpeg decodes it, against the
# recording's (the raw files one after another). The media server from the first frame on; the TCP
# receivers, which joined during the first stretch, every picture from their first to the end.
: >"$R/files.md5"
for f in "${files[@]}"; do framemd5 "$f" "$f.md5" && cat "$f.md5" >>"$R/files.md5"; done
framemd5 "$N/rec/cam.flv" "$R/flv.md5"
flv=$(grep -c . "$R/flv.md5" 2>/dev/null)
check "the media-server session (nginx-rtmp) stayed up through all three: nginx's recording holds the $total pictures of the files, the same, in order (${flv:-none})" \
    eval "[[ $total -gt 0 ]] && cmp -s '$R/files.md5' '$R/flv.md5' && ! grep -q 'rtmp://.*\(reconnect\|lost\|failed\)' '$R/rec.err'"
# suffix_of A B: the lines of A are the last lines of B.
suffix_of() { local n; n=$(grep -c . "$1"); (( n > 0 )) && tail -n "$n" "$2" | cmp -s - "$1"; }
framemd5 "$R/receiver.h264" "$R/receiver.md5"
framemd5 "$R/arrivals.h264" "$R/arrivals.md5"
received=$(grep -c . "$R/receiver.md5" 2>/dev/null) arrived=$(grep -c . "$R/arrivals.md5" 2>/dev/null)
check "the TCP receivers stayed connected through all three and decode them all: ffmpeg's ${received:-0} and the IDR timer's ${arrived:-0} pictures are the files' last ones, the same, in order, each more than the $later in the files finished after the first return" \
    eval "[[ -n '$received' && -n '$arrived' && $received -gt $later && $arrived -gt $later ]] &&
        suffix_of '$R/receiver.md5' '$R/files.md5' && suffix_of '$R/arrivals.md5' '$R/files.md5' && ! grep -q . '$R/receiver.err' '$R/arrivals.err'"
# From the camera free again (the holder gone) to the first IDR a receiver has after it.
to_picture=()
for released in "${released_at[@]}"; do
    ms=$(awk -v r="$released" '$1 >= r / 1e9 { printf "%d", ($1 - r / 1e9) * 1000; exit }' "$R/idr-times.txt" 2>/dev/null)
    to_picture+=("${ms:-none}")
done
idr_ok=0; three_within_beside 1000 "${to_picture[@]}" && idr_ok=1
check "after each return a receiver had an IDR to start from within 1 s of the camera being free again beside the time the host kept the VM's CPUs waiting then (ms: ${to_picture[*]}; the host's wait: ${WAITED[*]})" \
    test $idr_ok = 1

echo "== wait=3 and the camera does not come back in time, while another camera is there ($(elapsed))"
# The other vivid instance ($OTHER, the same driver and card) is there all along: it must not be taken
# for the lost camera (its bus info differs), so the wait runs out.
# vivid only plugs back in once its last user closes it; another program holding it open keeps it away.
timeout --foreground 120 "${RUN[@]}" --device "$DEV" --size 640x480 --fps 10 --encoder software --preset ultrafast \
    --on-camera-lost wait=3 "$R/short.h264" 2>"$R/short.err" &
REC=$!
wait_for 60 partial_written "$R/short.h264"
nap 2
# A second opener (holding the node, streaming nothing) keeps vivid unplugged after camrec closes it.
# It opens before the unplug: an unplugged node refuses new openers.
hold_open "$DEV"
v4l2-ctl -d "$DEV" -c disconnect=1
start=$EPOCHSECONDS
wait "$REC"; rc=$?
took=$(( $EPOCHSECONDS - start ))
let_go
tail -3 "$R/short.err" | sed 's/^/   /'
check "wait=3: exit 71 once the 3 s are up ($rc after ${took} s)" test $rc = 71 -a $took -le 10
check "wait=3: the error line says it did not come back within 3 s" grep -q "^camrec: error: .*did not come back within 3 s" "$R/short.err"
check "wait=3: the file before the loss is complete" eval "[[ \$(decoded_frames '$R/short.h264') -gt 0 ]]"
check "wait=3: $OTHER (vivid-001, a camera of the same kind) was not taken for it: no second file, no return" \
    eval "[[ ! -e '$R/short-2.h264' ]] && ! grep -q 'camera back' '$R/short.err'"

echo "== multi-planar ($OTHER): one unplug under wait ($(elapsed))"
timeout --foreground 120 "${RUN[@]}" --device "$OTHER" --size 640x480 --fps 10 --encoder software --preset ultrafast \
    --on-camera-lost wait=20 --log-level info "$R/mplane.h264" 2>"$R/mplane.err" &
REC=$!
wait_for 60 partial_written "$R/mplane.h264"
nap 2
v4l2-ctl -d "$OTHER" -c disconnect=1
wait_for 20 grep -q '^camrec: camera back' "$R/mplane.err"
nap 2
kill -INT "$REC"; wait "$REC"; rc=$?
mp_ok=1
for f in mplane.h264 mplane-2.h264; do
    n=$(decoded_frames "$R/$f")
    [[ -n $n && $n -gt 0 && $n == "$(grep -F "output=$R/$f " "$R/mplane.err" | grep -o 'frames=[0-9]*' | cut -d= -f2)" ]] || mp_ok=0
done
grep -E '^camrec: camera|capture: ' "$R/mplane.err" | cut -c1-160 | sed 's/^/   /'
check "multi-planar: exit 0 ($rc), back after the unplug, two files each decoding with every frame camrec wrote" \
    eval "[[ $rc == 0 && $mp_ok == 1 ]] && grep -q '^camrec: camera back after .* s as $OTHER; recording on' '$R/mplane.err'"
check "multi-planar: $OTHER is a multi-planar node (vivid multiplanar=2)" \
    eval "v4l2-ctl -d '$OTHER' -D 2>/dev/null | sed -n '/Device Caps/,\$p' | grep -q 'Video Capture Multiplanar'"

echo "== sound across a return ($OTHER): --audio test into Matroska, one unplug under wait ($(elapsed))"
# The test tone is stamped on the camera's clock (V4L2's monotonic buffer times through camrec's
# timeline): each file's sound must start and end with its picture, the first at the loss, the second
# from the camera's first IDR after it (av-edges.py on the host: ffprobe's first decoded frames and last packets).
timeout --foreground 120 "${RUN[@]}" --device "$OTHER" --size 640x480 --fps 10 --encoder software --preset ultrafast \
    --on-camera-lost wait=20 --audio test "$R/sound.mkv" 2>"$R/sound.err" &
REC=$!
wait_for 60 partial_written "$R/sound.mkv"
nap 3
v4l2-ctl -d "$OTHER" -c disconnect=1
wait_for 20 grep -q '^camrec: camera back' "$R/sound.err"
nap 3
kill -INT "$REC"; wait "$REC"; rc=$?
check "sound across a return: exit 0 ($rc), back after the unplug, two files" \
    eval "[[ $rc == 0 && -s '$R/sound.mkv' && -s '$R/sound-2.mkv' ]] && grep -q '^camrec: camera back' '$R/sound.err'"
for f in sound.mkv sound-2.mkv; do
    edges=$(on_host /usr/bin/python3 Tests/tools/av-edges.py "$R/$f" 0.0214); erc=$?
    echo "   $f: $edges"
    check "sound across a return: $f's sound starts and ends with its picture (within one AAC frame)" test $erc = 0
done

echo "== v4l2loopback (MJPEG): the writer stops (a stall), the module is removed and loaded again ($(elapsed))"
# A loopback node whose writer (ffmpeg) stops is a camera that stalls; removing the module takes the node
# away and loading it again adds it back, as /dev/video31 this time (its bus info, platform:v4l2loopback-000,
# stays): camrec hears of that from the kernel's device event (no node is there to retry in between),
# finds it under its new number, and records on once a writer feeds it again.
load_loopback() { LOOP=/dev/video$1; insmod "${LOOPBACK_KO:?}" devices=1 video_nr=$1 exclusive_caps=0 card_label="loop camera"; }
# The writer sends MJPEG, as most USB webcams do at 640x480 and above: camrec's decoding path.
# Its start is the test's setup, not camrec's work: in CI the host once kept this VM's CPUs waiting 60 s
# of 45 and ffmpeg took over 30 s to set the node's format, so it gets 90 s (camrec's own wait is 60 s,
# counted from the loss, and is what the checks below hold it to).
start_writer() {
    ffmpeg -nostdin -v error -re -f lavfi -i "testsrc2=size=640x480:rate=10" -c:v mjpeg -pix_fmt yuvj422p -q:v 5 -f v4l2 "$LOOP" &
    WRITER=$!
    local since=$EPOCHSECONDS
    wait_for 90 eval "v4l2-ctl -d '$LOOP' --get-fmt-video 2>/dev/null | grep -q MJPG" || return 1
    echo "   the writer set $LOOP to MJPEG after $(( EPOCHSECONDS - since )) s"
}
if load_loopback 30 && start_writer; then
    FIRST=$LOOP
    timeout --foreground 150 "${RUN[@]}" --device "$LOOP" --size 640x480 --encoder software --preset ultrafast \
        --on-camera-lost wait=60 --log-level info "$R/loop.h264" 2>"$R/loop.err" &
    REC=$!
    wait_for 60 partial_written "$R/loop.h264"
    nap 2
    kill "$WRITER"; wait "$WRITER" 2>/dev/null
    wait_for 20 grep -q '^camrec: camera lost (1)' "$R/loop.err"
    removed=no
    wait_for 10 rmmod v4l2loopback 2>/dev/null && removed=yes
    check "v4l2loopback: the stall was noticed and camrec let go of the node (module removed: $removed)" \
        eval "[[ $removed == yes ]] && grep -q '^camrec: camera lost (1): .*' '$R/loop.err'"
    nap 2
    load_loopback 31 && start_writer || bad "v4l2loopback: could not load it again with a writer"
    wait_for 30 grep -q '^camrec: camera back' "$R/loop.err"
    nap 2
    kill -INT "$REC"; wait "$REC"; rc=$?
    kill "$WRITER" 2>/dev/null; wait "$WRITER" 2>/dev/null
    grep '^camrec: ' "$R/loop.err" | grep -v '^camrec: finished' | tail -6 | sed 's/^/   /'
    check "v4l2loopback: back under its new number ($FIRST → $LOOP), found through the kernel's device event" \
        eval "grep -q '^camrec: camera back after .* s as $LOOP; recording on' '$R/loop.err' &&
            ! grep -q 'cannot listen for device events' '$R/loop.err'"
    check "v4l2loopback: MJPEG decoded ($(grep -c 'MJPEG decoded' "$R/loop.err") line says so), exit 0 at the interrupt (got $rc), two files, each decodes with every frame" \
        eval "grep -q 'MJPEG decoded' '$R/loop.err' && [[ $rc == 0 && \$(decoded_frames '$R/loop.h264') -gt 0 && \$(decoded_frames '$R/loop-2.h264') -gt 0 ]] &&
            [[ \$(decoded_frames '$R/loop.h264') == \$(grep -F 'output=$R/loop.h264 ' '$R/loop.err' | grep -o 'frames=[0-9]*' | cut -d= -f2) ]] &&
            [[ \$(decoded_frames '$R/loop-2.h264') == \$(grep -F 'output=$R/loop-2.h264 ' '$R/loop.err' | grep -o 'frames=[0-9]*' | cut -d= -f2) ]]"
    rmmod v4l2loopback 2>/dev/null
else
    bad "v4l2loopback: cannot load $LOOPBACK_KO with a writer"
fi

echo "== done in $(elapsed)"
case_finish
