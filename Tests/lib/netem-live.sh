# Tests/lib/netem-live.sh — the live page on a bad network (issue 52): source it in a suite that has
# W, CAMREC, next_port and wait_listen (Tests/lib/net-suite.sh).
#
# netem_live SECONDS NAME PORT1 PORT2 [CAMREC]: camrec (on PORT1) records the test pattern (640x360, 30 fps) with --http on
# loopback. This machine's kernel has no netem, so the page's connections go through the test VM
# (Tests/vm/run.sh: Debian's kernel, sch_netem): Chromium on this machine opens the page on a port
# forwarded into the VM, where Tests/tools/tcp-relay.py relays each connection back out to camrec;
# the VM's NIC sends everything with `netem delay 50ms 20ms loss 1%` (the stream to the browser and the
# requests and acknowledgements to camrec alike). Tests/tools/browser-edge.py watches the page for
# SECONDS (through PORT2; ?mse: the page's MSE player, not WebRTC) and reads how far behind capture it is, asking camrec's /api/status directly, past the delay.
# The stream is held to 300 kbit/s: the relay in the emulated VM carried 0.7-0.85 Mbit/s at best beside
# builds (a 4 MB download through it with the same netem: 86-106 KB/s), near the 0.68 Mbit/s the pattern
# takes by default, and then what lags is the relay, not the page (the picture was 3-4 s behind capture
# while Chromium's own buffer stayed under 0.5 s). NETEM_BITRATE=... changes it.
# Writes $W/NAME.json (browser-edge's report), $W/NAME.samples (every sample), $W/NAME-*.log/err.
# Returns once camrec and the VM have ended. The ports are given (from next_port) so that it can run in
# the background beside a suite that takes more ports.
netem_live() {
    local seconds=$1 name=$2 cport=$3 hport=$4 cam=${5:-$CAMREC} vmres=$W/$2-vm
    mkdir -p "$vmres"
    "$cam" --test-pattern --size 640x360 --fps 30 --bitrate "${NETEM_BITRATE:-300k}" --duration 3600 --http "127.0.0.1:$cport" "$W/$name.h264" 2>"$W/$name-cam.log" &
    local cam_pid=$!
    wait_listen "$cport" >/dev/null
    # The relay runs until the host asks it to stop (a file in the shared results directory). Booting
    # takes 6 s on a quiet machine, up to a minute beside builds; a VM that does not come up (under heavy
    # load its kernel once panicked: "IO-APIC + timer doesn't work") is booted once more.
    local vm_pid attempt i
    for attempt in 1 2; do
        Tests/vm/run.sh --timeout $((seconds + 300)) --results "$vmres" --forward "$hport:8080" --guest-forward "8080:$cport" -- \
            bash -c "tc qdisc add dev eth0 root netem delay 50ms 20ms loss 1% || exit 3
                     /usr/bin/python3 Tests/tools/tcp-relay.py listen 8080 10.0.2.100 8080 $((seconds + 240)) &
                     while [ ! -e '$vmres/stop' ]; do sleep 0.5; done" >"$W/$name-vm.log" 2>>"$W/$name-vm.err" &
        vm_pid=$!
        for ((i = 0; i < 240; i++)); do
            [[ $(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/api/status") == 200 ]] && break 2
            kill -0 "$vm_pid" 2>/dev/null || break
            sleep 0.5
        done
        wait "$vm_pid" 2>/dev/null
    done
    python3 Tests/tools/browser-edge.py "http://127.0.0.1:$hport/?mse" "$seconds" "http://127.0.0.1:$cport/api/status" \
        --log "$W/$name.samples" >"$W/$name.json" 2>"$W/$name.err" ||
        echo "{\"error\": \"browser-edge failed: $(tail -1 "$W/$name.err" | tr -d '"\\')\"}" >"$W/$name.json"
    touch "$vmres/stop"
    kill -INT "$cam_pid" 2>/dev/null
    wait "$vm_pid" "$cam_pid" 2>/dev/null
}
