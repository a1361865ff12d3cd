#!/usr/bin/env python3
"""Prints the frame number burned into each decoded frame of a camrec --test-pattern recording.

The pattern (docs/RECORDING.md, --test-pattern) draws 32 bits, most significant first, as 16x16 blocks
(white 1, black 0) between two white marker blocks, starting at x=16, y=16. This reads them from
the luma ffmpeg decodes (every decoded frame once: no frames added or dropped to fill gaps in a
container's timestamps), sharing no code with camrec. One number per line, in decode order;
"?" for a frame whose markers are not found. Needs a frame at least 576 pixels wide.

Usage: pattern-counters.py FILE.h264
Exit status: 0, or 2 when ffmpeg fails or the size is unknown.
"""
import subprocess
import sys

BLOCK, BITS, X0, Y0 = 16, 32, 16, 16


def size_of(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "stream=width,height", "-of", "csv=p=0", path], capture_output=True, text=True)
    # MPEG-TS adds lines for its programs: the first line with a size is the stream's.
    w, h = next(line for line in out.stdout.splitlines() if line.strip()).split(",")[:2]
    return int(w), int(h)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    try:
        width, height = size_of(path)
    except (ValueError, IndexError):
        print(f"pattern-counters: cannot read the size of {path}", file=sys.stderr)
        sys.exit(2)
    decoded = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vsync", "passthrough",
                              "-f", "rawvideo", "-pix_fmt", "gray", "-"],
                             capture_output=True)
    if decoded.returncode != 0 and not decoded.stdout:
        print(f"pattern-counters: ffmpeg failed: {decoded.stderr.decode(errors='replace')}", file=sys.stderr)
        sys.exit(2)
    frame = width * height
    data = decoded.stdout
    y = Y0 + BLOCK // 2
    for start in range(0, len(data) - frame + 1, frame):
        def white(i):
            return data[start + y * width + X0 + i * BLOCK + BLOCK // 2] > 128
        if not (white(0) and white(BITS + 1)):
            print("?")
            continue
        value = 0
        for bit in range(BITS):
            value = value << 1 | (1 if white(1 + bit) else 0)
        print(value)


if __name__ == "__main__":
    main()
