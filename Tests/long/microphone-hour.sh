#!/bin/bash
# Tests/long/microphone-hour.sh — the issue's one-hour checks, by hand (an hour and a few minutes; not part
# of the test command): vivid and snd-aloop's microphone 0.5% off nominal in the test VM for an hour, with two
# overruns forced (Tests/vm-cases/microphone-hour.sh); then, on the host, every click the player logged must be
# in the recording at its time within ±10 ms (Tests/tools/mic-sync.py, at most 8 lost in the overruns), which
# is also under one video frame (33 ms) of drift, and the sound must start and end with the picture.
#   Tests/long/microphone-hour.sh [RESULTS_DIR] [SECONDS]      (default: a new temporary folder, 3600)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export PATH="/opt/swift/usr/bin:$PATH"
RESULTS=${1:-$(mktemp -d /tmp/camrec-hour.XXXXXX)}
SECS=${2:-3600}
CAMREC=${CAMREC:-$(swift build -c release --show-bin-path)/camrec}
echo "microphone-hour: $SECS s, results in $RESULTS"
Tests/vm/run.sh --timeout $((SECS + 900)) --results "$RESULTS" --env "CAMREC=$CAMREC" --env "HOUR_SECONDS=$SECS" \
    --vivid 'n_devs=1 node_types=0x1' -- Tests/vm-cases/microphone-hour.sh
R=$RESULTS/hour
PASS=0 FAIL=0
source Tests/lib/checks.sh
sync_out=$(python3 Tests/tools/mic-sync.py "$R/hour.mkv" "$R/camrec.err" "$R/clicks.log" $((SECS - 30)) 10 8 2>&1); sync_rc=$?
echo "$sync_out" | awk 'NR <= 4 || /FAIL|OK/'
echo "$sync_out" | python3 -c '
import re, sys
offsets = [float(m.group(1)) for m in re.finditer(r"offset ([+-][0-9.]+) ms", sys.stdin.read())]
if offsets:
    n = len(offsets) // 6 or 1
    for i in range(0, len(offsets), n):
        part = offsets[i:i + n]
        print(f"   clicks {i}..{i + len(part) - 1}: mean {sum(part) / len(part):+.2f} ms, range {min(part):+.2f}..{max(part):+.2f} ms")'
check "every click of the hour at its time ±10 ms (at most 8 lost in the two overruns)" test "$sync_rc" = 0
check "the sound starts and ends with the picture, within 30 ms" python3 Tests/tools/av-edges.py "$R/hour.mkv" 0.03
grep -o "the microphone hw:[^ ]*: .*" "$R/camrec.err" | tail -1
n=$(sed -n 's/.*; \([0-9]*\) overruns\{0,1\} (samples lost.*/\1/p' "$R/camrec.err")
check "two overruns counted (${n:-none})" test "${n:-0}" = 2
finish
