#!/usr/bin/python3
"""A camera for the tests whose frame times are known outside the recorder: feeds a v4l2loopback
node numbered pictures (Tests/tools/picture_numbers.py draws and reads them) and logs when each went in.

  loopback-feeder.py DEVICE LOG --size WxH --fps N [--seconds S] [--mjpeg FILE] [--pause FILE] [--steady]
  loopback-feeder.py DEVICE LOG --size WxH --fps N --stream FILE --codec h264|hevc [--params-once]
                     [--sent FILE] [--hold FILE] [--pause-at N FILE] [--signal-at N PIDFILE] [--steady]
  loopback-feeder.py --make FILE --size WxH --frames N

The first form sets the node's output format (YUYV, or MJPG with --mjpeg) and writes one picture per
write() call, N a second on CLOCK_MONOTONIC's schedule (--steady: as below), until S seconds are up or
it is killed. Pictures
are numbered 0, 1, 2, ... (modulo 4096); with --mjpeg the JPEGs of FILE (concatenated, as ffmpeg's
mjpeg muxer writes them) are sent in turn, the Kth carrying the number K (--make wrote them so).
--pause FILE: while FILE exists, write nothing (at most 120 s); on seeing it, write the number of the
last picture written to FILE.at, so a test knows the newest picture a reader can have until FILE is gone.
LOG gets one line per picture, flushed at once:

  frame NUMBER BEFORE AFTER

BEFORE and AFTER: CLOCK_MONOTONIC (ns) read just before and just after the write(). v4l2loopback stamps
the buffer with CLOCK_MONOTONIC inside that call, so a recorder that keeps the driver's timestamps
records each picture at a time between the two.

With --stream the node is a camera that encodes: the format is H264 or HEVC ("with start codes") and
each write() is one access unit of FILE, an Annex B stream whose every access unit begins with an AUD
(libx264's and libx265's aud=1), split there; the stream is sent once, then the feeder waits for S to end.
--params-once leaves the parameter sets (SPS, PPS; VPS) out of every access unit but the first, as cameras
that send them only at the start of streaming do. --sent appends every access unit exactly as written
(the camera's stream, for comparing a recording with). --hold: after the first access unit, wait until
FILE exists before the next (so a reader that opened the node gets the first, the only one with the
parameter sets: v4l2loopback hands a reader the oldest of the last three written). --pause-at N FILE:
after access unit N, write nothing until FILE exists (at most 120 s), so a reader's newest picture is N
for as long as a test needs (then the schedule starts afresh, as after --hold). --signal-at N PIDFILE:
right after writing access unit N, send SIGUSR1 to the process whose number PIDFILE holds and write N to
PIDFILE.sent ("none" if PIDFILE held no process), so the signal goes with frame N whatever else the
emulated CPU is doing (a test's own loop, waiting for frame N, was seen to send it 3 frames late). --steady: a write that
comes late moves the schedule on instead of catching up, so writes are never closer than 1/N s (a feeder
catching up after a stall of the emulated CPU writes a burst, which laps v4l2loopback's ring: it overwrites
buffers a reader still holds). LOG gets "frame N BEFORE AFTER" per access unit as above.

The second form writes N numbered YUYV pictures to FILE (for ffmpeg to make the JPEGs of).
"""
import argparse
import fcntl
import os
import signal
import struct
import sys
import time

from picture_numbers import draw_yuyv

V4L2_BUF_TYPE_VIDEO_OUTPUT = 2
V4L2_FIELD_NONE = 1
VIDIOC_S_FMT = 0xC0D05605   # _IOWR('V', 5, struct v4l2_format), 208 bytes on 64-bit Linux


def fourcc(code):
    return struct.unpack("<I", code.encode())[0]


def set_output_format(fd, width, height, pixelformat, bytesperline, sizeimage):
    """VIDIOC_S_FMT on the output side: a u32 type, padding, then struct v4l2_pix_format."""
    pix = struct.pack("<12I", width, height, pixelformat, V4L2_FIELD_NONE, bytesperline, sizeimage,
                      0, 0, 0, 0, 0, 0)
    fmt = bytearray(struct.pack("<I4x", V4L2_BUF_TYPE_VIDEO_OUTPUT) + pix)
    fmt += bytes(208 - len(fmt))
    fcntl.ioctl(fd, VIDIOC_S_FMT, fmt)


def jpegs(path):
    """The JPEGs of a concatenated MJPEG file, split at each start-of-image marker."""
    data = open(path, "rb").read()
    starts = []
    at = data.find(b"\xff\xd8\xff")
    while at >= 0:
        starts.append(at)
        at = data.find(b"\xff\xd8\xff", at + 3)
    return [data[a:b] for a, b in zip(starts, starts[1:] + [len(data)])]


def nal_type(unit, codec):
    return unit[0] & 0x1F if codec == "h264" else (unit[0] >> 1) & 0x3F


def access_units(path, codec):
    """The access units of an Annex B file, each a list of NAL units (without start codes), split at AUDs."""
    data = open(path, "rb").read()
    starts = []
    at = data.find(b"\x00\x00\x01")
    while at >= 0:
        starts.append(at + 3)
        at = data.find(b"\x00\x00\x01", at + 3)
    units = []
    for a, b in zip(starts, starts[1:] + [len(data) + 3]):
        unit = data[a:b - 3]
        while unit.endswith(b"\x00"):   # the zero of the next 4-byte start code
            unit = unit[:-1]
        units.append(unit)
    aud = 9 if codec == "h264" else 35
    groups = []
    for unit in units:
        if nal_type(unit, codec) == aud or not groups:
            groups.append([])
        groups[-1].append(unit)
    return groups


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("device", nargs="?")
    parser.add_argument("log", nargs="?")
    parser.add_argument("--size", required=True)
    parser.add_argument("--fps", type=float, default=10)
    parser.add_argument("--seconds", type=float, default=3600)
    parser.add_argument("--mjpeg", metavar="FILE")
    parser.add_argument("--make", metavar="FILE")
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--stream", metavar="FILE")
    parser.add_argument("--codec", choices=("h264", "hevc"), default="h264")
    parser.add_argument("--params-once", action="store_true")
    parser.add_argument("--sent", metavar="FILE")
    parser.add_argument("--hold", metavar="FILE")
    parser.add_argument("--pause-at", nargs=2, metavar=("N", "FILE"))
    parser.add_argument("--pause", metavar="FILE")
    parser.add_argument("--signal-at", nargs=2, metavar=("N", "PIDFILE"))
    parser.add_argument("--steady", action="store_true")
    args = parser.parse_args()
    if args.signal_at and not args.signal_at[0].isdigit():
        parser.error(f"--signal-at N: N is an access unit's number (0, 1, ...), not {args.signal_at[0]}")
    width, height = (int(v) for v in args.size.split("x"))
    if args.make:
        with open(args.make, "wb") as out:
            for n in range(args.frames):
                out.write(draw_yuyv(n, width, height))
        return 0
    if not args.device or not args.log:
        parser.error("DEVICE and LOG are needed")
    pictures = jpegs(args.mjpeg) if args.mjpeg else None
    if pictures == []:
        sys.exit(f"loopback-feeder: no JPEG in {args.mjpeg}")
    fd = os.open(args.device, os.O_RDWR)
    if args.stream:
        return feed_stream(fd, args, width, height)
    if pictures:
        set_output_format(fd, width, height, fourcc("MJPG"), 0, width * height * 2)
    else:
        set_output_format(fd, width, height, fourcc("YUYV"), width * 2, width * height * 2)
    log = open(args.log, "w", buffering=1)
    period = round(1e9 / args.fps)
    start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    frames = int(args.seconds * args.fps)
    last = None
    for n in range(frames):
        if args.pause and os.path.exists(args.pause):
            paused = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            with open(args.pause + ".at.tmp", "w") as at:
                at.write(f"{last}\n")
            os.rename(args.pause + ".at.tmp", args.pause + ".at")
            deadline = time.monotonic() + 120
            while os.path.exists(args.pause) and time.monotonic() < deadline:
                time.sleep(0.05)
            start += time.clock_gettime_ns(time.CLOCK_MONOTONIC) - paused
        picture = pictures[n % len(pictures)] if pictures else draw_yuyv(n, width, height)
        number = n % len(pictures) if pictures else n % 4096
        wait = start + n * period - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if wait > 0:
            time.sleep(wait / 1e9)
        elif args.steady:
            start -= wait
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        os.write(fd, picture)
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        log.write(f"frame {number} {before} {after}\n")
        last = number
    return 0


def signal_reader(pidfile, n):
    """SIGUSR1 to the process in PIDFILE; N (or "none") to PIDFILE.sent."""
    sent = "none"
    try:
        with open(pidfile) as f:
            pid = int(f.read().strip())
        if pid > 1:
            os.kill(pid, signal.SIGUSR1)
            sent = str(n)
    except (OSError, ValueError, OverflowError):
        pass
    with open(pidfile + ".sent.tmp", "w") as f:
        f.write(sent + "\n")
    os.rename(pidfile + ".sent.tmp", pidfile + ".sent")


def feed_stream(fd, args, width, height):
    groups = access_units(args.stream, args.codec)
    parameter_sets = (7, 8) if args.codec == "h264" else (32, 33, 34)
    set_output_format(fd, width, height, fourcc("H264" if args.codec == "h264" else "HEVC"), 0, width * height * 2)
    log = open(args.log, "w", buffering=1)
    sent = open(args.sent, "wb") if args.sent else None
    period = round(1e9 / args.fps)
    start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    for n, group in enumerate(groups):
        if n > 0 and args.params_once:
            group = [u for u in group if nal_type(u, args.codec) not in parameter_sets]
        # Three-byte start codes but before the first unit, as many encoders write them.
        unit = b"".join((b"\x00\x00\x00\x01" if i == 0 else b"\x00\x00\x01") + u for i, u in enumerate(group))
        if n == 1 and args.hold:
            while not os.path.exists(args.hold):
                time.sleep(0.05)
            start = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - period
        if args.pause_at and n == int(args.pause_at[0]) + 1:
            deadline = time.monotonic() + 120
            while not os.path.exists(args.pause_at[1]) and time.monotonic() < deadline:
                time.sleep(0.05)
            start = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - n * period
        wait = start + n * period - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if wait > 0:
            time.sleep(wait / 1e9)
        elif args.steady:
            start -= wait
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        os.write(fd, unit)
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if sent:
            sent.write(unit)
            sent.flush()
        log.write(f"frame {n} {before} {after}\n")
        if args.signal_at and n == int(args.signal_at[0]):
            signal_reader(args.signal_at[1], n)
    time.sleep(args.seconds if args.seconds < 3600 else 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
