#!/usr/bin/env python3
"""Whether headless Chromium (Debian's, driven by Selenium) plays an HLS playlist natively in a <video>,
with no script of the page's: one line of JSON on stdout.

  browser-hls.py ORIGIN PLAYLIST_PATH [SECONDS]

Opens ORIGIN/api/status (any page of that origin), adds <video muted autoplay src=PLAYLIST_PATH>, and
reports "can_play_type" (canPlayType('application/vnd.apple.mpegurl')), then after SECONDS (default 6)
"error" (the media error code, or null), "advanced" (currentTime gained), "frames" decoded and
"corrupted", and "counter_first"/"counter_last": the test pattern's frame number burned into the
picture (32 blocks between two white markers at x=16, y=16) once it plays and at the end.
"""
import sys, time

from chromium import run_reporting


def watch(origin, path, seconds, driver, result):
    driver.get(origin + "/api/status")
    result["can_play_type"] = driver.execute_script(
        "const v = document.createElement('video'); v.id = 'hls'; v.muted = true; v.autoplay = true;"
        f" v.src = {path!r}; document.body.append(v);"
        " return v.canPlayType('application/vnd.apple.mpegurl');")
    state = "const v = document.getElementById('hls'); const q = v.getVideoPlaybackQuality();" \
            " return {error: v.error ? v.error.code : null, t: v.currentTime, frames: q.totalVideoFrames," \
            " corrupted: q.corruptedVideoFrames, ready: v.readyState};"
    shown = """const v = document.getElementById('hls'); const c = document.createElement('canvas');
c.width = v.videoWidth; c.height = v.videoHeight; const g = c.getContext('2d'); g.drawImage(v, 0, 0);
const white = (i) => { const p = g.getImageData(16 + i * 16 + 8, 24, 1, 1).data; return (p[0] + p[1] + p[2]) / 3 > 128; };
if (!(white(0) && white(33))) return null;
let value = 0; for (let b = 1; b <= 32; b++) value = value * 2 + (white(b) ? 1 : 0); return value;"""
    begin = time.time()
    first = driver.execute_script(state)
    while time.time() < begin + 15 and first["error"] is None and not (first["ready"] >= 2 and first["t"] > 0):
        time.sleep(0.1)
        first = driver.execute_script(state)
    counter_first = driver.execute_script(shown) if first["error"] is None else None
    time.sleep(seconds)
    last = driver.execute_script(state)
    result.update(error=last["error"], advanced=round(last["t"] - first["t"], 3), frames=last["frames"],
                  corrupted=last["corrupted"], counter_first=counter_first,
                  counter_last=driver.execute_script(shown) if last["error"] is None else None)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 6.0
    run_reporting("browser-hls.py", lambda driver, result: watch(sys.argv[1], sys.argv[2], seconds, driver, result))


if __name__ == "__main__":
    main()
