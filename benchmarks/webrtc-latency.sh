#!/usr/bin/env bash
# WebRTC glass-to-browser latency once Chromium has synced the picture to the sound (issue 52): headless
# Chromium (Selenium, Tests/tools/browser-latency.py) plays camrec's live page over /whep; the window
# starts SETTLE seconds after the picture does (Chromium lines the picture up with the sound only after
# ~30-40 s) and lasts WINDOW seconds. The picture: the test pattern's capture time of each frame shown
# (camrec's timing SEI on a TCP listen output, matched by the frame number burned into the picture)
# against the time the page shows it (requestVideoFrameCallback), on one clock: median and 90th percentile.
# The sound: getStats' inbound audio (codec, packets, concealed samples, jitter buffer delay), and the
# page's wall clock against estimatedPlayoutTimestamp (sampled each second; the sender's NTP time that
# camrec's sender reports tie to capture time), median and p90.
# Rows, each a camrec of its own (640x360, 30 fps, test pattern; --audio test's tone, mono):
#   aac       AAC at 48 kHz: the viewers' Opus is camrec's one shared encode of the samples;
#   aac44     AAC at 44.1 kHz, a rate Opus does not take: each viewer decodes the AAC and encodes Opus
#             (faad ! audioconvert ! audioresample ! opusenc), as every AAC recording was sent before;
#   opus      --audio-codec opus: the recording's own Opus as it is;
#   none      no sound.
#   benchmarks/webrtc-latency.sh [RUNS (3)] [SETTLE (40)] [WINDOW (20)] [ROW...]
# One line of results a run, then the medians of each row. Needs chromium, chromium-driver, Selenium.
# Not part of scripts/test.sh.
set -u
cd "$(dirname "$0")/.."
CAMREC=${CAMREC:-.build/release/camrec}
RUNS=${1:-3} SETTLE=${2:-40} WINDOW=${3:-20}
shift $(( $# < 3 ? $# : 3 ))
ROWS=("$@"); (( ${#ROWS[@]} )) || ROWS=(aac aac44 opus none)
W=$(mktemp -d)
CAM=
trap '[[ -n $CAM ]] && kill $CAM 2>/dev/null; [[ -n ${KEEP:-} ]] && echo "kept $W" || rm -rf "$W"' EXIT
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null), settle ${SETTLE} s, window ${WINDOW} s"
for run in $(seq "$RUNS"); do
  for row in "${ROWS[@]}"; do
    case $row in
      aac) sound=(--audio test) ;;
      aac44) sound=(--audio test --audio-rate 44100) ;;
      opus) sound=(--audio test --audio-codec opus) ;;
      none) sound=() ;;
      *) echo "unknown row $row" >&2; exit 64 ;;
    esac
    # Two ports nobody listens on (a taken one ends the row's camrec at once).
    while port=$((31000 + RANDOM % 2000)) timing=$((33000 + RANDOM % 2000));
          ss -Hltn "( sport = :$port or sport = :$timing )" | grep -q .; do :; done
    "$CAMREC" --test-pattern --size 640x360 --fps 30 --duration $((SETTLE + WINDOW + 40)) --timing-sei "${sound[@]}" \
        --http "127.0.0.1:$port" --listen "127.0.0.1:$timing" 2>"$W/camrec-$row-$run.log" & CAM=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/api/status" && break; sleep 0.1; done
    load0=$(cut -d' ' -f1 /proc/loadavg)
    report=$(python3 Tests/tools/browser-latency.py "http://127.0.0.1:$port/" "$WINDOW" "$timing" "settle=$SETTLE" 2>"$W/latency.err")
    kill -INT $CAM 2>/dev/null; wait $CAM 2>/dev/null; CAM=
    echo "$row $run load=$load0-$(cut -d' ' -f1 /proc/loadavg) $report" | tee -a "$W/results"
  done
done
python3 - "$W/results" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    row, run, load, report = line.split(" ", 3)
    try:
        rows.setdefault(row, []).append(json.loads(report))
    except ValueError:
        rows.setdefault(row, []).append({"error": report.strip()})
def med(rs, key):
    v = [r[key] for r in rs if r.get(key) is not None]
    return f"{statistics.median(v):.0f}" if v else "-"
print("row     ok  picture median / p90 ms  sound playout median / p90 ms  jitter buffer ms  concealed (most)  codec")
for row, rs in rows.items():
    ok = [r for r in rs if not r.get("error") and r.get("transport") == "playing WebRTC"]
    conceal = [100 * r["audio_concealed"] / r["audio_samples"] for r in ok if r.get("audio_samples")]
    print(f"{row:6} {len(ok)}/{len(rs)}  {med(ok, 'latency_ms'):>14} / {med(ok, 'latency_p90_ms'):<8}"
          f"{med(ok, 'audio_playout_ms'):>21} / {med(ok, 'audio_playout_p90_ms'):<8}{med(ok, 'audio_jitter_buffer_ms'):>16}"
          f"  {(f'{max(conceal):.2f}%') if conceal else '-':>16}  {ok[0].get('audio_codec') if ok else None}")
PY
