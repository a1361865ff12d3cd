#!/bin/bash
# Tests/soak/live-edge.sh — the live page for ten minutes on a bad network (issue 52), run by hand (the
# test command runs a minute of it in Tests/suites/http.sh): Chromium watches camrec's page through
# `netem delay 50ms 20ms loss 1%` in the test VM (Tests/lib/netem-live.sh), and at the end it must be
# within 0.5 s of live. The result of the last run is in docs/HTTP.md ("Keeping up with live").
#
# usage: Tests/soak/live-edge.sh [SECONDS]     (default 600)
# Environment: CAMREC=path (default .build/release/camrec), KEEP=1 keeps the work directory.
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=live-edge-soak
CAMREC=${CAMREC:-.build/release/camrec}
source Tests/lib/net-suite.sh
source Tests/lib/netem-live.sh
SECONDS_WATCHED=${1:-600}
field() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2" 2>/dev/null; }
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 <= b) }'; }

next_port; P1=$PORT; next_port; P2=$PORT
echo "watching for $SECONDS_WATCHED s through netem (load: $(cut -d' ' -f1-3 /proc/loadavg))"
netem_live "$SECONDS_WATCHED" soak "$P1" "$P2"
R=$(cat "$W/soak.json")
echo "report: $R"
check "the page played through it: no media error ($(field "$R" error)), nothing corrupted ($(field "$R" corrupted)), the frame numbers never went backwards ($(field "$R" counters_backwards))" \
    [ -z "$(field "$R" error)" -a "$(field "$R" corrupted)" = 0 -a "$(field "$R" counters_backwards)" = 0 ]
check "at the end the page is within 0.5 s of live: median behind capture over the last 10 s $(field "$R" end_behind_ms_median) ms (at most 500; max $(field "$R" end_behind_ms_max) ms)" \
    at_most "$(field "$R" end_behind_ms_median)" 500
finish
