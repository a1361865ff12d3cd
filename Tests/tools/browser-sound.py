#!/usr/bin/env python3
"""Listens to camrec's live page in headless Chromium (Selenium) while it records --audio test: waits
for the video to play, clicks the page's "Sound on" button as a viewer would, routes the <video>'s
sound (its MediaStream when the page plays WebRTC) through a Web Audio AudioWorklet that sees every
sample, for SECONDS of the AudioContext's clock. Reports JSON: "sound_button" (the page offered it),
"muted" (the element after the click), "peaks" (times in s of that clock, from the first sample, where
the level rose above 0.1 after at least half a second below it: the tone's bursts), "peak" (the loudest
sample), "wall_s" (how long the listening took by the wall clock), "jitter_buffer" (with WebRTC: the milliseconds of sound Chromium's jitter
buffer concealed, inserted to slow down and removed to speed up over the listening window, from its own
getStats, and the milliseconds it received; null with MSE), "error".

  browser-sound.py URL [SECONDS]
"""
import sys, time

from selenium.webdriver.common.by import By

from chromium import run_reporting

# Every sample the page plays passes this AudioWorklet, so no burst falls between two looks at it: an
# AnalyserNode read every 20 ms missed a 10 ms burst whenever a loaded machine held the timer back
# (one CI run heard 0.5, 2.44, 3.44 s with nothing of the sound concealed). Times are frames of the
# AudioContext's own clock: what Chromium played, not when a timer ran.
FINDER = """
class BurstFinder extends AudioWorkletProcessor {
  constructor(options) {
    super();
    this.seconds = options.processorOptions.seconds;
    this.start = -1; this.lastLoud = 0; this.loudest = 0; this.peaks = []; this.done = false;
  }
  process(inputs, outputs) {
    const input = inputs[0] || [], output = outputs[0];
    for (let c = 0; c < output.length; c++) if (input[c]) output[c].set(input[c]);
    if (this.done) return true;
    if (this.start < 0) { this.start = currentFrame; this.lastLoud = currentFrame; }
    const end = this.start + this.seconds * sampleRate, length = input.length ? input[0].length : 128;
    for (let i = 0; i < length && currentFrame + i < end; i++) {
      let level = 0;
      for (const channel of input) level = Math.max(level, Math.abs(channel[i]));
      this.loudest = Math.max(this.loudest, level);
      if (level > 0.1) {
        if (currentFrame + i - this.lastLoud > sampleRate / 2) this.peaks.push((currentFrame + i - this.start) / sampleRate);
        this.lastLoud = currentFrame + i;
      }
    }
    if (currentFrame + length >= end) {
      this.done = true;
      this.port.postMessage({peaks: this.peaks, loudest: this.loudest});
    }
    return true;
  }
}
registerProcessor('burst-finder', BurstFinder);
"""

LISTEN = """
const done = arguments[arguments.length - 1];
const seconds = arguments[0], finderCode = arguments[1];
const v = document.getElementById('live');
const context = new AudioContext();
// With WebRTC the page plays a MediaStream (srcObject), whose sound Chromium does not route through
// createMediaElementSource (silence); the stream's own source is the same sound the element plays.
const source = v.srcObject ? context.createMediaStreamSource(v.srcObject) : context.createMediaElementSource(v);
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
const module = URL.createObjectURL(new Blob([finderCode], {type: 'application/javascript'}));
Promise.all([context.audioWorklet.addModule(module), context.resume()]).then(async () => {
  const before = await jitterBuffer().catch(() => null);
  const finder = new AudioWorkletNode(context, 'burst-finder', {processorOptions: {seconds: seconds}});
  const began = performance.now();
  const finish = heard => jitterBuffer().catch(() => null).then(after => {
    let moved = null;
    if (before && after) {
      const d = k => after[k] - before[k];
      moved = {concealed_ms: 1000 * d('concealed') / after.rate, inserted_ms: 1000 * d('inserted') / after.rate,
               removed_ms: 1000 * d('removed') / after.rate, received_ms: 1000 * d('received') / after.rate};
    }
    done({peaks: heard.peaks, peak: heard.loudest, state: context.state, muted: v.muted, jitter_buffer: moved,
          through: v.srcObject ? "MediaStream (WebRTC)" : "the element", wall_s: (performance.now() - began) / 1000,
          error: heard.error || null});
  });
  // The audio clock stops if Chromium stops playing; the wall clock then ends the listening.
  const guard = setTimeout(() => finish({peaks: [], loudest: 0, error: "the AudioContext played less than " + seconds + " s in " + (seconds + 20) + " s"}), (seconds + 20) * 1000);
  finder.port.onmessage = e => { clearTimeout(guard); finish(e.data); };
  source.connect(finder);
  finder.connect(context.destination);
}).catch(e => done({peaks: [], peak: 0, error: String(e)}));
"""

def listen(url, seconds, driver, result):
    loaded = time.time()
    driver.get(url)
    driver.set_script_timeout(seconds + 40)
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
    heard = driver.execute_async_script(LISTEN, seconds, FINDER)
    result.update(error=heard.get("error"), peaks=[round(p, 3) for p in heard["peaks"]], peak=round(heard["peak"], 3),
                  context=heard.get("state"), muted=heard.get("muted"), through=heard.get("through"),
                  wall_s=heard.get("wall_s") and round(heard["wall_s"], 2),
                  jitter_buffer=heard.get("jitter_buffer") and {k: round(x, 1) for k, x in heard["jitter_buffer"].items()})


def main():
    url = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    if not 0 < seconds <= 600:
        sys.exit(f"browser-sound.py: SECONDS must be more than 0 and at most 600, not {sys.argv[2]}")
    run_reporting("browser-sound.py", lambda driver, result: listen(url, seconds, driver, result))


if __name__ == "__main__":
    main()
