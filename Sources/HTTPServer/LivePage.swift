/// The page at `/`: a live `<video>` fed by Media Source Extensions from the WebSocket at `/live`.
/// Everything is inline (no build step, no CDN). It keeps close to the live edge: when more than
/// 1.5 s is buffered ahead it jumps to just before the end, between 0.5 and 1.5 s it plays a little
/// faster, and it removes what lies more than 10 s behind.
enum LivePage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>camrec live</title>
<style>
  body { margin: 0; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }
  video { display: block; width: 100%; max-height: 90vh; background: #000; }
  #state, #status { padding: 6px 10px; }
  #status { color: #aaa; font-size: 13px; }
</style>
</head>
<body>
<video id="live" muted autoplay playsinline></video>
<div id="state">connecting…</div>
<div id="status"></div>
<script>
"use strict";
const video = document.getElementById("live");
const state = document.getElementById("state");
const media = new MediaSource();
video.src = URL.createObjectURL(media);
let buffer = null;
const pending = [];

function pump() {
  if (!buffer || buffer.updating || pending.length === 0) return;
  try { buffer.appendBuffer(pending.shift()); } catch (e) { state.textContent = "append failed: " + e; }
}

function chase() {
  if (!buffer || video.buffered.length === 0) return;
  const last = video.buffered.length - 1;
  const end = video.buffered.end(last);
  const behind = end - video.currentTime;
  if (video.currentTime < video.buffered.start(last) || behind > 1.5) {
    video.currentTime = Math.max(video.buffered.start(last), end - 0.3);
  }
  video.playbackRate = behind > 0.5 ? 1.1 : 1.0;
  if (!buffer.updating && video.currentTime - video.buffered.start(0) > 10) {
    buffer.remove(0, video.currentTime - 5);
  }
  if (video.paused) video.play().catch(() => {});
  state.textContent = "live, " + behind.toFixed(2) + " s behind the newest frame";
}

media.addEventListener("sourceopen", () => {
  const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/live");
  socket.binaryType = "arraybuffer";
  socket.onmessage = (event) => {
    if (typeof event.data === "string") {
      const description = JSON.parse(event.data);
      buffer = media.addSourceBuffer('video/mp4; codecs="' + description.codecs + '"');
      buffer.mode = "segments";
      buffer.addEventListener("updateend", pump);
      return;
    }
    pending.push(event.data);
    pump();
  };
  socket.onclose = () => { state.textContent = "the recording ended or the connection closed"; };
});
setInterval(chase, 250);

const status = document.getElementById("status");
async function refreshStatus() {
  try {
    const s = await (await fetch("/api/status", { cache: "no-store" })).json();
    const minutes = Math.floor(s.uptimeSeconds / 60), seconds = Math.floor(s.uptimeSeconds % 60);
    status.textContent = s.source + " · " + s.width + "×" + s.height + " @ " + s.framesPerSecond + " fps · " +
      s.encoder + " · " + s.frames + " frames, " + s.dropped + " dropped · " +
      (8 * s.bytes / Math.max(s.uptimeSeconds, 1) / 1e6).toFixed(2) + " Mbit/s · " +
      s.viewers + " watching · up " + minutes + ":" + String(seconds).padStart(2, "0");
  } catch (e) { status.textContent = "status unavailable"; }
}
refreshStatus();
setInterval(refreshStatus, 2000);
</script>
</body>
</html>
"""#
}
