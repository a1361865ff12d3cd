# Tests/lib/netem-live.sh — the live page on a bad network (issue 52): source it in a suite that has
# W, CAMREC, next_port and wait_listen (Tests/lib/net-suite.sh).
#
# netem_live SECONDS NAME 'CPORT LPORT HPORT UDP1 UDP2' [CAMREC]: camrec records the test pattern (640x360,
# 30 fps) with --http on loopback (CPORT) and a `--listen` output (LPORT). This machine's kernel has no netem, so the
# page goes through the test VM (Tests/vm/run.sh: Debian's kernel, sch_netem), whose NIC sends everything
# with `netem delay 50ms 20ms loss 1%`, each direction once (the stream to the browser and the requests,
# acknowledgements and RTCP to camrec alike):
#   - TCP (the page, its WebSocket, WHEP's offer and answer): Chromium opens the page on HPORT, forwarded
#     into the VM, where Tests/tools/tcp-relay.py relays each connection back out to camrec;
#   - UDP (WebRTC's media): ports UDP1 and UDP2 of this host's own address are forwarded into the VM,
#     where Tests/tools/udp-relay.py joins them; the browser rewrites the WHEP exchange so that each side's
#     only candidate is one of them (Tests/tools/browser-edge.py --webrtc-through). Not on 127.0.0.1:
#     camrec's ICE (libnice) gathers no loopback candidates and never checked one it was given.
# Two Chromiums watch at once for SECONDS (Tests/tools/browser-edge.py): one the page's MSE player (?mse),
# one its WebRTC; each holds the picture it shows against live measured outside camrec (--truth: the
# pattern's pacing, found by an independent reader of the --listen output; Tests/tools/pattern_clock.py).
# The stream is held to 300 kbit/s: the TCP relay in the emulated VM carried 0.7-0.85 Mbit/s at best beside
# builds (a 4 MB download through it with the same netem: 86-106 KB/s), near the 0.68 Mbit/s the pattern
# takes by default, and then what lags is the relay, not the page (the picture was 3-4 s behind capture
# while Chromium's own buffer stayed under 0.5 s). NETEM_BITRATE=... changes it.
# NETEM_LOSS=5% changes the loss (both ways), NETEM_WATCH=webrtc watches one player only (by hand).
# Writes $W/NAME-mse.json and $W/NAME-webrtc.json (browser-edge's reports), $W/NAME-{mse,webrtc}.samples
# (every sample), $W/NAME-*.log/err, and the UDP relay's counts at the end of $W/NAME-vm.log.
# The relay says how many of the picture's packets never reached it and how late they came against their RTP
# time (udp-relay.py), printed by the suite: beside stress-ng and two suites (load 8.6) the emulated VM once
# lagged so that the WebRTC page fell 13.8 s behind while MSE's through the same VM stayed within 0.5 s.
# Running the VM at niceness -10 once it was up kept WebRTC within 33 ms at load 10-12, but took 40% of a
# core from the HLS section beside it (its recording dropped 61 frames), so it runs as it comes.
# The picture's RTP packets are timed on this host as they go into the VM and come out (Tests/tools/
# udp-transit.py: $W/NAME-transit.log, its summary in NAME-transit.txt; netem_held below).
# Returns once camrec and the VM have ended. The five ports are given (from next_port) so that it can run
# in the background beside a suite that takes more ports.
netem_live() {
    local seconds=$1 name=$2 cam=${4:-$CAMREC} vmres=$W/$2-vm cport lport hport udp1 udp2
    read -r cport lport hport udp1 udp2 <<<"$3"
    local addr; addr=$(ip -4 -o addr show scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
    mkdir -p "$vmres"
    "$cam" --test-pattern --size 640x360 --fps 30 --bitrate "${NETEM_BITRATE:-300k}" --duration 3600 --http "127.0.0.1:$cport" \
        --listen "127.0.0.1:$lport" "$W/$name.h264" 2>"$W/$name-cam.log" &
    local cam_pid=$!
    wait_listen "$cport" >/dev/null
    # The relays run until the host asks them to stop (a file in the shared results directory). Booting
    # takes 6 s on a quiet machine, up to a minute beside builds; a VM that does not come up (under heavy
    # load its kernel once panicked: "IO-APIC + timer doesn't work") is booted once more.
    local vm_pid attempt i
    for attempt in 1 2; do
        Tests/vm/run.sh --timeout $((seconds + 300)) --results "$vmres" --forward "$hport:8080" --guest-forward "8080:$cport" \
            --forward-udp "${addr:-127.0.0.1}:$udp1:9001" --forward-udp "${addr:-127.0.0.1}:$udp2:9002" -- \
            bash -c "tc qdisc add dev eth0 root netem delay 50ms 20ms loss ${NETEM_LOSS:-1%} || exit 3
                     ip route add default via 10.0.2.2   # replies to the host's own addresses, not only loopback
                     /usr/bin/python3 Tests/tools/tcp-relay.py listen 8080 10.0.2.100 8080 $((seconds + 240)) &
                     /usr/bin/python3 Tests/tools/udp-relay.py 9001 9002 $((seconds + 240)) & udp=\$!
                     while [ ! -e '$vmres/stop' ]; do sleep 0.5; done; kill \$udp; wait \$udp" >"$W/$name-vm.log" 2>>"$W/$name-vm.err" &
        vm_pid=$!
        for ((i = 0; i < 240; i++)); do
            [[ $(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/api/status") == 200 ]] && break 2
            kill -0 "$vm_pid" 2>/dev/null || break
            sleep 0.5
        done
        wait "$vm_pid" 2>/dev/null
    done
    # The picture's packets timed on this host as they go into the VM and come back out (udp-transit.py).
    python3 Tests/tools/udp-transit.py "$udp2" "$udp1" $((seconds + 120)) "$W/$name-transit.log" >"$W/$name-transit.txt" 2>&1 &
    local transit_pid=$!
    local kind watchers=()
    for kind in ${NETEM_WATCH:-mse webrtc}; do
        local page="http://127.0.0.1:$hport/" through=()
        [[ $kind == mse ]] && page+="?mse" || through=(--webrtc-through "${addr:-127.0.0.1}:$udp1:$udp2")
        python3 Tests/tools/browser-edge.py "$page" "$seconds" --truth "$lport" "${through[@]}" \
            --log "$W/$name-$kind.samples" >"$W/$name-$kind.json" 2>"$W/$name-$kind.err" ||
            echo "{\"error\": \"browser-edge failed: $(tail -1 "$W/$name-$kind.err" | tr -d '"\\')\"}" >"$W/$name-$kind.json" &
        watchers+=($!)
    done
    wait "${watchers[@]}"
    kill -TERM "$transit_pid" 2>/dev/null; wait "$transit_pid" 2>/dev/null
    touch "$vmres/stop"
    kill -INT "$cam_pid" 2>/dev/null
    wait "$vm_pid" "$cam_pid" 2>/dev/null
}

# netem_held NAME SECONDS: after netem_live, transit-excess.py's JSON for WebRTC's picture: how long the
# stand-in network (qemu's forwarding, the VM, its relay) held the packets beyond netem's own delay in the
# watch's last 30 s ("held_ms"), timed on this host as they went into the VM and came out. Beside loaded
# lanes (load 7-9) qemu queued them for seconds (a 60 s watch: 1.1 s in the median, 5.3 s at most, while
# MSE's TCP through the same VM stayed 200 ms behind), and Chromium's jitter buffer took 10-20 s to come
# back: the WebRTC page ended 600 ms behind in 2 of 4 loaded runs. Nothing camrec did is in it.
netem_held() {
    python3 Tests/tools/transit-excess.py "$W/$1-transit.log" "$W/$1-webrtc.json" "$2" 2>/dev/null
}
