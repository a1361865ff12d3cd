#!/usr/bin/env python3
"""How far camrec's live page is behind live, over time, in headless Chromium (Debian's chromium +
chromium-driver, driven by Selenium); one line of JSON on stdout:

  browser-edge.py URL SECONDS [--truth PORT] [--webrtc-through UDP1:UDP2] [--managed] [--log FILE]

Loads URL (the page, possibly through a delayed, lossy path), waits up to 30 s for the video to start,
then every 0.25 s for SECONDS reads the frame number burned into the picture the <video> shows (the
test pattern's 32 blocks between two white markers at x=16, y=16, drawn into a canvas at the video's
own size), stamped with this host's CLOCK_MONOTONIC (the middle of the read). With --truth PORT (a camrec
`--listen` output on 127.0.0.1, 30 fps), live is what Tests/tools/pattern_clock.py measures outside
camrec: the newest frame the test pattern had captured at that moment, by its pacing on the same clock,
found from the pictures an independent loopback reader decodes. Behind live = (newest - shown) / fps.
Also "buffered behind" (MSE): Chromium's newest buffered time minus currentTime.

Reports "started_after", "error", "transport" (the page's #transport line), "frames", "corrupted"
(getVideoPlaybackQuality), "samples", "counters_backwards" (samples whose number was lower than the
one before), "shown_text" (the page's state line); with --truth: "behind_ms_by_10s" (median behind
live in each 10 s of the run), "end_behind_ms_median" and "end_behind_ms_max" (the last 10 s),
"end_buffered_behind" (the last sample), and the reader's "truth_frames", "truth_unread",
"truth_backwards", "truth_spread_ms" (pattern_clock.py).
With --managed, window.MediaSource is removed before the page runs and window.ManagedMediaSource
offered (MediaSource under that name, counting its construction), as on an iPhone: adds "managed_used"
and "disable_remote_playback" (what the page set on the <video>).
With --webrtc-through UDP1:UDP2 (WebRTC's media through a relay, Tests/lib/netem-live.sh): the page's
WHEP exchange is rewritten in the browser before the page sees it, so that each side's only ICE
candidate is a port into the relay: camrec's answer names 127.0.0.1:UDP1 (the relay takes it on to
camrec) and the offer camrec gets names 127.0.0.1:UDP2 (the relay takes it on to Chromium); neither
side can reach the other directly. Adds "whep_rewritten" (candidates replaced in the offer and the
answer).
When the page plays WebRTC, also what Chromium's own receiver counted (getStats, the inbound-rtp video):
"packets_received", "packets_lost", "nack_count" (NACKs it sent), "retransmitted_received" (packets it
got again over RTX; null when RTX was not negotiated), "pli_count", "key_frames_decoded", "frames_decoded",
"frames_dropped" and "freeze_count"; and what camrec's answer offered: "answer_nack" (an
a=rtcp-fb:PT nack for the H.264 payload type) and "answer_rtx" (an rtx rtpmap whose fmtp has apt=PT),
with the payload types themselves: "answer_h264_types" and "answer_rtx_types" (space-separated).
"backwards_at" lists each backwards sample as [seconds into the watch, number before, number read].
--log FILE writes every sample (seconds, behind live in ms, buffered behind in s or -1, the number read).
"""
import json, sys, time

from chromium import run_reporting
from pattern_clock import PatternClock

STATE = ("const v = document.getElementById('live'); const q = v.getVideoPlaybackQuality(); const b = v.buffered;"
         " return {error: v.error ? v.error.code : null, ready: v.readyState, t: v.currentTime,"
         " end: b.length ? b.end(b.length - 1) : null, frames: q.totalVideoFrames, corrupted: q.corruptedVideoFrames,"
         " text: document.getElementById('state').textContent,"
         " transport: document.getElementById('transport').textContent, managed: window.__camrecManaged || 0,"
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

# Every picture the <video> presents (requestVideoFrameCallback): its burned-in number read in the callback,
# its mediaTime and (WebRTC) RTP timestamp, each held against the picture presented before it.
EACH = """
const v = document.getElementById('live');
// Only the strip of blocks is drawn and read, once a picture (cheap beside the suite's other sections).
const c = document.createElement('canvas'); c.width = 34 * 16 + 16; c.height = 1;
const g = c.getContext('2d', {willReadFrequently: true});
const f = window.__camrecFrames = {presented: 0, numbers_back: 0, media_time_back: 0, rtp_back: 0, unread: 0, back_at: []};
let row = null;
const white = (i) => { const p = (16 + i * 16 + 8) * 4; return (row[p] + row[p + 1] + row[p + 2]) / 3 > 128; };
let last = null;
const each = (now, m) => {
  g.drawImage(v, 0, 24, c.width, 1, 0, 0, c.width, 1);
  row = g.getImageData(0, 0, c.width, 1).data;
  let n = null;
  if (white(0) && white(33)) { n = 0; for (let b = 1; b <= 32; b++) n = n * 2 + (white(b) ? 1 : 0); } else f.unread++;
  const rtp = m.rtpTimestamp === undefined ? null : m.rtpTimestamp;
  f.presented++;
  if (last) {
    if (m.mediaTime < last.t) f.media_time_back++;
    if (rtp !== null && last.rtp !== null && ((rtp - last.rtp) | 0) < 0) f.rtp_back++;
    if (n !== null && last.n !== null && n < last.n) {
      f.numbers_back++;
      if (f.back_at.length < 20) f.back_at.push([last.n, n, last.rtp, rtp, last.t, m.mediaTime, m.presentedFrames - last.p]);
    }
  }
  last = {n: n === null && last ? last.n : n, t: m.mediaTime, rtp: rtp, p: m.presentedFrames};
  v.requestVideoFrameCallback(each);
};
v.requestVideoFrameCallback(each);
"""

MANAGED = """
window.__camrecManaged = 0;
const Real = window.MediaSource;
window.ManagedMediaSource = class extends Real { constructor() { super(); window.__camrecManaged++; } };
delete window.MediaSource;
"""

# Each SDP's candidates replaced by one that points into the relay: UDP1 for camrec's, UDP2 for Chromium's.
THROUGH = """
const [host, toCamrec, toBrowser] = ["%s", %d, %d];
window.__camrecRewritten = [0, 0];
const only = (sdp, port, which) => {
  const out = [];
  for (const line of sdp.split(/\\r?\\n/)) {
    if (line.startsWith("a=candidate:") || line === "a=end-of-candidates") { window.__camrecRewritten[which]++; continue; }
    out.push(line);
    if (line.startsWith("a=mid:")) out.push("a=candidate:1 1 udp 2130706431 " + host + " " + port + " typ host", "a=end-of-candidates");
  }
  return out.join("\\r\\n");
};
const realFetch = window.fetch.bind(window);
window.fetch = async (url, init) => {
  if (url !== "/whep" || !init || init.method !== "POST") return realFetch(url, init);
  const response = await realFetch(url, Object.assign({}, init, {body: only(init.body, toBrowser, 0)}));
  if (response.status !== 201) return response;
  return new Response(only(await response.text(), toCamrec, 1), {status: 201, headers: response.headers});
};
"""


# The inbound video's receiver counters, and the answer camrec gave, when the page plays WebRTC.
RTP_STATS = """
const done = arguments[arguments.length - 1];
if (typeof peer === 'undefined' || !peer) return done(null);
const answer = peer.remoteDescription ? peer.remoteDescription.sdp : '';
peer.getStats().then(r => { let v = null; r.forEach(s => { if (s.type === 'inbound-rtp' && s.kind === 'video') v = s; });
  done(Object.assign({answer: answer}, v && {packets_received: v.packetsReceived, packets_lost: v.packetsLost,
    nack_count: v.nackCount, retransmitted_received: v.retransmittedPacketsReceived, pli_count: v.pliCount,
    key_frames_decoded: v.keyFramesDecoded, frames_decoded: v.framesDecoded, frames_dropped: v.framesDropped,
    freeze_count: v.freezeCount})); }).catch(() => done(null));
"""


def answer_offers(sdp):
    """(nack, rtx, h264, rtx types) for the answer's H.264 payload type: an a=rtcp-fb:PT nack, an rtx rtpmap
    with apt=PT, and the payload types themselves (sorted, space-separated)."""
    lines = sdp.splitlines()
    h264 = {l.split()[0].split(":")[1] for l in lines if l.startswith("a=rtpmap:") and " H264/" in l}
    rtx = {l.split()[0].split(":")[1] for l in lines if l.startswith("a=rtpmap:") and " rtx/" in l}
    nack = any(l.split()[0].split(":")[1] in h264 and l.split()[1:] == ["nack"] for l in lines if l.startswith("a=rtcp-fb:"))
    apt = {l.split()[0].split(":")[1] for l in lines if l.startswith("a=fmtp:") and len(l.split()) == 2
           and l.split()[0].split(":")[1] in rtx and l.split(None, 1)[1] in {f"apt={p}" for p in h264}}
    return nack, bool(apt), " ".join(sorted(h264)), " ".join(sorted(apt))


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def watch(url, seconds, truth, through, managed, log, driver, result):
    if managed:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": MANAGED})
    if through:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": THROUGH % through})
    loaded = time.time()
    driver.get(url)
    s = driver.execute_script(STATE)
    # WebRTC first: the page says "playing ..." once it has settled on WebRTC or fallen back to MSE.
    while time.time() < loaded + 30 and s["error"] is None and not (
            s["ready"] >= 2 and s["t"] > 0 and s["transport"].startswith("playing")):
        time.sleep(0.1)
        s = driver.execute_script(STATE)
    if managed:
        result.update(managed_used=s["managed"], disable_remote_playback=s["remote"])
    if through:
        result.update(whep_rewritten=driver.execute_script("return window.__camrecRewritten"))
    result.update(transport=s["transport"])
    if s["error"] is not None or s["t"] <= 0:
        result.update(error=s["error"] or "did not start", ready=s["ready"], shown_text=s["text"])
        return
    result.update(error=None, started_after=round(time.time() - loaded, 2))
    driver.execute_script(EACH)
    start = time.monotonic()
    samples, backwards, previous = [], [], None
    while time.monotonic() < start + seconds:
        time.sleep(0.25)
        before = time.monotonic()
        shown = driver.execute_script(SHOWN)
        at = (before + time.monotonic()) / 2
        s = driver.execute_script(STATE)
        if shown is None:
            continue
        if previous is not None and shown < previous:
            backwards.append([round(at - start, 2), previous, shown])
        previous = shown
        samples.append((at, shown, -1 if s["end"] is None else s["end"] - s["t"]))
    result.update(watch_start=round(start, 3), error=s["error"], frames=s["frames"], corrupted=s["corrupted"], samples=len(samples),
                  counters_backwards=len(backwards), backwards_at=backwards, shown_text=s["text"], transport=s["transport"])
    result.update(each=driver.execute_script("return window.__camrecFrames"))
    webrtc = driver.execute_async_script(RTP_STATS) if s["transport"] == "playing WebRTC" else None
    if webrtc:
        nack, rtx, h264_types, rtx_types = answer_offers(webrtc.pop("answer"))
        result.update(webrtc, answer_nack=nack, answer_rtx=rtx, answer_h264_types=h264_types, answer_rtx_types=rtx_types)
    if not truth:
        return
    # Behind live by the truth's estimate at the end (its best, from every picture it read).
    behind = [(at - start, (truth.newest_at(at) - shown) / truth.fps * 1000, buffered, shown)
              for at, shown, buffered in samples if truth.newest_at(at) is not None]
    if log:
        with open(log, "w") as f:
            for t, b, buffered, shown in behind:
                f.write(f"{t:.2f} {b:.0f} {buffered:.3f} {shown}\n")
    last = [b for t, b, _, _ in behind if t >= seconds - 10]
    result.update(behind_ms_by_10s=[round(median([b for t, b, _, _ in behind if k <= t < k + 10]) or -1)
                                    for k in range(0, int(seconds), 10)],
                  end_behind_ms_median=round(median(last)) if last else None,
                  end_behind_ms_max=round(max(last)) if last else None,
                  end_buffered_behind=round(behind[-1][2], 3) if behind else None)


def main():
    args, options = [], {}
    argv = sys.argv[1:]
    while argv:
        a = argv.pop(0)
        if a in ("--truth", "--webrtc-through", "--log"):
            if not argv:
                sys.exit(__doc__)
            options[a] = argv.pop(0)
        elif a == "--managed":
            options[a] = True
        elif a.startswith("--"):
            sys.exit(__doc__)
        else:
            args.append(a)
    if len(args) != 2:
        sys.exit(__doc__)
    url, seconds = args[0], float(args[1])
    through = None
    if "--webrtc-through" in options:
        host, udp1, udp2 = options["--webrtc-through"].split(":")
        through = (host, int(udp1), int(udp2))
    truth = None
    if "--truth" in options:
        # Started before the page, so that its estimate has every picture from then on.
        truth = PatternClock(int(options["--truth"]), 30)
        truth.start()

    def body(driver, result):
        try:
            watch(url, seconds, truth, through, "--managed" in options, options.get("--log"), driver, result)
        finally:
            if truth:
                truth.stop()
                result.update(truth.report())
    run_reporting("browser-edge.py", body)


if __name__ == "__main__":
    main()
