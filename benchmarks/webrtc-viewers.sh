#!/usr/bin/env bash
# camrec's CPU per WebRTC viewer (issue 52): the test pattern at 1280x720, 30 fps, recorded to an MP4 with
# --http open, first with no viewer, then with N WHEP viewers (Tests/tools/whep-clients.py: N webrtcbin peer
# connections in a process of their own, no decoding), camrec's utime+stime (/proc/PID/stat) read over a
# window of SECONDS in each phase: (with N - without) / N is the CPU one viewer costs. camrec's threads are
# counted at both ends. Judged from outside camrec: every viewer got video RTP (and audio RTP with --sound)
# by its own counts, and the recording beside it all lost no frame (its burned-in counters 0..M-1 without a
# gap, Tests/tools/pattern-counters.py, and ffprobe's count, equal to the frames the pattern made).
#   benchmarks/webrtc-viewers.sh [SECONDS (20)] [N (20)] [--sound]
# --sound records the test tone (AAC at 48 kHz), which every viewer gets as camrec's one shared Opus encode
# (CAMREC=a wrapper adding --audio-rate 44100 gives the per-viewer faad + opusenc chain instead).
# Needs python3-gi, gir1.2-gst-plugins-bad-1.0, gstreamer1.0-nice, ffmpeg. Not part of scripts/test.sh.
set -u
cd "$(dirname "$0")/.."
CAMREC=${CAMREC:-.build/release/camrec}
S=${1:-20} N=${2:-20}
SOUND=; [[ ${3:-} == --sound ]] && SOUND=--sound
W=$(mktemp -d)
trap 'kill $CAM 2>/dev/null; [[ -n ${KEEP:-} ]] && echo "kept $W" || rm -rf "$W"' EXIT
port=$((27000 + RANDOM % 2000))
D=$((2 * S + 60))
"$CAMREC" --test-pattern --size 1280x720 --fps 30 --duration "$D" ${SOUND:+--audio test} --http "127.0.0.1:$port" \
    "$W/rec.mp4" 2>"$W/camrec.log" & CAM=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/api/status" && break; sleep 0.1; done

ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$CAM/stat"; }
threads() { ls "/proc/$CAM/task" | wc -l; }
# window: camrec's CPU over S seconds as a share of one core, and its threads before and after.
window() {
  local a b t0 t1 h0 h1
  h0=$(threads); a=$(ticks); t0=$(date +%s.%N)
  sleep "$S"
  b=$(ticks); t1=$(date +%s.%N); h1=$(threads)
  awk -v a="$a" -v b="$b" -v t0="$t0" -v t1="$t1" -v hz="$(getconf CLK_TCK)" -v h0="$h0" -v h1="$h1" \
    'BEGIN { printf "%.2f %d %d\n", 100 * (b - a) / hz / (t1 - t0), h0, h1 }'
}
sleep 5
read -r idle idle_h0 idle_h1 < <(window)
load_idle=$(cut -d' ' -f1 /proc/loadavg)

/usr/bin/python3 Tests/tools/whep-clients.py "http://127.0.0.1:$port" "$N" "$((S + 3))" $SOUND >"$W/clients.out" 2>"$W/clients.err" & CLIENTS=$!
for _ in $(seq 600); do grep -q "^connected $N\$" "$W/clients.out" && break; kill -0 $CLIENTS 2>/dev/null || break; sleep 0.1; done
grep -q "^connected $N\$" "$W/clients.out" || echo "only $(grep connected "$W/clients.out" | tail -1) of $N viewers connected" >&2
read -r busy busy_h0 busy_h1 < <(window)
load_busy=$(cut -d' ' -f1 /proc/loadavg)
wait $CLIENTS
kill -INT $CAM; wait $CAM; rc=$?

report=$(tail -1 "$W/clients.out")
counters=$(python3 Tests/tools/pattern-counters.py "$W/rec.mp4")
frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$W/rec.mp4")
python3 - "$report" "$counters" "$frames" "$idle" "$busy" "$N" "$rc" "$SOUND" <<'EOF'
import json, sys
report, counters, frames, idle, busy, n, rc, sound = sys.argv[1:]
r = json.loads(report) if report.startswith("{") else {"connected": 0, "packets": []}
read = counters.split()
numbers = [int(x) for x in read if x != "?"]
unreadable = len(read) - len(numbers)
missing = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers)) if numbers else []
out_of_order = sum(b <= a for a, b in zip(numbers, numbers[1:]))
gapless = bool(numbers) and numbers[0] == 0 and not missing and not unreadable and not out_of_order
fed = [p for p in r["packets"] if p["video"] > 0 and (not sound or p["audio"] > 0)]
print(f"viewers connected: {r['connected']} of {n}; every one got video{' and audio' if sound else ''} RTP: {len(fed) == int(n)} "
      f"(fewest video packets {min((p['video'] for p in r['packets']), default=0)}, audio {min((p['audio'] for p in r['packets']), default=0)})")
print(f"camrec CPU: {idle} % of a core without viewers, {busy} % with {n}: {(float(busy) - float(idle)) / int(n):.2f} % per viewer")
print(f"recording beside them: exit {rc}, {len(read)} frames decoded, counters {numbers[0] if numbers else '-'}..{numbers[-1] if numbers else '-'}, "
      f"{len(missing)} missing {missing[:10]}, {unreadable} unreadable, {out_of_order} out of order: lost none: {gapless}; ffprobe counts {frames}")
EOF
grep "^camrec: finished" "$W/camrec.log" | sed "s/^/camrec says (not judged): /"
echo "camrec threads: $idle_h0 -> $idle_h1 without viewers, $busy_h0 -> $busy_h1 with $N; load $load_idle / $load_busy (1-min average at each window's end)"
