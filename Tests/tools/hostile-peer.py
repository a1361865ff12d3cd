#!/usr/bin/env python3
"""Hostile and normal TCP peers for camrec's network suites (loopback only).

  send-then-flood MODE HOST PORT FILE MAXBYTES  push FILE's first two access units, then
        MODE=filler: filler NAL units (type 12) or MODE=slices: slices with first_mb_in_slice=1,
        64 KiB each, until MAXBYTES or the peer drops us; prints the bytes sent
  send-then-reset HOST PORT FILE                push FILE whole, wait until the peer's kernel has
        it all (SIOCOUTQ 0), then reset the connection (SO_LINGER 0)
  send-damaged HOST PORT FILE                   push FILE with every slice cut to its first 4
        bytes (parameter sets intact, so it starts), then close
  never-read HOST PORT N SECONDS [PORTS]        hold N connections that never read; prints how many
        connected and how many of them the server closed without sending a byte; writes each
        one's address (HOST:PORT) to the file PORTS
  churn HOST PORT SECONDS                       connect and close, over and over
  garbage HOST PORT N SECONDS                   N connections sending random bytes
  receive HOST PORT OUT SECONDS                 read what comes into OUT for SECONDS (or until EOF)
  silent-server HOST PORT SECONDS               listen, accept every connection, never read or answer
        (a media server that hangs); prints how many connections it accepted
"""
import fcntl, os, random, socket, struct, sys, termios, time

def units(data):
    """(start-code offset, payload offset) of each NAL unit."""
    out, i = [], 0
    while True:
        j = data.find(b"\x00\x00\x01", i)
        if j < 0:
            return out
        start = j - 1 if j > 0 and data[j - 1] == 0 else j
        out.append((start, j + 3))
        i = j + 3

def first_two_access_units(data):
    """Bytes up to the start of the unit after the second picture's first slice."""
    pictures = 0
    us = units(data)
    for k, (_, p) in enumerate(us):
        t = data[p] & 0x1F
        if t in (1, 5) and data[p + 1] & 0x80:
            pictures += 1
            if pictures == 2:
                return data[: us[k + 1][0]] if k + 1 < len(us) else data
    return data

def connect(host, port):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

def send_then_flood(mode, host, port, path, maxbytes):
    data = open(path, "rb").read()
    s = connect(host, port)
    sent = 0
    head = first_two_access_units(data)
    s.sendall(head)
    sent += len(head)
    body = b"\xff" * 65536
    unit = b"\x00\x00\x00\x01\x0c" + body if mode == "filler" else b"\x00\x00\x00\x01\x41\x40" + body
    try:
        while sent < int(maxbytes):
            s.sendall(unit)
            sent += len(unit)
    except OSError:
        pass
    print(sent)

def send_then_reset(host, port, path):
    s = connect(host, port)
    s.sendall(open(path, "rb").read())
    for _ in range(1000):
        queued = struct.unpack("i", fcntl.ioctl(s.fileno(), termios.TIOCOUTQ, b"\0\0\0\0"))[0]
        if queued == 0:
            break
        time.sleep(0.01)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()

def send_damaged(host, port, path):
    data = open(path, "rb").read()
    out = bytearray()
    us = units(data) + [(len(data), len(data))]
    for (start, p), (nxt, _) in zip(us, us[1:]):
        # Slices keep their header's first bytes only: every picture is cut short.
        out += data[start:p + 4] + b"\x80" if data[p] & 0x1F in (1, 5) else data[start:nxt]
    s = connect(host, port)
    s.sendall(bytes(out))
    s.shutdown(socket.SHUT_WR)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass

def hold(host, port, n, seconds, ports=None):
    conns = []
    for _ in range(int(n)):
        try:
            c = connect(host, port)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            conns.append(c)
        except OSError:
            pass
    time.sleep(float(seconds))  # the attack lasts this long
    # A connection the server closed without sending anything reads as end of stream with no data.
    closed_empty = 0
    for c in conns:
        c.setblocking(False)
        try:
            closed_empty += c.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            pass
    print(len(conns), closed_empty)
    if ports:  # the clients' own addresses, to find them in the server's log
        open(ports, "w").write("".join(f"{c.getsockname()[0]}:{c.getsockname()[1]}\n" for c in conns))

def churn(host, port, seconds):
    end, n = time.time() + float(seconds), 0
    while time.time() < end:
        try:
            connect(host, port).close()
            n += 1
        except OSError:
            pass
    print(n)

def garbage(host, port, n, seconds):
    end, rng, sent = time.time() + float(seconds), random.Random(3), 0
    conns = []
    for _ in range(int(n)):
        try:
            conns.append(connect(host, port))
        except OSError:
            pass
    while time.time() < end and conns:
        for c in list(conns):
            try:
                c.send(rng.randbytes(4096))
                sent += 4096
            except OSError:
                conns.remove(c)
        time.sleep(0.05)
    print(sent)

def receive(host, port, out, seconds):
    s = connect(host, port)
    s.settimeout(1)
    end = time.time() + float(seconds)
    with open(out, "wb") as f:
        while time.time() < end:
            try:
                b = s.recv(1 << 16)
            except socket.timeout:
                continue
            if not b:
                break
            f.write(b)

def silent_server(host, port, seconds):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, int(port)))
    srv.listen(16)
    srv.settimeout(0.2)
    held, end = [], time.time() + float(seconds)
    while time.time() < end:
        try:
            c, _ = srv.accept()
            held.append(c)
        except socket.timeout:
            pass
    print(len(held))

if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"send-then-flood": send_then_flood, "send-then-reset": send_then_reset, "send-damaged": send_damaged,
     "never-read": hold, "churn": churn, "garbage": garbage, "receive": receive,
     "silent-server": silent_server}[cmd](*args)
