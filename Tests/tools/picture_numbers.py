#!/usr/bin/python3
"""The number burned into each picture of a video by Tests/tools/loopback-feeder.py, and its time.
A module (the feeder draws with it, mic-sync.py reads with it) and a script.

The feeder draws its picture number as two rows of 12 square blocks across the middle of a grey
picture: the upper row the number's bits (most significant first, white for 1, black for 0), the
lower row the same bits inverted, so every column holds one white and one black block and a misread
shows as a column with no clear difference. This reads them back from each picture ffmpeg decodes,
with each picture's time as ffprobe reports it, sharing no code with camrec.

  picture_numbers.py FILE      prints "TIME NUMBER" per picture ("?" for a picture it cannot read)

Exit status: 0 when every picture was read, 1 when one was not, 2 on bad input.
"""
import subprocess
import sys

BITS = 12
PERIOD = 1 << BITS


def layout(width, height):
    """Side of a block, and the top-left corner of the upper row's first block."""
    side = min(width // (BITS + 4), height // 6)
    return side, 2 * side, height // 2 - side


def draw_yuyv(number, width, height):
    """A YUYV picture (grey, Y=128) carrying `number` (modulo 2^BITS) as blocks."""
    side, x0, y0 = layout(width, height)
    grey = b"\x80\x80"   # one pixel: Y, then U or V
    bits = [(number % PERIOD) >> (BITS - 1 - i) & 1 for i in range(BITS)]
    rows = []
    for values in (bits, [1 - b for b in bits]):
        blocks = b"".join((b"\xeb\x80" if bit else b"\x10\x80") * side for bit in values)
        rows.append((grey * x0 + blocks + grey * (width - x0 - BITS * side)) * side)
    return grey * (width * y0) + rows[0] + rows[1] + grey * (width * (height - y0 - 2 * side))


def read_number(band, width, side, x0):
    """The number in a luma band `2 * side` rows high starting at the upper row, or None."""
    number = 0
    for i in range(BITS):
        means = []
        for row in (0, 1):
            # The middle half of the block: its edges blur in compression.
            total = count = 0
            for y in range(row * side + side // 4, row * side + side - side // 4):
                start = y * width + x0 + i * side + side // 4
                chunk = band[start:start + side // 2]
                total += sum(chunk)
                count += len(chunk)
            means.append(total / max(count, 1))
        if abs(means[0] - means[1]) < 100:
            return None
        number = number << 1 | (means[0] > means[1])
    return number


def numbered_pictures(path):
    """[(time in seconds, number or None)] for every picture ffmpeg decodes from `path`."""
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "stream=width,height", "-of", "csv=p=0", path],
                           capture_output=True, text=True, check=True)
    width, height = (int(v) for v in probe.stdout.split()[0].split(",")[:2])
    side, x0, y0 = layout(width, height)
    # Every decoded picture once, as it is (no frame rate imposed: that would repeat or drop some).
    raw = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", path, "-map", "0:v:0", "-fps_mode",
                          "passthrough", "-vf", f"format=gray,crop={width}:{2 * side}:0:{y0}",
                          "-f", "rawvideo", "-"], capture_output=True, check=True).stdout
    size = width * 2 * side
    numbers = [read_number(raw[i:i + size], width, side, x0) for i in range(0, len(raw) - size + 1, size)]
    times = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "frame=best_effort_timestamp_time", "-of", "csv=p=0", path],
                           capture_output=True, text=True, check=True).stdout
    times = [float(t.split(",")[0]) for t in times.split() if t.strip(",")]
    if len(times) != len(numbers):
        raise ValueError(f"ffprobe lists {len(times)} pictures, ffmpeg decoded {len(numbers)}")
    return list(zip(times, numbers))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        pictures = numbered_pictures(sys.argv[1])
    except (OSError, ValueError, IndexError, subprocess.CalledProcessError) as error:
        print(f"picture_numbers: cannot read {sys.argv[1]}: {error}", file=sys.stderr)
        return 2
    for time, number in pictures:
        print(f"{time:.6f} {'?' if number is None else number}")
    return 0 if pictures and all(n is not None for _, n in pictures) else 1


if __name__ == "__main__":
    sys.exit(main())
