#!/usr/bin/env python3
"""Reads a live HLS media playlist of fMP4 segments and every segment it lists, and reports what they
hold, as one line of JSON (the standard library, ffprobe and Tests/tools/pattern-counters.py only):

  hls-check.py PLAYLIST_URL WORKDIR FPS

"content_type", "version", "target" (EXT-X-TARGETDURATION), "media_sequence", "segments" (how many),
"numbered" (each URI's number is MEDIA-SEQUENCE plus its place), "map" (the EXT-X-MAP URI),
"over_target" (segments whose EXTINF rounded exceeds the target), and for the segments, each read
as the init segment followed by the segment: "first_key" (how many begin with a key frame, by
ffprobe), "frames" (by the burned-in numbers), "gaps" (places where a number is not the one before
plus 1, inside or across segments), "unreadable" (numbers not found), "extinf_error_ms" (largest
|EXTINF - (last number - first number + 1)/FPS|), "pdt_error_ms" (largest |PDT difference - frame number difference / FPS|
between consecutive segments), "live_age" (seconds from the end of the newest segment, by its
PROGRAM-DATE-TIME and EXTINF, to the moment the playlist was fetched, on this machine's clock).
The numbers read, in order, go to WORKDIR/numbers (one a line).
"""
import datetime, json, os, subprocess, sys, time, urllib.parse, urllib.request

TOOLS = os.path.dirname(os.path.abspath(__file__))


def fetch(url):
    with urllib.request.urlopen(url, timeout=15) as r:
        return r.headers.get("Content-Type", ""), r.read()


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    url, work, fps = sys.argv[1], sys.argv[2], float(sys.argv[3])
    os.makedirs(work, exist_ok=True)
    content_type, body = fetch(url)
    fetched_at = time.time()
    lines = body.decode().splitlines()
    tags, segments, pending = {}, [], {}
    for line in lines:
        if line.startswith("#EXT-X-PROGRAM-DATE-TIME:"):
            pending["pdt"] = datetime.datetime.fromisoformat(line.split(":", 1)[1].replace("Z", "+00:00")).timestamp()
        elif line.startswith("#EXTINF:"):
            pending["extinf"] = float(line.split(":", 1)[1].split(",")[0])
        elif line.startswith("#EXT-X-MAP:"):
            tags["map"] = line.split('URI="', 1)[1].split('"')[0]
        elif line.startswith("#EXT") and ":" in line:
            k, v = line[1:].split(":", 1)
            tags[k] = v
        elif line and not line.startswith("#"):
            segments.append(dict(pending, uri=line))
            pending = {}
    report = {"content_type": content_type, "first_line": lines[0] if lines else None,
              "version": tags.get("EXT-X-VERSION"), "target": int(tags.get("EXT-X-TARGETDURATION", "0")),
              "media_sequence": int(tags.get("EXT-X-MEDIA-SEQUENCE", "-1")), "map": tags.get("map"),
              "segments": len(segments)}
    report["numbered"] = all(os.path.basename(s["uri"]).split(".")[0] == str(report["media_sequence"] + i)
                             for i, s in enumerate(segments))
    report["over_target"] = sum(1 for s in segments if round(s.get("extinf", 1e9)) > report["target"])
    # Every file first, at once, before the window moves on; then the reading.
    _, init = fetch(urllib.parse.urljoin(url, tags["map"]))
    bodies = [fetch(urllib.parse.urljoin(url, s["uri"]))[1] for s in segments]
    first_key = frames = gaps = unreadable = 0
    extinf_error = pdt_error = 0.0
    previous_last, previous = None, None
    every = []
    for i, s in enumerate(segments):
        data = bodies[i]
        path = os.path.join(work, f"segment-{i}.mp4")
        with open(path, "wb") as f:
            f.write(init + data)
        flags = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=flags",
                                "-read_intervals", "%+#1", "-of", "csv=p=0", path], capture_output=True, text=True).stdout
        first_key += flags.startswith("K")
        numbers = subprocess.run([sys.executable, os.path.join(TOOLS, "pattern-counters.py"), path],
                                 capture_output=True, text=True).stdout.split()
        unreadable += numbers.count("?")
        values = [int(n) for n in numbers if n != "?"]
        if not values:
            continue
        frames += len(values)
        every += values
        for a, b in zip([previous_last] + values, values):
            if a is not None and b != a + 1:
                gaps += 1
        # By the numbers, not the count: a frame the recording dropped leaves its time in the segment.
        extinf_error = max(extinf_error, abs(s["extinf"] - (values[-1] - values[0] + 1) / fps))
        if previous is not None:
            pdt_error = max(pdt_error, abs((s["pdt"] - previous["pdt"]) - (values[0] - previous["first"]) / fps))
        previous = dict(s, first=values[0])
        previous_last = values[-1]
    with open(os.path.join(work, "numbers"), "w") as f:
        f.write("".join(f"{n}\n" for n in every))
    newest = segments[-1] if segments else None
    report.update(first_key=first_key, frames=frames, gaps=gaps, unreadable=unreadable,
                  extinf_error_ms=round(extinf_error * 1000), pdt_error_ms=round(pdt_error * 1000),
                  live_age=round(fetched_at - newest["pdt"] - newest["extinf"], 3) if newest else None)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
