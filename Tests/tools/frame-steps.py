#!/usr/bin/python3
"""Which camera frames a video holds, measured from its pictures, for the tests.

vivid's test pattern (colour bars) can move sideways by a fixed number of pixels every frame
the driver generates, whether or not anyone receives that frame (control horizontal_movement).
So the shift between two consecutive decoded pictures says how many camera frames lie between
them: one step means the next frame, two steps one frame missing, zero a repeated frame, a
negative step frames out of order. This reads one luma row from the middle of every picture
(decoded by ffmpeg, or raw frames as v4l2-ctl saves them) and measures each shift, sharing no
code with camrec.

Exit status: 0 when every step is as expected (--step, --missing), 1 when not, 2 on bad input.
"""
import argparse
import json
import subprocess
import sys


def rows_from_video(path):
    """The middle luma row of every picture ffmpeg decodes from `path`, and the width."""
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                            "stream=width,height", "-of", "csv=p=0", path],
                           capture_output=True, text=True, check=True)
    width, height = (int(v) for v in probe.stdout.split()[0].split(",")[:2])
    raw = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", path, "-vf",
                          f"format=gray,crop={width}:1:0:{height // 2}", "-f", "rawvideo", "-"],
                         capture_output=True, check=True).stdout
    return [raw[i:i + width] for i in range(0, len(raw) - width + 1, width)], width


def rows_from_yuyv(path, width, height):
    """The middle luma row of every YUYV frame in a raw file (v4l2-ctl --stream-to)."""
    frame = width * height * 2
    data = open(path, "rb").read()
    start = (height // 2) * width * 2
    return [data[f + start:f + start + 2 * width:2] for f in range(0, len(data) - frame + 1, frame)], width


def mean_difference(previous, current, shift, width):
    """Mean absolute luma difference between `current` and `previous` moved right by `shift`."""
    total = 0
    for x in range(0, width, 2):  # every other pixel is plenty for bars 1/8 of the width wide
        total += abs(current[x] - previous[(x - shift) % width])
    return total / ((width + 1) // 2)


def edges(row, width):
    """Positions where the luma jumps, i.e. the borders between colour bars."""
    return [x for x in range(width) if abs(row[(x + 1) % width] - row[x]) > 24]


def step(previous, current, width):
    """The shift (pixels, -width/2 < s <= width/2) that best maps `previous` onto `current`,
    and how well it fits (mean absolute difference, 0 = exact)."""
    before, after = edges(previous, width), edges(current, width)
    candidates = {0}
    if before:
        anchor = before[0]
        candidates.update((e - anchor) % width for e in after)
    best = min(candidates, key=lambda s: mean_difference(previous, current, s, width))
    fit = mean_difference(previous, current, best, width)
    if best > width // 2:
        best -= width
    return best, fit


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="H.264 (or any video ffmpeg reads), or raw YUYV with --yuyv WxH")
    parser.add_argument("--yuyv", metavar="WxH", help="the file is raw YUYV frames of this size")
    parser.add_argument("--step", type=int, help="pixels the pattern moves per camera frame")
    parser.add_argument("--missing", type=int, default=0,
                        help="camera frames expected missing in all (with --step; default 0)")
    parser.add_argument("--at-most", action="store_true",
                        help="--missing is an upper bound, not an exact count (drops after the last "
                             "picture leave no trace in the pictures)")
    parser.add_argument("--trailing", type=int, default=0, metavar="K",
                        help="up to K of the --missing frames may be after the last picture: between "
                             "--missing minus K and --missing are missing between pictures")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    args = parser.parse_args()
    try:
        if args.yuyv:
            w, h = (int(v) for v in args.yuyv.split("x"))
            rows, width = rows_from_yuyv(args.file, w, h)
        else:
            rows, width = rows_from_video(args.file)
    except (OSError, ValueError, IndexError, subprocess.CalledProcessError) as error:
        print(f"frame-steps: cannot read {args.file}: {error}", file=sys.stderr)
        return 2
    steps, worst_fit = [], 0.0
    for previous, current in zip(rows, rows[1:]):
        s, fit = step(previous, current, width)
        steps.append(s)
        worst_fit = max(worst_fit, fit)
    report = {"frames": len(rows), "width": width, "steps": steps, "worst_fit": round(worst_fit, 2)}
    problems = []
    # A fit above 6 levels means no shift explains the picture (not the moving bars, or broken).
    if worst_fit > 6:
        problems.append(f"a picture matches no shift of the one before (mean difference {worst_fit:.1f})")
    if args.step:
        missing = 0
        for i, s in enumerate(steps):
            if s <= 0 or s % args.step:
                problems.append(f"picture {i + 1}: moved {s} px after picture {i} (one frame = {args.step} px)")
            else:
                missing += s // args.step - 1
        report["missing"] = missing
        least = 0 if args.at_most else max(0, args.missing - args.trailing)
        if not least <= missing <= args.missing:
            expected = (f"at most {args.missing}" if args.at_most
                        else f"{least} to {args.missing}" if least < args.missing else f"{args.missing}")
            problems.append(f"{missing} camera frames missing between pictures, expected {expected}")
    report["problems"] = problems
    if args.json:
        print(json.dumps(report))
    else:
        counts = {}
        for s in steps:
            counts[s] = counts.get(s, 0) + 1
        print(f"{len(rows)} pictures, steps (px: times) {counts}, worst fit {worst_fit:.2f}"
              + (f", {report['missing']} frames missing" if "missing" in report else ""))
        for p in problems[:10]:
            print("  " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
