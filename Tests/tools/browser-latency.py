#!/usr/bin/env python3
"""Watches camrec's live page in headless Chromium and measures glass-to-browser latency: the test
pattern's capture time of each frame against the time the page shows it, on one clock. JSON on stdout:

  browser-latency.py URL SECONDS TIMING_PORT [delete|kill|settle=S]

TIMING_PORT is a camrec TCP listen output on 127.0.0.1 (`--listen PORT`): every access unit it sends
carries camrec's timing SEI (NetStream/TimestampSEI.swift) with the frame's number and capture time on
CLOCK_MONOTONIC, read here as they arrive. The page's requestVideoFrameCallback gives, for each frame
presented, its expected display time (performance.timeOrigin + expectedDisplayTime: wall-clock ms,
turned into CLOCK_MONOTONIC with this machine's offset between the two) and the frame number burned
into its picture (32 bits as 16x16 blocks from x=16, y=16 between two white markers, as
Tests/tools/pattern-counters.py reads it). "latency_ms" is the median of shown minus captured over
the frames read, "latency_p90_ms" the 90th percentile, "latency_samples" how many.

Also: "transport" (the page's #transport line), "started_after", "frames" and "corrupted"
(getVideoPlaybackQuality), "counter_first"/"counter_last" and "counters_rising" (each number read
greater than the one before; "counters_not_rising" the first pairs that were not), "width", "height", "error".
"answer_profile": the profile-level-id in the SDP answer the page got (WebRTC).
With "delete" (a WebRTC page): afterwards DELETE on the session's resource from the page ("delete_status"),
the RTP packets the browser received in the 1.5 s after a 1 s grace ("packets_after_delete", from
getStats), and a second DELETE ("delete_again_status"). With "kill": once it plays, the whole Chromium
process tree is killed with SIGKILL (a viewer that vanishes without a word); "killed_at" is
CLOCK_MONOTONIC then, "resource" the session's Location.
When a WebRTC page gets an audio track (a recording with --audio test), the same seconds also measure
the sound: "audio_packets", "audio_samples" and "audio_concealed" (getStats' inbound-rtp audio over the
window, "audio_window" s), and, the sound taken through a Web Audio ScriptProcessor (256 samples a block)
with each block's time put on the page's clock by getOutputTimestamp, "sync_ms": for each burst heard
after half a second of quiet (level above 0.1), the display time of the nearest frame whose lower half is
white (mean luma above 200, as Tests/tools/av-sync.py judges a file) minus the time the burst sounds:
positive when the picture comes after its sound. Also "audio_codec" (the inbound audio's codec, e.g.
"audio/opus/48000"), "audio_jitter_buffer_ms" (jitterBufferDelay / jitterBufferEmittedCount over the window)
and "audio_playout_ms"/"audio_playout_p90_ms": sampled each second, the page's wall clock (as NTP) minus
getStats' estimatedPlayoutTimestamp, the sender's NTP time of the sound playing now (camrec's sender reports
tie it to the capture time); "video_playout_ms" the same for the picture.
With "settle=S", the window starts S seconds after the picture does (Chromium syncs the picture to the
sound only after ~30-40 s: docs/PERFORMANCE.md).
"""
import json, os, re, signal, socket, statistics, subprocess, sys, threading, time

from chromium import start

UUID = bytes.fromhex("c4a3e1f26d1b4b8e9a5763616d726563")
STATE = ("const v = document.getElementById('live'); const q = v.getVideoPlaybackQuality();"
         "return {error: v.error ? v.error.code : null, ready: v.readyState, t: v.currentTime, width: v.videoWidth,"
         " height: v.videoHeight, frames: q.totalVideoFrames, corrupted: q.corruptedVideoFrames,"
         " transport: document.getElementById('transport').textContent};")
# Every presented frame: [number burned in (or null), wall-clock ms it is shown].
WATCH = """
const v = document.getElementById('live');
const c = document.createElement('canvas');
window.shown = [];
const g = c.getContext('2d', {willReadFrequently: true});
const step = (now, meta) => {
  if (c.width !== v.videoWidth) { c.width = v.videoWidth; c.height = v.videoHeight; }
  g.drawImage(v, 0, 0);
  const white = (i) => { const p = g.getImageData(16 + i * 16 + 8, 24, 1, 1).data; return (p[0] + p[1] + p[2]) / 3 > 128; };
  let value = null;
  if (white(0) && white(33)) { value = 0; for (let b = 1; b <= 32; b++) value = value * 2 + (white(b) ? 1 : 0); }
  window.shown.push([value, performance.timeOrigin + meta.expectedDisplayTime]);
  if (window.flashes) {
    small.drawImage(v, 0, 0, 32, 18);
    const d = small.getImageData(0, 9, 32, 9).data;
    let sum = 0;
    for (let i = 0; i < d.length; i += 4) sum += (d[i] + d[i + 1] + d[i + 2]) / 3;
    if (sum / (d.length / 4) > 200) window.flashes.push(meta.expectedDisplayTime);
  }
  if (!window.stopWatching) v.requestVideoFrameCallback(step);
};
const sc = document.createElement('canvas');
sc.width = 32; sc.height = 18;
const small = sc.getContext('2d', {willReadFrequently: true});
v.requestVideoFrameCallback(step);
"""
# The sound's bursts (performance.now() ms when each sounds) and its getStats counters, when there is an audio track.
HEAR = """
const v = document.getElementById('live');
const tracks = v.srcObject ? v.srcObject.getAudioTracks() : [];
if (tracks.length === 0) return false;
window.flashes = [];
window.bursts = [];
const context = new AudioContext();
const source = context.createMediaStreamSource(new MediaStream([tracks[0]]));
const processor = context.createScriptProcessor(256, 1, 1);
let quiet = 0;
processor.onaudioprocess = (e) => {
  const x = e.inputBuffer.getChannelData(0), rate = context.sampleRate;
  const stamp = context.getOutputTimestamp();
  for (let i = 0; i < x.length; i++) {
    if (Math.abs(x[i]) > 0.1) {
      if (quiet > rate / 2 && stamp.contextTime > 0)
        window.bursts.push(stamp.performanceTime + (e.playbackTime - stamp.contextTime + i / rate) * 1000);
      quiet = 0;
    } else quiet++;
  }
};
source.connect(processor);
processor.connect(context.destination);
context.resume();
window.hearing = context;
return true;
"""
AUDIO_STATS = """
const done = arguments[arguments.length - 1];
peer.getStats().then(r => { let a = null; r.forEach(s => { if (s.type === 'inbound-rtp' && s.kind === 'audio') a = s; });
  const c = a && a.codecId ? r.get(a.codecId) : null;
  done(a ? [performance.now(), a.packetsReceived, a.totalSamplesReceived, a.concealedSamples,
            c ? c.mimeType + '/' + c.clockRate : null, a.jitterBufferDelay || 0, a.jitterBufferEmittedCount || 0] : null);
}).catch(e => done(null));
"""
# Wall clock as NTP ms minus estimatedPlayoutTimestamp, for the sound and the picture ([audio, video], null when absent).
PLAYOUT = """
const done = arguments[arguments.length - 1];
peer.getStats().then(r => { const now = Date.now() + 2208988800000; const out = [null, null];
  r.forEach(s => { if (s.type === 'inbound-rtp' && s.estimatedPlayoutTimestamp)
    out[s.kind === 'audio' ? 0 : 1] = now - s.estimatedPlayoutTimestamp; }); done(out); }).catch(e => done(null));
"""
PACKETS = """
const done = arguments[arguments.length - 1];
peer.getStats().then(r => { let n = 0; r.forEach(s => { if (s.type === 'inbound-rtp') n += s.packetsReceived; }); done(n); })
  .catch(e => done(null));
"""
# DELETE on the session's resource (the first time as the page has it, then the same one again).
DELETE = """
const done = arguments[arguments.length - 1];
window.deleted = window.deleted || whepResource;
fetch(window.deleted, {method: 'DELETE'}).then(r => done(r.status)).catch(e => done(String(e)));
"""


def read_capture_times(port, times, stop):
    """Frame number -> capture time (CLOCK_MONOTONIC ns) from the timing SEIs of camrec's TCP output."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.settimeout(0.5)
    data = b""
    marker = b"\x00\x00\x00\x01\x06\x05\x31" + UUID
    while not stop.is_set():
        try:
            chunk = s.recv(1 << 16)
        except socket.timeout:
            continue
        if not chunk:
            break
        data += chunk
        while True:
            i = data.find(marker)
            if i < 0 or len(data) < i + len(marker) + 60:
                data = data[max(0, len(data) - len(marker) - 60):] if i < 0 else data[i:]
                break
            raw = data[i + len(marker):i + len(marker) + 60]
            body = bytearray()
            zeros = 0
            for b in raw:  # removes emulation prevention (00 00 03)
                if zeros >= 2 and b == 3:
                    zeros = 0
                    continue
                body.append(b)
                zeros = zeros + 1 if b == 0 else 0
            fields = [int.from_bytes(body[1 + 8 * k:9 + 8 * k], "big") for k in range(4)]
            times[fields[2]] = fields[0]
            data = data[i + len(marker):]
    s.close()


def tree(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split()
    return [pid] + [q for c in out for q in tree(int(c))]


def main():
    url, seconds, port = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else ""
    times, stop = {}, threading.Event()
    reader = threading.Thread(target=read_capture_times, args=(port, times, stop), daemon=True)
    reader.start()
    driver = start()
    result = {"error": "browser-latency.py did not finish"}
    try:
        loaded = time.time()
        driver.get(url)
        s = driver.execute_script(STATE)
        while time.time() < loaded + 15 and s["error"] is None and not (s["ready"] >= 2 and s["t"] > 0):
            time.sleep(0.05)
            s = driver.execute_script(STATE)
        result.update(transport=s["transport"])
        if s["error"] is not None or s["t"] <= 0:
            result.update(error=s["error"] or "did not start", ready=s["ready"])
            return
        result.update(error=None, started_after=round(time.time() - loaded, 2))
        if mode == "kill":
            result["resource"] = driver.execute_script("return typeof whepResource !== 'undefined' ? whepResource : null;")
            pids = tree(driver.service.process.pid)
            result["killed_at"] = time.monotonic()
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            driver = None
            return
        if mode.startswith("settle="):
            time.sleep(float(mode.split("=")[1]))
        driver.execute_script(WATCH)
        hearing = driver.execute_script(HEAR)
        audio_before = driver.execute_async_script(AUDIO_STATS) if hearing else None
        playout = []
        end = time.time() + seconds
        while time.time() < end - 1 and hearing:
            time.sleep(1)
            playout.append(driver.execute_async_script(PLAYOUT) or [None, None])
        time.sleep(max(0, end - time.time()))
        driver.execute_script("window.stopWatching = true;")
        if hearing:
            audio_after = driver.execute_async_script(AUDIO_STATS)
            flashes, bursts = driver.execute_script("window.hearing.close(); return [window.flashes, window.bursts];")
            if audio_before and audio_after:
                result.update(audio_window=round((audio_after[0] - audio_before[0]) / 1000, 2),
                              audio_packets=audio_after[1] - audio_before[1], audio_samples=audio_after[2] - audio_before[2],
                              audio_concealed=audio_after[3] - audio_before[3], audio_codec=audio_after[4],
                              audio_jitter_buffer_ms=round(1000 * (audio_after[5] - audio_before[5]) / (audio_after[6] - audio_before[6]), 1)
                              if audio_after[6] > audio_before[6] else None)
            for i, name in ((0, "audio"), (1, "video")):
                values = sorted(p[i] for p in playout if p[i] is not None)
                if values:
                    result[name + "_playout_ms"] = round(statistics.median(values), 1)
                    result[name + "_playout_p90_ms"] = round(values[int(len(values) * 0.9)], 1)
            # Each burst against the nearest flash within half a second (a flash a second).
            pairs = [min(flashes, key=lambda f: abs(f - b)) - b for b in bursts if flashes]
            result.update(flashes=len(flashes), bursts=len(bursts), sync_ms=[round(p, 1) for p in pairs if abs(p) < 500])
        shown = driver.execute_script("return window.shown;")
        s = driver.execute_script(STATE)
        offset_ns = time.time_ns() - time.monotonic_ns()
        latencies, counters = [], []
        for value, wall_ms in shown:
            if value is None:
                continue
            counters.append(value)
            if value in times:
                latencies.append((wall_ms * 1e6 - offset_ns - times[value]) / 1e6)
        latencies.sort()
        answer = driver.execute_script("return typeof peer !== 'undefined' && peer && peer.remoteDescription ? peer.remoteDescription.sdp : '';")
        profile = re.search(r"profile-level-id=([0-9a-fA-F]{6})", answer or "")
        result.update(answer_profile=profile.group(1).lower() if profile else None)
        result.update(frames=s["frames"], corrupted=s["corrupted"], width=s["width"], height=s["height"], error=s["error"],
                      counter_first=counters[0] if counters else None, counter_last=counters[-1] if counters else None,
                      counters_read=len(counters), counters_rising=all(b > a for a, b in zip(counters, counters[1:])),
                      # Where they did not rise (at most 5 pairs, the number before and the one after), for a failure to name.
                      counters_not_rising=[[a, b] for a, b in zip(counters, counters[1:]) if b <= a][:5],
                      latency_samples=len(latencies),
                      latency_ms=round(statistics.median(latencies), 1) if latencies else None,
                      latency_p90_ms=round(latencies[int(len(latencies) * 0.9)], 1) if latencies else None)
        if mode == "delete":
            result["delete_status"] = driver.execute_async_script(DELETE)
            time.sleep(1)
            before = driver.execute_async_script(PACKETS)
            time.sleep(1.5)
            after = driver.execute_async_script(PACKETS)
            result["packets_after_delete"] = after - before if before is not None and after is not None else None
            result["delete_again_status"] = driver.execute_async_script(DELETE)
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        stop.set()
        print(json.dumps(result))
        if driver is not None:
            driver.quit()


if __name__ == "__main__":
    main()
