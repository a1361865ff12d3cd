#!/usr/bin/env python3
"""Checks that the clicks a player logged (Tests/tools/click-player.py: the monotonic time each was
played into snd-aloop) are in a recording's sound at those times, against the pictures' times as the
camera logged them, with FFmpeg's tools and the two players' logs alone: nothing camrec says.

  mic-sync.py FILE FEEDER_LOG CLICK_LOG MIN_CLICKS BOUND_MS [FROM_NS:STOP_NS:TO_NS]

The camera is a v4l2loopback node fed by Tests/tools/loopback-feeder.py: each picture carries its
number, and FEEDER_LOG the monotonic times just before and after it went in (the driver stamps it in
between). So each decoded picture ties its file time (ffprobe) to a monotonic time from outside the
recorder; the median of those ties maps the whole file onto the monotonic clock, and a recorder that
stamped its pictures wrong (late, early, its own clock) moves them, and not the clicks, off it.
Each logged click inside the recording (but its last 0.2 s) must have a burst (Tests/tools/bursts.py)
within BOUND_MS of its time, but those played between FROM_NS and TO_NS (monotonic; the span in
which the recorder may have lost sound to an overrun, from what the caller did to it): those may be
missing, and those played from STOP_NS on (while the recorder could not read, and as it started
reading again) may also be found off their time. Prints each click's offset (recorded minus played,
in ms); exits 1 when fewer than MIN_CLICKS are found, one outside that span is missing, one is off by
more than BOUND_MS where it may not be, or no picture is readable.
"""
import statistics
import sys

from bursts import audio_bursts
from picture_numbers import numbered_pictures

path, feeder_log, click_log, min_clicks, bound_ms = sys.argv[1:6]
min_clicks, bound_ms = int(min_clicks), float(bound_ms)
lost_from, stopped_from, lost_to = (int(t) for t in sys.argv[6].split(":")) if len(sys.argv) > 6 else (0, 0, -1)

written = {}
for line in open(feeder_log):
    fields = line.split()
    if len(fields) == 4 and fields[0] == "frame":
        written[int(fields[1])] = (int(fields[2]), int(fields[3]))
pictures = numbered_pictures(path)
found = [(t, n) for t, n in pictures if n in written]
# Each picture: the file-to-monotonic offset it implies (ns), from the end of its write. v4l2loopback
# stamps the frame once it has copied it, just before write() returns; the feeder's process preempted
# after that makes a tie late, so the median of them: the recorder also places its first picture where
# the sound lets it start.
ties = [written[n][1] - round(t * 1e9) for t, n in found]
if len(ties) < 2:
    sys.exit(f"FAIL: fewer than two pictures of {path} found in {feeder_log} "
             f"({len(pictures)} pictures, {sum(n is None for _, n in pictures)} unreadable)")
offset = statistics.median(ties)
close = sum(abs(t - offset) <= 1_000_000 for t in ties)
print(f"{path}: {len(found)} of {len(pictures)} pictures found in the feeder's log, "
      f"{close} of them within 1 ms of their median tie to its clock")


def monotonic(file_time):
    return offset + round(file_time * 1e9)


video_times = [t for t, _ in pictures]
start, end = monotonic(video_times[0]), monotonic(video_times[-1]) - 200_000_000
# The recording's sound begins with silence (the player's first click is a second into its stream).
bursts = [monotonic(t) for t in audio_bursts(path, quiet_before_start=True)]
clicks = [int(line.split()[2]) for line in open(click_log) if line.startswith("click ")]
inside = [c for c in clicks if start <= c <= end]
print(f"{path}: {len(bursts)} bursts; {len(inside)} of {len(clicks)} logged clicks inside the recording")
if lost_to >= lost_from:
    print(f"{path}: clicks may be lost from {(lost_from - start) / 1e9:.3f} s to {(lost_to - start) / 1e9:.3f} s, "
          f"and off their time from {(stopped_from - start) / 1e9:.3f} s")
offsets, lost, missing, excused_offsets = [], 0, 0, 0
for click in inside:
    nearest = min(bursts, key=lambda b: abs(b - click), default=None)
    if nearest is None or abs(nearest - click) > 500_000_000:
        excused = lost_from <= click <= lost_to
        lost, missing = lost + excused, missing + (not excused)
        print(f"  click at {(click - start) / 1e9:.3f} s has no burst within 0.5 s{'' if excused else ' (outside the span)'}")
        continue
    offset_ms = (nearest - click) / 1e6
    if abs(offset_ms) > bound_ms and stopped_from <= click <= lost_to:
        excused_offsets += 1
        print(f"  click at {(click - start) / 1e9:8.3f} s  offset {offset_ms:+.2f} ms (played while the recorder could not read)")
        continue
    offsets.append(offset_ms)
    print(f"  click at {(click - start) / 1e9:8.3f} s  offset {offsets[-1]:+.2f} ms")
bad = [o for o in offsets if abs(o) > bound_ms]
if len(offsets) < min_clicks or missing or bad:
    # What a failure needs to be understood: the pictures whose tie to the feeder's clock is not the
    # median's (a picture stamped apart from the rest), and where the sound's bursts are.
    apart = [(n, t, (tie - offset) / 1e6) for (t, n), tie in zip(found, ties) if abs(tie - offset) > 1_000_000]
    for n, t, off in apart[:8]:
        print(f"  picture {n} at {t:.3f} s in the file: its tie {off:+.2f} ms from the median")
    print(f"  bursts at (s in the file's span): {' '.join(f'{(b - start) / 1e9:.3f}' for b in bursts[:20])}")
    print(f"FAIL: {len(offsets)} clicks found (want at least {min_clicks}), {missing} missing outside the span ({lost} in it, {excused_offsets} off their time in it), {len(bad)} beyond ±{bound_ms} ms")
    sys.exit(1)
print(f"OK: {len(offsets)} clicks{f' ({lost} lost in the span)' if lost else ''}{f' ({excused_offsets} off their time in it)' if excused_offsets else ''}, largest |offset| {max(abs(o) for o in offsets):.2f} ms, last {offsets[-1]:+.2f} ms")
