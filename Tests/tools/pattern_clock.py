"""The newest frame camrec's test pattern has captured at a given moment, measured outside camrec: the
truth that Tests/tools/browser-edge.py holds the page's picture against ("how far behind live").

Why this truth: the pattern (`--test-pattern`, Sources/Capture/TestPatternSource.swift) is a camera
paced by the clock: frame n is due at START + n / fps on CLOCK_MONOTONIC, and a frame whose time has
passed is dropped and its number skipped, never delivered late under an older number. So the newest
frame at time T is floor((T - START) * fps), and only START is unknown. A receiver that is not camrec
finds it: it reads camrec's `--listen` stream on loopback, decodes every picture with ffmpeg, reads the
number burned into it (the 32 blocks between two white markers at x=16, y=16, as
Tests/tools/pattern-counters.py does; no code shared with camrec) and stamps its arrival with this
host's CLOCK_MONOTONIC (time.monotonic; Chromium runs on the same host, so its pictures are read on
the same clock). ffmpeg's raw H.264 parser hands a picture on only once the next one has begun to
arrive (it finds where an access unit ends by the start of the next), and camrec sends a frame only
after capturing it, so frame n comes out of the reader after frame n + 1 (or a later one, when the
pattern dropped n + 1) was captured: START <= arrival - (n + 1) / fps for every frame, and the smallest
of these, over the whole run, is the estimate. Nothing camrec says about
itself is used: not its /api/status counts, not the capture times in its timing SEI.

The estimate errs in camrec's favour by the fastest frame's path from capture to this reader (encode,
loopback, decode: milliseconds at 640x360), so a page measured against it is at least as far behind
live as reported. "truth_spread_ms" (the median frame's lateness beyond the fastest's) shows how much
later frames usually come to this reader.

  clock = PatternClock(port, fps); clock.start()
  ...; clock.newest_at(time.monotonic())   # None until a picture has been read
  clock.stop(); clock.report()
"""
import statistics, subprocess, threading, time

BLOCK, BITS, X0, Y0 = 16, 32, 16, 16
ROW = (BITS + 2) * BLOCK       # the markers and the bits, one row of luma through their middles


class PatternClock:
    def __init__(self, port, fps):
        self.port, self.fps = port, fps
        self.start_estimate = None
        self.frames = self.unread = self.backwards = 0
        self.late = []        # each frame's arrival minus (n + 1) / fps: the estimate is their minimum
        self.last = None
        self.lock = threading.Lock()
        self.process = None

    def start(self):
        # One row of luma per picture, flushed as each is decoded: no frame waits in a pipe or a
        # decoder's reorder queue (the stream has no B-frames; -flags low_delay, one thread).
        self.process = subprocess.Popen(
            ["ffmpeg", "-v", "error", "-fflags", "nobuffer", "-flags", "low_delay", "-threads", "1",
             "-probesize", "32", "-analyzeduration", "0", "-f", "h264", "-i", f"tcp://127.0.0.1:{self.port}",
             "-vf", f"format=gray,crop={ROW}:1:{X0}:{Y0 + BLOCK // 2}", "-pix_fmt", "gray", "-f", "rawvideo",
             "-flush_packets", "1", "-"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.process.stdout
        while True:
            row = out.read(ROW)
            if len(row) < ROW:
                return
            arrived = time.monotonic()
            white = lambda i: row[i * BLOCK + BLOCK // 2] > 128
            with self.lock:
                if not (white(0) and white(BITS + 1)):
                    self.unread += 1
                    continue
                number = 0
                for b in range(1, BITS + 1):
                    number = number << 1 | white(b)
                self.frames += 1
                if self.last is not None and number <= self.last:
                    self.backwards += 1
                self.last = number
                late = arrived - (number + 1) / self.fps
                self.late.append(late)
                if self.start_estimate is None or late < self.start_estimate:
                    self.start_estimate = late

    def newest_at(self, t):
        """The newest frame number captured by CLOCK_MONOTONIC time t, by the estimate so far."""
        with self.lock:
            return None if self.start_estimate is None else int((t - self.start_estimate) * self.fps)

    def stop(self):
        if self.process:
            self.process.kill()
            self.process.wait()

    def report(self):
        with self.lock:
            spread = statistics.median(self.late) - self.start_estimate if self.late else None
            return {"truth_frames": self.frames, "truth_unread": self.unread, "truth_backwards": self.backwards,
                    "truth_spread_ms": None if spread is None else round(spread * 1000, 1)}
