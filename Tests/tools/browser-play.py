#!/usr/bin/env python3
"""Plays a video file in headless Chromium (Debian's chromium + chromium-driver, driven by Selenium)
and reports what the page's <video> element saw, as JSON on stdout:

  browser-play.py FILE [SECONDS]

The file is served from a loopback HTTP server of this script's own (with Range support, as a web
server would serve a recording), into a page holding only <video muted autoplay>. After the video
starts, it plays for SECONDS (default 2) of wall time. Reported: "error" (the media error code, or
null), "width", "height", "duration", "advanced" (currentTime gained while it played), "frames"
(decoded frames, getVideoPlaybackQuality), "corrupted", and "seeked" (currentTime after a seek to
half the duration, or null when the file cannot seek).
"""
import functools, http.server, json, os, sys, threading, time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

PAGE = b"""<!doctype html><html><body>
<video id="v" muted autoplay playsinline></video>
<script>
const v = document.getElementById('v');
v.src = '/media/' + encodeURIComponent(location.hash.slice(1));
</script></body></html>"""


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the page at / and the file at /media/NAME, honouring a single Range (players seek with it)."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/" or self.path.startswith("/#"):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)
            return
        if not self.path.startswith("/media/"):
            self.send_error(404)
            return
        path = self.server.media
        size = os.path.getsize(path)
        start, end = 0, size - 1
        ranged = self.headers.get("Range", "")
        if ranged.startswith("bytes="):
            first, _, last = ranged[6:].split(",")[0].partition("-")
            start = int(first) if first else max(0, size - int(last))
            end = int(last) if first and last else size - 1
            end = min(end, size - 1)
        self.send_response(206 if ranged else 200)
        kind = {".mp4": "video/mp4", ".m4v": "video/mp4", ".mov": "video/quicktime", ".mkv": "video/x-matroska",
                ".webm": "video/webm", ".ts": "video/mp2t"}.get(os.path.splitext(path)[1], "application/octet-stream")
        self.send_header("Content-Type", kind)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start + 1
            try:
                while left > 0:
                    chunk = f.read(min(left, 1 << 16))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    left -= len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass


def main():
    path = os.path.abspath(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.media = path
    threading.Thread(target=server.serve_forever, daemon=True).start()

    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
                "--disable-dev-shm-usage", "--mute-audio"):
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    result = {"error": None}
    try:
        driver.get(f"http://127.0.0.1:{server.server_port}/#{os.path.basename(path)}")
        state = lambda: driver.execute_script(
            "const v = document.getElementById('v'); const q = v.getVideoPlaybackQuality();"
            "return {error: v.error ? v.error.code : null, message: v.error ? v.error.message : null,"
            " ready: v.readyState, t: v.currentTime, duration: v.duration, width: v.videoWidth,"
            " height: v.videoHeight, frames: q.totalVideoFrames, corrupted: q.corruptedVideoFrames, paused: v.paused};")
        deadline = time.time() + 10
        s = state()
        while time.time() < deadline and s["error"] is None and not (s["ready"] >= 3 and s["t"] > 0):
            time.sleep(0.05)
            s = state()
        if s["error"] is not None or s["t"] <= 0:
            result.update(error=s["error"] or "did not start", message=s.get("message"), ready=s["ready"])
            print(json.dumps(result))
            return
        t0 = s["t"]
        time.sleep(seconds)
        s = state()
        result.update(width=s["width"], height=s["height"], duration=s["duration"], advanced=round(s["t"] - t0, 3),
                      frames=s["frames"], corrupted=s["corrupted"], error=s["error"])
        seek_to = (s["duration"] or 0) / 2
        driver.execute_script(f"document.getElementById('v').currentTime = {seek_to};")
        deadline = time.time() + 5
        seeked = None
        while time.time() < deadline:
            v = driver.execute_script("const v = document.getElementById('v'); return [v.seeking, v.currentTime];")
            if not v[0] and v[1] >= seek_to - 0.1:
                seeked = round(v[1], 3)
                break
            time.sleep(0.05)
        result["seeked"] = seeked
        print(json.dumps(result))
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
