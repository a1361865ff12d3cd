#!/usr/bin/env python3
"""Relays UDP between two peers that each send to a port of their own, for WebRTC's media through the
test VM's network (Tests/lib/netem-live.sh):

  udp-relay.py PORT_A PORT_B SECONDS

Datagrams that arrive on PORT_A go out of PORT_B to B's peer, and the other way round; ends after
SECONDS or on SIGTERM. The VM is reached only through qemu's forwarded ports (restrict=on), so neither side can be
sent to first: each side's peer is whoever last sent to its port (a reply through the same forward
reaches it). A WebRTC peer checks connectivity from each of its addresses (STUN, first byte 0-3) but
sends DTLS and media (first byte 20 and up, RFC 7983) from the one pair ICE chose: once a side has
sent those, its peer is the address that sent them last, and STUN from its other addresses no longer
moves it. What arrives before the other side is known is dropped (ICE sends its checks again).
Prints the datagrams relayed and dropped each way at the end, and what the RTP headers (SRTP leaves
them in the clear) of the datagrams that came to the second port (camrec's, in Tests/lib/netem-live.sh)
said: for each SSRC and payload type the packets, and how often a packet's RTP timestamp was lower than
that of the packet before it in sequence-number order, as "rtp SSRC/PT packets N timestamps back K",
followed by "missing M late L ms": M the sequence numbers never seen (lost on the way to this relay: in
this VM's own forwarding, before netem), L how much later than its earliest the stream's packets came
here, against their RTP time at 90 kHz (the picture's clock; meaningless for sound). Neither is checked:
they tell whether a run's lag or loss arose before the network under test.
"""
import select, signal, socket, struct, sys, time


class Stream:
    def __init__(self, seq, ts, now):
        self.packets, self.back = 1, 0
        self.last_seq, self.last_ts = seq, ts
        self.seq_span = 1           # sequence numbers from the first to the newest, both in
        self.time = 0               # RTP time since the first packet, unwrapped (90 kHz ticks)
        self.earliest = self.latest = now

    def add(self, seq, ts, now):
        self.packets += 1
        ahead = (seq - self.last_seq) & 0xffff
        if not 0 < ahead < 0x8000:
            return                  # reordered (or repeated): counted, not followed
        step = (ts - self.last_ts) & 0xffffffff
        if step >= 0x80000000:
            self.back += 1
            step -= 1 << 32
        self.seq_span += ahead
        self.time += step
        self.last_seq, self.last_ts = seq, ts
        offset = now - self.time / 90000
        self.earliest, self.latest = min(self.earliest, offset), max(self.latest, offset)

    def __str__(self):
        missing = max(0, self.seq_span - self.packets)
        return (f"packets {self.packets} timestamps back {self.back} missing {missing} "
                f"late {round((self.latest - self.earliest) * 1000)} ms")


class RTPCount:
    """Per (SSRC, payload type): packets, timestamps lower than the previous sequence number's, sequence
    numbers not seen, and how late the packets came against their RTP time."""

    def __init__(self):
        self.streams = {}

    def add(self, data):
        # RTP (RFC 7983: first byte 128-191) and not RTCP (payload types 64-95 with the marker bit: 192-223).
        if len(data) < 12 or not 128 <= data[0] <= 191 or 64 <= data[1] & 0x7f <= 95:
            return
        seq, ts, ssrc = struct.unpack("!HII", data[2:12])
        key, now = (ssrc, data[1] & 0x7f), time.monotonic()
        if key in self.streams:
            self.streams[key].add(seq, ts, now)
        else:
            self.streams[key] = Stream(seq, ts, now)

    def __str__(self):
        return ", ".join(f"rtp {ssrc}/{pt} {stream}" for (ssrc, pt), stream in sorted(self.streams.items()))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    ports, seconds = (int(sys.argv[1]), int(sys.argv[2])), float(sys.argv[3])
    sides = []
    for port in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind(("0.0.0.0", port))
        sides.append(s)
    peer = [None, None]          # where each side's datagrams go back to
    media = [False, False]       # whether that address sent DTLS or media
    relayed, dropped = [0, 0], [0, 0]
    rtp = RTPCount()
    print(f"udp-relay: {ports[0]} <-> {ports[1]}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    end = time.monotonic() + seconds
    try:
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select(sides, [], [], min(left, 1))
            for s in ready:
                i = sides.index(s)
                data, sender = s.recvfrom(65536)
                if data and data[0] >= 20:
                    peer[i], media[i] = sender, True
                elif not media[i]:
                    peer[i] = sender
                other = 1 - i
                if peer[other] is None:
                    dropped[i] += 1
                    continue
                try:
                    sides[other].sendto(data, peer[other])
                    relayed[i] += 1
                    if i == 1:
                        rtp.add(data)
                except OSError:
                    dropped[i] += 1
    finally:
        print(f"udp-relay: {ports[0]}->{ports[1]} relayed {relayed[0]} dropped {dropped[0]}, "
              f"{ports[1]}->{ports[0]} relayed {relayed[1]} dropped {dropped[1]}; {rtp}", flush=True)


if __name__ == "__main__":
    main()
