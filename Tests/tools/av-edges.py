#!/usr/bin/env python3
"""Where the picture and the sound of a file start and end, from ffprobe alone (no camrec code):
the first decoded frame of each track (best_effort_timestamp, priming dropped as a player drops it) and
the end of each track's last packet (pts + duration).

  av-edges.py FILE [BOUND_S [starts|ends]]
Prints "video START END audio START END". With BOUND_S, exits 1 unless the sound starts within BOUND_S
of the picture and ends at or after the picture's end and at most BOUND_S after it (only the one edge
when `starts` or `ends` is given).
"""
import subprocess
import sys

path = sys.argv[1]


def first_frame(stream):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries",
                          "frame=best_effort_timestamp_time", "-of", "csv=p=0", "-read_intervals", "%+#1", path],
                         capture_output=True, text=True, check=True).stdout.split()
    try:
        return float(out[0])
    except (IndexError, ValueError):
        return None


ends = {}
out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time,duration_time",
                      "-of", "csv=p=0", path], capture_output=True, text=True, check=True).stdout
for line in out.splitlines():
    fields = line.split(",")
    if len(fields) >= 3 and fields[1] not in ("", "N/A") and fields[2] not in ("", "N/A"):
        ends[fields[0]] = max(ends.get(fields[0], 0.0), float(fields[1]) + float(fields[2]))
if "1" not in ends:
    # No packet durations (Opus in MP4): the last decoded audio frame's time and its samples.
    rate = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=sample_rate",
                           "-of", "csv=p=0", path], capture_output=True, text=True).stdout.split()
    last = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
                           "frame=best_effort_timestamp_time,nb_samples", "-of", "csv=p=0", path],
                          capture_output=True, text=True).stdout.split()
    if rate and last and "," in last[-1]:
        t, n = last[-1].split(",")[:2]
        ends["1"] = float(t) + int(n) / int(rate[0])
video = (first_frame("v:0"), ends.get("0"))
audio = (first_frame("a:0"), ends.get("1"))
print(f"video {video[0]} {video[1]} audio {audio[0]} {audio[1]}")
if len(sys.argv) > 2:
    bound = float(sys.argv[2])
    if None in video or None in audio:
        sys.exit(1)
    starts = abs(audio[0] - video[0]) <= bound
    ending = -0.0005 <= audio[1] - video[1] <= bound
    edge = sys.argv[3] if len(sys.argv) > 3 else "both"
    sys.exit(0 if (starts or edge == "ends") and (ending or edge == "starts") else 1)
