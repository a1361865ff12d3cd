#!/bin/bash
# Tests/soak/live-edge.sh — the live page for ten minutes on a bad network (issue 52), run by hand (the
# test command runs a minute of it in Tests/suites/http.sh): two Chromiums watch camrec's page at once,
# one over MSE and one over WebRTC, through `netem delay 50ms 20ms loss 1%` in the test VM
# (Tests/lib/netem-live.sh), and at the end each must be within 0.5 s of live (WebRTC: and what the stand-in network held its packets beyond netem's delay, netem_held): live by the test pattern's
# own clock, as an independent reader of camrec's --listen output finds it (Tests/tools/pattern_clock.py),
# not by anything camrec says. The result of the last run is in docs/HTTP.md ("Keeping up with live").
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

PORTS=(); for _ in 1 2 3 4 5; do next_port; PORTS+=($PORT); done
echo "watching for $SECONDS_WATCHED s through netem (load: $(cut -d' ' -f1-3 /proc/loadavg))"
netem_live "$SECONDS_WATCHED" soak "${PORTS[*]}"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(grep relayed "$W/soak-vm.log")"
# WebRTC's bound takes in what the stand-in network held its packets beyond netem's (netem_held).
HELD=$(netem_held soak "$SECONDS_WATCHED")
held_ms=$(field "$HELD" held_ms)
echo "the stand-in network, WebRTC's picture: $(cat "$W/soak-transit.txt"); beyond the least, the 95th percentile of each 10 s $(field "$HELD" p95_by_10s) ms"
for kind in mse webrtc; do
    R=$(cat "$W/soak-$kind.json")
    [[ $kind == mse ]] && bound=500 beyond="" || bound=$(( 500 + ${held_ms:-0} )) beyond=" and the ${held_ms:-?} ms the stand-in network held its packets beyond netem's in the last 30 s"
    echo "$kind: $R"
    [[ $kind == mse ]] && plays="playing MSE" || plays="playing WebRTC"
    check "$kind: the page played through it ($(field "$R" transport)): no media error ($(field "$R" error)), nothing corrupted ($(field "$R" corrupted)), the frame numbers never went backwards ($(field "$R" counters_backwards))" \
        [ -z "$(field "$R" error)" -a "$(field "$R" corrupted)" = 0 -a "$(field "$R" counters_backwards)" = 0 -a "$(field "$R" transport | cut -c1-${#plays})" = "$plays" ]
    check "$kind: at the end the page is within 0.5 s of live$beyond: median behind live over the last 10 s $(field "$R" end_behind_ms_median) ms (at most $bound; max $(field "$R" end_behind_ms_max) ms; live from $(field "$R" truth_frames) pictures read outside camrec)" \
        at_most "$(field "$R" end_behind_ms_median)" "$bound"
done
finish
