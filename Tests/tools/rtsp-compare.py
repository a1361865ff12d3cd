#!/usr/bin/env python3
"""Checks that an RTSP client's copy decodes to the same pictures as the recording, frame for frame.

Both files are decoded by ffmpeg: each frame's burned-in counter is read by pattern-counters.py and
each picture's MD5 by ffmpeg's framemd5 (decode order, no frames added or dropped). The client's
counters must be a run of the recording's, from its first frame on with none missing (the recording
may lack frames the camera dropped: so does the stream), and each picture's MD5 must equal the
recording's picture of the same counter. Each file's counters and MD5s are kept beside it (FILE.frames,
for as long as the file is unchanged), so many copies compare against one decode of the recording, and a
copy finished early can be decoded before the recording is.

With --torn FILE (the slices v4l2loopback tore while camrec copied them: Tests/tools/slices-match.py
--torn-out), a picture holding one of them is no truth: a decoder conceals the damage as it likes, and
ffmpeg's concealment changed pictures even past the next IDR (seen: the recording's third and fourth
pictures from that IDR differed from those of a client that began at it; with one decoder thread, all).
So in each file (raw Annex B, or a container's stream copied out as Annex B) the pictures holding a torn
slice and those after them up to the next IDR are left out (their pictures refer to the torn one), and
the decode starts afresh at that IDR; the line says how many were left out. Both files leave out the
same pictures or they differ. Pictures are told apart in decode order, so the streams have no B-frames.

With --span, MIN_FRAMES is a stretch of the camera's clock rather than a count: the copy's counters must
span at least that many frames (first to last). A paced test pattern that drops frames under load (the
recording lacks them too) then still holds a client that played long enough (seen beside stress-ng: an
H.265 recording with 94 frames over counters 24..175).

Usage: rtsp-compare.py [--span] [--torn FILE] RECORDING CLIENT_COPY MIN_FRAMES
       Prints one line; exit 0 when they agree, 1 when not.
       rtsp-compare.py --frames FILE...
       Decodes each FILE now (its two decodes side by side) and keeps its frames beside it.
"""
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))


def counters(path):
    out = subprocess.run([sys.executable, os.path.join(HERE, "pattern-counters.py"), path], capture_output=True, text=True)
    return out.stdout.split()


def md5s(path):
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vsync", "passthrough", "-pix_fmt", "yuv420p",
                          "-f", "framemd5", "-"], capture_output=True, text=True)
    return [line.split(",")[-1].strip() for line in out.stdout.splitlines() if line and not line.startswith("#")]


def decode(path):
    with ThreadPoolExecutor(2) as pool:
        read_counters, read_md5s = pool.submit(counters, path), pool.submit(md5s, path)
        return read_counters.result(), read_md5s.result()


RAW = (".h264", ".264", ".h265", ".265", ".hevc")


def is_hevc(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name",
                          "-of", "csv=p=0", path], capture_output=True, text=True)
    return out.stdout.strip().startswith("hevc")


def annexb(path, hevc):
    """PATH's video stream as Annex B: a raw stream as it is, a container's copied out by ffmpeg."""
    if path.endswith(RAW):
        return open(path, "rb").read()
    codec = "hevc" if hevc else "h264"
    return subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-c", "copy",
                           "-bsf:v", f"{codec}_mp4toannexb", "-f", codec, "-"], capture_output=True).stdout


def nal_units(data):
    """(where its start code begins, the unit without start code or trailing zeros) for each NAL unit."""
    found = []
    at = data.find(b"\x00\x00\x01")
    while at >= 0:
        found.append(at)
        at = data.find(b"\x00\x00\x01", at + 3)
    out = []
    for a, b in zip(found, found[1:] + [len(data)]):
        unit = data[a + 3:b].rstrip(b"\x00")
        if unit:
            out.append((a - 1 if a > 0 and data[a - 1] == 0 else a, unit))
    return out


def pictures(data, hevc):
    """Each picture of an Annex B stream, in decode order: [byte where its units begin, IDR?, its slices]."""
    pics, leading = [], None
    for at, unit in nal_units(data):
        kind = (unit[0] >> 1) & 0x3F if hevc else unit[0] & 0x1F
        if not (kind <= 31 if hevc else 1 <= kind <= 5):
            leading = at if leading is None else leading
            continue
        # first_slice_segment_in_pic_flag (H.265), first_mb_in_slice = 0 (H.264): the first bit after the header.
        if not pics or len(unit) > 2 and unit[2 if hevc else 1] & 0x80:
            pics.append([at if leading is None else leading, kind in ((19, 20) if hevc else (5,)), []])
        pics[-1][2].append(unit)
        leading = None
    return pics


def frames_torn(path, torn):
    """PATH's counters and MD5s, None for each picture left out for TORN (a set of slices); None when PATH
    holds none of them. The runs kept are decoded each on its own, from its IDR (or the file's start)."""
    hevc = is_hevc(path)
    data = annexb(path, hevc)
    pics = pictures(data, hevc)
    if not any(unit in torn for pic in pics for unit in pic[2]):
        return None
    kept, broken = [], False
    for i, (_, idr, slices) in enumerate(pics):
        if any(unit in torn for unit in slices):
            broken = True
        elif broken and idr:
            broken = False
            kept.append([i, i])
        elif not broken and not kept:
            kept.append([i, i])
        if not broken:
            kept[-1][1] = i + 1
    rc, rm = [None] * len(pics), [None] * len(pics)
    with tempfile.TemporaryDirectory() as scratch:
        for n, (first, end) in enumerate(kept):
            run = os.path.join(scratch, f"run{n}" + (".h265" if hevc else ".h264"))
            with open(run, "wb") as f:
                f.write(data[0 if first == 0 else pics[first][0]:pics[end][0] if end < len(pics) else len(data)])
            c, m = decode(run)
            if len(c) != end - first or len(m) != end - first:
                sys.exit(f"{path}: pictures {first}..{end - 1} decoded to {len(c)} counters and {len(m)} MD5s")
            rc[first:end], rm[first:end] = c, m
    return rc, rm


def frames(path, torn=frozenset()):
    if not os.path.exists(path):
        return [], []
    cache, stat = path + ".frames", os.stat(path)
    key = [stat.st_size, stat.st_mtime_ns]
    left_out = frames_torn(path, torn) if torn else None
    if left_out is not None:
        return left_out
    try:
        with open(cache) as f:
            kept = json.load(f)
        if kept["key"] == key:
            return kept["counters"], kept["md5s"]
    except (OSError, ValueError, KeyError):
        pass
    rc, rm = decode(path)
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
    args, torn, span = sys.argv[1:], frozenset(), False
    if args[:1] == ["--span"]:
        span, args = True, args[1:]
    if args[:1] == ["--torn"] and len(args) >= 2:
        with open(args[1], "rb") as f:
            torn = frozenset(unit for _, unit in nal_units(f.read()))
        args = args[2:]
    if len(args) != 3:
        sys.exit(__doc__)
    reference, copy, least = args[0], args[1], int(args[2])
    rc, rm = frames(reference, torn)
    cc, cm = frames(copy, torn)
    if len(rc) != len(rm) or len(cc) != len(cm):
        print(f"counters and MD5s disagree in number: recording {len(rc)}/{len(rm)}, copy {len(cc)}/{len(cm)}")
        return 1
    compared = [c for c in cc if c is not None]
    numbered = [int(c) for c in compared if c.isdigit()]
    reach = numbered[-1] - numbered[0] + 1 if span and numbered else len(cc)
    if reach < least or not compared:
        print(f"the copy has {len(cc)} frames" + (f" ({len(cc) - len(compared)} of them left out as torn)" if torn else "")
              + (f" over {reach} of the camera's" if span else "") + f", fewer than {max(least, 1)} to compare")
        return 1
    if "?" in cc:
        print(f"the copy has a frame without a readable counter (frame {cc.index('?')})")
        return 1
    # Where the copy begins in the recording: by its first picture not left out.
    at = next(i for i, c in enumerate(cc) if c is not None)
    if cc[at] not in rc or rc.index(cc[at]) < at:
        print(f"the copy's first frame ({cc[at]}) is not in the recording")
        return 1
    start = rc.index(cc[at]) - at
    for i, (counter, md5) in enumerate(zip(cc, cm)):
        if start + i >= len(rc):
            print(f"the copy goes on past the recording's end (frame {i}, counter {counter})")
            return 1
        if (rc[start + i] is None) != (counter is None):
            print(f"frame {i} of the copy is left out as torn in " + ("the copy" if counter is None else "the recording")
                  + " only (counter " + (rc[start + i] if counter is None else counter) + ")")
            return 1
        if rc[start + i] != counter:
            print(f"frame {i} of the copy is counter {counter}, the recording's next is {rc[start + i]}")
            return 1
        if rm[start + i] != md5:
            print(f"frame {i} (counter {counter}) differs from the recording's picture")
            return 1
    left_out = "" if not torn else \
        f"; {len(cc) - len(compared)} left out (torn by v4l2loopback, or after a torn one up to the next IDR)"
    print(f"{len(cc)} frames, counters {compared[0]}..{compared[-1]}, each picture equal to the recording's{left_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
