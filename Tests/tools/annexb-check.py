#!/usr/bin/env python3
"""Independent checker of camrec's H.264 (and, with --hevc, H.265) stream contract, for the tests.

It shares no code with camrec: it scans Annex-B itself, reads NAL headers, the first fields of
slice headers and the SPS, groups NAL units into pictures and checks:

  * every NAL unit starts with a 4-byte start code 00 00 00 01;
  * the two NAL units right before the first slice of every IDR picture are an SPS and a PPS
    (nothing, not even an SEI, between the PPS and the IDR slice); in H.265 the three units are
    VPS, SPS and PPS, and every random-access picture (types 16-23) is an IDR (19, 20);
  * the stream starts with an IDR picture;
  * slices per picture (at most --slices, default 1);
  * the stream is bare (unless --not-bare): nothing but parameter sets and slices, the parameter sets only
    in the run right before an IDR's first slice, so an IDR access unit is exactly SPS PPS IDR (VPS SPS PPS
    IDR) and any other exactly its slices;
  * optionally: the number of pictures (--frames) and IDRs exactly every N pictures (--idr-interval).

Usage: annexb-check.py FILE|- [--hevc] [--frames N] [--idr-interval N] [--slices N] [--not-bare] [--json]
Exit status: 0 when every check holds, 1 when one fails, 2 for a file it cannot read or that holds
no H.264. The last line (or the JSON object) says what was found.
"""
import argparse
import json
import sys

VCL_TYPES = (1, 5)


def unescape(payload, limit=None):
    """RBSP of a NAL payload: removes emulation-prevention bytes (00 00 03 -> 00 00)."""
    out = bytearray()
    zeros = 0
    for b in payload if limit is None else payload[:limit]:
        if zeros >= 2 and b == 3:
            zeros = 0
            continue
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


class Bits:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def bit(self):
        if self.pos >= 8 * len(self.data):
            raise ValueError("read past the end of the NAL unit")
        b = (self.data[self.pos >> 3] >> (7 - (self.pos & 7))) & 1
        self.pos += 1
        return b

    def bits(self, n):
        v = 0
        for _ in range(n):
            v = (v << 1) | self.bit()
        return v

    def ue(self):
        zeros = 0
        while self.bit() == 0:
            zeros += 1
            if zeros > 31:
                raise ValueError("Exp-Golomb code longer than 32 bits")
        return (1 << zeros) - 1 + self.bits(zeros)

    def se(self):
        k = self.ue()
        return (k + 1) // 2 if k & 1 else -(k // 2)


def split_units(data):
    """Yields (start_code_length, payload_start, payload_end) for every NAL unit.

    A 00 00 01 preceded by a zero byte is a 4-byte start code (the zero_byte of the standard);
    trailing zero bytes before the next start code do not belong to the unit."""
    starts = []
    i, n = 0, len(data)
    while True:
        j = data.find(b"\x00\x00\x01", i)
        if j < 0:
            break
        four = j > 0 and data[j - 1] == 0
        starts.append((j - 1 if four else j, 4 if four else 3, j + 3))
        i = j + 3
    for k, (code_at, code_len, begin) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else n
        while end > begin and data[end - 1] == 0 and k + 1 < len(starts):
            end -= 1
        yield code_at, code_len, begin, end
    return


def parse_sps(payload):
    r = Bits(unescape(payload[1:], 64))
    profile = r.bits(8)
    r.bits(8)
    level = r.bits(8)
    sps_id = r.ue()
    chroma = 1
    if profile in (100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135):
        chroma = r.ue()
        if chroma == 3:
            r.bit()
        r.ue()
        r.ue()
        r.bit()
        if r.bit():  # seq_scaling_matrix_present_flag
            for i in range(8 if chroma != 3 else 12):
                if r.bit():
                    size = 16 if i < 6 else 64
                    last, nxt = 8, 8
                    for _ in range(size):
                        if nxt != 0:
                            nxt = (last + r.se() + 256) % 256
                        last = nxt if nxt != 0 else last
    r.ue()  # log2_max_frame_num_minus4
    poc_type = r.ue()
    if poc_type == 0:
        r.ue()
    elif poc_type == 1:
        r.bit()
        r.se()
        r.se()
        for _ in range(r.ue()):
            r.se()
    r.ue()  # max_num_ref_frames
    r.bit()
    w_mbs = r.ue() + 1
    h_map = r.ue() + 1
    frame_mbs_only = r.bit()
    if not frame_mbs_only:
        r.bit()
    r.bit()
    width, height = w_mbs * 16, h_map * 16 * (2 - frame_mbs_only)
    if r.bit():  # frame_cropping_flag
        cl, cr, ct, cb = r.ue(), r.ue(), r.ue(), r.ue()
        sub_w = 2 if chroma in (1, 2) else 1
        sub_h = 2 if chroma == 1 else 1
        width -= (cl + cr) * (sub_w if chroma else 1)
        height -= (ct + cb) * (sub_h if chroma else 1) * (2 - frame_mbs_only)
    return {"id": sps_id, "profile_idc": profile, "level_idc": level, "width": width, "height": height}


def check_hevc_units(data):
    """H.265 units: the type is bits 1-6 of the two-byte header; a slice segment starts its picture
    when first_slice_segment_in_pic_flag (the first payload bit) is 1."""
    units = []
    for code_at, code_len, begin, end in split_units(data):
        if end - begin < 3:
            continue
        t = (data[begin] >> 1) & 0x3F
        unit = {"at": code_at, "code": code_len, "type": t, "size": end - begin}
        if t < 32:
            unit["first_mb"] = 0 if data[begin + 2] & 0x80 else 1
        units.append(unit)
    return units


def check(data, want_slices, want_frames, want_interval, hevc=False, bare=True):
    vcl_types = range(0, 32) if hevc else VCL_TYPES
    idr_types = (19, 20) if hevc else (5,)
    before_idr = [32, 33, 34] if hevc else [7, 8]
    units = [] if not hevc else check_hevc_units(data)
    for code_at, code_len, begin, end in ([] if hevc else split_units(data)):
        if end <= begin:
            continue
        header = data[begin]
        unit = {"at": code_at, "code": code_len, "type": header & 0x1F, "size": end - begin}
        if unit["type"] in VCL_TYPES:
            r = Bits(unescape(data[begin + 1:min(end, begin + 32)]))
            unit["first_mb"] = r.ue()
            unit["slice_type"] = r.ue() % 5
        elif unit["type"] == 7:
            try:
                unit["sps"] = parse_sps(data[begin:end])
            except ValueError:
                unit["sps"] = None
        units.append(unit)

    problems = []
    if not any(u["type"] in vcl_types for u in units):
        return {"ok": False, "units": len(units), "problems": ["no %s slices found" % ("H.265" if hevc else "H.264")]}, 2

    short_codes = [u for u in units if u["code"] != 4]
    if short_codes:
        problems.append("%d NAL units with a 3-byte start code, first at byte %d"
                        % (len(short_codes), short_codes[0]["at"]))

    # Pictures: a VCL unit with first_mb_in_slice == 0 starts one (camrec never uses ASO).
    pictures = []  # each: {"idr": bool, "slices": n, "first_unit": index}
    for index, u in enumerate(units):
        if u["type"] not in vcl_types:
            continue
        if u["first_mb"] == 0 or not pictures:
            pictures.append({"idr": u["type"] in idr_types, "irap": 16 <= u["type"] <= 23 if hevc else u["type"] == 5,
                             "slices": 1, "first_unit": index})
        else:
            pictures[-1]["slices"] += 1

    if not pictures[0]["idr"]:
        problems.append("the stream does not start with an IDR picture")

    idr_pictures = [n for n, p in enumerate(pictures) if p["idr"]]
    bad_idrs = []
    for n in idr_pictures:
        i = pictures[n]["first_unit"]
        before = [units[k]["type"] for k in range(i - len(before_idr), i) if k >= 0]
        if before != before_idr:
            bad_idrs.append((n, before))
    if bad_idrs:
        problems.append("%d of %d IDR pictures lack %s right before their first slice; picture %d has %s"
                        % (len(bad_idrs), len(idr_pictures), "VPS SPS PPS" if hevc else "SPS PPS", bad_idrs[0][0], bad_idrs[0][1]))
    not_idr = [n for n, p in enumerate(pictures) if p["irap"] and not p["idr"]]
    if not_idr:
        problems.append("%d random-access pictures are not IDRs, first picture %d" % (len(not_idr), not_idr[0]))

    if bare:
        allowed_sets = set()
        for n in idr_pictures:
            i = pictures[n]["first_unit"]
            allowed_sets.update(range(max(0, i - len(before_idr)), i))
        strays = [u for k, u in enumerate(units)
                  if u["type"] not in vcl_types and not (u["type"] in before_idr and k in allowed_sets)]
        if strays:
            problems.append("not bare: %d units are neither slices nor the parameter sets right before an IDR, "
                            "first type %d at byte %d" % (len(strays), strays[0]["type"], strays[0]["at"]))

    most_slices = max(p["slices"] for p in pictures)
    if most_slices > want_slices:
        over = sum(1 for p in pictures if p["slices"] > want_slices)
        problems.append("%d pictures have more than %d slice(s) (at most %d)" % (over, want_slices, most_slices))

    if want_frames is not None and len(pictures) != want_frames:
        problems.append("%d pictures, expected %d" % (len(pictures), want_frames))
    if want_interval is not None:
        expected = list(range(0, len(pictures), want_interval))
        if idr_pictures != expected:
            problems.append("IDRs at pictures %s, expected every %d (%s)"
                            % (idr_pictures[:12], want_interval, expected[:12]))

    sps = next((u["sps"] for u in units if u["type"] == 7 and u.get("sps")), None)
    report = {
        "ok": not problems,
        "units": len(units),
        "pictures": len(pictures),
        "idr_pictures": idr_pictures,
        "slices_per_picture_max": most_slices,
        "four_byte_start_codes": len(units) - len(short_codes),
        "unit_types": sorted({u["type"] for u in units}),
        "sps": sps,
        "problems": problems,
    }
    return report, 0 if not problems else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("file", help="Annex-B H.264 file, or - for standard input")
    p.add_argument("--slices", type=int, default=1, help="most slices a picture may have (default 1)")
    p.add_argument("--frames", type=int, help="exact number of pictures expected")
    p.add_argument("--idr-interval", type=int, help="an IDR exactly every N pictures, from picture 0")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--hevc", action="store_true", help="the stream is H.265")
    p.add_argument("--not-bare", action="store_true", help="allow SEI, AUD and other units besides parameter sets and slices")
    a = p.parse_args()
    try:
        if a.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(a.file, "rb") as f:
                data = f.read()
    except OSError as e:
        print("annexb-check: %s" % e, file=sys.stderr)
        return 2
    try:
        report, status = check(data, a.slices, a.frames, a.idr_interval, a.hevc, not a.not_bare)
    except ValueError as e:
        report, status = {"ok": False, "problems": ["unparsable: %s" % e]}, 2
    if a.json:
        print(json.dumps(report))
    else:
        for problem in report["problems"]:
            print("annexb-check: " + problem)
        if "pictures" in report:
            print("annexb-check: %s: %d units, %d pictures, IDRs at %s, at most %d slice(s) per picture"
                  % ("OK" if report["ok"] else "FAILED", report["units"], report["pictures"],
                     report["idr_pictures"][:20], report["slices_per_picture_max"]))
    return status


if __name__ == "__main__":
    sys.exit(main())
