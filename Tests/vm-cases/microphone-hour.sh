#!/bin/bash
# Tests/vm-cases/microphone-hour.sh — one hour of vivid with the loopback's microphone 0.5% off (snd-aloop's
# "PCM Rate Shift 100000" at 100500) and two forced overruns (camrec stopped for 3 s at 20 and 40 minutes),
# clicks logged by Tests/tools/click-player.py. Not part of the test command (an hour); run by
# Tests/long/microphone-hour.sh, which judges the file on the host. Environment: CAMREC, CAMREC_VM_RESULTS,
# HOUR_SECONDS (default 3600).
set -uo pipefail
source "$(dirname "$0")/case-lib.sh" hour
CAMREC_BIN=${CAMREC:?set CAMREC to the camrec binary}
SECONDS_LONG=${HOUR_SECONDS:-3600}
DEV=$(capture_node 0)
amixer -q -c Loopback cset iface=PCM,name='PCM Rate Shift 100000',device=0,subdevice=1 100500
amixer -q -c Loopback cset iface=PCM,name='PCM Rate Shift 100000',device=1,subdevice=1 100500
nice -n -5 python3 Tests/tools/click-player.py hw:CARD=Loopback,DEV=0,SUBDEV=1 $((SECONDS_LONG + 120)) "$R/clicks.log" 2>"$R/player.err" &
player=$!
wait_for 60 test -e "$R/clicks.log"
"$CAMREC_BIN" --device "$DEV" --size 320x180 --audio hw:CARD=Loopback,DEV=1,SUBDEV=1 --duration "$SECONDS_LONG" \
    --log-level debug "$R/hour.mkv" 2>"$R/camrec.err" &
cam=$!
WAIT_EVERY=0.5 wait_for 120 grep -q "timeline: frame" "$R/camrec.err"
for at in $((SECONDS_LONG / 3)) $((2 * SECONDS_LONG / 3)); do
    nap $((at - ${last:-0}))
    last=$at
    kill -STOP "$cam"; nap 3; kill -CONT "$cam"
    echo "stopped camrec for 3 s at about ${at} s ($(elapsed))"
done
wait "$cam"; rc=$?
kill "$player" 2>/dev/null; wait "$player" 2>/dev/null
echo "camrec exit $rc ($(elapsed))"
grep -v '^\[\|^20' "$R/camrec.err" | tail -n 3
check "the hour's recording ends with 0" test "$rc" = 0
case_finish
