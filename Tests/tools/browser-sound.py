#!/usr/bin/env python3
"""Listens to camrec's live page in headless Chromium (Selenium) while it records --audio test: waits
for the video to play, clicks the page's "Sound on" button as a viewer would, routes the <video>'s
sound (its MediaStream when the page plays WebRTC) into a Web Audio AnalyserNode and samples its level every 20 ms for SECONDS. Reports JSON:
"sound_button" (the page offered it), "muted" (the element after the click), "peaks" (times in s,
from the first sample, where the level rose above 0.1 after at least half a second below it: the
tone's bursts), "peak" (the loudest sample), "jitter_buffer" (with WebRTC: the milliseconds of sound Chromium's jitter
buffer concealed, inserted to slow down and removed to speed up over the listening window, from its own
getStats, and the milliseconds it received; null with MSE), "error".

  browser-sound.py URL [SECONDS]
"""
import sys, time

from selenium.webdriver.common.by import By

from chromium import run_reporting

LISTEN = """
const done = arguments[arguments.length - 1];
const seconds = arguments[0];
const v = document.getElementById('live');
const context = new AudioContext();
// With WebRTC the page plays a MediaStream (srcObject), whose sound Chromium does not route through
// createMediaElementSource (silence); the stream's own source is the same sound the element plays.
const source = v.srcObject ? context.createMediaStreamSource(v.srcObject) : context.createMediaElementSource(v);
const analyser = context.createAnalyser();
analyser.fftSize = 1024;
source.connect(analyser);
analyser.connect(context.destination);
// Chromium's jitter buffer (NetEQ) plays the sound faster or slower and conceals late packets; its own
// count of the samples it added or took away, over the listening window, is how far a burst may move.
const jitterBuffer = async () => {
  if (typeof peer === 'undefined' || !peer) return null;
  const stats = await peer.getStats();
  let audio = null, rates = {};
  stats.forEach(s => { if (s.type === 'inbound-rtp' && s.kind === 'audio') audio = s; if (s.type === 'codec') rates[s.id] = s.clockRate; });
  if (!audio) return null;
  return {rate: rates[audio.codecId] || 48000, concealed: audio.concealedSamples || 0,
          inserted: audio.insertedSamplesForDeceleration || 0, removed: audio.removedSamplesForAcceleration || 0,
          received: audio.totalSamplesReceived || 0};
};
Promise.all([context.resume(), jitterBuffer().catch(() => null)]).then(([_, before]) => {
  const data = new Float32Array(analyser.fftSize);
  const start = performance.now();
  const peaks = [];
  let loudest = 0, quietSince = start;
  const timer = setInterval(() => {
    analyser.getFloatTimeDomainData(data);
    let level = 0;
    for (const x of data) level = Math.max(level, Math.abs(x));
    const now = performance.now();
    loudest = Math.max(loudest, level);
    if (level > 0.1) {
      if (now - quietSince > 500) peaks.push((now - start) / 1000);
      quietSince = Infinity;
    } else if (quietSince === Infinity) {
      quietSince = now;
    }
    if (now - start > seconds * 1000) {
      clearInterval(timer);
      jitterBuffer().catch(() => null).then(after => {
        let moved = null;
        if (before && after) {
          const d = k => after[k] - before[k];
          moved = {concealed_ms: 1000 * d('concealed') / after.rate, inserted_ms: 1000 * d('inserted') / after.rate,
                   removed_ms: 1000 * d('removed') / after.rate, received_ms: 1000 * d('received') / after.rate};
        }
        done({peaks: peaks, peak: loudest, state: context.state, muted: v.muted, jitter_buffer: moved,
              through: v.srcObject ? "MediaStream (WebRTC)" : "the element"});
      });
    }
  }, 20);
});
"""


def listen(url, seconds, driver, result):
    loaded = time.time()
    driver.get(url)
    driver.set_script_timeout(seconds + 30)
    while time.time() < loaded + 15:
        state = driver.execute_script("const v = document.getElementById('live'); return {t: v.currentTime, err: v.error && v.error.code};")
        if state["err"] is not None or state["t"] > 0:
            break
        time.sleep(0.1)
    if state["err"] is not None or state["t"] <= 0:
        result.update(error=state["err"] or "the video did not start")
        return
    button = driver.find_element(By.ID, "sound")
    result["sound_button"] = button.is_displayed()
    if button.is_displayed():
        button.click()
    heard = driver.execute_async_script(LISTEN, seconds)
    result.update(error=None, peaks=[round(p, 3) for p in heard["peaks"]], peak=round(heard["peak"], 3),
                  context=heard["state"], muted=heard["muted"], through=heard["through"],
                  jitter_buffer=heard["jitter_buffer"] and {k: round(x, 1) for k, x in heard["jitter_buffer"].items()})


def main():
    url = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    run_reporting("browser-sound.py", lambda driver, result: listen(url, seconds, driver, result))


if __name__ == "__main__":
    main()
