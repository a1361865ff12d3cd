#!/usr/bin/env python3
"""Checks that an RTSP client's copy decodes to the same pictures as the recording, frame for frame.

Both files are decoded by ffmpeg: each frame's burned-in counter is read by pattern-counters.py and
each picture's MD5 by ffmpeg's framemd5 (decode order, no frames added or dropped). The client's
counters must be a run of the recording's, from its first frame on with none missing (the recording
may lack frames the camera dropped: so does the stream), and each picture's MD5 must equal the
recording's picture of the same counter. Each file's counters and MD5s are kept beside it (FILE.frames,
for as long as the file is unchanged), so many copies compare against one decode of the recording, and a
copy finished early can be decoded before the recording is.

Usage: rtsp-compare.py RECORDING CLIENT_COPY MIN_FRAMES
       Prints one line; exit 0 when they agree, 1 when not.
       rtsp-compare.py --frames FILE...
       Decodes each FILE now (its two decodes side by side) and keeps its frames beside it.
"""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))


def counters(path):
    out = subprocess.run([sys.executable, os.path.join(HERE, "pattern-counters.py"), path], capture_output=True, text=True)
    return out.stdout.split()


def md5s(path):
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vsync", "passthrough", "-pix_fmt", "yuv420p",
                          "-f", "framemd5", "-"], capture_output=True, text=True)
    return [line.split(",")[-1].strip() for line in out.stdout.splitlines() if line and not line.startswith("#")]


def frames(path):
    if not os.path.exists(path):
        return [], []
    cache, stat = path + ".frames", os.stat(path)
    key = [stat.st_size, stat.st_mtime_ns]
    try:
        with open(cache) as f:
            kept = json.load(f)
        if kept["key"] == key:
            return kept["counters"], kept["md5s"]
    except (OSError, ValueError, KeyError):
        pass
    with ThreadPoolExecutor(2) as pool:
        read_counters, read_md5s = pool.submit(counters, path), pool.submit(md5s, path)
        rc, rm = read_counters.result(), read_md5s.result()
    partial = f"{cache}.{os.getpid()}"
    with open(partial, "w") as f:
        json.dump({"key": key, "counters": rc, "md5s": rm}, f)
    os.replace(partial, cache)
    return rc, rm


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--frames":
        for path in sys.argv[2:]:
            frames(path)
        return 0
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    reference, copy, least = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rc, rm = frames(reference)
    cc, cm = frames(copy)
    if len(rc) != len(rm) or len(cc) != len(cm):
        print(f"counters and MD5s disagree in number: recording {len(rc)}/{len(rm)}, copy {len(cc)}/{len(cm)}")
        return 1
    if len(cc) < least:
        print(f"the copy has {len(cc)} frames, fewer than {least}")
        return 1
    if "?" in cc:
        print(f"the copy has a frame without a readable counter (frame {cc.index('?')})")
        return 1
    if cc[0] not in rc:
        print(f"the copy's first frame ({cc[0]}) is not in the recording")
        return 1
    start = rc.index(cc[0])
    for i, (counter, md5) in enumerate(zip(cc, cm)):
        if start + i >= len(rc):
            print(f"the copy goes on past the recording's end (frame {i}, counter {counter})")
            return 1
        if rc[start + i] != counter:
            print(f"frame {i} of the copy is counter {counter}, the recording's next is {rc[start + i]}")
            return 1
        if rm[start + i] != md5:
            print(f"frame {i} (counter {counter}) differs from the recording's picture")
            return 1
    print(f"{len(cc)} frames, counters {cc[0]}..{cc[-1]}, each picture equal to the recording's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
