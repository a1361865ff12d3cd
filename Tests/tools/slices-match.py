#!/usr/bin/env python3
"""Whether a recording's slices are a camera's slices, byte for byte: for `--encoder camera`, where camrec
must pass the camera's H.264/H.265 on without touching a picture. Shares no code with camrec: it scans
Annex B itself and compares the slice NAL units (H.264 types 1-5, H.265 types 0-31) of RECORDED with
those of SENT (the stream as the camera wrote it, start codes and all other units ignored).

Usage: slices-match.py SENT RECORDED [--hevc] [--from-first] [--gaps-to-idr] [--torn-by-writer [--torn-out FILE]]
       slices-match.py SENT SENT [--hevc] --count-units
The recording's slices must be a run of consecutive source slices (no slice changed, left out,
repeated or reordered); with --from-first the run must begin with the source's first slice. With
--gaps-to-idr source slices may be missing in stretches that each end right before an IDR slice (frames a
reader never got, and the pictures that referred to them: the recording stays decodable).
With --torn-by-writer a slice may be torn by v4l2loopback, which writes into the buffers of its ring whether
or not a reader still holds one (a driver that owns its buffers never does): the source's next slice, of its
length, but for one stretch that begins with 64 bytes or more of one of the next 16 source slices and
holds its bytes up to the stretch's or that slice's end, with the writer's gap right after it (the
recording ends, or its next slice is not the source's next). --torn-out writes the torn slices, as the
recording holds them, to FILE (Annex B; empty when none): Tests/tools/rtsp-compare.py --torn leaves their
pictures out, a decoder's picture of a damaged slice being no truth to compare copies with.
Exit status: 0 when they are, 1 when not, 2 for a file with no slices. The last line says what was found:
  slices=N first=K missing=M stretches=S (the recording's N slices are the source's from K on, M left out in S stretches)
and with --torn-by-writer " torn=T" after it (T of the N were torn so).
With --count-units it only says what SENT holds besides slices:
  parameter_sets_once=yes|no aud=N sei=N (yes: each kind of parameter set, SPS PPS [VPS], exactly once)
"""
import argparse
import sys


def units(path):
    data = open(path, "rb").read()
    starts = []
    at = data.find(b"\x00\x00\x01")
    while at >= 0:
        starts.append(at + 3)
        at = data.find(b"\x00\x00\x01", at + 3)
    out = []
    for a, b in zip(starts, starts[1:] + [len(data) + 3]):
        unit = data[a:b - 3]
        while unit.endswith(b"\x00"):
            unit = unit[:-1]
        if unit:
            out.append(unit)
    return out


def slices(path, hevc):
    if hevc:
        return [u for u in units(path) if (u[0] >> 1) & 0x3F <= 31]
    return [u for u in units(path) if 1 <= u[0] & 0x1F <= 5]


def torn_from(unit, own, later):
    """Whether UNIT is OWN (same length) but for one stretch that begins with 64 bytes or more of a LATER
    slice's, and holds that slice's bytes up to the stretch's end or the slice's (what a reader copies while
    the writer overwrites the buffer; past a shorter slice's end the buffer holds an older write's bytes, and
    glibc's memcpy takes a large copy's first and last bytes before the middle)."""
    if len(unit) != len(own) or unit == own:
        return False
    cut = next(b for b in range(len(unit)) if unit[b] != own[b])
    end = next(b for b in range(len(unit), 0, -1) if unit[b - 1] != own[b - 1])
    for other in later:
        at = other.find(unit[cut:cut + 64])
        run = min(end - cut, len(other) - at)
        if at >= 0 and run >= 64 and other[at:at + run] == unit[cut:cut + run]:
            return True
    return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("sent")
    parser.add_argument("recorded")
    parser.add_argument("--hevc", action="store_true")
    parser.add_argument("--from-first", action="store_true")
    parser.add_argument("--count-units", action="store_true")
    parser.add_argument("--gaps-to-idr", action="store_true")
    parser.add_argument("--torn-by-writer", action="store_true")
    parser.add_argument("--torn-out", metavar="FILE")
    args = parser.parse_args()
    if args.torn_out and not args.torn_by_writer:
        parser.error("--torn-out needs --torn-by-writer")
    if args.torn_out:
        open(args.torn_out, "wb").close()   # none known until the recording has matched
    if args.count_units:
        types = [(u[0] >> 1) & 0x3F if args.hevc else u[0] & 0x1F for u in units(args.sent)]
        sets, aud, sei = ((32, 33, 34), 35, (39, 40)) if args.hevc else ((7, 8), 9, (6,))
        once = all(types.count(t) == 1 for t in sets)
        print(f"parameter_sets_once={'yes' if once else 'no'} aud={types.count(aud)} sei={sum(types.count(t) for t in sei)}")
        return 0
    sent = slices(args.sent, args.hevc)
    got = slices(args.recorded, args.hevc)
    if not sent or not got:
        print(f"no slices: {len(sent)} sent, {len(got)} recorded")
        return 2
    first = next((k for k, s in enumerate(sent) if s == got[0]), None)
    if first is None:
        print(f"the recording's first slice ({len(got[0])} bytes) is none of the {len(sent)} sent")
        return 1
    k = first
    missing = stretches = torn = 0
    torn_slices = []
    idr = (lambda u: (u[0] >> 1) & 0x3F in (19, 20)) if args.hevc else (lambda u: u[0] & 0x1F == 5)
    for i, unit in enumerate(got):
        if k < len(sent) and sent[k] == unit:
            k += 1
            continue
        later = next((j for j in range(k + 1, len(sent)) if sent[j] == unit), None)
        if args.gaps_to_idr and later is not None and idr(unit):
            missing += later - k
            stretches += 1
            k = later + 1
            continue
        if args.torn_by_writer and k < len(sent) and torn_from(unit, sent[k], sent[k + 1:k + 17]) \
                and (i + 1 == len(got) or k + 1 == len(sent) or got[i + 1] != sent[k + 1]):
            torn += 1
            torn_slices.append(unit)
            k += 1
            continue
        where = next((j for j, s in enumerate(sent) if s == unit), None)
        print(f"slice {i} of the recording ({len(unit)} bytes) is not the source's slice {k}"
              + (f" but its slice {where}" if where is not None else ", nor any other")
              + (" (and not an IDR after left-out slices)" if args.gaps_to_idr else ""))
        return 1
    if args.torn_out:
        with open(args.torn_out, "wb") as out:
            out.write(b"".join(b"\x00\x00\x00\x01" + unit for unit in torn_slices))
    if args.from_first and first != 0:
        print(f"the recording begins at the source's slice {first}, not its first")
        return 1
    print(f"slices={len(got)} first={first} missing={missing} stretches={stretches}"
          + (f" torn={torn}" if args.torn_by_writer else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
