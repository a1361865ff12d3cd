#!/usr/bin/env python3
"""How much longer than netem's own delay the stand-in network held the picture's packets near the end
of a watch, from udp-transit.py's log (Tests/lib/netem-live.sh); one line of JSON on stdout:

  transit-excess.py TRANSIT_LOG WEBRTC_REPORT SECONDS [SPAN]

Of the packets of the picture's payload type (the first of "answer_h264_types" in WEBRTC_REPORT, the
browser-edge.py JSON of the WebRTC watch) that went into the VM in the watch ("watch_start" there,
CLOCK_MONOTONIC, for SECONDS): each one's transit less the least any took, in each 10 s of
the watch; "p95_by_10s" the 95th percentile of each. "held_ms" is the most of those in the last SPAN
seconds (default 30: a WebRTC receiver's jitter buffer, once packets came seconds late, took 10-20 s to
come back to live after they came on time again), less netem's own spread (delay 50 ms ± 20 ms: up to
40 ms above the least), never below 0. Nothing in it is camrec's: its packets are timed once they
left it. With no packets "held_ms" is null.
"""
import json, sys

NETEM_SPREAD_MS = 40


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    log, seconds = sys.argv[1], float(sys.argv[3])
    report = json.load(open(sys.argv[2]))
    payload_type, start = int(report["answer_h264_types"].split()[0]), float(report["watch_start"])
    span = float(sys.argv[4]) if len(sys.argv) == 5 else 30.0
    packets = []
    for line in open(log):
        fields = line.split()
        if len(fields) == 5 and int(fields[1]) == payload_type:
            sent, came = int(fields[3]) / 1e9, int(fields[4]) / 1e9
            if start <= sent < start + seconds:
                packets.append((sent - start, (came - sent) * 1000))
    if not packets:
        print(json.dumps({"packets": 0, "least_ms": None, "p95_by_10s": [], "held_ms": None}))
        return
    least = min(transit for _, transit in packets)
    by_10s = []
    for k in range(0, int(seconds), 10):
        window = sorted(transit - least for at, transit in packets if k <= at < k + 10)
        by_10s.append(round(window[int(len(window) * 0.95)]) if window else None)
    recent = [p for k, p in zip(range(0, int(seconds), 10), by_10s) if p is not None and k + 10 > seconds - span]
    held = max(0, max(recent, default=0) - NETEM_SPREAD_MS)
    print(json.dumps({"packets": len(packets), "least_ms": round(least, 1), "p95_by_10s": by_10s, "held_ms": held}))


if __name__ == "__main__":
    main()
