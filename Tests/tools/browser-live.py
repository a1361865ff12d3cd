#!/usr/bin/env python3
"""Watches camrec's live page in headless Chromium (Debian's chromium + chromium-driver, driven by
Selenium) and reports what its <video> saw, as JSON on stdout:

  browser-live.py URL [SECONDS] [SCREENSHOT.png]

Waits up to 15 s for the video to start ("started_after": seconds from loading the page), then
samples it every 0.25 s for SECONDS (default 6): "advanced" (currentTime gained), "behind_max" and
"behind_last" (buffered live edge minus currentTime, after the first second), "frames" and
"corrupted" (getVideoPlaybackQuality), "width", "height", "error" (media error code or a reason).

The test pattern's burned-in frame number (32 bits as 16x16 blocks from x=16, y=16 between two
white markers, as Tests/tools/pattern-counters.py reads it) is read from the picture the <video>
shows, drawn into a canvas at its own size: "counter_first" and "counter_last" are the numbers shown
at the first and last sample, and "latency_ms" the median of (frames camrec has captured, from
/api/status, fetched just before the picture is read) minus 1 minus the number shown, over the
frame rate: how far the picture on the page is behind capture.
"""
import sys, time

from chromium import run_reporting

STATE = ("const v = document.getElementById('live'); const q = v.getVideoPlaybackQuality();"
         "const b = v.buffered; return {error: v.error ? v.error.code : null, ready: v.readyState, t: v.currentTime,"
         " end: b.length ? b.end(b.length - 1) : null, width: v.videoWidth, height: v.videoHeight,"
         " frames: q.totalVideoFrames, corrupted: q.corruptedVideoFrames};")


# Resolves to [frames camrec has captured, the number the page shows (or null), fps].
SAMPLE = """
const done = arguments[arguments.length - 1];
fetch('/api/status', {cache: 'no-store'}).then(r => r.json()).then(s => {
  const v = document.getElementById('live');
  const c = document.createElement('canvas');
  c.width = v.videoWidth; c.height = v.videoHeight;
  const g = c.getContext('2d');
  g.drawImage(v, 0, 0);
  const white = (i) => { const p = g.getImageData(16 + i * 16 + 8, 24, 1, 1).data; return (p[0] + p[1] + p[2]) / 3 > 128; };
  let value = null;
  if (white(0) && white(33)) { value = 0; for (let b = 1; b <= 32; b++) value = value * 2 + (white(b) ? 1 : 0); }
  done([s.frames, value, s.framesPerSecond]);
}).catch(e => done([null, null, null]));
"""


def watch(url, seconds, screenshot, driver, result):
    loaded = time.time()
    driver.get(url)
    s = driver.execute_script(STATE)
    while time.time() < loaded + 15 and s["error"] is None and not (s["ready"] >= 2 and s["t"] > 0):
        time.sleep(0.05)
        s = driver.execute_script(STATE)
    if s["error"] is not None or s["t"] <= 0:
        result.update(error=s["error"] or "did not start", ready=s["ready"])
        return
    result.update(error=None, started_after=round(time.time() - loaded, 2))
    t0, start = s["t"], time.time()
    behind, latencies, counters = [], [], []
    while time.time() < start + seconds:
        time.sleep(0.25)
        s = driver.execute_script(STATE)
        if time.time() > start + 1 and s["end"] is not None:
            behind.append(s["end"] - s["t"])
        captured, shown, fps = driver.execute_async_script(SAMPLE)
        if shown is not None:
            counters.append(shown)
            if captured is not None and fps:
                latencies.append((captured - 1 - shown) / fps * 1000)
    latencies.sort()
    if screenshot:
        driver.save_screenshot(screenshot)
    result.update(advanced=round(s["t"] - t0, 3), behind_max=round(max(behind), 3) if behind else None,
                  behind_last=round(behind[-1], 3) if behind else None, frames=s["frames"],
                  corrupted=s["corrupted"], width=s["width"], height=s["height"], error=s["error"],
                  counter_first=counters[0] if counters else None, counter_last=counters[-1] if counters else None,
                  counters_read=len(counters), latency_ms=round(latencies[len(latencies) // 2]) if latencies else None)


def main():
    url = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
    screenshot = sys.argv[3] if len(sys.argv) > 3 else None
    run_reporting("browser-live.py", lambda driver, result: watch(url, seconds, screenshot, driver, result))


if __name__ == "__main__":
    main()
