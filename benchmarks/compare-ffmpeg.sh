#!/usr/bin/env bash
# camrec and ffmpeg side by side on the same raw 1920x1080 YUYV input, same libx264 settings
# (ultrafast, zerolatency, gop 30, 6 Mbit/s with a one-second VBV, NV12 into x264, and one slice per
# picture for every tool: -x264-params sliced-threads=0, which zerolatency would otherwise switch on),
# alternating runs; on the raw H.264 line GStreamer as a third column (rawvideoparse ! videoconvert !
# x264enc sliced-threads=false), when gst-launch-1.0 is installed (apt-get install gstreamer1.0-tools
# gstreamer1.0-plugins-base gstreamer1.0-plugins-ugly), and the floor: libx264 alone, called from C with
# camrec's settings (benchmarks/encoder-floor.c, when gcc and x264.h are here).
# Equal work means one slice per picture and the same thread count (docs/PERFORMANCE.md). So each H.264
# line is printed twice: as each tool comes (camrec's one thread against x264's automatic threads in the
# others, 3 frame threads on 2 cores) and with one libx264 thread in every tool (ffmpeg -threads 1,
# x264enc threads=1, the floor's -t 1; camrec's default). Each H.264 output's slices per picture are
# counted from its NAL units (not by camrec) and must be 1, and in the one-thread runs each tool's libx264
# must have started no thread of its own: threads are read from /proc/PID/task at the peak of the resident
# set (benchmarks/peak-sample.py), and x264's threads carry the name of the thread that opened it.
# Prints CPU seconds, wall time, peak RSS (medians) and threads at the peak, and the ratios, for raw H.264
# and for fragmented MP4 (both writing a fragment at every key frame) and for raw H.265 (libx265 ultrafast,
# zerolatency, closed GOP 30, no B-frames, one frame thread in both, the same 6 Mbit/s VBV, I420 into x265),
# then both encodings from one input at once (ffmpeg: one decode, two encoders; camrec: one capture, two
# encoders sharing its pool; and the floor: libx264 and libx265 alone, from C), then camrec's heap
# allocations per frame in steady state (from the difference between a long and a short run).
#   benchmarks/compare-ffmpeg.sh [FRAMES=300] [RUNS=3]
#   CAMREC_BENCH_ARGS="--threads 2" benchmarks/compare-ffmpeg.sh   (extra camrec options, e.g. its threading)
#   CAMREC=.build/release/camrec benchmarks/compare-ffmpeg.sh        (that binary; builds none)
#   CAMREC_BENCH_LINES="raw mp4" benchmarks/compare-ffmpeg.sh       (these lines only: raw mp4 hevc dual)
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-300}
runs=${2:-3}
work=${CAMREC_BENCH_DIR:-/tmp/camrec-bench}
mkdir -p "$work"

if [[ -n "${CAMREC:-}" ]]; then
  camrec=$CAMREC   # a binary built already, e.g. with the tests' flags (CAMREC_TESTABLE=1)
else
  swift build -c release --product camrec >/dev/null
  camrec=$(swift build -c release --show-bin-path)/camrec
fi
input="$work/in-1080p-yuyv-$frames.raw"
if [[ ! -s "$input" ]]; then
  ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v "$frames" -pix_fmt yuyv422 -f rawvideo "$input"
fi
cat "$input" >/dev/null  # warm the page cache so both read from memory

measure() {  # name, command...; appends "wall user sys maxrss_kib threads_at_peak max_threads names" to $work/name.times
  local name=$1; shift
  python3 benchmarks/peak-sample.py "$work/$name.last" -- "$@" || { cat "$work/$name.last.err" >&2; exit 1; }
  cat "$work/$name.last" >>"$work/$name.times"
}
rm -f "$work"/*.times
# The floors: libx264 alone with camrec's settings, and libx264 + libx265 for the dual line, from C, one
# picture (benchmarks/encoder-floor.c); the single one links libx264 only.
floor="" floor_dual=""
if gcc -O2 -DFLOOR_X264_ONLY -o "$work/encoder-floor" benchmarks/encoder-floor.c -lx264 2>/dev/null; then floor="$work/encoder-floor"; fi
if gcc -O2 -o "$work/encoder-floor-dual" benchmarks/encoder-floor.c -lx264 -lx265 2>/dev/null; then floor_dual="$work/encoder-floor-dual"; fi
gst=""; command -v gst-launch-1.0 >/dev/null && gst=gst-launch-1.0
lines=" ${CAMREC_BENCH_LINES:-raw mp4 hevc dual} "
line() { [[ $lines == *" $1 "* ]]; }
for ((i = 0; i < runs; i++)); do
  # Each tool as it comes (x264's automatic threads in ffmpeg, GStreamer and the floor), then one thread each.
  for threads in 0 1; do
    suffix=$([[ $threads == 1 ]] && echo "-t1" || true)
    line raw && measure ffmpeg$suffix ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuyv422 -s 1920x1080 -r 30 -i "$input" \
      -pix_fmt nv12 -c:v libx264 -threads $threads -preset ultrafast -tune zerolatency -x264-params sliced-threads=0 -g 30 -bf 0 \
      -b:v 6M -maxrate 6M -bufsize 6M -f h264 "$work/ffmpeg$suffix.h264"
    [[ -z "$gst" ]] || ! line raw || measure gstreamer$suffix gst-launch-1.0 -q filesrc location="$input" ! rawvideoparse width=1920 height=1080 \
      format=yuy2 framerate=30/1 ! videoconvert ! video/x-raw,format=NV12 ! x264enc threads=$threads speed-preset=ultrafast \
      tune=zerolatency sliced-threads=false key-int-max=30 bitrate=6000 vbv-buf-capacity=1000 ! video/x-h264,stream-format=byte-stream \
      ! filesink location="$work/gstreamer$suffix.h264"
    if [[ -n "$floor" ]] && { line raw || line mp4; }; then
      measure floor$suffix "$floor" -t $threads "$input" "$frames" "$work/floor$suffix.h264"
    fi
    line mp4 && measure ffmpeg-mp4$suffix ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuyv422 -s 1920x1080 -r 30 -i "$input" \
      -pix_fmt nv12 -c:v libx264 -threads $threads -preset ultrafast -tune zerolatency -x264-params sliced-threads=0 -g 30 -bf 0 \
      -b:v 6M -maxrate 6M -bufsize 6M -movflags +frag_keyframe+empty_moov+default_base_moof -f mp4 "$work/ffmpeg$suffix.mp4"
    line dual && measure ffmpeg-dual$suffix ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuyv422 -s 1920x1080 -r 30 -i "$input" \
      -map 0 -pix_fmt yuv420p -c:v libx264 -threads $threads -preset ultrafast -tune zerolatency -x264-params sliced-threads=0 -g 30 -bf 0 \
      -b:v 6M -maxrate 6M -bufsize 6M -f h264 "$work/ffmpeg-dual$suffix.h264" \
      -map 0 -pix_fmt yuv420p -c:v libx265 -preset ultrafast -tune zerolatency -g 30 -bf 0 -b:v 6M -maxrate 6M -bufsize 6M \
      -x265-params log-level=error:info=0:scenecut=0:open-gop=0:keyint=30:min-keyint=30:repeat-headers=1:frame-threads=1 \
      -f hevc "$work/ffmpeg-dual$suffix.h265"
    [[ -z "$floor_dual" ]] || ! line dual || measure floor-dual$suffix "$floor_dual" -t $threads "$input" "$frames" "$work/floor-dual$suffix.h264" "$work/floor-dual$suffix.h265"
  done
  # camrec runs once a round: one libx264 thread is its default, so it belongs to both tables.
  line raw && measure camrec "$camrec" --input "$input" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M ${CAMREC_BENCH_ARGS:-} --overwrite "$work/camrec.h264"
  line mp4 && measure camrec-mp4 "$camrec" --input "$input" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M ${CAMREC_BENCH_ARGS:-} --overwrite "$work/camrec.mp4"
  line hevc && measure ffmpeg-hevc ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuyv422 -s 1920x1080 -r 30 -i "$input" \
    -pix_fmt yuv420p -c:v libx265 -preset ultrafast -tune zerolatency -g 30 -bf 0 -b:v 6M -maxrate 6M -bufsize 6M \
    -x265-params log-level=error:info=0:scenecut=0:open-gop=0:keyint=30:min-keyint=30:repeat-headers=1:frame-threads=1 \
    -f hevc "$work/ffmpeg.h265"
  line hevc && measure camrec-hevc "$camrec" --input "$input" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M ${CAMREC_BENCH_ARGS:-} --overwrite "$work/camrec.h265"
  line dual && measure camrec-dual "$camrec" --input "$input" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M ${CAMREC_BENCH_ARGS:-} --overwrite "$work/camrec-dual.h264" "$work/camrec-dual.h265"
done

# The same work: every H.264 output has one slice per picture (counted from its start codes here), and in
# the one-thread runs no tool's libx264 started threads: the thread that opened it is alone with its name.
python3 - "$work" "$frames" <<'PY' || exit 1
import glob, os, re, sys
work, frames = sys.argv[1], int(sys.argv[2])
bad = 0
for path in sorted(glob.glob(f"{work}/*.h264")):
    name = os.path.basename(path)
    if name.startswith("allocs"):
        continue
    data = open(path, "rb").read()
    slices = sum(1 for m in re.finditer(b"\x00\x00\x01", data) if m.end() < len(data) and data[m.end()] & 31 in (1, 5))
    print(f"{name}: {slices} slices for {frames} pictures")
    bad += slices != frames
# The thread that opens libx264, by tool (its threads inherit this name): camrec opens its encoders on
# its recording thread, GStreamer on the source pad's streaming thread (the name is cut at 15 bytes).
opener = {"camrec": "recording", "ffmpeg-t1": "ffmpeg", "ffmpeg-mp4-t1": "ffmpeg", "gstreamer-t1": "rawvideoparse0:",
          "floor-t1": "encoder-floor"}
for tool, name in opener.items():
    if not os.path.exists(f"{work}/{tool}.times"):
        continue
    for row in open(f"{work}/{tool}.times"):
        names = dict(n.rsplit("*", 1) for n in row.split()[6].split(",") if "*" in n)
        count = int(names.get(name, 0))
        if count != 1:
            print(f"{tool}: {count} threads named {name!r} at the peak ({row.split()[6]}): libx264 is not on one thread")
            bad += 1
# The floor is camrec's work exactly: the same NAL units but for x264's version SEI, which camrec leaves out.
def nal_units(path):
    data = open(path, "rb").read()
    starts = [m.end() for m in re.finditer(b"\x00\x00\x01", data)]
    units = [data[s:(starts[i + 1] - 3 if i + 1 < len(starts) else len(data))].rstrip(b"\x00") for i, s in enumerate(starts)]
    return [u for u in units if u and u[0] & 31 != 6]
if all(os.path.exists(f"{work}/{n}") for n in ("floor-t1.h264", "camrec.h264")) and not os.environ.get("CAMREC_BENCH_ARGS"):
    same = nal_units(f"{work}/floor-t1.h264") == nal_units(f"{work}/camrec.h264")
    print(f"floor-t1.h264 and camrec.h264: {'the same NAL units but for SEI' if same else 'DIFFERENT NAL units'}")
    bad += not same
if bad:
    print("not the same work: some output has more than one slice per picture, or more than one libx264 thread,"
          " or the floor encodes other than camrec"); sys.exit(1)
print("every H.264 output: one slice per picture; every one-thread run: libx264 on the thread that opened it, alone")
PY

python3 - "$work" "$frames" "$runs" <<'PY'
import os, statistics, sys
work, frames, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(name):
    if not os.path.exists(f"{work}/{name}.times"):
        return None
    rows = [l.split() for l in open(f"{work}/{name}.times")]
    wall = statistics.median(float(r[0]) for r in rows)
    cpu = statistics.median(float(r[1]) + float(r[2]) for r in rows)
    rss = statistics.median(float(r[3]) for r in rows) / 1024
    threads = "/".join(sorted({r[4] for r in rows}))
    return wall, cpu, rss, threads
def table(title, rows, camrec):
    if camrec is None:
        return
    print(f"{title}:")
    print(f"  {'':10} {'CPU s':>7} {'wall s':>7} {'peak RSS MiB':>13} {'threads':>8}   camrec/this: CPU, peak RSS")
    cw, cc, cr, _ = camrec
    for label, row, note in rows:
        if row is None:
            continue
        w, c, r, t = row
        ratio = "" if label == "camrec" else f"{cc / c:5.2f} {cr / r:6.2f}   (camrec {cr - r:+.1f} MiB)"
        print(f"  {label:10} {c:7.2f} {w:7.2f} {r:13.1f} {t:>8}   {ratio}{note}")
print(f"{frames} frames 1920x1080 YUYV, ultrafast zerolatency gop 30 6M, one slice per picture, median of {runs};")
print("threads: the process's threads at its peak resident set (/proc/PID/task)")
camrec = load("camrec")
auto = " (x264's automatic threads)"
table("raw H.264 (libx264), each tool as it comes (camrec: one libx264 thread, its default)",
      [("ffmpeg", load("ffmpeg"), auto), ("gstreamer", load("gstreamer"), auto), ("camrec", camrec, ""),
       ("floor", load("floor"), auto + ": libx264 alone from C")], camrec)
table("raw H.264 (libx264), one libx264 thread in every tool (ffmpeg -threads 1, x264enc threads=1)",
      [("ffmpeg", load("ffmpeg-t1"), ""), ("gstreamer", load("gstreamer-t1"), ""), ("camrec", camrec, ""),
       ("floor", load("floor-t1"), ": libx264 alone from C, camrec's settings")], camrec)
mp4 = load("camrec-mp4")
table("fragmented MP4 (libx264), as it comes", [("ffmpeg", load("ffmpeg-mp4"), auto), ("camrec", mp4, "")], mp4)
table("fragmented MP4 (libx264), one libx264 thread in every tool",
      [("ffmpeg", load("ffmpeg-mp4-t1"), ""), ("camrec", mp4, ""), ("floor", load("floor-t1"), ": the raw line's floor")], mp4)
hevc = load("camrec-hevc")
table("raw H.265 (libx265: one frame thread and x265's own wavefront pool in both)",
      [("ffmpeg", load("ffmpeg-hevc"), ""), ("camrec", hevc, "")], hevc)
dual = load("camrec-dual")
table("H.264 and H.265 from one input (libx264 + libx265, I420), as it comes",
      [("ffmpeg", load("ffmpeg-dual"), auto), ("camrec", dual, ""), ("floor", load("floor-dual"), auto + ": both libraries alone from C")], dual)
table("H.264 and H.265 from one input, one libx264 thread in every tool",
      [("ffmpeg", load("ffmpeg-dual-t1"), ""), ("camrec", dual, ""), ("floor", load("floor-dual-t1"), ": both libraries alone from C")], dual)
PY

# Heap allocations per frame in steady state: run twice with different lengths and divide the difference.
gcc -O2 -shared -fPIC -o "$work/malloc-count.so" benchmarks/malloc-count.c
count_allocs() {
  MALLOC_COUNT_OUT="$work/allocs.$1" LD_PRELOAD="$work/malloc-count.so" "$camrec" --input "$input" --input-format yuyv \
    --size 1920x1080 --fps 30 --keyframe-interval 30 --preset ultrafast --bitrate 6M --frames "$1" --overwrite "$work/allocs.h264" 2>/dev/null
  cat "$work/allocs.$1"
}
short=$((frames / 3)); long=$frames
read -r sc sb slc slb < <(count_allocs "$short")
read -r lc lb llc llb < <(count_allocs "$long")
python3 - "$short" "$long" "$sc" "$sb" "$slc" "$slb" "$lc" "$lb" "$llc" "$llb" <<'PY'
import sys
s, l, sc, sb, slc, slb, lc, lb, llc, llb = map(int, sys.argv[1:])
n = l - s
print(f"camrec heap allocations per frame in steady state (frames {s}..{l}, whole process incl. libx264):")
print(f"  all: {(lc-sc)/n:.1f} calls, {(lb-sb)/n/1024:.1f} KiB;  >= 64 KiB (could be frame memory): {(llc-slc)/n:.2f} calls, {(llb-slb)/n/1024:.1f} KiB")
PY
