#!/usr/bin/env python3
"""How long the picture's RTP packets took through the relay that stands in for the network, read on
this host alone (one clock), for the live page on a bad network (Tests/lib/netem-live.sh):

  udp-transit.py IN_PORT OUT_PORT SECONDS LOG

Watches the loopback interface (a packet socket, so root) for SECONDS or until SIGTERM: each RTP
datagram sent to IN_PORT (camrec's media, on its way into the VM's relay) and each sent from OUT_PORT
(the same, back out of the VM on its way to Chromium), stamped by the kernel as it passed. A packet is
known by its SSRC, payload type and sequence number (SRTP leaves the RTP header in the clear). LOG gets a line for
each packet seen both ways, "SSRC PT SEQ IN_NS OUT_NS" (CLOCK_MONOTONIC), so the transit of each is what the
relay, its VM, netem and qemu's forwarding took together, measured outside camrec and outside the VM.
Prints "transit: N packets, least L ms, median M ms, most X ms" at the end, then for each stream a line
"stream SSRC/PT in N gaps G out M": the packets that went into the VM (each sequence number once), the
sequence numbers between its first and last that never went in (those the sender numbered and never
sent: outside the network under test), and how many of those that went in came back out.
"""
import select, signal, socket, struct, sys, time

SO_TIMESTAMPNS = 35
ETH_P_IP = 0x0800
PACKET_HOST = 0


def rtp_key(payload):
    # RTP (RFC 7983: first byte 128-191), not RTCP (payload types 64-95 with the marker bit: 192-223).
    if len(payload) < 12 or not 128 <= payload[0] <= 191 or 64 <= payload[1] & 0x7f <= 95:
        return None
    seq, ssrc = struct.unpack("!H", payload[2:4])[0], struct.unpack("!I", payload[8:12])[0]
    return ssrc, payload[1] & 0x7f, seq


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    in_port, out_port, seconds, log = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_IP))
    sock.bind(("lo", 0))
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    # The kernel stamps in CLOCK_REALTIME; the log is on CLOCK_MONOTONIC, as the browser's samples are.
    to_monotonic = time.monotonic_ns() - time.time_ns()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    seen_in, pairs, came_out = {}, {}, set()
    end = time.monotonic() + seconds
    while not stop and time.monotonic() < end:
        try:
            ready, _, _ = select.select([sock], [], [], 0.5)
        except InterruptedError:
            continue
        if not ready:
            continue
        data, ancillary, _, address = sock.recvmsg(65536, 64)
        # Each datagram on loopback passes twice (sent and received): the received copy alone.
        if address[2] != PACKET_HOST or len(data) < 28 or data[9] != 17:
            continue
        header = (data[0] & 0x0f) * 4
        source, destination = struct.unpack("!HH", data[header:header + 4])
        stamp = None
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds_part, nanoseconds = struct.unpack("qq", value[:16])
                stamp = seconds_part * 1_000_000_000 + nanoseconds + to_monotonic
        if stamp is None:
            continue
        key = rtp_key(data[header + 8:])
        if key is None:
            continue
        if destination == in_port:
            seen_in.setdefault(key, stamp)
        elif source == out_port and key in seen_in:
            came_out.add(key)
            pairs.setdefault(key, (seen_in[key], stamp))
    with open(log, "w") as f:
        for (ssrc, payload_type, seq), (t_in, t_out) in sorted(pairs.items(), key=lambda item: item[1][0]):
            f.write(f"{ssrc} {payload_type} {seq} {t_in} {t_out}\n")
    transits = sorted((t_out - t_in) / 1e6 for t_in, t_out in pairs.values())
    if transits:
        print(f"transit: {len(transits)} packets, least {transits[0]:.1f} ms, "
              f"median {transits[len(transits) // 2]:.1f} ms, most {transits[-1]:.1f} ms")
    else:
        print("transit: 0 packets")
    streams = {}
    for ssrc, payload_type, seq in seen_in:
        streams.setdefault((ssrc, payload_type), []).append(seq)
    for (ssrc, payload_type), seqs in sorted(streams.items()):
        # Sequence numbers wrap at 2^16: unwrapped in arrival order would need the order; a 60 s stream at
        # this bitrate sends far fewer than 2^16, so the span is taken on the circle's shorter side.
        seqs.sort()
        widest = max(((b - a) % 65536 for a, b in zip(seqs, seqs[1:] + seqs[:1])), default=0)
        span = 65536 - widest + 1 if len(seqs) > 1 else len(seqs)
        out = sum(1 for seq in seqs if (ssrc, payload_type, seq) in came_out)
        print(f"stream {ssrc}/{payload_type} in {len(seqs)} gaps {span - len(seqs)} out {out}")


if __name__ == "__main__":
    main()
