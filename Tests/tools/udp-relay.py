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
Prints the datagrams relayed and dropped each way at the end.
"""
import select, signal, socket, sys, time


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
                except OSError:
                    dropped[i] += 1
    finally:
        print(f"udp-relay: {ports[0]}->{ports[1]} relayed {relayed[0]} dropped {dropped[0]}, "
              f"{ports[1]}->{ports[0]} relayed {relayed[1]} dropped {dropped[1]}", flush=True)


if __name__ == "__main__":
    main()
