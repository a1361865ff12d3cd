#!/usr/bin/env python3
"""Checks that the clicks a player logged (Tests/tools/click-player.py: the monotonic time each was
played into snd-aloop) are in a recording's sound at those times, against the video frames' capture
times, with FFmpeg's tools alone for the file.

  mic-sync.py FILE CAMREC_LOG CLICK_LOG MIN_CLICKS BOUND_MS [LOST [ANCHOR]]

CAMREC_LOG is camrec's stderr at --log-level debug: its first two "timeline:" lines say which
monotonic capture time (the V4L2 buffer time) of the first frame and of the second is presented at
which time. Where FILE puts presentation time zero is read from its second frame (an MP4 edit list
shows the first frame at 0 however much the tracks were shifted for the sound's priming). ANCHOR (default
1) picks which pair of timeline lines: 2 for the file that begins when a lost camera came back (camrec
anchors its timeline again at the first frame after the return, and that frame begins the file).
Each logged click inside the recording (but its last 0.2 s) must have a burst (Tests/tools/bursts.py) within BOUND_MS of its time. Prints each click's offset
(recorded minus played, in ms); exits 1 when fewer than MIN_CLICKS are found, more than LOST (default 0:
clicks played while the recorder could not read, lost in an overrun) are missing, or one is off by more
than BOUND_MS.
"""
import re
import sys

from bursts import audio_bursts, frames

path, camrec_log, click_log, min_clicks, bound_ms = sys.argv[1:6]
min_clicks, bound_ms = int(min_clicks), float(bound_ms)
lost = int(sys.argv[6]) if len(sys.argv) > 6 else 0
which = int(sys.argv[7]) if len(sys.argv) > 7 else 1

anchors = []
for line in open(camrec_log, errors="replace"):
    m = re.search(r"timeline: frame \d+ captured at monotonic (\d+) ns is presented at (\d+) ns", line)
    if m:
        anchors.append((int(m.group(1)), int(m.group(2))))
if len(anchors) < 2 * which:
    sys.exit(f"FAIL: no {2 * which} timeline lines in {camrec_log} (run camrec with --log-level debug)")
(capture0, presented0), (capture1, presented1) = anchors[2 * which - 2:2 * which]
if capture1 - presented1 != capture0 - presented0:
    print(f"  note: the second frame's capture less presentation differs by {(capture1 - presented1 - capture0 + presented0) / 1e6:.3f} ms")
video_times = [float(f[0]) for f in frames(path, "v:0", "best_effort_timestamp_time")]
if len(video_times) < 2:
    sys.exit(f"FAIL: fewer than two video frames in {path}")
# The file time of the anchor frame (the file's first).
first_video = video_times[1] - (presented1 - presented0) / 1e9


def monotonic(file_time):
    return capture0 + round((file_time - first_video) * 1e9)


start, end = capture0, monotonic(video_times[-1]) - 200_000_000
# The recording's sound begins with silence (the player's first click is a second into its stream).
bursts = [monotonic(t) for t in audio_bursts(path, quiet_before_start=True)]
clicks = [int(line.split()[2]) for line in open(click_log) if line.startswith("click ")]
inside = [c for c in clicks if start <= c <= end]
print(f"{path}: {len(bursts)} bursts; {len(inside)} of {len(clicks)} logged clicks inside the recording")
offsets, missing = [], 0
for click in inside:
    nearest = min(bursts, key=lambda b: abs(b - click), default=None)
    if nearest is None or abs(nearest - click) > 500_000_000:
        missing += 1
        print(f"  click at {(click - start) / 1e9:.3f} s has no burst within 0.5 s")
        continue
    offsets.append((nearest - click) / 1e6)
    print(f"  click at {(click - start) / 1e9:8.3f} s  offset {offsets[-1]:+.2f} ms")
bad = [o for o in offsets if abs(o) > bound_ms]
if len(offsets) < min_clicks or missing > lost or bad:
    print(f"FAIL: {len(offsets)} clicks found (want at least {min_clicks}), {missing} missing (at most {lost}), {len(bad)} beyond ±{bound_ms} ms")
    sys.exit(1)
print(f"OK: {len(offsets)} clicks{f' ({missing} lost)' if missing else ''}, largest |offset| {max(abs(o) for o in offsets):.2f} ms, last {offsets[-1]:+.2f} ms")
