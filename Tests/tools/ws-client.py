#!/usr/bin/env python3
"""A minimal WebSocket client (RFC 6455, stdlib only) for camrec's /live, independent of camrec's code:

  ws-client.py record HOST PORT SECONDS OUT [USER:PASSWORD]
      upgrade, read for SECONDS; binary messages are appended to OUT (init segment + fragments = an
      MP4 file); prints JSON {"status", "text": [text messages], "binary": count}
  ws-client.py hold HOST PORT N SECONDS
      open N upgrades that never read, keep them SECONDS; prints JSON {"statuses": {code: count}}
"""
import base64, json, os, socket, struct, sys, time


def upgrade(host, port, credentials=None):
    # 30 s for the answer: a server in a VM starved by a loaded host took more than 10 (the upgrade then
    # answered, to nobody).
    s = socket.create_connection((host, port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    auth = f"Authorization: Basic {base64.b64encode(credentials.encode()).decode()}\r\n" if credentials else ""
    s.sendall(f"GET /live HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{auth}\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = s.recv(1)
        if not data:
            return s, 0
        head += data
    return s, int(head.split(b" ", 2)[1])


def record(host, port, seconds, out, credentials=None):
    s, status = upgrade(host, port, credentials)
    result = {"status": status, "text": [], "binary": 0}
    buf = b""

    def take(n):
        nonlocal buf
        while len(buf) < n:
            data = s.recv(1 << 16)
            if not data:
                raise EOFError
            buf += data
        piece, buf = buf[:n], buf[n:]
        return piece

    if status == 101:
        s.settimeout(1)
        end = time.time() + seconds
        with open(out, "wb") as f:
            try:
                while time.time() < end:
                    try:
                        head = take(2)
                    except socket.timeout:
                        continue
                    s.settimeout(10)
                    op, length = head[0] & 15, head[1] & 127
                    if length == 126:
                        length = struct.unpack(">H", take(2))[0]
                    elif length == 127:
                        length = struct.unpack(">Q", take(8))[0]
                    payload = take(length)
                    s.settimeout(1)
                    if op == 1:
                        result["text"].append(payload.decode())
                    elif op == 2:
                        f.write(payload)
                        result["binary"] += 1
                    elif op == 8:
                        break
            except EOFError:
                pass
    print(json.dumps(result))


def hold(host, port, n, seconds):
    statuses, sockets = {}, []
    for _ in range(n):
        s, status = upgrade(host, port)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        statuses[status] = statuses.get(status, 0) + 1
        sockets.append(s)
    print(json.dumps({"statuses": statuses}), flush=True)
    time.sleep(seconds)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "record":
        record(args[0], int(args[1]), float(args[2]), args[3], args[4] if len(args) > 4 else None)
    else:
        hold(args[0], int(args[1]), int(args[2]), float(args[3]))
