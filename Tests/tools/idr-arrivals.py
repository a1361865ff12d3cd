#!/usr/bin/env python3
"""A TCP receiver that notes when each IDR arrives: an independent reader of a bare H.264 stream
(Annex B, start codes found here, no code shared with camrec).

  idr-arrivals.py HOST PORT OUT.h264 TIMES.txt

Connects once, writes every byte it receives to OUT.h264 and, for each IDR slice that begins an
access unit (NAL type 5, the first one after any other NAL), appends the wall-clock time its start
code arrived (time.time(), seconds with nanosecond digits) as a line to TIMES.txt, flushed at once.
Ends when the sender closes or on SIGTERM; exit 1 if it cannot connect within 30 s.
"""
import signal, socket, sys, time


def main():
    host, port, out_path, times_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    deadline = time.time() + 30
    while True:
        try:
            sock = socket.create_connection((host, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                print(f"idr-arrivals.py: cannot connect to {host}:{port}", file=sys.stderr)
                sys.exit(1)
            time.sleep(0.1)
    sock.settimeout(None)
    tail = b""          # the last bytes of the previous read, so a start code split across reads is found
    in_idr = False      # the NAL before was an IDR slice: the next IDR slice is the same picture's
    with open(out_path, "wb") as out, open(times_path, "a") as times:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            now = time.time()
            out.write(data)
            buf = tail + data
            i = buf.find(b"\x00\x00\x01")
            while i >= 0 and i + 3 < len(buf):
                nal_type = buf[i + 3] & 0x1F
                if nal_type == 5 and not in_idr:
                    times.write(f"{now:.6f}\n")
                    times.flush()
                in_idr = nal_type == 5
                i = buf.find(b"\x00\x00\x01", i + 3)
            # Keep the bytes a start code and its header byte could straddle (not a whole found one).
            tail = buf[-3:] if i < 0 else buf[i:]


if __name__ == "__main__":
    main()
