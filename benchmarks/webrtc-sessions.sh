#!/usr/bin/env bash
# What ended WebRTC sessions leave in camrec (issue 52): the test pattern at 640x360 with the test tone
# (AAC, sent to each viewer as Opus) and --http open; a warm-up round of 10 sessions (GStreamer's start-up:
# gst_init, the plugin registry, its own threads; malloc's arenas for ten sessions' threads at once), then
# ROUNDS rounds of 10 sessions, each a webrtcbin viewer
# (Tests/tools/whep-clients.py) that connects, gets picture and sound and then:
#   ended     sends DELETE (the viewer closes);
#   vanished  is SIGKILLed mid-session (no DELETE, no RTCP any more: camrec's silence deadline ends it).
# camrec's threads (/proc/PID/task, with their names grouped), open descriptors and VmRSS are read after
# the warm-up and after every round (once its sessions have ended: 3 s after DELETE, 13 s after SIGKILL). With --heaptrack the whole
# run is under heaptrack, which says at exit how much the heap still held: run it with two ROUNDS and
# compare (a leak per session grows with the sessions; a cache does not). heaptrack 1.4 can deadlock
# against GStreamer closing a module (its lock against the loader's, both ways round): if a run stops
# making progress, run it again.
#   benchmarks/webrtc-sessions.sh [ended|vanished] [ROUNDS (10)] [--heaptrack]
# Needs python3-gi, gir1.2-gst-plugins-bad-1.0, gstreamer1.0-nice (heaptrack for --heaptrack). Not part
# of scripts/test.sh.
set -u
cd "$(dirname "$0")/.."
CAMREC=${CAMREC:-.build/release/camrec}
MODE=${1:-ended} ROUNDS=${2:-10}
[[ $MODE == ended || $MODE == vanished ]] || { echo "usage: $0 [ended|vanished] [ROUNDS] [--heaptrack]" >&2; exit 64; }
HEAP=; [[ ${3:-} == --heaptrack ]] && HEAP=1
W=$(mktemp -d)
trap 'kill $CAM 2>/dev/null; [[ -n ${KEEP:-} ]] && echo "kept $W" || rm -rf "$W"' EXIT
port=$((29000 + RANDOM % 1000))
args=(--test-pattern --size 640x360 --fps 30 --duration 3600 --audio test --http "127.0.0.1:$port" "$W/rec.mp4")
if [[ -n $HEAP ]]; then
  heaptrack -o "$W/heap" "$CAMREC" "${args[@]}" >"$W/heaptrack.out" 2>"$W/camrec.log" & HT=$!
  for _ in $(seq 100); do CAM=$(pgrep -P $HT -x camrec) && break; sleep 0.2; done
else
  "$CAMREC" "${args[@]}" 2>"$W/camrec.log" & CAM=$!
fi
for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/api/status" && break; sleep 0.1; done

snapshot() {  # threads, descriptors, VmRSS KiB
  echo "$(ls /proc/$CAM/task | wc -l) $(ls /proc/$CAM/fd | wc -l) $(awk '/^VmRSS/ {print $2}' /proc/$CAM/status)"
}
names() { cat /proc/$CAM/task/*/comm | sort | uniq -c | sort -rn | awk '{printf "%s×%s ", $2, $1} END {print ""}'; }
round() {  # one round of 10 sessions
  local out=$W/clients.$1
  if [[ $MODE == ended ]]; then
    timeout 90 /usr/bin/python3 Tests/tools/whep-clients.py "http://127.0.0.1:$port" 10 1 --sound >"$out" 2>>"$W/clients.err"
    sleep 3   # DELETE ends a session at once
  else
    /usr/bin/python3 Tests/tools/whep-clients.py "http://127.0.0.1:$port" 10 60 --sound >"$out" 2>>"$W/clients.err" & local p=$!
    for _ in $(seq 300); do grep -qs '^connected 10' "$out" && break; sleep 0.1; done
    sleep 2; kill -9 $p; wait $p 2>/dev/null
    sleep 13   # a vanished session ends 10 s after its last receiver report
  fi
}
round 0
read -r threads0 fds0 rss0 < <(snapshot)
names0=$(names)
echo "after the warm-up: threads $threads0, descriptors $fds0, VmRSS $rss0 KiB"
for r in $(seq "$ROUNDS"); do
  round "$r"
  read -r threads fds rss < <(snapshot)
  connected=$(grep -o '^connected [0-9]*' "$W/clients.$r" | tail -1 | awk '{print $2 + 0}')
  echo "round $r ($MODE, ${connected:-0} of 10 connected): threads $threads, descriptors $fds, VmRSS $rss KiB"
done
names1=$(names)
sessions=$((10 * ROUNDS))
echo "per $MODE session: threads $(awk -v a="$threads0" -v b="$threads" -v n="$sessions" 'BEGIN { printf "%.2f", (b - a) / n }'), descriptors $(awk -v a="$fds0" -v b="$fds" -v n="$sessions" 'BEGIN { printf "%.2f", (b - a) / n }'), VmRSS $(awk -v a="$rss0" -v b="$rss" -v n="$sessions" 'BEGIN { printf "%.1f", (b - a) / n }') KiB"
echo "names after the warm-up: $names0"
echo "names after:             $names1"
kill -INT $CAM; wait ${HT:-$CAM}
if [[ -n $HEAP ]]; then
  heaptrack_print -f "$W"/heap.*zst 2>/dev/null | grep -E "^(peak heap memory consumption|total memory leaked)" | sed "s/^/heaptrack after $sessions sessions: /"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
