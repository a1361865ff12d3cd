#!/usr/bin/python3
"""A viewer of an MJPEG-over-HTTP stream (multipart/x-mixed-replace, as mjpg-streamer serves it) that
splits the parts itself, sharing no code with camrec, and reports what it got as one line of JSON.

  mjpeg-parts.py URL --parts N [--viewers K] [--fed FILE [--ring N]] [--seconds S]
  mjpeg-parts.py URL --never-read SECONDS
  mjpeg-parts.py URL --snapshot --fed FILE

Each of K viewers (one connection each, at once) reads N parts. A part must be framed as the
Content-Type's boundary says: "--BOUNDARY" lines between parts, each part's headers with
Content-Type image/jpeg and a Content-Length its bytes match, the bytes a whole JPEG (SOI ... EOI).
With --fed, FILE holds the JPEGs fed to the camera (concatenated, as ffmpeg's mjpeg muxer writes
them) and each part is looked up among them byte for byte.

Report: "framing" (ok, or the first problem), "parts" (per viewer), "fed_index" (the first viewer's
parts' places in FILE, -1 for a part that is none of them), "frames" (distinct X-Camrec-Frame
numbers over all viewers), "distinct_jpegs" (distinct part bytes over all viewers),
"frames_with_several_jpegs" (frames whose parts differ between viewers), "first_frame", "last_frame".

--ring N (with --fed): the camera is v4l2loopback with a ring of N buffers, fed FILE's JPEGs in turn
(write n holds JPEG n mod len(FILE) in buffer n mod N). v4l2loopback lets a reader that lags by N writes
dequeue the buffer the very next write goes into, and writes it while the reader still copies it (no
real camera driver writes a dequeued buffer). A part that is no fed JPEG but, byte for byte, fed JPEG
a's bytes with those of b, a write N, 2N or 3N later, over some of them (a's length: camrec took a's
bytesused) is reported in "torn" as [place, a, b] (the first viewer's) and is not a framing problem
even when it lacks a's EOI; any other part that is not a whole JPEG still is.

--snapshot GETs one JPEG (/snapshot.jpg) and reports its "fed_index" and "frame" (X-Camrec-Frame).

--never-read sends the request and reads nothing for SECONDS, then reports how long the server kept
the connection ("closed_after", null if it was still open), from the kernel's table of the server's
end (/proc/net/tcp: it leaves ESTABLISHED when the server closes it); so only for a server on this
machine.
"""
import argparse
import hashlib
import json
import socket
import sys
import threading
import time
import urllib.parse


def fed_jpegs(path):
    data = open(path, "rb").read()
    starts = []
    at = data.find(b"\xff\xd8\xff")
    while at >= 0:
        starts.append(at)
        at = data.find(b"\xff\xd8\xff", at + 3)
    return [data[a:b] for a, b in zip(starts, starts[1:] + [len(data)])]


class Stream:
    """The response body of GET URL over a plain socket, chunked transfer decoded here."""

    def __init__(self, url, timeout=30, receive_buffer=None):
        u = urllib.parse.urlsplit(url)
        self.sock = socket.socket()
        if receive_buffer:
            # Before connecting, so the window the server sees stays this small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(timeout)
        self.sock.connect((u.hostname, u.port or 80))
        path = u.path + ("?" + u.query if u.query else "")
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {u.hostname}\r\n\r\n".encode())
        self.raw = b""
        head = self._until(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self.body = b""

    def _fill(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise EOFError("the server closed the connection")
        self.raw += data

    def _until(self, marker):
        while marker not in self.raw:
            self._fill()
        head, self.raw = self.raw.split(marker, 1)
        return head

    def _take_raw(self, n):
        while len(self.raw) < n:
            self._fill()
        out, self.raw = self.raw[:n], self.raw[n:]
        return out

    def _more_body(self):
        if not self.chunked:
            if not self.raw:
                self._fill()
            self.body += self.raw
            self.raw = b""
            return
        size = int(self._until(b"\r\n").split(b";")[0], 16)
        if size == 0:
            raise EOFError("the response ended")
        self.body += self._take_raw(size)
        if self._take_raw(2) != b"\r\n":
            raise ValueError("a chunk not followed by CRLF")

    def line(self):
        while b"\r\n" not in self.body:
            self._more_body()
        out, self.body = self.body.split(b"\r\n", 1)
        return out

    def take(self, n):
        while len(self.body) < n:
            self._more_body()
        out, self.body = self.body[:n], self.body[n:]
        return out


def read_parts(url, count, seconds, keep_broken=False):
    """(parts as (frame, bytes), framing problem or None); with keep_broken, a part that is not a whole
    JPEG is kept for the caller to judge rather than ending the read."""
    parts = []
    try:
        s = Stream(url)
        if s.status != 200:
            return parts, f"HTTP status {s.status}"
        ctype = s.headers.get("content-type", "")
        if not ctype.startswith("multipart/x-mixed-replace") or "boundary=" not in ctype:
            return parts, f"Content-Type {ctype!r}"
        boundary = ctype.split("boundary=", 1)[1].split(";")[0].strip().strip('"')
        if s.line() != b"--" + boundary.encode():
            return parts, "the body does not start with the boundary"
        deadline = time.monotonic() + seconds
        while len(parts) < count and time.monotonic() < deadline:
            headers = {}
            while True:
                line = s.line()
                if not line:
                    break
                k, v = line.decode("latin-1").split(":", 1)
                headers[k.strip().lower()] = v.strip()
            if headers.get("content-type") != "image/jpeg":
                return parts, f"a part's Content-Type is {headers.get('content-type')!r}"
            jpeg = s.take(int(headers["content-length"]))
            if not whole_jpeg(jpeg) and not keep_broken:
                return parts, "a part is not a whole JPEG"
            if s.take(2) != b"\r\n" or s.line() != b"--" + boundary.encode():
                return parts, "a part is not followed by the boundary"
            parts.append((int(headers.get("x-camrec-frame", "-1")), jpeg))
        s.sock.close()
        return parts, None
    except Exception as e:
        return parts, f"{type(e).__name__}: {e}"


def whole_jpeg(jpeg):
    return jpeg.startswith(b"\xff\xd8") and jpeg.rstrip(b"\x00").endswith(b"\xff\xd9")


def torn_from(part, fed, ring, laps=3):
    """(a, b) when `part` is fed JPEG a with some of its bytes those of b, a write ring*k later (k <= laps)
    in the same buffer, at the same places; else None."""
    for a, first in enumerate(fed):
        if len(first) != len(part) or first == part:
            continue
        for k in range(1, laps + 1):
            b = (a + ring * k) % len(fed)
            later = fed[b]
            if all(x == y or (i < len(later) and x == later[i]) for i, (x, y) in enumerate(zip(part, first))):
                return a, b
    return None


def server_state(server_port, client_port):
    """The server's end of a loopback connection in /proc/net/tcp: its state (hex), None if gone."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if int(f[1].rsplit(":", 1)[1], 16) == server_port and int(f[2].rsplit(":", 1)[1], 16) == client_port:
                return f[3]
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url")
    p.add_argument("--parts", type=int, default=10)
    p.add_argument("--viewers", type=int, default=1)
    p.add_argument("--fed")
    p.add_argument("--ring", type=int)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--never-read", type=float)
    p.add_argument("--snapshot", action="store_true")
    a = p.parse_args()
    if a.snapshot:
        s = Stream(a.url)
        jpeg = s.take(int(s.headers["content-length"])) if "content-length" in s.headers else b""
        index = {hashlib.sha1(j).hexdigest(): n for n, j in enumerate(fed_jpegs(a.fed))} if a.fed else {}
        print(json.dumps({"status": s.status, "fed_index": index.get(hashlib.sha1(jpeg).hexdigest(), -1),
                          "frame": int(s.headers.get("x-camrec-frame", "-1"))}))
        return 0
    if a.never_read is not None:
        s = Stream(a.url, receive_buffer=4096)
        start = time.monotonic()
        closed = None
        # What never reading leaves unread keeps the server's FIN from arriving here, so the kernel's
        # own table says when the server closed its end (on this machine only): it leaves ESTABLISHED.
        server = s.sock.getpeername()[1]
        mine = s.sock.getsockname()[1]
        while time.monotonic() - start < a.never_read and closed is None:
            time.sleep(0.25)
            state = server_state(server, mine)
            if state != "01":
                closed = round(time.monotonic() - start, 1)
        print(json.dumps({"status": s.status, "closed_after": closed}))
        return 0
    results = [None] * a.viewers

    def view(i):
        results[i] = read_parts(a.url, a.parts, a.seconds, keep_broken=bool(a.fed and a.ring))

    threads = [threading.Thread(target=view, args=(i,)) for i in range(a.viewers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    problems = [r[1] for r in results if r[1]]
    by_frame = {}
    for parts, _ in results:
        for frame, jpeg in parts:
            by_frame.setdefault(frame, set()).add(hashlib.sha1(jpeg).hexdigest())
    report = {
        "framing": problems[0] if problems else "ok",
        "parts": [len(r[0]) for r in results],
        "frames": len(by_frame),
        "distinct_jpegs": len(set().union(*by_frame.values())) if by_frame else 0,
        "frames_with_several_jpegs": sum(1 for v in by_frame.values() if len(v) > 1),
        "first_frame": min(by_frame) if by_frame else None,
        "last_frame": max(by_frame) if by_frame else None,
    }
    if a.fed:
        fed = fed_jpegs(a.fed)
        index = {hashlib.sha1(j).hexdigest(): n for n, j in enumerate(fed)}
        report["fed_index"] = [index.get(hashlib.sha1(j).hexdigest(), -1) for _, j in results[0][0]]
    if a.fed and a.ring:
        torn = []
        for parts, _ in results:
            for place, (_, jpeg) in enumerate(parts):
                if hashlib.sha1(jpeg).hexdigest() in index:
                    continue
                pair = torn_from(jpeg, fed, a.ring)
                if pair and parts is results[0][0]:
                    torn.append([place, *pair])
                if not pair and not whole_jpeg(jpeg) and report["framing"] == "ok":
                    report["framing"] = "a part is not a whole JPEG"
        report["torn"] = torn
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
