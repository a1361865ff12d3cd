#!/bin/bash
# Tests/suites/browser.sh — camrec's MP4, QuickTime and Matroska recordings play in a real browser
# (issue 12): headless Chromium from Debian, driven by Selenium (Tests/tools/browser-play.py), opens
# each file in a <video> served over loopback HTTP and reports what the element saw.
#
# Checks, for each container: no media error; the picture size; the duration the file's frames span
# (200 at 30 fps); the video advances while it plays, with frames decoded and none corrupted; a seek
# to the middle lands there. Then the .partial a SIGKILL leaves behind (fragmented MP4, Matroska) plays
# as it is, once given its extension back.
#
# Environment: CAMREC=path   test this binary instead of building with `swift build`
#              KEEP=1        keep the work directory
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
SUITE=browser
source Tests/lib/net-suite.sh
TOOLS=$PWD/Tests/tools
[[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] || { fail "no /usr/bin/chromium or chromedriver (scripts/setup.sh --test installs them)"; finish; }
python3 -c 'import selenium' 2>/dev/null || { fail "no Selenium for python3 (scripts/setup.sh --test installs it)"; finish; }

# play FILE: browser-play.py's JSON report of FILE played for 2 s, in $PLAY.
play() { PLAY=$(python3 "$TOOLS/browser-play.py" "$1" 2 2>"$W/browser.err") || PLAY="{\"error\": \"browser-play failed: $(tail -1 "$W/browser.err" | tr -d '"\\')\"}"; }
# field NAME: a value of the last report.
field() { python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$PLAY" "$1"; }
# near A B TOLERANCE: |A - B| <= TOLERANCE.
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; exit !(a != "" && d <= t && -d <= t) }'; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a + 0 >= b) }'; }

for ext in mp4 mov mkv; do
    f=$W/rec.$ext
    "$CAMREC" --test-pattern --frames 200 --keyframe-interval 30 "$f" 2>"$W/$ext.log" || fail "$ext: camrec failed: $(tail -1 "$W/$ext.log")"
    play "$f"
    check "$ext in Chromium: no media error ($(field error) $(field message))" [ -z "$(field error)" ]
    check "$ext in Chromium: the picture is 1280x720 ($(field width)x$(field height))" [ "$(field width)x$(field height)" = 1280x720 ]
    check "$ext in Chromium: the duration is 200 frames at 30 fps, 6.667 s ($(field duration) s, within a frame)" \
        near "$(field duration)" 6.6667 0.034
    # Played for 2 s of wall time: the clock must move and frames must decode (loose bounds: CI is slow).
    check "$ext in Chromium: it plays: currentTime advanced $(field advanced) s (at least 0.5) in 2 s" \
        at_least "$(field advanced)" 0.5
    check "$ext in Chromium: $(field frames) frames decoded (at least 15), $(field corrupted) corrupted (none)" \
        bash -c "[ '$(field corrupted)' = 0 ] && awk 'BEGIN { exit !(\"$(field frames)\" + 0 >= 15) }'"
    check "$ext in Chromium: a seek to the middle (3.333 s) lands there ($(field seeked) s, within 0.1)" \
        near "$(field seeked)" 3.3333 0.1
done

# --- The .partial SIGKILL leaves: plays in the browser once renamed, as a user would after a crash ---
for ext in mp4 mkv; do
    mkdir -p "$W/kill-$ext"
    partial=$(killed_partial "$W/kill-$ext/k.$ext" "$W/kill-$ext.log")
    if [[ -z $partial ]]; then fail "$ext SIGKILL: no .partial left"; continue; fi
    cp "$partial" "$W/crashed.$ext"
    frames=$(frames_of "$W/crashed.$ext")
    play "$W/crashed.$ext"
    check "$ext SIGKILL .partial in Chromium: no media error ($(field error) $(field message))" [ -z "$(field error)" ]
    check "$ext SIGKILL .partial in Chromium: it plays: currentTime advanced $(field advanced) s (at least 0.5) in 2 s" \
        at_least "$(field advanced)" 0.5
    check "$ext SIGKILL .partial in Chromium: the duration covers the ${frames:-0} frames ffprobe counts ($(field duration) s, within 0.1)" \
        near "$(field duration)" "$(awk -v n="${frames:-0}" 'BEGIN { print n / 30 }')" 0.1
done

finish
