#!/usr/bin/python3
"""Which frames a V4L2 device handed out, read from the kernel's own log of VIDIOC_DQBUF.

With /sys/class/video4linux/NODE/dev_debug set to 0x0b (ioctls, their arguments, and the streaming
ones too) the kernel's V4L2 core logs every VIDIOC_DQBUF with the buffer it returns, for example
`video0: VIDIOC_DQBUF: 00:00:08.876438 index=0, type=vid-cap, request_fd=0, flags=0x00002001,
field=none, sequence=0, memory=mmap, ...`. This reads those lines of one node from a saved dmesg and
counts the frames the device delivered, the gaps in its sequence numbers (frames it never delivered;
the 32-bit wrap understood), the buffers it flagged as errored (V4L2_BUF_FLAG_ERROR), and those it
handed out filled to their last byte (bytesused = length: for a compressed format such as MJPEG, a
buffer no frame was written into, as v4l2loopback's first one). It shares no code with camrec, which
counts the same gaps as skipped_by_device= from the same sequence numbers.

--stream N reads only the Nth streaming session in the log (from its VIDIOC_STREAMON to the next),
for a log that holds several recordings one after the other.

--tail N adds `tail=K`: the camera frames after the (N+1)th-last buffer handed out, to the last one. When a
recorder let the last N (or fewer) of the buffers it was handed go, these are the most frames that can
lie after the last one it kept: those N and the gaps in the sequence before each.

Prints one line: `dequeued=N skipped=N errored=N full=N wraps=N first=S last=S` (and ` tail=K`).
Exit status: 0, 1 when the log holds no VIDIOC_DQBUF of the node (or no such session), 2 on bad input.
"""
import argparse
import re
import sys

V4L2_BUF_FLAG_ERROR = 0x40
# The kernel prints the 32-bit sequence as signed (%d): -128 is 2^32 - 128.
DQBUF = re.compile(r"(?:(\w+): )?VIDIOC_DQBUF: .*flags=0x([0-9a-fA-F]+),.* sequence=(-?\d+),")
PAYLOAD = re.compile(r"bytesused=(\d+),.* length=(\d+)")
STREAMON = re.compile(r"(?:(\w+): )?VIDIOC_STREAMON\b")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="dmesg saved while the node's dev_debug was 0x0b")
    parser.add_argument("node", help="the node's name in the log, e.g. video0 (a /dev/ path is shortened)")
    parser.add_argument("--stream", type=int, default=0, metavar="N",
                        help="only the Nth streaming session (1 = the first VIDIOC_STREAMON)")
    parser.add_argument("--tail", type=int, metavar="N",
                        help="also print tail=K, the frames after the (N+1)th-last buffer handed out")
    args = parser.parse_args()
    node = args.node.rsplit("/", 1)[-1]
    try:
        lines = open(args.log, errors="replace").read().splitlines()
    except OSError as error:
        print(f"dqbuf-sequences: cannot read {args.log}: {error}", file=sys.stderr)
        return 2
    session, sequences, errored, full = 0, [], 0, 0
    for line in lines:
        # A line without the node's name is a continuation the kernel split from it (another
        # message came between): taken as this node's, as the tests stream from one node at a time.
        start = STREAMON.search(line)
        if start and start.group(1) in (None, node):
            session += 1
            continue
        match = DQBUF.search(line)
        if not match or match.group(1) not in (None, node) or ": error" in line:
            continue
        if args.stream and session != args.stream:
            continue
        sequences.append(int(match.group(3)) % (1 << 32))
        if int(match.group(2), 16) & V4L2_BUF_FLAG_ERROR:
            errored += 1
        payload = PAYLOAD.search(line)   # single-planar buffers only (planes are on lines of their own)
        if payload and payload.group(1) == payload.group(2):
            full += 1
    if not sequences:
        print(f"dqbuf-sequences: no VIDIOC_DQBUF of {node} in {args.log}"
              + (f" (stream {args.stream} of {session})" if args.stream else ""), file=sys.stderr)
        return 1
    skipped = wraps = 0
    for previous, current in zip(sequences, sequences[1:]):
        step = (current - previous) % (1 << 32)
        if current < previous:
            wraps += 1
        skipped += step - 1 if step > 0 else 0
    tail = ""
    if args.tail is not None:
        if args.tail < 0:
            print("dqbuf-sequences: --tail takes a count of buffers, 0 or more", file=sys.stderr)
            return 2
        # With every buffer possibly let go, the frames from the first one on.
        before = sequences[-args.tail - 1] if args.tail < len(sequences) else sequences[0] - 1
        tail = f" tail={(sequences[-1] - before) % (1 << 32)}"
    print(f"dequeued={len(sequences)} skipped={skipped} errored={errored} full={full} wraps={wraps} "
          f"first={sequences[0]} last={sequences[-1]}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
