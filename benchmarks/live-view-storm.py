#!/usr/bin/env python3
"""Browsers that join, leave and ask for snapshots, OPS times a second for SECONDS, against camrec --http:

  live-view-storm.py HOST PORT SECONDS OPS
Half the operations are a /live WebSocket upgrade that reads its first two messages and closes, half a
GET /snapshot.jpg. Prints JSON {"joins", "snapshots", "failed"}."""
import json, os, socket, sys, threading, time, base64

host, port, seconds, ops = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
counts = {"joins": 0, "snapshots": 0, "failed": 0}
lock = threading.Lock()


def join():
    s = socket.create_connection((host, port), timeout=5)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(f"GET /live HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    data = s.recv(4096)
    ok = data.startswith(b"HTTP/1.1 101")
    if ok:
        s.recv(65536)  # the description, or part of what follows
    s.close()
    return ok


def snapshot():
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(f"GET /snapshot.jpg HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    head = s.recv(4096)
    while s.recv(65536):
        pass
    s.close()
    return head.startswith(b"HTTP/1.1 200") or head.startswith(b"HTTP/1.1 503")


def worker(index, workers):
    interval = workers / ops
    deadline = time.monotonic() + seconds
    n = index
    next_at = time.monotonic() + index * interval / workers
    while time.monotonic() < deadline:
        time.sleep(max(0, next_at - time.monotonic()))
        next_at += interval
        kind = "joins" if n % 2 == 0 else "snapshots"
        n += 1
        try:
            ok = join() if kind == "joins" else snapshot()
        except OSError:
            ok = False
        with lock:
            counts[kind if ok else "failed"] += 1


threads = [threading.Thread(target=worker, args=(i, 8)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps(counts))
