#!/usr/bin/env bash
# An MJPEG camera's path without a camera: the same 1920x1080 JPEGs (4:2:2, as UVC webcams send them)
# decoded and encoded to H.264 by camrec (--input-format mjpeg: libjpeg-turbo's raw planes a strip at a
# time, one pass into NV12, libx264), ffmpeg (-f mjpeg, its mjpeg decoder, swscale to NV12, libx264) and
# GStreamer (jpegparse ! jpegdec ! videoconvert ! x264enc), alternating runs, in two rows:
# - equal work: the same JPEGs, the same x264 settings (ultrafast, zerolatency, GOP 30, 6 Mbit/s with a
#   one-second VBV), one slice per picture and one thread everywhere (camrec's default; ffmpeg -threads 1
#   for the decoder and for x264; jpegdec has one, x264enc threads=1), and the accurate integer IDCT
#   everywhere (jpegdec idct-method=islow: its default is the faster, less accurate ifast). Each output's
#   slices per picture are counted from its NAL units and must be 1, and its pictures must be FRAMES;
# - each tool as it comes: camrec's defaults (one thread: the equal row's run), ffmpeg and GStreamer with
#   their automatic threads and defaults (x264's sliced threads, so several slices a picture; jpegdec's
#   ifast IDCT), the same x264 settings otherwise. Pictures must be FRAMES; slices are shown.
# And the floor, when gcc, libjpeg and libx264's headers are there: benchmarks/mjpeg-floor.c, libjpeg-turbo
# and libx264 alone from C doing camrec's work on one thread.
# Prints CPU seconds (user+sys), wall time and peak RSS (medians), and camrec's CPU against each.
#   benchmarks/compare-mjpeg.sh [FRAMES=300] [RUNS=3]
# Needs GNU time, gst-launch-1.0 with gstreamer1.0-plugins-good (jpegdec), -bad (jpegparse) and -ugly (x264enc).
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-300}
runs=${2:-3}
work=${CAMREC_BENCH_DIR:-/tmp/camrec-bench}
mkdir -p "$work"
command -v /usr/bin/time >/dev/null || { echo "needs GNU time: apt-get install time" >&2; exit 1; }
gst-inspect-1.0 x264enc >/dev/null 2>&1 && gst-inspect-1.0 jpegparse >/dev/null 2>&1 ||
  { echo "needs GStreamer's jpegparse and x264enc: apt-get install gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly" >&2; exit 1; }

camrec=${CAMREC:-$(swift build -c release --show-bin-path)/camrec}
input="$work/in-1080p-$frames.mjpeg"
if [[ ! -s "$input" ]]; then
  ffmpeg -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v "$frames" -pix_fmt yuvj422p -q:v 3 -f mjpeg "$input"
fi
cat "$input" >/dev/null  # warm the page cache so every tool reads from memory
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

measure() {  # name, command...; appends "wall user sys maxrss_kib" to $work/name.times
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.last" "$@" >/dev/null 2>"$work/$name.err" || { cat "$work/$name.err" >&2; exit 1; }
  cat "$work/$name.last" >>"$work/$name.times"
}
# The floor: libjpeg-turbo and libx264 alone, from C (benchmarks/mjpeg-floor.c). Built with clang (the Swift
# toolchain has one) where there is one: gcc 12 leaves its conversion rows scalar (SSE2 has no 32-bit lane
# multiply; LLVM uses 16-bit high multiplies, as for camrec's pass), 0.4-0.5 s slower per 300 frames.
floor=""
for cc in clang /opt/swift/usr/bin/clang gcc; do
  if command -v "$cc" >/dev/null && "$cc" -O2 -o "$work/mjpeg-floor" benchmarks/mjpeg-floor.c -ljpeg -lx264 2>/dev/null; then
    floor="$work/mjpeg-floor"; floor_cc=$cc; break
  fi
done
x264_settings=(-preset ultrafast -tune zerolatency -g 30 -bf 0 -b:v 6M -maxrate 6M -bufsize 6M)
gst_x264="speed-preset=ultrafast tune=zerolatency key-int-max=30 bitrate=6000 vbv-buf-capacity=1000"
rm -f "$work"/mj-*.times
for ((i = 0; i < runs; i++)); do
  measure mj-ffmpeg ffmpeg -nostdin -v error -y -threads 1 -f mjpeg -framerate 30 -i "$input" \
    -pix_fmt nv12 -c:v libx264 -threads 1 "${x264_settings[@]}" -x264-params sliced-threads=0 -f h264 "$work/mj-ffmpeg.h264"
  measure mj-camrec "$camrec" --input "$input" --input-format mjpeg --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M --threads 1 --overwrite "$work/mj-camrec.h264"
  measure mj-gstreamer gst-launch-1.0 -q filesrc location="$input" ! image/jpeg,framerate=30/1 ! jpegparse ! jpegdec idct-method=islow \
    ! videoconvert ! video/x-raw,format=NV12 ! x264enc threads=1 sliced-threads=false $gst_x264 \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$work/mj-gstreamer.h264"
  # As they come: no thread options at all.
  measure mj-ffmpeg-auto ffmpeg -nostdin -v error -y -f mjpeg -framerate 30 -i "$input" \
    -pix_fmt nv12 -c:v libx264 "${x264_settings[@]}" -f h264 "$work/mj-ffmpeg-auto.h264"
  measure mj-gstreamer-auto gst-launch-1.0 -q filesrc location="$input" ! image/jpeg,framerate=30/1 ! jpegparse ! jpegdec \
    ! videoconvert ! video/x-raw,format=NV12 ! x264enc $gst_x264 \
    ! video/x-h264,stream-format=byte-stream ! filesink location="$work/mj-gstreamer-auto.h264"
  [[ -z $floor ]] || measure mj-floor "$floor" "$input" "$work/mj-floor.h264"
done

# Slices per picture and pictures, from the NAL units (type 1 or 5 with first_mb_in_slice 0 starts a picture).
slices() {
  python3 - "$1" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
slices = pictures = 0
i = d.find(b"\x00\x00\x01")
while i >= 0:
    t = d[i + 3] & 0x1F
    if t in (1, 5):
        slices += 1
        if d[i + 4] & 0x80:   # ue(first_mb_in_slice) == 0 is the single bit 1
            pictures += 1
    i = d.find(b"\x00\x00\x01", i + 3)
print(slices, pictures)
PY
}
for tool in ffmpeg camrec gstreamer ${floor:+floor}; do
  read -r s p < <(slices "$work/mj-$tool.h264")
  [[ $s == "$frames" && $p == "$frames" ]] || { echo "$tool: $s slices in $p pictures, not $frames in $frames" >&2; exit 1; }
done
declare -A per_picture
for tool in ffmpeg-auto gstreamer-auto; do
  read -r s p < <(slices "$work/mj-$tool.h264")
  [[ $p == "$frames" ]] || { echo "$tool: $p pictures, not $frames" >&2; exit 1; }
  per_picture[$tool]=$(awk -v s="$s" -v p="$p" 'BEGIN { printf "%.2g", s / p }')
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
stat_of() {  # name, field (cpu, wall, rss)
  case $2 in
    cpu) awk '{ print $2 + $3 }' "$work/$1.times" | median ;;
    wall) awk '{ print $1 }' "$work/$1.times" | median ;;
    rss) awk '{ printf "%.1f\n", $4 / 1024 }' "$work/$1.times" | median ;;
  esac
}
row() { printf '%-10s %8s %8s %10s  %s\n' "$1" "$(stat_of "mj-$2" cpu)" "$(stat_of "mj-$2" wall)" "$(stat_of "mj-$2" rss)" "${3:-}"; }
echo "$frames frames of 1920x1080 MJPEG (4:2:2) to H.264, medians of $runs; load before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Equal work: one thread and one slice per picture each, the accurate IDCT:"
printf '%-10s %8s %8s %10s\n' tool "cpu s" "wall s" "rss MiB"
row camrec camrec
row ffmpeg ffmpeg
row GStreamer gstreamer
[[ -z $floor ]] || row floor floor "(libjpeg-turbo + libx264 alone from C: mjpeg-floor.c, built by $floor_cc)"
awk -v c="$(stat_of mj-camrec cpu)" -v f="$(stat_of mj-ffmpeg cpu)" -v g="$(stat_of mj-gstreamer cpu)" \
  'BEGIN { printf "camrec CPU / ffmpeg %.2f (target <= 0.8), / GStreamer %.2f (target <= 1)\n", c / f, c / g }'
[[ -z $floor ]] || awk -v c="$(stat_of mj-camrec cpu)" -v f="$(stat_of mj-floor cpu)" -v r="$(stat_of mj-camrec rss)" -v fr="$(stat_of mj-floor rss)" \
  'BEGIN { printf "camrec / floor: CPU %.2f, peak RSS %.2f\n", c / f, r / fr }'
echo "Each tool as it comes: camrec's defaults (one thread, one slice: the run above), ffmpeg's and GStreamer's automatic threads:"
printf '%-10s %8s %8s %10s\n' tool "cpu s" "wall s" "rss MiB"
row camrec camrec "1 slice/picture"
row ffmpeg ffmpeg-auto "${per_picture[ffmpeg-auto]} slices/picture"
row GStreamer gstreamer-auto "${per_picture[gstreamer-auto]} slices/picture, jpegdec's ifast IDCT"
awk -v c="$(stat_of mj-camrec cpu)" -v f="$(stat_of mj-ffmpeg-auto cpu)" -v g="$(stat_of mj-gstreamer-auto cpu)" \
  -v cw="$(stat_of mj-camrec wall)" -v fw="$(stat_of mj-ffmpeg-auto wall)" -v gw="$(stat_of mj-gstreamer-auto wall)" \
  'BEGIN { printf "camrec CPU / ffmpeg %.2f, / GStreamer %.2f; wall / ffmpeg %.2f, / GStreamer %.2f\n", c / f, c / g, cw / fw, cw / gw }'
