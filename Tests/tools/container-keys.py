#!/usr/bin/env python3
"""Prints which samples a fragmented MP4/QuickTime or a Matroska file itself marks as key frames.

For the tests; it shares no code with camrec or FFmpeg. ffprobe cannot answer this: its H.264
parser flags key frames from the bitstream, whatever the container says. This reads the
container's own tables:

  * MP4/QuickTime: every `trun` in every `moof`, with the flags of `trex`, `tfhd` and the `trun`
    (first-sample and per-sample flags); a sample is a key frame when its
    sample_is_non_sync_sample bit (0x00010000) is clear. Samples listed in a non-fragmented `moov`
    (stss) are not read: camrec writes fragmented MP4 only.
  * Matroska: the keyframe bit (0x80) of every SimpleBlock in every Cluster, or a BlockGroup
    without a ReferenceBlock.

Usage: container-keys.py FILE
       container-keys.py FILE.mkv --mark-key N COPY.mkv   (a copy with SimpleBlock N marked key, to
                                                           test a checker against a wrong mark)
Prints "SAMPLES: I I I" (the key frames' indices from 0, in file order).
Exit status: 0, or 2 when the file is neither or is cut inside a table.
"""
import sys


def mp4_keys(data):
    samples, keys = 0, []
    trex_flags = 0

    def boxes(start, end):
        pos = start
        while pos + 8 <= end:
            size, kind = int.from_bytes(data[pos:pos + 4], "big"), data[pos + 4:pos + 8]
            header = 8
            if size == 1:
                size, header = int.from_bytes(data[pos + 8:pos + 16], "big"), 16
            elif size == 0:
                size = end - pos
            if size < header or pos + size > end:
                return  # a box cut off (a crash): what came before stands
            yield kind, pos + header, pos + size
            pos += size

    def walk(start, end, tfhd_flags=None):
        nonlocal samples, trex_flags
        for kind, body, stop in boxes(start, end):
            if kind in (b"moov", b"mvex"):
                walk(body, stop)
            elif kind == b"trex":
                trex_flags = int.from_bytes(data[body + 20:body + 24], "big")
            elif kind == b"moof":
                walk(body, stop)
            elif kind == b"traf":
                state = {"default": trex_flags}
                for k, b, s in boxes(body, stop):
                    if k == b"tfhd":
                        flags, p = int.from_bytes(data[b + 1:b + 4], "big"), b + 8
                        p += 8 if flags & 0x1 else 0
                        p += 4 if flags & 0x2 else 0
                        p += 4 if flags & 0x8 else 0
                        p += 4 if flags & 0x10 else 0
                        if flags & 0x20:
                            state["default"] = int.from_bytes(data[p:p + 4], "big")
                    elif k == b"trun":
                        read_trun(b, state["default"])

    def read_trun(body, default_flags):
        nonlocal samples
        flags = int.from_bytes(data[body + 1:body + 4], "big")
        count = int.from_bytes(data[body + 4:body + 8], "big")
        p = body + 8 + (4 if flags & 0x1 else 0)
        first = None
        if flags & 0x4:
            first, p = int.from_bytes(data[p:p + 4], "big"), p + 4
        for i in range(count):
            sample_flags = default_flags
            p += 4 if flags & 0x100 else 0
            p += 4 if flags & 0x200 else 0
            if flags & 0x400:
                sample_flags, p = int.from_bytes(data[p:p + 4], "big"), p + 4
            p += 4 if flags & 0x800 else 0
            if i == 0 and first is not None:
                sample_flags = first
            if not sample_flags & 0x00010000:
                keys.append(samples)
            samples += 1

    walk(0, len(data))
    return samples, keys


def mkv_keys(data, mark=None):
    """Key frames of a Matroska file; with mark=N, also sets the keyframe bit of SimpleBlock N."""
    samples, keys = 0, []

    def vint(pos, keep_marker):
        first = data[pos]
        length = 1
        while length <= 8 and not first & (0x80 >> (length - 1)):
            length += 1
        if length > 8 or pos + length > len(data):
            raise ValueError("bad EBML number")
        value = first if keep_marker else first & (0xFF >> length)
        for b in data[pos + 1:pos + length]:
            value = value << 8 | b
        unknown = not keep_marker and value == (1 << (7 * length)) - 1
        return value, length, unknown

    def walk(start, end):
        nonlocal samples
        pos = start
        while pos < end:
            try:
                ident, n1, _ = vint(pos, True)
                size, n2, unknown = vint(pos + n1, False)
            except (ValueError, IndexError):
                return
            body = pos + n1 + n2
            stop = end if unknown else min(body + size, end)
            if ident in (0x18538067, 0x1F43B675):  # Segment, Cluster
                walk(body, stop)
                if unknown:
                    return
            elif ident == 0xA3:  # SimpleBlock: track number, 16-bit time, flags
                _, n, _ = vint(body, False)
                if body + n + 2 < stop:
                    if samples == mark:
                        data[body + n + 2] |= 0x80
                    if data[body + n + 2] & 0x80:
                        keys.append(samples)
                    samples += 1
            elif ident == 0xA0:  # BlockGroup: a key frame when it has no ReferenceBlock
                has_reference, p = False, body
                while p < stop:
                    i, a, _ = vint(p, True)
                    s, b, _ = vint(p + a, False)
                    has_reference |= i == 0xFB
                    p += a + b + s
                if not has_reference:
                    keys.append(samples)
                samples += 1
            elif unknown:
                return
            pos = stop

    walk(0, len(data))
    return samples, keys


def main():
    if len(sys.argv) == 5 and sys.argv[2] == "--mark-key":
        data = bytearray(open(sys.argv[1], "rb").read())
        mkv_keys(data, mark=int(sys.argv[3]))
        open(sys.argv[4], "wb").write(data)
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    if data[:4] == b"\x1a\x45\xdf\xa3":
        samples, keys = mkv_keys(data)
    elif data[4:8] in (b"ftyp", b"moov", b"moof", b"free", b"wide"):
        samples, keys = mp4_keys(data)
    else:
        print("container-keys: neither MP4 nor Matroska", file=sys.stderr)
        sys.exit(2)
    print(f"{samples}: " + " ".join(map(str, keys)))


if __name__ == "__main__":
    main()
