#!/usr/bin/env bash
# camrec --rtsp's memory per client, within one process (issue 48): the same recording as
# benchmarks/rtsp-clients.sh (1280x720 H.264, 4 Mbit/s, 30 fps), 12 s with no client, then CLIENTS
# (half over TCP, half over UDP, benchmarks/rtsp-load.c) for 32 s. Prints camrec's RssAnon (its own
# pages), the median of the 12 s before and of the last 20 s with clients, the difference a client, and its
# file descriptors with clients. rtsp-clients.sh compares two processes (0 and 200 clients), whose
# memory before any client differs by more than the clients' own on a loaded machine (the recorder's
# pools grow when it is starved); this compares one process with itself.
#   benchmarks/rtsp-memory.sh [CLIENTS (200)]        CAMREC=path to test another binary
set -u
cd "$(dirname "$0")/.."
CAMREC=${CAMREC:-.build/release/camrec}
N=${1:-200}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
port=$((28000 + RANDOM % 1000))
gcc -O2 -o "$W/rtsp-load" benchmarks/rtsp-load.c || exit 1
nice -n -5 "$CAMREC" --test-pattern --size 1280x720 --fps 30 --bitrate 4M --preset ultrafast --duration 50 \
  --rtsp "127.0.0.1:$port" --max-receivers "$N" --overwrite "$W/rec.h264" 2>"$W/log" &
cam=$!
for _ in $(seq 100); do grep -q "serving RTSP" "$W/log" && break; sleep 0.1; done
rss() { awk '/^RssAnon/ {print $2}' "/proc/$cam/status"; }
for _ in $(seq 12); do rss >>"$W/before"; sleep 1; done
for part in a b c d; do
  nice -n -10 "$W/rtsp-load" "rtsp://127.0.0.1:$port/" $((N / 8)) $((N / 8)) 40 "$W/$part-" 0 >"$W/$part.out" 2>"$W/$part.err" &
done
for _ in $(seq 32); do rss >>"$W/after"; ls "/proc/$cam/fd" | wc -l >>"$W/fds"; sleep 1; done
wait "$cam"
wait
median() { sort -n "$1" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
tail -20 "$W/after" >"$W/with"
b=$(median "$W/before") a=$(median "$W/with")
echo "camrec $CAMREC, $N clients, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "RssAnon: no client $b KiB (median of 12 s), $N clients $a KiB (median of the last 20 s, $(sort -n "$W/with" | head -1)..$(sort -n "$W/with" | tail -1)):" \
  "$(((a - b) / N)) KiB a client; file descriptors with clients $(sort -n "$W/fds" | tail -1); clients that played $(cat "$W"/?.out | grep -c '^client')"
grep -c "too slow" "$W/log" | sed 's/^/skips ahead at an IDR (camrec log): /'
