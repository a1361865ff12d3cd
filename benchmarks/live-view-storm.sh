#!/usr/bin/env bash
# The live view's cost to the recording (issue 26): record 1080p30 from the test pattern with --http, once
# quietly and once while browsers join, leave and ask for snapshots 50 times a second, and compare what the
# file got (frames, from ffprobe) and what the encoder thread took per frame (camrec's encode histogram:
# from handing a frame to the encoder to its access unit coming out), as ratios.
#   benchmarks/live-view-storm.sh [SECONDS (30)] [OPS per second (50)]
set -u
cd "$(dirname "$0")/.."
CAMREC=${CAMREC:-.build/release/camrec}
S=${1:-30} OPS=${2:-50}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
port=$((23000 + RANDOM % 2000))

run() {
  local name=$1 storm=$2 p=$((port++))
  "$CAMREC" --test-pattern --size 1920x1080 --fps 30 --duration $((S + 4)) --preset ultrafast --bitrate 6000000 \
    --http "127.0.0.1:$p" "$W/$name.h264" 2>"$W/$name.log" &
  local cam=$!
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$p/api/status" && break; sleep 0.1; done
  sleep 2
  if ((storm)); then python3 benchmarks/live-view-storm.py 127.0.0.1 "$p" "$S" "$OPS" >"$W/$name.storm"
  else sleep "$S"; fi
  curl -sf "http://127.0.0.1:$p/metrics" >"$W/$name.metrics"
  wait "$cam"
  local frames sum count dropped
  frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$W/$name.h264")
  sum=$(awk '/^camrec_encode_seconds_sum/ {print $2}' "$W/$name.metrics")
  count=$(awk '/^camrec_encode_seconds_count/ {print $2}' "$W/$name.metrics")
  dropped=$(grep -o 'dropped=[0-9]*' "$W/$name.log" | head -1 | cut -d= -f2)
  printf '%-6s file frames %5s  dropped %4s  encode mean %6.2f ms over %s frames  %s\n' "$name" "$frames" "${dropped:-?}" \
    "$(awk -v s="$sum" -v c="$count" 'BEGIN {print (c > 0 ? s / c * 1000 : 0)}')" "$count" "$(cat "$W/$name.storm" 2>/dev/null)"
  echo "$name $frames ${dropped:-0} $sum $count" >>"$W/results"
}

echo "camrec: $CAMREC; $S s each; storm: $OPS operations/s (half joins, half snapshots); load: $(cut -d' ' -f1-3 /proc/loadavg)"
run quiet 0
run storm 1
awk 'NR == 1 {qf = $2; qm = $4 / $5} NR == 2 {printf "storm/quiet: encode mean %.2f, file frames %d vs %d (dropped %d vs %d)\n", ($4 / $5) / qm, $2, qf, $3, d} NR == 1 {d = $3}' "$W/results"
