#!/usr/bin/env python3
"""Measures the offset between sound and picture in a recording of --test-pattern --audio test with
FFmpeg's tools alone (no camrec code): the picture's mark is a frame whose lower half is white, the
sound's mark the first loud sample after at least half a second of silence (the test tone's burst).

Times are the container's own, as ffprobe reports each decoded frame (best_effort_timestamp, so MP4's
edit list and the decoder's priming skip apply as a player applies them); the pixels and samples come
from ffmpeg decoding the same frames in the same order (frame i's mean luma, audio frame j's samples).
Not ffmpeg's own output timeline: for MPEG-TS it moves the video's first time to the audio's.

  av-sync.py FILE MIN_PAIRS BOUND_MS
Prints each pair's offset (sound minus picture, in ms); exits 1 when fewer than MIN_PAIRS marks pair up
or any offset is beyond BOUND_MS.
"""
import re
import subprocess
import sys

from bursts import audio_bursts, frames

path, min_pairs, bound_ms = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])


video_times = [float(f[0]) for f in frames(path, "v:0", "best_effort_timestamp_time")]
luma = subprocess.run(
    ["ffmpeg", "-hide_banner", "-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", "-vf",
     "crop=iw:ih/2:0:ih/2,signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=-", "-f", "null", "-"],
    capture_output=True, text=True, check=True).stdout
means = [float(m) for m in re.findall(r"YAVG=([0-9.]+)", luma)]
if len(means) != len(video_times):
    sys.exit(f"FAIL: ffmpeg decoded {len(means)} pictures, ffprobe {len(video_times)}")
flashes = [t for t, mean in zip(video_times, means) if mean > 200]

clicks = audio_bursts(path)

print(f"{path}: {len(flashes)} white frames of {len(video_times)}, {len(clicks)} bursts after silence")
offsets = []
for click in clicks:
    nearest = min(flashes, key=lambda f: abs(f - click), default=None)
    if nearest is None or abs(nearest - click) > 0.5:
        print(f"  burst at {click:.4f} s has no white frame within 0.5 s")
        continue
    offsets.append((click - nearest) * 1000)
    print(f"  picture {nearest:.4f} s  sound {click:.4f} s  offset {offsets[-1]:+.2f} ms")
bad = [o for o in offsets if abs(o) > bound_ms]
if len(offsets) < min_pairs or bad:
    print(f"FAIL: {len(offsets)} pairs (want at least {min_pairs}), {len(bad)} beyond ±{bound_ms} ms")
    sys.exit(1)
print(f"OK: {len(offsets)} pairs, largest |offset| {max(abs(o) for o in offsets):.2f} ms")
