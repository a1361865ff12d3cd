#!/usr/bin/env bash
# camrec and ffmpeg side by side on the same raw 1920x1080 YUYV input, same libx264 settings
# (ultrafast, zerolatency, gop 30, 6 Mbit/s with a one-second VBV, NV12 into x264, and one slice per
# picture for every tool: -x264-params sliced-threads=0, which zerolatency would otherwise switch on),
# alternating runs; on the raw H.264 line GStreamer as a third column (rawvideoparse ! videoconvert !
# x264enc sliced-threads=false), when gst-launch-1.0 is installed (apt-get install gstreamer1.0-tools
# gstreamer1.0-plugins-base gstreamer1.0-plugins-ugly). Each H.264 output's slices per picture are
# counted from its NAL units (not by camrec) and must be 1, so the comparison cannot drift.
# Prints CPU seconds, wall time and peak RSS (medians) and the ratios camrec/ffmpeg, for raw H.264 and
# for fragmented MP4 (both writing a fragment at every key frame) and for raw H.265 (libx265 ultrafast,
# zerolatency, closed GOP 30, no B-frames, one frame thread, the same 6 Mbit/s VBV, I420 into x265),
# then both encodings from one input at once (ffmpeg: one decode, two encoders; camrec: one capture, two
# encoders sharing its pool; and the floor: libx264 and libx265 alone, called from C, when gcc and their
# headers are here), then camrec's heap allocations per frame in steady state (from the
# difference between a long and a short run).
#   benchmarks/compare-ffmpeg.sh [FRAMES=300] [RUNS=3]
#   CAMREC_BENCH_ARGS="--threads 2" benchmarks/compare-ffmpeg.sh   (extra camrec options, e.g. its threading)
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-300}
runs=${2:-3}
work=${CAMREC_BENCH_DIR:-/tmp/camrec-bench}
mkdir -p "$work"
command -v /usr/bin/time >/dev/null || { echo "needs GNU time: apt-get install time" >&2; exit 1; }

swift build -c release --product camrec >/dev/null
camrec=$(swift build -c release --show-bin-path)/camrec
input="$work/in-1080p-yuyv-$frames.raw"
if [[ ! -s "$input" ]]; then
  ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v "$frames" -pix_fmt yuyv422 -f rawvideo "$input"
fi
cat "$input" >/dev/null  # warm the page cache so both read from memory

measure() {  # name, command...; appends "wall user sys maxrss_kib" to $work/name.times
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.last" "$@" >/dev/null 2>"$work/$name.err" || { cat "$work/$name.err" >&2; exit 1; }
  cat "$work/$name.last" >>"$work/$name.times"
}
rm -f "$work"/*.times
# The dual line's floor: libx264 and libx265 alone, from C, one picture (benchmarks/encoder-floor.c).
floor=""
if gcc -O2 -o "$work/encoder-floor" benchmarks/encoder-floor.c -lx264 -lx265 2>/dev/null; then floor="$work/encoder-floor"; fi
for ((i = 0; i < runs; i++)); do
  measure ffmpeg ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuyv422 -s 1920x1080 -r 30 -i "$input" \
    -pix_fmt nv12 -c:v libx264 -preset ultrafast -tune zerolatency -x264-params sliced-threads=0 -g 30 -bf 0 \
    -b:v 6M -maxrate 6M -bufsize 6M -f h264 "$work/ffmpeg.h264"
  measure camrec "$camrec" --input "$input" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M ${CAMREC_BENCH_ARGS:-} --overwrite "$work/camrec.h264"
  if command -v gst-launch-1.0 >/dev/null; then
    measure gstreamer gst-launch-1.0 -q filesrc location="$input" ! rawvideoparse width=1920 height=1080 format=yuy2 \
      framerate=30/1 ! videoconvert ! video/x-raw,format=NV12 ! x264enc speed-preset=ultrafast tune=zerolatency \
      sliced-threads=false key-int-max=30 bitrate=6000 vbv-buf-capacity=1000 ! video/x-h264,stream-format=byte-stream \
      ! filesink location="$work/gstreamer.h264"
  fi
  measure ffmpeg-mp4 ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuyv422 -s 1920x1080 -r 30 -i "$input" \
    -pix_fmt nv12 -c:v libx264 -preset ultrafast -tune zerolatency -x264-params sliced-threads=0 -g 30 -bf 0 \
    -b:v 6M -maxrate 6M -bufsize 6M -movflags +frag_keyframe+empty_moov+default_base_moof -f mp4 "$work/ffmpeg.mp4"
  measure camrec-mp4 "$camrec" --input "$input" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M ${CAMREC_BENCH_ARGS:-} --overwrite "$work/camrec.mp4"
  measure ffmpeg-hevc ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuyv422 -s 1920x1080 -r 30 -i "$input" \
    -pix_fmt yuv420p -c:v libx265 -preset ultrafast -tune zerolatency -g 30 -bf 0 -b:v 6M -maxrate 6M -bufsize 6M \
    -x265-params log-level=error:info=0:scenecut=0:open-gop=0:keyint=30:min-keyint=30:repeat-headers=1:frame-threads=1 \
    -f hevc "$work/ffmpeg.h265"
  measure camrec-hevc "$camrec" --input "$input" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M ${CAMREC_BENCH_ARGS:-} --overwrite "$work/camrec.h265"
  measure ffmpeg-dual ffmpeg -nostdin -v error -y -f rawvideo -pix_fmt yuyv422 -s 1920x1080 -r 30 -i "$input" \
    -map 0 -pix_fmt yuv420p -c:v libx264 -preset ultrafast -tune zerolatency -x264-params sliced-threads=0 -g 30 -bf 0 -b:v 6M -maxrate 6M -bufsize 6M \
    -f h264 "$work/ffmpeg-dual.h264" \
    -map 0 -pix_fmt yuv420p -c:v libx265 -preset ultrafast -tune zerolatency -g 30 -bf 0 -b:v 6M -maxrate 6M -bufsize 6M \
    -x265-params log-level=error:info=0:scenecut=0:open-gop=0:keyint=30:min-keyint=30:repeat-headers=1:frame-threads=1 \
    -f hevc "$work/ffmpeg-dual.h265"
  measure camrec-dual "$camrec" --input "$input" --input-format yuyv --size 1920x1080 --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M ${CAMREC_BENCH_ARGS:-} --overwrite "$work/camrec-dual.h264" "$work/camrec-dual.h265"
  [[ -z "$floor" ]] || measure floor-dual "$floor" "$input" "$frames" "$work/floor-dual.h264" "$work/floor-dual.h265"
done

# The same work: every H.264 output has one slice per picture (counted from its start codes here).
python3 - "$work" "$frames" <<'PY' || exit 1
import os, re, sys
work, frames = sys.argv[1], int(sys.argv[2])
bad = 0
for name in ("ffmpeg.h264", "camrec.h264", "gstreamer.h264", "ffmpeg-dual.h264", "camrec-dual.h264", "floor-dual.h264"):
    path = f"{work}/{name}"
    if not os.path.exists(path):
        continue
    data = open(path, "rb").read()
    slices = sum(1 for m in re.finditer(b"\x00\x00\x01", data) if m.end() < len(data) and data[m.end()] & 31 in (1, 5))
    print(f"{name}: {slices} slices for {frames} pictures")
    bad += slices != frames
if bad:
    print("not the same work: some output has more than one slice per picture"); sys.exit(1)
PY

python3 - "$work" "$frames" "$runs" <<'PY'
import os, statistics, sys
work, frames, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(name):
    rows = [list(map(float, l.split())) for l in open(f"{work}/{name}.times")]
    wall = statistics.median(r[0] for r in rows)
    cpu = statistics.median(r[1] + r[2] for r in rows)
    rss = statistics.median(r[3] for r in rows) / 1024
    return wall, cpu, rss
print(f"{frames} frames 1920x1080 YUYV, ultrafast zerolatency gop 30 6M, median of {runs}")
for title, suffix in (("raw H.264 (libx264)", ""), ("fragmented MP4 (libx264)", "-mp4"), ("raw H.265 (libx265)", "-hevc"),
                      ("H.264 and H.265 from one input (libx264 + libx265, I420)", "-dual")):
    fw, fc, fr = load("ffmpeg" + suffix); cw, cc, cr = load("camrec" + suffix)
    print(f"{title}:")
    print(f"  {'':8} {'CPU s':>8} {'wall s':>8} {'peak RSS MiB':>13}")
    print(f"  {'ffmpeg':8} {fc:8.2f} {fw:8.2f} {fr:13.1f}")
    print(f"  {'camrec':8} {cc:8.2f} {cw:8.2f} {cr:13.1f}")
    print(f"  {'ratio':8} {cc/fc:8.2f} {cw/fw:8.2f} {cr/fr:13.2f}   (camrec/ffmpeg; below 1 is better)")
    if suffix == "-dual" and os.path.exists(f"{work}/floor-dual.times"):
        lw, lc, lr = load("floor-dual")
        print(f"  {'floor':8} {lc:8.2f} {lw:8.2f} {lr:13.1f}   (libx264 + libx265 alone from C, one picture: encoder-floor.c)")
        print(f"  {'ratio':8} {lc/fc:8.2f} {lw/fw:8.2f} {lr/fr:13.2f}   (floor/ffmpeg: what the two libraries take by themselves)")
    if suffix == "" and os.path.exists(f"{work}/gstreamer.times"):
        gw, gc, gr = load("gstreamer")
        print(f"  {'gst':8} {gc:8.2f} {gw:8.2f} {gr:13.1f}")
        print(f"  {'ratio':8} {cc/gc:8.2f} {cw/gw:8.2f} {cr/gr:13.2f}   (camrec/GStreamer)")
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
