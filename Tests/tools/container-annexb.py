#!/usr/bin/env python3
"""Takes the H.264 or H.265 out of an MP4, QuickTime, Matroska or MPEG-TS file as Annex-B, for the tests.

It shares no code with camrec. ffmpeg copies the video packets out unchanged (`-f data`: no
bitstream filter, so nothing is added or rewritten); this script then reads them itself:

  * length-prefixed packets (MP4, QuickTime, Matroska) get every 4-byte length replaced by the
    4-byte start code 00 00 00 01, so Tests/tools/annexb-check.py can judge the in-band stream;
  * Annex-B packets (MPEG-TS) are copied as they are, but for the access unit delimiters the TS carriage
    puts at the head of every access unit (ISO/IEC 13818-1 asks for them; libavformat's muxer adds one
    where a packet has none): they belong to the container, not to the stream camrec wrote, and are
    counted in "delimiters_removed";
  * the sample entry (avcC or hvcC / CodecPrivate, from ffprobe's extradata; which one by ffprobe's
    codec_name) is parsed: its length size, and whether its parameter sets (SPS PPS, or VPS SPS
    PPS) are byte for byte the first in-band ones.

Usage: container-annexb.py FILE OUT
Prints one JSON object: codec, layout, entry (or null: name, length_size, a count per kind),
entry_matches_inband, nal_units.
Exit status: 0, or 2 when ffmpeg fails or the packets cannot be walked.
"""
import json
import re
import subprocess
import sys


def extradata(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_streams", "-show_data", path],
                         capture_output=True, text=True).stdout
    lines = out.split("\n")
    data = bytearray()
    if "extradata=" not in lines:
        return bytes()
    for line in lines[lines.index("extradata=") + 1:]:
        m = re.match(r"^[0-9a-f]{8}: ((?:[0-9a-f]{2,4} ?)+)", line)
        if not m:
            break
        data += bytes.fromhex(m.group(1).replace(" ", ""))
    return bytes(data)


def parse_avcc(data):
    """avcC (ISO/IEC 14496-15 5.3.3.1): version, profile, compat, level, length size, SPSs, PPSs."""
    if len(data) < 7 or data[0] != 1:
        return None
    length_size = (data[4] & 3) + 1
    pos, sets = 5, {"sps": [], "pps": []}
    for kind, mask in (("sps", 0x1F), ("pps", 0xFF)):
        count = data[pos] & mask
        pos += 1
        for _ in range(count):
            size = int.from_bytes(data[pos:pos + 2], "big")
            sets[kind].append(data[pos + 2:pos + 2 + size])
            pos += 2 + size
    return {"name": "avcC", "length_size": length_size, "sets": sets}


def parse_hvcc(data):
    """hvcC (ISO/IEC 14496-15 8.3.3.1): 22 bytes of fields (length size in byte 21), then arrays of
    NAL units, each array a type byte, a 16-bit count and 16-bit-length units."""
    if len(data) < 23 or data[0] != 1:
        return None
    pos, sets = 23, {"vps": [], "sps": [], "pps": []}
    for _ in range(data[22]):
        kind = {32: "vps", 33: "sps", 34: "pps"}.get(data[pos] & 0x3F)
        count = int.from_bytes(data[pos + 1:pos + 3], "big")
        pos += 3
        for _ in range(count):
            size = int.from_bytes(data[pos:pos + 2], "big")
            if kind:
                sets[kind].append(data[pos + 2:pos + 2 + size])
            pos += 2 + size
    return {"name": "hvcC", "length_size": (data[21] & 3) + 1, "sets": sets}


def codec_name(path):
    # MPEG-TS lists the stream once per program too: the first line names it.
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name",
                          "-of", "csv=p=0", path], capture_output=True, text=True).stdout.split()
    return out[0] if out else ""


def kind_of(unit, hevc):
    if hevc:
        return {32: "vps", 33: "sps", 34: "pps"}.get((unit[0] >> 1) & 0x3F)
    return {7: "sps", 8: "pps"}.get(unit[0] & 0x1F)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, out_path = sys.argv[1], sys.argv[2]
    run = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-c", "copy", "-f", "data", "-"],
                         capture_output=True)
    if run.returncode != 0 or not run.stdout:
        print(json.dumps({"error": "ffmpeg could not copy the video out: " + run.stderr.decode(errors="replace")[-200:]}))
        sys.exit(2)
    payload = run.stdout
    codec = codec_name(path)
    hevc = codec == "hevc"
    entry = (parse_hvcc if hevc else parse_avcc)(extradata(path))
    units = []
    removed = 0
    if payload.startswith(b"\x00\x00\x00\x01") or payload.startswith(b"\x00\x00\x01"):
        layout, kept = "annexb", []
        for piece in payload.split(b"\x00\x00\x00\x01")[1:]:
            aud = ((piece[0] >> 1) & 0x3F) == 35 if hevc else (piece[0] & 0x1F) == 9
            if piece and aud:
                removed += 1
                continue
            kept.append(b"\x00\x00\x00\x01" + piece)
        annexb = b"".join(kept)
    else:
        layout, pos, size_bytes = "length-prefixed", 0, (entry or {}).get("length_size", 4)
        parts = []
        while pos < len(payload):
            size = int.from_bytes(payload[pos:pos + size_bytes], "big")
            if size == 0 or pos + size_bytes + size > len(payload):
                print(json.dumps({"error": f"a NAL length of {size} at byte {pos} runs past the data ({len(payload)} bytes)"}))
                sys.exit(2)
            unit = payload[pos + size_bytes:pos + size_bytes + size]
            units.append(unit)
            parts += [b"\x00\x00\x00\x01", unit]
            pos += size_bytes + size
        annexb = b"".join(parts)
    with open(out_path, "wb") as f:
        f.write(annexb)
    matches = None
    if entry is not None and units:
        matches = all(entry["sets"][kind][:1] == [next((u for u in units if kind_of(u, hevc) == kind), None)]
                      for kind in entry["sets"])
    print(json.dumps({"codec": codec, "layout": layout,
                      "entry": None if entry is None else dict({"name": entry["name"], "length_size": entry["length_size"]},
                                                               **{k: len(v) for k, v in entry["sets"].items()}),
                      "entry_matches_inband": matches, "nal_units": len(units), "delimiters_removed": removed}))

if __name__ == "__main__":
    main()
