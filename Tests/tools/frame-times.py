#!/usr/bin/python3
"""Whether a recording's picture times are the camera's: each picture's time in the file, against
when Tests/tools/loopback-feeder.py wrote that picture into v4l2loopback (its log), which stamps the
buffer with CLOCK_MONOTONIC during that write().

  frame-times.py FILE FEEDER_LOG ROUNDING_MS

Pictures are told apart by the numbers the feeder drew in them (Tests/tools/picture_numbers.py).
Measured from the file's first picture, picture K must be recorded D after it, where D lies between
(K written, at the earliest) minus (the first written, at the latest) and the other way round, give or
take ROUNDING_MS (the container's time base: 1 ms in Matroska, twice for a difference of two times).
A recorder that stamps a picture when it takes it from the driver (late by however long it took to
get there) instead of with the driver's timestamp is off by that lateness.

Prints the worst deviation; exits 1 when a picture is outside its window, unreadable, not in the log,
or not after the one before; 2 on bad input.
"""
import sys

from picture_numbers import numbered_pictures

path, feeder_log, rounding_ms = sys.argv[1], sys.argv[2], float(sys.argv[3])
written = {}
for line in open(feeder_log):
    fields = line.split()
    if len(fields) == 4 and fields[0] == "frame":
        written[int(fields[1])] = (int(fields[2]), int(fields[3]))
try:
    pictures = numbered_pictures(path)
except Exception as error:  # noqa: BLE001 - any failure to read is bad input
    print(f"frame-times: cannot read {path}: {error}", file=sys.stderr)
    sys.exit(2)
problems, worst, widest = [], 0.0, 0.0
first_time, first_number = pictures[0] if pictures else (None, None)
if first_number not in written:
    sys.exit(f"FAIL: the first picture of {path} ({first_number}) is not in {feeder_log}")
b0, a0 = written[first_number]
previous = first_number
for k, (time, number) in enumerate(pictures[1:], 1):
    if number is None or number not in written:
        problems.append(f"picture {k}: number {number} unreadable or never written")
        continue
    if number <= previous:
        problems.append(f"picture {k}: number {number} after {previous}")
    previous = number
    b, a = written[number]
    recorded = (time - first_time) * 1e3
    low, high = (b - a0) / 1e6 - rounding_ms, (a - b0) / 1e6 + rounding_ms
    widest = max(widest, high - low)
    off = recorded - high if recorded > high else low - recorded if recorded < low else 0.0
    worst = max(worst, off)
    if off > 0:
        problems.append(f"picture {k} (number {number}): recorded {recorded:.1f} ms after the first, "
                        f"written {low + rounding_ms:.1f}..{high - rounding_ms:.1f} ms after it")
print(f"{path}: {len(pictures)} pictures, numbers {first_number}..{previous}; the worst is {worst:.1f} ms outside "
      f"its window (windows up to {widest:.1f} ms wide, ±{rounding_ms} ms rounding included)")
for p in problems[:8]:
    print("  " + p)
sys.exit(1 if problems or len(pictures) < 2 else 0)
