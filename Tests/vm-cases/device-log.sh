# Tests/vm-cases/device-log.sh — the kernel as a witness, outside camrec, of which frames a V4L2 node
# handed out; for the cases that bound what camrec drops. Source it after case-lib.sh.
#
# camrec counts a frame the camera never delivered (a gap in the buffers' sequence numbers) as
# skipped_by_device=, apart from those it dropped itself (pool_empty=: no pool buffer free; errored=).
# Only the first kind is excused, and not on camrec's word: with the node's dev_debug set, the kernel's
# V4L2 core logs every VIDIOC_DQBUF with the sequence number it returned, and
# Tests/tools/dqbuf-sequences.py (no code shared with camrec) counts the gaps in that log. The suites
# boot the VM with log_buf_len=16M: the kernel's default 128 KiB held one start-up's enumeration
# ioctls (~100 KiB) and little more.

# device_log_start DEV: empties the kernel's log and has it log every ioctl on DEV from now on (set
# each time: vivid's disconnect registers the node anew, with dev_debug back at 0).
device_log_start() {
    echo 0x0b >"/sys/class/video4linux/${1##*/}/dev_debug" && dmesg -C
}
# device_log_save FILE: what the kernel logged since device_log_start.
device_log_save() { dmesg >"$1"; }

# camrec_own_drops NAME LOG DEVLOG DEV BOUND [ERRORED [STREAM]]: two checks of a recording's capture
# counters (LOG, camrec's --log-level info) against the kernel's DQBUF log (DEVLOG, of node DEV; STREAM:
# its Nth VIDIOC_STREAMON only, for a log with several recordings).
# 1. The frames excused as never delivered (skipped_by_device=) are the gaps in the sequence numbers
#    the kernel handed camrec.
# 2. What camrec dropped itself, dropped= less those gaps less ERRORED (the errored buffers the case
#    injected, default 0; `full`: the buffers the kernel's log shows filled to their last byte, which
#    for MJPEG means no frame was written into them), is at most BOUND, and so is pool_empty=.
#    dropped= is the moving bars' count where a case has them (frames_in_order), so this count is
#    measured outside camrec too.
# With SUMMARY_ONLY=1, for a run without --log-level info (no capture counters: cron's, whose output
# is checked to be its summary alone), only the second, with dropped= from the summary line.
camrec_own_drops() {
    local name=$1 log=$2 devlog=$3 dev=$4 bound=$5 errored=${6:-0} stream=${7:-}
    local seen gaps= dropped skipped empty own= excused=errored
    seen=$(on_host /usr/bin/python3 Tests/tools/dqbuf-sequences.py "$devlog" "$dev" ${stream:+--stream "$stream"} 2>&1)
    [[ $seen =~ ^dequeued=[1-9][0-9]*\ skipped=([0-9]+) ]] && gaps=${BASH_REMATCH[1]}
    if [[ $errored == full ]]; then
        errored= excused="handed out with no frame written (the kernel's log: bytesused = length)"
        [[ $seen =~ \ full=([0-9]+) ]] && errored=${BASH_REMATCH[1]}
    fi
    dropped=$(counter "$log" dropped) skipped=$(counter "$log" skipped_by_device) empty=$(counter "$log" pool_empty)
    echo "   $name: the kernel's DQBUF log of ${dev##*/}: $seen"
    if [[ ${SUMMARY_ONLY:-} == 1 ]]; then
        dropped=$(field "$log" dropped)
        [[ -n $gaps && -n $dropped && -n $errored ]] && own=$((dropped - gaps - errored))
        check "$name: camrec itself dropped at most $bound (dropped=${dropped:-?} less ${gaps:-?} never delivered, by the kernel's DQBUF log, less ${errored:-?} $excused: ${own:-?})" \
            test -n "$own" -a "${own:-1}" -ge 0 -a "${own:-99}" -le "$bound"
        return
    fi
    check "$name: the frames excused as never delivered are the gaps in the camera's own sequence numbers (skipped_by_device=${skipped:-?}, the kernel's DQBUF log ${gaps:-?})" \
        test -n "$gaps" -a "${skipped:-x}" = "${gaps:-y}"
    [[ -n $gaps && -n $dropped && -n $errored ]] && own=$((dropped - gaps - errored))
    check "$name: camrec itself dropped at most $bound (dropped=${dropped:-?} less ${gaps:-?} never delivered less ${errored:-?} $excused: ${own:-?}; pool_empty=${empty:-?})" \
        test -n "$own" -a -n "$empty" -a "${own:-1}" -ge 0 -a "${own:-99}" -le "$bound" -a "${empty:-99}" -le "$bound"
}

# The host as a witness of the VM's CPU: under emulation the guest cannot see the time its one CPU
# waited for a host core (its clock runs on), yet a recorder starved of it falls behind the camera.
# vcpu_sample prints "WAIT_NS RUN_NS NOW_NS CPUS": the VM's vCPU threads as the host's scheduler counted
# them, summed (Tests/tools/vcpu-wait.py through on_host), the host's clock, and how many vCPUs; nothing
# outside Tests/vm/run.sh.
vcpu_sample() {
    [[ -f ${CAMREC_VM_RESULTS:-}/.qemu.pid ]] || return 0
    on_host /usr/bin/python3 Tests/tools/vcpu-wait.py "$CAMREC_VM_RESULTS/.qemu.pid" 2>/dev/null |
        sed -n 's/^wait_ns=\([0-9]*\) run_ns=\([0-9]*\) threads=\([0-9]*\) now_ns=\([0-9]*\)$/\1 \2 \4 \3/p'
}
# frames_withheld NAME "W0 R0 T0 N" "W1 R1 T1 N" INTERVAL_MS: the camera's frames (one each INTERVAL_MS)
# that the host's withholding of the VM's CPUs between the two samples is worth: the time a CPU waited
# for a host core (on average over the N vCPUs) beyond the time it had nothing to do (idle: neither
# run nor waiting), which it could have caught up in. 0 on a host that kept them waiting no longer than
# that, and without samples.
frames_withheld() {
    local name=$1 interval=$4 w0 r0 t0 n0 w1 r1 t1 n1 v waited ran idle beyond
    read -r w0 r0 t0 n0 <<<"$2"; read -r w1 r1 t1 n1 <<<"$3"
    for v in "$w0" "$r0" "$t0" "$n0" "$w1" "$r1" "$t1" "$interval"; do [[ $v =~ ^[0-9]+$ ]] || { v=; break; }; done
    if [[ -z $v ]] || ((interval == 0 || n0 == 0)) || [[ $n0 != "$n1" ]]; then
        echo "   $name: the VM's CPU time not measured (no run.sh host): no frame excused for it" >&2; echo 0; return
    fi
    waited=$(( (w1 - w0) / 1000000 / n0 )) ran=$(( (r1 - r0) / 1000000 / n0 ))
    idle=$(( (t1 - t0) / 1000000 - waited - ran )); ((idle > 0)) || idle=0
    beyond=$((waited - idle)); ((beyond > 0)) || beyond=0
    echo "   $name: in $(( (t1 - t0) / 1000000 )) ms the host ran the VM's $n0 CPU(s) $ran ms each and kept each waiting $waited ms, $beyond ms beyond its $idle ms idle: $((beyond / interval)) frames of ${interval} ms" >&2
    echo $((beyond / interval))
}
# frame_interval_ms DEV: the node's frame interval as the driver states it (VIDIOC_G_PARM), in ms rounded
# up, so that frames_withheld errs low.
frame_interval_ms() {
    v4l2-ctl -d "$1" --get-parm 2>/dev/null |
        sed -n 's/.*Frames per second: [0-9.]* (\([0-9]*\)\/\([0-9]*\)).*/\1 \2/p' | { read -r n d && ((n > 0)) && echo $(((1000 * d + n - 1) / n)); }
}
