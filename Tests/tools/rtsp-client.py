#!/usr/bin/env python3
"""A small RTSP 1.0 client for the rtsp suite, written from RFC 2326, RFC 6184 (H.264), RFC 7798 (H.265)
and RFC 3550 (RTP/RTCP); it shares no code with camrec and ignores the SDP's parameter sets, so what it
decodes comes from the stream alone.

  play URL SECONDS OUT JSON [--user U --password P] [--basic]
      OPTIONS, DESCRIBE, SETUP (RTP over TCP, interleaved 0-1), PLAY; reads for SECONDS, sending
      GET_PARAMETER and SET_PARAMETER keep-alives; writes the NAL units as Annex B to OUT and a report
      to JSON: Public, the Session header, RTP-Info against the first packet, sequence gaps, the NAL
      types before the first IDR, seconds from PLAY to the first whole IDR picture, sender reports.
  stall URL SECONDS
      SETUP and PLAY over TCP, then reads nothing for SECONDS; prints "closed" when camrec has cut the
      connection by then (EOF or reset), else "open".
  slow URL SECONDS RATE JSON
      SETUP and PLAY over TCP with a 64 KiB receive buffer, then reads at most RATE bytes a second for
      SECONDS, sending a GET_PARAMETER keep-alive every 2 s. Every byte must belong to a whole response or
      interleaved frame (RTP version 2 on channel 0, RTCP version 2 on channel 1): JSON gets the frames,
      the bytes that were not (and the first of them), the keep-alives' statuses, the gaps (in sequence numbers, or over one and
      a half frames of RTP time at 30 fps), and how many were not followed by a parameter set or IDR (a
      server skips a slow client ahead to an IDR), and whether the server closed the connection.
  silent URL SECONDS JSON
      SETUP over UDP (two ports of its own) and PLAY, then sends nothing (no request, no RTCP) for up to
      SECONDS, reading the RTP that arrives and watching the connection. JSON gets the seconds from PLAY's
      answer to the server closing the connection (null if it did not), the datagrams before that, and
      those that came from 1 to 3 s after it (the session should have ended with it).
  raw HOST PORT FILE
      Sends FILE's bytes; prints the response's status code (or "none") and "closed" or "open" (3 s later).
  auth URL USER PASSWORD
      DESCRIBE without credentials, then with USER/PASSWORD (Digest) on the same connection; prints the
      two status codes and whether the two 401s (if both) carry the same headers but the nonce and CSeq.
  sessions URL N
      N connections, each SETUP over TCP; prints each SETUP's status code.
  rr URL udp|tcp LOST FRACTION JITTER METRICS JSON
      SETUP over UDP (two ports of its own) or TCP (interleaved 0-1) and PLAY; then sends to the
      server's RTCP port or channel: an RR about the server's SSRC (Transport's ssrc) with 1 lost,
      fraction 1/256, jitter 1; three things that are not RTCP (junk, an RR cut short, version 0); and
      an RR with fraction FRACTION/256, LOST lost in all and jitter JITTER (RFC 3550 §6.4.2). Reads the
      METRICS URL (camrec's /metrics) while the session lasts and writes to JSON its session id, what it
      sent, and the metrics lines naming its session.
  churn HOST PORT N
      Opens and drops N connections, 8 at a time: in turn one that sends nothing, one that sends half
      a request head, one that sends a whole OPTIONS and closes without reading, one cut with a reset
      (SO_LINGER 0); prints the connections made.
  multicast URL SECONDS
      SETUP asking for multicast, PLAY, joins the group and port the answer names and reads RTP for
      SECONDS; prints the answer's destination, port and ttl, the packets, and how many sequence numbers
      came more than once (a server that sent each packet once per client would repeat them).
"""
import base64
import hashlib
import json
import socket
import struct
import sys
import time
from urllib.parse import urlparse


class Connection:
    def __init__(self, url, user=None, password=None, basic=False):
        self.url = url
        parsed = urlparse(url)
        self.sock = socket.create_connection((parsed.hostname, parsed.port or 554), timeout=10)
        self.cseq = 0
        self.buffer = b""
        self.user, self.password, self.basic = user, password, basic
        self.challenge = None
        self.session = None
        self.interleaved = []

    def authorization(self, method, uri):
        if self.user is None or self.challenge is None:
            return None
        if self.basic:
            return "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        fields = dict(part.strip().split("=", 1) for part in self.challenge[len("Digest "):].split(","))
        realm, nonce = fields["realm"].strip('"'), fields["nonce"].strip('"')
        ha1 = hashlib.md5(f"{self.user}:{realm}:{self.password}".encode()).hexdigest()
        ha2 = hashlib.md5(f"{method}:{uri}".encode()).hexdigest()
        response = hashlib.md5(f"{ha1}:{nonce}:{ha2}".encode()).hexdigest()
        return f'Digest username="{self.user}", realm="{realm}", nonce="{nonce}", uri="{uri}", response="{response}"'

    def send(self, method, uri, headers=(), body=b""):
        self.cseq += 1
        lines = [f"{method} {uri} RTSP/1.0", f"CSeq: {self.cseq}", "User-Agent: rtsp-suite"]
        auth = self.authorization(method, uri)
        if auth:
            lines.append(f"Authorization: {auth}")
        if self.session:
            lines.append(f"Session: {self.session}")
        lines += list(headers)
        if body:
            lines.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        return self.cseq

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("closed")
        self.buffer += data

    def next_message(self):
        """('response', status, headers, body) or ('interleaved', channel, payload)."""
        while True:
            if self.buffer[:1] == b"$":
                if len(self.buffer) >= 4:
                    channel, length = self.buffer[1], struct.unpack(">H", self.buffer[2:4])[0]
                    if len(self.buffer) >= 4 + length:
                        payload = self.buffer[4:4 + length]
                        self.buffer = self.buffer[4 + length:]
                        return ("interleaved", channel, payload)
            elif b"\r\n\r\n" in self.buffer:
                head, rest = self.buffer.split(b"\r\n\r\n", 1)
                lines = head.decode(errors="replace").split("\r\n")
                status = int(lines[0].split()[1])
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers.setdefault(name.strip().lower(), []).append(value.strip())
                length = int(headers.get("content-length", ["0"])[0])
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    return ("response", status, headers, rest[:length])
            self.fill()

    def request(self, method, uri, headers=(), body=b""):
        cseq = self.send(method, uri, headers, body)
        while True:
            message = self.next_message()
            if message[0] == "interleaved":
                self.interleaved.append(message)
                continue
            _, status, got, content = message
            if got.get("cseq", [""])[0] != str(cseq):
                raise ValueError(f"CSeq {got.get('cseq')} for request {cseq}")
            if status == 401 and self.user is not None and self.challenge is None:
                offers = got.get("www-authenticate", [])
                self.challenge = next((o for o in offers if o.startswith("Digest")), offers[0] if offers else None)
                return self.request(method, uri, headers, body)
            return status, got, content


def setup_and_play(connection):
    status, headers, sdp = connection.request("DESCRIBE", connection.url, ["Accept: application/sdp"])
    if status != 200:
        raise SystemExit(f"DESCRIBE: {status}")
    base = headers.get("content-base", [connection.url])[0]
    control = next((line[len("a=control:"):] for line in sdp.decode().splitlines()
                    if line.startswith("a=control:") and line != "a=control:*"), "")
    track = control if control.startswith("rtsp://") else base.rstrip("/") + "/" + control
    status, headers, _ = connection.request("SETUP", track, ["Transport: RTP/AVP/TCP;unicast;interleaved=0-1"])
    if status != 200:
        raise SystemExit(f"SETUP: {status}")
    session_header = headers["session"][0]
    connection.session = session_header.split(";")[0]
    status, play_headers, _ = connection.request("PLAY", base, ["Range: npt=0.000-"])
    if status != 200:
        raise SystemExit(f"PLAY: {status}")
    return sdp.decode(), session_header, play_headers


def play(url, seconds, out_path, json_path, user=None, password=None, basic=False):
    c = Connection(url, user, password, basic)
    status, headers, _ = c.request("OPTIONS", url)
    public = headers.get("public", [""])[0]
    sdp, session_header, play_headers = setup_and_play(c)
    played = time.time()
    codec = "h265" if "H265/90000" in sdp else "h264"
    rtp_info = play_headers.get("rtp-info", [""])[0]
    info = dict(p.split("=", 1) for p in rtp_info.split(";")[1:] if "=" in p)
    report = {"public": public, "session": session_header, "rtp_info": rtp_info, "codec": codec,
              "first_seq_matches": None, "first_rtptime_delta": None, "sequence_gaps": 0, "packets": 0,
              "types_before_first_idr": None, "seconds_to_first_idr": None, "sender_reports": 0,
              "sr_clock_error_ms": None, "keepalive_statuses": [], "nal_units": 0}
    out = open(out_path, "wb")
    c.sock.settimeout(0.5)
    last_seq = None
    pending = None
    types_seen = []
    idr_done = False
    current_au_has_idr = False
    next_keepalive = played + 2
    deadline = played + seconds
    sr_errors = []

    def nal_type(header):
        return header[0] & 0x1F if codec == "h264" else (header[0] >> 1) & 0x3F

    def is_idr(t):
        return t == 5 if codec == "h264" else t in (19, 20, 21)

    def emit(unit):
        nonlocal current_au_has_idr
        out.write(b"\0\0\0\1" + unit)
        report["nal_units"] += 1
        t = nal_type(unit)
        if not idr_done:
            if is_idr(t):
                current_au_has_idr = True
            elif report["types_before_first_idr"] is None:
                types_seen.append(t)

    def handle(channel, payload):
        nonlocal last_seq, pending, idr_done, current_au_has_idr
        if channel == 1:
            if len(payload) >= 28 and payload[1] == 200:
                report["sender_reports"] += 1
                ntp_s, ntp_f = struct.unpack(">II", payload[8:16])
                sr_errors.append(abs((ntp_s - 2208988800 + ntp_f / 2**32) - time.time()) * 1000)
            return
        if channel != 0 or len(payload) < 12:
            return
        seq = struct.unpack(">H", payload[2:4])[0]
        ts = struct.unpack(">I", payload[4:8])[0]
        marker = payload[1] & 0x80
        report["packets"] += 1
        if last_seq is None:
            report["first_seq_matches"] = str(seq) == info.get("seq")
            if "rtptime" in info:
                report["first_rtptime_delta"] = ((ts - int(info["rtptime"])) & 0xFFFFFFFF) / 90000.0
        elif seq != (last_seq + 1) & 0xFFFF:
            report["sequence_gaps"] += 1
        last_seq = seq
        data = payload[12:]
        t = nal_type(data)
        if (codec == "h264" and t == 28) or (codec == "h265" and t == 49):
            fu = data[1] if codec == "h264" else data[2]
            body = data[2:] if codec == "h264" else data[3:]
            if fu & 0x80:
                pending = bytes([(data[0] & 0xE0) | (fu & 0x1F)]) if codec == "h264" else \
                    bytes([(data[0] & 0x81) | ((fu & 0x3F) << 1), data[1]])
            if pending is not None:
                pending += body
                if fu & 0x40:
                    emit(pending)
                    pending = None
        else:
            emit(data)
        if marker and not idr_done:
            if current_au_has_idr:
                idr_done = True
                report["seconds_to_first_idr"] = round(time.time() - played, 3)
                report["types_before_first_idr"] = types_seen
            else:
                types_seen.clear()

    for message in c.interleaved:
        handle(message[1], message[2])
    c.interleaved = []
    while time.time() < deadline:
        if time.time() >= next_keepalive:
            next_keepalive += 2
            for method in ("GET_PARAMETER", "SET_PARAMETER"):
                c.send(method, url)
                while True:
                    try:
                        m = c.next_message()
                    except socket.timeout:
                        continue
                    if m[0] == "interleaved":
                        handle(m[1], m[2])
                    else:
                        report["keepalive_statuses"].append(m[1])
                        break
        try:
            m = c.next_message()
        except socket.timeout:
            continue
        except EOFError:
            report["closed_early"] = True
            break
        if m[0] == "interleaved":
            handle(m[1], m[2])
    c.sock.settimeout(5)
    try:
        c.session = session_header.split(";")[0]
        cseq = c.send("TEARDOWN", url)
        while True:
            m = c.next_message()
            if m[0] == "response":
                report["teardown_status"] = m[1]
                break
    except Exception as e:  # noqa: BLE001
        report["teardown_status"] = str(e)
    out.close()
    report["sr_clock_error_ms"] = round(max(sr_errors), 1) if sr_errors else None
    json.dump(report, open(json_path, "w"), indent=1)


def stall(url, seconds):
    parsed = urlparse(url)
    c = Connection(url)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    setup_and_play(c)
    time.sleep(seconds)
    c.sock.settimeout(0.2)
    state = "open"
    try:
        while True:
            if not c.sock.recv(1 << 20):
                state = "closed"
                break
    except socket.timeout:
        state = "open"
    except (ConnectionResetError, BrokenPipeError):
        state = "closed"
    print(state)


def udp_pair():
    """An RTP socket on an even port and its RTCP socket on the next, both on loopback."""
    while True:
        rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rtp.bind(("127.0.0.1", 0))
        if rtp.getsockname()[1] % 2:
            rtp.close()
            continue
        rtcp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            rtcp.bind(("127.0.0.1", rtp.getsockname()[1] + 1))
            return rtp, rtcp
        except OSError:
            rtp.close()
            rtcp.close()


def silent(url, seconds, json_path):
    import select
    c = Connection(url)
    status, headers, _ = c.request("DESCRIBE", url, ["Accept: application/sdp"])
    base = headers.get("content-base", [url])[0]
    rtp, rtcp = udp_pair()
    offer = f"RTP/AVP;unicast;client_port={rtp.getsockname()[1]}-{rtcp.getsockname()[1]}"
    status, headers, _ = c.request("SETUP", base.rstrip("/") + "/trackID=0", [f"Transport: {offer}"])
    c.session = headers["session"][0].split(";")[0]
    c.request("PLAY", base)
    played = time.monotonic()
    closed_at, before, after = None, 0, 0
    c.sock.setblocking(False)
    rtp.setblocking(False)
    while True:
        now = time.monotonic()
        if closed_at is None and now - played > seconds or closed_at is not None and now - closed_at > 3:
            break
        ready, _, _ = select.select([c.sock, rtp], [], [], 0.1)
        if c.sock in ready and closed_at is None:
            try:
                if not c.sock.recv(65536):
                    closed_at = time.monotonic()
            except (ConnectionResetError, BrokenPipeError):
                closed_at = time.monotonic()
            except BlockingIOError:
                pass
        if rtp in ready:
            try:
                while True:
                    rtp.recv(65536)
                    if closed_at is None:
                        before += 1
                    elif time.monotonic() - closed_at >= 1:
                        after += 1
            except BlockingIOError:
                pass
    json.dump({"closed_after": None if closed_at is None else round(closed_at - played, 3),
               "datagrams_before": before, "datagrams_after_close": after}, open(json_path, "w"))


def slow(url, seconds, rate, json_path):
    c = Connection(url)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    sdp, _, _ = setup_and_play(c)
    codec = "h265" if "H265/90000" in sdp else "h264"
    report = {"frames": len(c.interleaved), "malformed": 0, "first_malformed": None, "keepalive_statuses": [],
              "gaps": 0, "gaps_not_at_idr": 0, "bytes": 0}
    last_seq, last_ts, after_gap = None, 0, False
    frame_ticks = 90000 // 30   # the suite's 30 fps
    start_types = (7, 8, 5) if codec == "h264" else (32, 33, 34, 19, 20, 21)

    def frame(channel, payload):
        nonlocal last_seq, last_ts, after_gap
        report["frames"] += 1
        if channel == 1:
            if len(payload) < 8 or payload[0] >> 6 != 2 or not 200 <= payload[1] <= 204:
                report["malformed"] += 1
                report["first_malformed"] = report["first_malformed"] or f"RTCP {payload[:8].hex()}"
            return
        if channel != 0 or len(payload) < 13 or payload[0] >> 6 != 2:
            report["malformed"] += 1
            report["first_malformed"] = report["first_malformed"] or f"channel {channel}: {payload[:13].hex()}"
            return
        # camrec numbers a session's packets without a gap when it skips; the skip shows in the RTP time.
        seq, ts = struct.unpack(">HI", payload[2:8])
        if last_seq is not None and (seq != (last_seq + 1) & 0xFFFF or (ts - last_ts) & 0xFFFFFFFF > frame_ticks * 3 // 2):
            report["gaps"] += 1
            after_gap = True
        last_seq, last_ts = seq, ts
        if after_gap:
            data = payload[12:]
            t = data[0] & 0x1F if codec == "h264" else (data[0] >> 1) & 0x3F
            if codec == "h264" and t == 28:
                t = data[1] & 0x1F
            elif codec == "h265" and t == 49:
                t = data[2] & 0x3F
            if t not in start_types:
                report["gaps_not_at_idr"] += 1
            after_gap = False

    for message in c.interleaved:
        frame(message[1], message[2])
    c.sock.settimeout(0.05)
    began = time.time()
    next_keepalive = began + 2
    while time.time() < began + seconds:
        if time.time() >= next_keepalive:
            next_keepalive += 2
            c.send("GET_PARAMETER", url)
        allowed = int(rate * (time.time() - began)) - report["bytes"]
        if allowed <= 0:
            time.sleep(0.01)
            continue
        try:
            data = c.sock.recv(min(allowed, 4096))
        except socket.timeout:
            continue
        except ConnectionResetError:
            data = b""
        if not data:
            report["closed_early"] = True
            break
        report["bytes"] += len(data)
        c.buffer += data
        while c.buffer:
            if c.buffer[:1] == b"$":
                if len(c.buffer) < 4:
                    break
                length = struct.unpack(">H", c.buffer[2:4])[0]
                if len(c.buffer) < 4 + length:
                    break
                frame(c.buffer[1], c.buffer[4:4 + length])
                c.buffer = c.buffer[4 + length:]
            elif c.buffer.startswith(b"RTSP/1.0 "[:len(c.buffer)]):
                if b"\r\n\r\n" not in c.buffer:
                    break
                head, c.buffer = c.buffer.split(b"\r\n\r\n", 1)
                report["keepalive_statuses"].append(int(head.split()[1]))
            else:
                report["malformed"] += 1
                report["first_malformed"] = report["first_malformed"] or f"bytes {c.buffer[:16].hex()}"
                c.buffer = c.buffer[1:]
    c.sock.close()
    json.dump(report, open(json_path, "w"), indent=1)


def raw(host, port, path):
    sock = socket.create_connection((host, int(port)), timeout=5)
    try:
        sock.sendall(open(path, "rb").read())
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = b""
    state = "open"
    sock.settimeout(3)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                state = "closed"
                break
            data += chunk
    except socket.timeout:
        state = "open"
    except ConnectionResetError:
        state = "closed"
    first = data.split(b"\r\n", 1)[0].split()
    print(first[1].decode() if len(first) > 1 else "none", state)


def auth(url, user, password):
    c = Connection(url)
    c.send("DESCRIBE", url)
    none = c.next_message()
    c.user, c.password = user, password
    c.challenge = next(o for o in none[2].get("www-authenticate", []) if o.startswith("Digest"))
    c.send("DESCRIBE", url)
    given = c.next_message()
    same = none[1] == given[1] == 401 and {k: v for k, v in none[2].items() if k != "cseq"} == \
        {k: v for k, v in given[2].items() if k != "cseq"} and none[3] == given[3]
    print(none[1], given[1], "same" if same else "different")


def sessions(url, n):
    held = []
    statuses = []
    for _ in range(n):
        c = Connection(url)
        status, headers, sdp = c.request("DESCRIBE", url)
        status, _, _ = c.request("SETUP", url.rstrip("/") + "/trackID=0", ["Transport: RTP/AVP/TCP;unicast;interleaved=0-1"])
        statuses.append(str(status))
        held.append(c)
    print(" ".join(statuses))


def receiver_report(ssrc, fraction, lost, jitter):
    """An RR (PT 201) from SSRC 0x5EED with one report block about SSRC (RFC 3550 §6.4.2)."""
    block = struct.pack(">IB", ssrc, fraction) + (lost & 0xFFFFFF).to_bytes(3, "big") + struct.pack(">IIII", 1000, jitter, 0, 0)
    return struct.pack(">BBHI", 0x81, 201, 7, 0x5EED) + block


def rr(url, transport, lost, fraction, jitter, metrics_url, json_path):
    import urllib.request
    c = Connection(url)
    status, headers, sdp = c.request("DESCRIBE", url, ["Accept: application/sdp"])
    base = headers.get("content-base", [url])[0]
    if transport == "udp":
        rtp, rtcp = udp_pair()
        offer = f"RTP/AVP;unicast;client_port={rtp.getsockname()[1]}-{rtcp.getsockname()[1]}"
    else:
        offer = "RTP/AVP/TCP;unicast;interleaved=0-1"
    status, headers, _ = c.request("SETUP", base.rstrip("/") + "/trackID=0", [f"Transport: {offer}"])
    answer = dict(p.split("=", 1) for p in headers["transport"][0].split(";") if "=" in p)
    ssrc = int(answer["ssrc"], 16)
    c.session = headers["session"][0].split(";")[0]
    c.request("PLAY", base)
    first = receiver_report(ssrc, 1, 1, 1)
    junk = [b"\x16\x03\x01\x00\x05hello", receiver_report(ssrc, 9, 9, 9)[:20], b"\x00\xc9\x00\x00"]
    last = receiver_report(ssrc, fraction, lost, jitter)
    if transport == "udp":
        server = ("127.0.0.1", int(answer["server_port"].split("-")[1]))
        send = lambda data: rtcp.sendto(data, server)  # noqa: E731
    else:
        send = lambda data: c.sock.sendall(b"$\x01" + struct.pack(">H", len(data)) + data)  # noqa: E731
    time.sleep(1)
    for data in [first] + junk + [last]:
        send(data)
        time.sleep(0.05)
    time.sleep(0.5)
    metrics = urllib.request.urlopen(metrics_url, timeout=10).read().decode()
    mine = [line for line in metrics.splitlines() if f'session="{c.session}"' in line]
    json.dump({"session": c.session, "ssrc": ssrc, "lost": lost, "fraction": fraction / 256, "jitter_seconds": jitter / 90000,
               "reports": 2, "not_rtcp": len(junk), "metrics": mine}, open(json_path, "w"), indent=1)
    c.sock.settimeout(5)
    c.buffer = b""
    c.send("TEARDOWN", url)


def churn(host, port, n):
    made = 0
    kinds = [b"", b"OPTIONS * RTSP/1.0\r\nCSe", b"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n", None]
    while made < n:
        wave = []
        for _ in range(min(8, n - made)):
            sock = socket.create_connection((host, port), timeout=5)
            kind = kinds[made % 4]
            if kind is None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif kind:
                sock.sendall(kind)
            wave.append(sock)
            made += 1
        for sock in wave:
            sock.close()
    print(made)


def multicast(url, seconds):
    c = Connection(url)
    status, headers, sdp = c.request("DESCRIBE", url, ["Accept: application/sdp"])
    base = headers.get("content-base", [url])[0]
    status, headers, _ = c.request("SETUP", base.rstrip("/") + "/trackID=0", ["Transport: RTP/AVP;multicast"])
    if status != 200:
        print(f"SETUP {status}")
        return
    answer = dict(p.split("=", 1) for p in headers["transport"][0].split(";") if "=" in p)
    group, port = answer.get("destination"), int(answer.get("port", "0-0").split("-")[0])
    c.session = headers["session"][0].split(";")[0]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((group, port))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton("0.0.0.0"))
    c.request("PLAY", base)
    sock.settimeout(0.5)
    seen, repeated, packets = set(), 0, 0
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        if len(data) < 12:
            continue
        packets += 1
        seq = struct.unpack(">H", data[2:4])[0]
        if seq in seen:
            repeated += 1
        seen.add(seq)
    print(f"destination={group} port={answer.get('port')} ttl={answer.get('ttl')} packets={packets} repeated={repeated}")


def main():
    args = sys.argv[1:]
    options = {}
    for name in ("--user", "--password"):
        if name in args:
            i = args.index(name)
            options[name[2:]] = args[i + 1]
            del args[i:i + 2]
    basic = "--basic" in args
    if basic:
        args.remove("--basic")
    if args[:1] == ["play"] and len(args) == 5:
        play(args[1], float(args[2]), args[3], args[4], options.get("user"), options.get("password"), basic)
    elif args[:1] == ["stall"] and len(args) == 3:
        stall(args[1], float(args[2]))
    elif args[:1] == ["slow"] and len(args) == 5:
        slow(args[1], float(args[2]), float(args[3]), args[4])
    elif args[:1] == ["silent"] and len(args) == 4:
        silent(args[1], float(args[2]), args[3])
    elif args[:1] == ["raw"] and len(args) == 4:
        raw(args[1], args[2], args[3])
    elif args[:1] == ["auth"] and len(args) == 4:
        auth(args[1], args[2], args[3])
    elif args[:1] == ["sessions"] and len(args) == 3:
        sessions(args[1], int(args[2]))
    elif args[:1] == ["rr"] and len(args) == 8:
        rr(args[1], args[2], int(args[3]), int(args[4]), int(args[5]), args[6], args[7])
    elif args[:1] == ["churn"] and len(args) == 4:
        churn(args[1], int(args[2]), int(args[3]))
    elif args[:1] == ["multicast"] and len(args) == 3:
        multicast(args[1], float(args[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
