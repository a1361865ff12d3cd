#!/usr/bin/env bash
# An MJPEG camera's path without a camera: the same 1920x1080 JPEGs (4:2:2, as UVC webcams send them)
# decoded and encoded to H.264 by camrec (--input-format mjpeg: libavcodec's mjpeg decoder, one pass into
# NV12, libx264), ffmpeg (-f mjpeg, its mjpeg decoder, swscale to NV12, libx264) and GStreamer (jpegparse !
# jpegdec ! videoconvert ! x264enc), alternating runs. Equal work: the same JPEGs, the same x264 settings
# (ultrafast, zerolatency, GOP 30, 6 Mbit/s with a one-second VBV), one slice per picture and one thread
# everywhere (camrec's default; ffmpeg -threads 1 for the decoder and for x264; jpegdec has one, x264enc
# threads=1). Each output's slices per picture are counted from its NAL units and must be 1, and its
# pictures must be FRAMES (ffprobe), so the comparison cannot drift.
# Prints CPU seconds (user+sys), wall time and peak RSS (medians) and camrec's CPU against each.
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

measure() {  # name, command...; appends "wall user sys maxrss_kib" to $work/name.times
  local name=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$work/$name.last" "$@" >/dev/null 2>"$work/$name.err" || { cat "$work/$name.err" >&2; exit 1; }
  cat "$work/$name.last" >>"$work/$name.times"
}
rm -f "$work"/mj-*.times
for ((i = 0; i < runs; i++)); do
  measure mj-ffmpeg ffmpeg -nostdin -v error -y -threads 1 -f mjpeg -framerate 30 -i "$input" \
    -pix_fmt nv12 -c:v libx264 -threads 1 -preset ultrafast -tune zerolatency -x264-params sliced-threads=0 -g 30 -bf 0 \
    -b:v 6M -maxrate 6M -bufsize 6M -f h264 "$work/mj-ffmpeg.h264"
  measure mj-camrec "$camrec" --input "$input" --input-format mjpeg --fps 30 --keyframe-interval 30 \
    --preset ultrafast --bitrate 6M --threads 1 --overwrite "$work/mj-camrec.h264"
  measure mj-gstreamer gst-launch-1.0 -q filesrc location="$input" ! image/jpeg,framerate=30/1 ! jpegparse ! jpegdec \
    ! videoconvert ! video/x-raw,format=NV12 ! x264enc threads=1 speed-preset=ultrafast tune=zerolatency \
    sliced-threads=false key-int-max=30 bitrate=6000 vbv-buf-capacity=1000 ! video/x-h264,stream-format=byte-stream \
    ! filesink location="$work/mj-gstreamer.h264"
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
for tool in ffmpeg camrec gstreamer; do
  read -r s p < <(slices "$work/mj-$tool.h264")
  [[ $s == "$frames" && $p == "$frames" ]] || { echo "$tool: $s slices in $p pictures, not $frames in $frames" >&2; exit 1; }
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
stat_of() {  # name, field (cpu, wall, rss)
  case $2 in
    cpu) awk '{ print $2 + $3 }' "$work/$1.times" | median ;;
    wall) awk '{ print $1 }' "$work/$1.times" | median ;;
    rss) awk '{ printf "%.1f\n", $4 / 1024 }' "$work/$1.times" | median ;;
  esac
}
echo "$frames frames of 1920x1080 MJPEG (4:2:2) to H.264, medians of $runs, one thread and one slice per picture each:"
printf '%-10s %8s %8s %10s\n' tool "cpu s" "wall s" "rss MiB"
for tool in camrec ffmpeg gstreamer; do
  printf '%-10s %8s %8s %10s\n' "$tool" "$(stat_of mj-$tool cpu)" "$(stat_of mj-$tool wall)" "$(stat_of mj-$tool rss)"
done
awk -v c="$(stat_of mj-camrec cpu)" -v f="$(stat_of mj-ffmpeg cpu)" -v g="$(stat_of mj-gstreamer cpu)" \
  'BEGIN { printf "camrec CPU / ffmpeg %.2f (target <= 0.8), / GStreamer %.2f (target <= 1)\n", c / f, c / g }'
