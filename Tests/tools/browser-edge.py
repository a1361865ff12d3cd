#!/usr/bin/env python3
"""How far camrec's live page is behind capture, over time, in headless Chromium (Debian's chromium +
chromium-driver, driven by Selenium); one line of JSON on stdout:

  browser-edge.py URL SECONDS STATUS_URL [--managed] [--log FILE]

Loads URL (the page, possibly through a delayed, lossy path), waits up to 30 s for the video to start,
then every 0.25 s for SECONDS: asks STATUS_URL (camrec's /api/status over loopback, past the delay)
how many frames camrec has made (encoded, and dropped before encoding: the pattern numbers both), and
at once reads the frame number burned into the picture the <video> shows (the test pattern's 32
blocks between two white markers at x=16, y=16, drawn into a canvas at the video's own size).
Behind capture = (made - 1 - shown) / fps. Also "buffered
behind": Chromium's newest buffered time minus currentTime.

Reports "started_after", "error", "frames", "corrupted" (getVideoPlaybackQuality), "samples",
"behind_ms_by_10s" (median behind capture in each 10 s of the run), "end_behind_ms_median" and
"end_behind_ms_max" (the last 10 s), "end_buffered_behind" (the last sample), "counters_backwards"
(samples whose number was lower than the one before), "shown_text" (the page's state line).
With --managed, window.MediaSource is removed before the page runs and window.ManagedMediaSource
offered (MediaSource under that name, counting its construction), as on an iPhone: adds "managed_used"
and "disable_remote_playback" (what the page set on the <video>).
--log FILE writes every sample (seconds, behind capture in ms, buffered behind in s).
"""
import json, sys, time, urllib.request

from chromium import run_reporting

STATE = ("const v = document.getElementById('live'); const q = v.getVideoPlaybackQuality(); const b = v.buffered;"
         " return {error: v.error ? v.error.code : null, ready: v.readyState, t: v.currentTime,"
         " end: b.length ? b.end(b.length - 1) : null, frames: q.totalVideoFrames, corrupted: q.corruptedVideoFrames,"
         " text: document.getElementById('state').textContent, managed: window.__camrecManaged || 0,"
         " remote: v.disableRemotePlayback};")

SHOWN = """
const v = document.getElementById('live');
const c = document.createElement('canvas');
c.width = v.videoWidth; c.height = v.videoHeight;
const g = c.getContext('2d');
g.drawImage(v, 0, 0);
const white = (i) => { const p = g.getImageData(16 + i * 16 + 8, 24, 1, 1).data; return (p[0] + p[1] + p[2]) / 3 > 128; };
if (!(white(0) && white(33))) return null;
let value = 0; for (let b = 1; b <= 32; b++) value = value * 2 + (white(b) ? 1 : 0);
return value;
"""

MANAGED = """
window.__camrecManaged = 0;
const Real = window.MediaSource;
window.ManagedMediaSource = class extends Real { constructor() { super(); window.__camrecManaged++; } };
delete window.MediaSource;
"""


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def status(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        s = json.load(r)
    # The pattern numbers every frame it makes, those dropped before encoding too.
    return s["frames"] + s["dropped"], s["framesPerSecond"]


def watch(url, seconds, status_url, managed, log, driver, result):
    if managed:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": MANAGED})
    loaded = time.time()
    driver.get(url)
    s = driver.execute_script(STATE)
    while time.time() < loaded + 30 and s["error"] is None and not (s["ready"] >= 2 and s["t"] > 0):
        time.sleep(0.1)
        s = driver.execute_script(STATE)
    if managed:
        result.update(managed_used=s["managed"], disable_remote_playback=s["remote"])
    if s["error"] is not None or s["t"] <= 0:
        result.update(error=s["error"] or "did not start", ready=s["ready"], shown_text=s["text"])
        return
    result.update(error=None, started_after=round(time.time() - loaded, 2))
    start = time.time()
    samples, backwards, previous = [], 0, None
    while time.time() < start + seconds:
        time.sleep(0.25)
        captured, fps = status(status_url)
        shown = driver.execute_script(SHOWN)
        s = driver.execute_script(STATE)
        if shown is None or s["end"] is None:
            continue
        if previous is not None and shown < previous:
            backwards += 1
        previous = shown
        samples.append((time.time() - start, (captured - 1 - shown) / fps * 1000, s["end"] - s["t"]))
    if log:
        with open(log, "w") as f:
            for t, behind, buffered in samples:
                f.write(f"{t:.2f} {behind:.0f} {buffered:.3f}\n")
    last = [b for t, b, _ in samples if t >= seconds - 10]
    result.update(error=s["error"], frames=s["frames"], corrupted=s["corrupted"], samples=len(samples),
                  counters_backwards=backwards, shown_text=s["text"],
                  behind_ms_by_10s=[round(median([b for t, b, _ in samples if k <= t < k + 10]) or -1)
                                    for k in range(0, int(seconds), 10)],
                  end_behind_ms_median=round(median(last)) if last else None,
                  end_behind_ms_max=round(max(last)) if last else None,
                  end_buffered_behind=round(samples[-1][2], 3) if samples else None)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    log = None
    if "--log" in sys.argv:
        log = sys.argv[sys.argv.index("--log") + 1]
        args.remove(log)
    if len(args) != 3:
        sys.exit(__doc__)
    url, seconds, status_url = args[0], float(args[1]), args[2]
    run_reporting("browser-edge.py",
                  lambda driver, result: watch(url, seconds, status_url, "--managed" in sys.argv, log, driver, result))


if __name__ == "__main__":
    main()
