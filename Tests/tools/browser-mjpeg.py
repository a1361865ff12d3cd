#!/usr/bin/python3
"""What headless Chromium shows of an MJPEG stream (multipart/x-mixed-replace): a page of its own (served
here, on loopback) holds <img src=URL>, as OctoPrint's and Home Assistant's pages do, and every 0.25 s the
number Tests/tools/picture_numbers.py draws (loopback-feeder.py's pictures) is read from a screenshot of
the picture's number band (Chromium's own rendering, decoded here from its PNG).

  browser-mjpeg.py URL SECONDS

Prints one line of JSON: "numbers" (each distinct number read, in the order seen), "reads" (samples
taken), "unreadable" (samples whose number could not be read), "width", "height", "error".
"""
import base64
import http.server
import struct
import sys
import threading
import time
import zlib

from chromium import run_reporting
from picture_numbers import BITS, layout, read_number


def png_rows(data):
    """(width, height, channels, rows of bytes) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6) or body[12] != 0:
                raise ValueError(f"PNG depth {depth} color type {color} interlace {body[12]}")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prior = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prior[x]
            c = prior[x - channels] if x >= channels else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prior = line
    return width, height, channels, rows


def serve_page(url):
    """A loopback page holding the stream in an <img>; returns its address."""
    page = f"<!doctype html><body style='margin:0'><img id=s src='{url}'></body>".encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def watch(url, seconds, driver, result):
    driver.get(serve_page(url))
    numbers, reads, unreadable, size = [], 0, 0, (None, None)
    start = time.time()
    while time.time() < start + seconds:
        time.sleep(0.25)
        w, h = driver.execute_script("const i = document.getElementById('s'); return [i.naturalWidth, i.naturalHeight]")
        if not w:
            continue
        size = (w, h)
        side, x0, y0 = layout(w, h)
        shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "clip": {
            "x": x0, "y": y0, "width": BITS * side, "height": 2 * side, "scale": 1}})
        bw, bh, channels, rows = png_rows(base64.b64decode(shot["data"]))
        band = [round(0.299 * r[channels * x] + 0.587 * r[channels * x + 1] + 0.114 * r[channels * x + 2])
                for r in rows for x in range(bw)]
        reads += 1
        n = read_number(band, bw, side, 0)
        if n is None:
            unreadable += 1
        elif not numbers or numbers[-1] != n:
            numbers.append(n)
    result.update(error=None if reads else "no picture shown", numbers=numbers, reads=reads, unreadable=unreadable,
                  width=size[0], height=size[1])


def main():
    run_reporting("browser-mjpeg.py", lambda driver, result: watch(sys.argv[1], float(sys.argv[2]), driver, result))


if __name__ == "__main__":
    main()
