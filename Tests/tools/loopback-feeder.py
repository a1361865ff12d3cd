#!/usr/bin/python3
"""A camera for the tests whose frame times are known outside the recorder: feeds a v4l2loopback
node numbered pictures (Tests/tools/picture_numbers.py draws and reads them) and logs when each went in.

  loopback-feeder.py DEVICE LOG --size WxH --fps N [--seconds S] [--mjpeg FILE]
  loopback-feeder.py --make FILE --size WxH --frames N

The first form sets the node's output format (YUYV, or MJPG with --mjpeg) and writes one picture per
write() call, N a second on CLOCK_MONOTONIC's schedule, until S seconds are up or it is killed. Pictures
are numbered 0, 1, 2, ... (modulo 4096); with --mjpeg the JPEGs of FILE (concatenated, as ffmpeg's
mjpeg muxer writes them) are sent in turn, the Kth carrying the number K (--make wrote them so).
LOG gets one line per picture, flushed at once:

  frame NUMBER BEFORE AFTER

BEFORE and AFTER: CLOCK_MONOTONIC (ns) read just before and just after the write(). v4l2loopback stamps
the buffer with CLOCK_MONOTONIC inside that call, so a recorder that keeps the driver's timestamps
records each picture at a time between the two.

The second form writes N numbered YUYV pictures to FILE (for ffmpeg to make the JPEGs of).
"""
import argparse
import fcntl
import os
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
    args = parser.parse_args()
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
    if pictures:
        set_output_format(fd, width, height, fourcc("MJPG"), 0, width * height * 2)
    else:
        set_output_format(fd, width, height, fourcc("YUYV"), width * 2, width * height * 2)
    log = open(args.log, "w", buffering=1)
    period = round(1e9 / args.fps)
    start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    frames = int(args.seconds * args.fps)
    for n in range(frames):
        picture = pictures[n % len(pictures)] if pictures else draw_yuyv(n, width, height)
        number = n % len(pictures) if pictures else n % 4096
        wait = start + n * period - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if wait > 0:
            time.sleep(wait / 1e9)
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        os.write(fd, picture)
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        log.write(f"frame {number} {before} {after}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
