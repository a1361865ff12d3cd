#!/usr/bin/env python3
"""Watches camrec's live page in headless Chromium while the camera goes away and comes back, and
reports, as NAME=VALUE lines on stdout, what the page's <video> and status line did:

  browser-return.py URL MARKERS RETURNS SECONDS

The camera-return case runs camrec in the test VM and this on the host (the page reaches the VM
through run.sh --forward). The two share no clock, so the case marks its moments with files in the
directory MARKERS (on the results share, seen here as soon as they are created): this tool creates
MARKERS/started once the video plays; the case creates MARKERS/released-N when it lets go of the
camera for the Nth time (the camera is free to come back). Sampling every 50 ms, for each N:
"picture_ms" is the time from seeing released-N to the first sample at which the video shows a new
picture: it has decoded more frames (getVideoPlaybackQuality().totalVideoFrames) and its playhead
(currentTime) has moved on, and "lost_shown" counts the gaps during which
the page's status line said "CAMERA LOST since". It ends RETURNS gaps after, 2 s after the last
picture, or after SECONDS.

Also: "started_after" (s from loading the page to playing), "socket_closed" (the page said its
stream connection closed: yes/no), "same_page" (no reload: a marker set on window at the start is
still there), "frames" (decoded in all), "corrupted", "error" (media error code or a reason; "none").
"""
import os
import sys
import time

from chromium import start

STATE = ("const v = document.getElementById('live'); const q = v.getVideoPlaybackQuality();"
         "return {error: v.error ? v.error.code : null, ready: v.readyState, t: v.currentTime,"
         " frames: q.totalVideoFrames, corrupted: q.corruptedVideoFrames,"
         " status: document.getElementById('status').textContent,"
         " state: document.getElementById('state').textContent, marker: window.camrecWatch === 1};")


def watch(driver, url, markers, returns, seconds, out):
    loaded = time.time()
    driver.get(url)
    s = driver.execute_script(STATE)
    while time.time() < loaded + 30 and s["error"] is None and s["frames"] == 0:
        time.sleep(0.05)
        s = driver.execute_script(STATE)
    if s["error"] is not None or s["frames"] == 0:
        out["error"] = s["error"] or "did not start within 30 s"
        return
    out["started_after"] = round(time.time() - loaded, 2)
    driver.execute_script("window.camrecWatch = 1;")
    open(os.path.join(markers, "started"), "w").close()
    end = loaded + seconds
    pictures, lost_shown = [], 0
    released_at, frames_then, time_then, lost_seen = None, None, None, False
    last_picture = None
    while time.time() < end:
        time.sleep(0.05)
        s = driver.execute_script(STATE)
        now = time.time()
        if "closed" in s["state"]:
            out["socket_closed"] = "yes"
        n = len(pictures) + 1
        if "CAMERA LOST since" in s["status"] and not lost_seen and n <= returns:
            lost_seen = True
            lost_shown += 1
        if released_at is None and n <= returns and os.path.exists(os.path.join(markers, f"released-{n}")):
            released_at, frames_then, time_then = now, s["frames"], s["t"]
        elif released_at is not None and s["frames"] > frames_then and s["t"] > time_then:
            pictures.append(round((now - released_at) * 1000))
            released_at, lost_seen, last_picture = None, False, now
        if len(pictures) == returns and now > last_picture + 2:
            break
    out.update(picture_ms=" ".join(map(str, pictures)) or "none", lost_shown=lost_shown,
               same_page="yes" if s["marker"] else "no", frames=s["frames"], corrupted=s["corrupted"],
               error=s["error"] if s["error"] is not None else out["error"])


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: browser-return.py URL MARKERS RETURNS SECONDS")
    url, markers, returns, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    out = {"error": "none", "socket_closed": "no", "picture_ms": "none", "lost_shown": 0}
    driver = start()
    try:
        watch(driver, url, markers, returns, seconds, out)
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        for key, value in out.items():
            print(f"{key}={value}")
        driver.quit()


if __name__ == "__main__":
    main()
