#!/usr/bin/env python3
"""Relays TCP, byte for byte, for a test path through the VM's network (Tests/lib/netem-live.sh):

  tcp-relay.py listen PORT HOST HOSTPORT SECONDS   accept on 0.0.0.0:PORT, each connection relayed to
                                                   HOST:HOSTPORT; ends after SECONDS
  tcp-relay.py stdio HOST HOSTPORT                 relay stdin/stdout (qemu's guestfwd cmd:, whose
                                                   stdin and stdout are the guest's connection) to HOST:HOSTPORT

The standard library only; a thread per direction. A connection's end (or error) on either side
ends both.
"""
import os, socket, sys, threading, time


def pump(read, write, done):
    try:
        while True:
            data = read(65536)
            if not data:
                break
            write(data)
    except OSError:
        pass
    done()


def relay(a, b):
    def close():
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
    threading.Thread(target=pump, args=(a.recv, b.sendall, close), daemon=True).start()
    pump(b.recv, a.sendall, close)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "stdio":
        peer = socket.create_connection((sys.argv[2], int(sys.argv[3])))
        peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # stdin and stdout are the same socket: take it as one.
        guest = socket.socket(fileno=os.dup(0))
        relay(guest, peer)
        return
    if len(sys.argv) != 6 or sys.argv[1] != "listen":
        sys.exit(__doc__)
    port, host, hostport, seconds = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(64)
    print(f"tcp-relay: listening on {port}", flush=True)

    def serve(client):
        try:
            peer = socket.create_connection((host, hostport), timeout=10)
            peer.settimeout(None)
        except OSError:
            client.close()
            return
        for s in (client, peer):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        relay(client, peer)
        client.close()
        peer.close()

    def accept():
        while True:
            client, _ = server.accept()
            threading.Thread(target=serve, args=(client,), daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()
    time.sleep(seconds)


if __name__ == "__main__":
    main()
