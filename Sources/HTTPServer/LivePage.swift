/// The page at `/`: a live `<video>` over WebRTC (WHEP at `/whep`) when camrec serves it, else fed by
/// Media Source Extensions from the WebSocket at `/live`; a line under it says which plays, and why not WebRTC.
/// Everything is inline (no build step, no CDN). With MSE it keeps within 0.5 s of the live edge (see
/// `chase`: a little faster when a little behind, a jump when further) and says how far behind it is; it
/// uses ManagedMediaSource where MediaSource is missing, and HLS where both are. Below it: the status, a snapshot link,
/// the two actions, the newest events with their first picture (with --event-output), and the
/// finished recordings (MP4 plays in the page, anything downloads). File names and event labels
/// reach the page only through `textContent` and URL attributes, never as HTML.
enum LivePage {
    /// - Parameter sound: the recording has sound, so the page asks WebRTC for it too.
    static func html(sound: Bool) -> String {
        #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>camrec live</title>
<style>
  body { margin: 0; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }
  main { max-width: 1280px; margin: 0 auto; }
  video { display: block; width: 100%; max-height: 80vh; background: #000; }
  #state, #status, nav, section { padding: 6px 10px; }
  #status { color: #aaa; font-size: 13px; overflow-wrap: anywhere; }
  nav { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; }
  nav a, nav button { font: inherit; color: #ddd; background: #2a2a2a; border: 1px solid #444; border-radius: 4px;
                      padding: 6px 12px; text-decoration: none; cursor: pointer; }
  #answer { color: #aaa; font-size: 13px; }
  h2 { font-size: 15px; margin: 8px 0; }
  table { width: 100%; border-collapse: collapse; font-size: 13px; }
  td { padding: 4px 6px; border-top: 1px solid #333; overflow-wrap: anywhere; }
  td.n { text-align: right; white-space: nowrap; }
  a { color: #8cf; }
  #playback { margin-bottom: 8px; }
  img.thumb { display: block; width: 160px; max-width: 35vw; height: auto; border-radius: 3px; }
  #transport { padding: 0 10px; color: #aaa; font-size: 13px; }
</style>
</head>
<body>
<main>
<video id="live" muted autoplay playsinline></video>
<div id="state">connecting…</div>
<div id="transport">trying WebRTC…</div>
<div id="status"></div>
<nav>
  <a id="snapshot" href="/snapshot.jpg" target="_blank" rel="noopener">Snapshot</a>
  <button id="keyframe" type="button">Key frame now</button>
  <button id="rotate" type="button">Start a new file</button>
  <button id="sound" type="button" hidden>Sound on</button>
  <span id="answer"></span>
</nav>
<section id="eventsection" hidden>
  <h2>Events</h2>
  <table><tbody id="events"></tbody></table>
</section>
<section>
  <h2>Recordings</h2>
  <video id="playback" controls playsinline hidden></video>
  <table><tbody id="files"></tbody></table>
  <p id="nofiles">No finished recordings yet.</p>
</section>
</main>
<script>
"use strict";
const video = document.getElementById("live");
const state = document.getElementById("state");
// Media Source Extensions; where only ManagedMediaSource exists (iPhones since iOS 17.1) that one, which
// opens only with remote playback (AirPlay) off; with neither, the same stream as HLS (/live.m3u8).
const Source = window.MediaSource || window.ManagedMediaSource;
const media = Source ? new Source() : null;
const kind = window.MediaSource ? "MSE" : "ManagedMediaSource";
// Attached only when WebRTC is off or fails (playWebRTC below).
function startMSE() {
  video.srcObject = null;
  if (media) {
    if (!window.MediaSource) video.disableRemotePlayback = true;
    video.src = URL.createObjectURL(media);
  } else if (video.canPlayType("application/vnd.apple.mpegurl")) { video.src = "/live.m3u8"; state.textContent = "live (HLS)"; }
  else state.textContent = "this browser has no Media Source Extensions and no HLS: open /live.m3u8 in a player";
}
let buffer = null;
const pending = [];

function pump() {
  if (!buffer || buffer.updating || pending.length === 0) return;
  try { buffer.appendBuffer(pending.shift()); } catch (e) { state.textContent = "append failed: " + e; }
}

// The live edge is the newest frame buffered. Jitter and lost packets stall the video and then bring
// several frames at once; played at 1.0 each stall would add to the delay for good (go2rtc #1277,
// #1308, #1452). So: up to EDGE behind it plays at 1.0, further a little faster (up to 1.25x the more
// it lags), and past JUMP, or in an older buffered range, it jumps to EDGE before the end. What lies
// more than 3 s behind is removed.
const EDGE = 0.15, JUMP = 0.5;
function chase() {
  if (!buffer || video.buffered.length === 0) return;
  const last = video.buffered.length - 1;
  const end = video.buffered.end(last);
  const behind = end - video.currentTime;
  if (video.currentTime < video.buffered.start(last) || behind > JUMP) {
    video.currentTime = Math.max(video.buffered.start(last), end - EDGE);
  }
  video.playbackRate = behind > EDGE ? Math.min(1.25, 1 + (behind - EDGE)) : 1.0;
  if (!buffer.updating && video.currentTime - video.buffered.start(0) > 6) {
    buffer.remove(0, video.currentTime - 3);
  }
  if (video.paused) video.play().catch(() => {});
  state.textContent = "live (" + kind + "), " + behind.toFixed(2) + " s behind the newest frame" +
    (video.playbackRate > 1 ? ", catching up at " + video.playbackRate.toFixed(2) + "x" : "");
}

if (media) media.addEventListener("sourceopen", () => {
  const socket = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/live");
  socket.binaryType = "arraybuffer";
  socket.onmessage = (event) => {
    if (typeof event.data === "string") {
      const description = JSON.parse(event.data);
      // With sound the page starts muted (browsers play sound only after the viewer asks): a button unmutes it.
      if (description.sound) soundButton.hidden = false;
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
setInterval(chase, 200);
const soundButton = document.getElementById("sound");
soundButton.addEventListener("click", () => {
  video.muted = !video.muted;
  soundButton.textContent = video.muted ? "Sound on" : "Sound off";
  if (video.paused) video.play().catch(() => {});
});

// WebRTC first: WHEP at /whep (the SDP offer in, the answer out, DELETE on its resource to end it),
// about a tenth of a second behind. MSE over the WebSocket when camrec serves no WebRTC (its one-line
// answer says why), when the connection fails, or with ?mse in the address.
const transport = document.getElementById("transport");
let peer = null, whepResource = null;
const recordingHasSound = \#(sound);
async function playWebRTC() {
  if (new URLSearchParams(location.search).has("mse")) throw new Error("?mse asks for it");
  if (!window.RTCPeerConnection) throw new Error("this browser has no WebRTC");
  peer = new RTCPeerConnection();
  peer.addTransceiver("video", { direction: "recvonly" });
  // The sound (Opus) on a second transceiver; both tracks play in the one <video>, the page muted until asked.
  if (recordingHasSound) peer.addTransceiver("audio", { direction: "recvonly" });
  const remote = new MediaStream();
  peer.ontrack = (event) => {
    remote.addTrack(event.track);
    if (event.track.kind === "audio") soundButton.hidden = false;
    if (video.srcObject !== remote) video.srcObject = remote;
    video.play().catch(() => {});
  };
  await peer.setLocalDescription(await peer.createOffer());
  // camrec takes no trickled candidates: the offer carries those gathered within a second.
  await new Promise((resolve) => {
    if (peer.iceGatheringState === "complete") return resolve();
    peer.addEventListener("icegatheringstatechange", () => { if (peer.iceGatheringState === "complete") resolve(); });
    setTimeout(resolve, 1000);
  });
  const response = await fetch("/whep", { method: "POST", headers: { "Content-Type": "application/sdp" }, body: peer.localDescription.sdp });
  const text = await response.text();
  if (response.status !== 201) throw new Error(text.trim() || "POST /whep answered " + response.status);
  whepResource = response.headers.get("Location");
  await peer.setRemoteDescription({ type: "answer", sdp: text });
  await new Promise((resolve, reject) => {
    const settle = () => {
      if (peer.connectionState === "connected") resolve();
      if (peer.connectionState === "failed" || peer.connectionState === "closed") reject(new Error("the WebRTC connection failed"));
    };
    peer.addEventListener("connectionstatechange", settle);
    setTimeout(() => reject(new Error("no WebRTC connection within 5 s")), 5000);
  });
}
function endWebRTC() {
  if (whepResource) fetch(whepResource, { method: "DELETE", keepalive: true }).catch(() => {});
  if (peer) peer.close();
  whepResource = null; peer = null;
}
function fallBack(why) {
  endWebRTC();
  transport.textContent = "playing MSE (fragmented MP4 over a WebSocket): " + why;
  startMSE();
}
window.addEventListener("pagehide", endWebRTC);
playWebRTC().then(() => {
  transport.textContent = "playing WebRTC";
  state.textContent = "live over WebRTC";
  peer.addEventListener("connectionstatechange", () => { if (peer && peer.connectionState === "failed") fallBack("the WebRTC connection failed"); });
}).catch((e) => fallBack(e.message));

const status = document.getElementById("status");
async function refreshStatus() {
  try {
    const s = await (await fetch("/api/status", { cache: "no-store" })).json();
    const minutes = Math.floor(s.uptimeSeconds / 60), seconds = Math.floor(s.uptimeSeconds % 60);
    const lost = s.camera === "lost"
      ? "CAMERA LOST since " + new Date(s.cameraLostSince * 1000).toLocaleTimeString() + " (waiting for it) · " : "";
    status.textContent = lost + s.source + " · " + s.width + "×" + s.height + " @ " + s.framesPerSecond + " fps · " +
      s.encoder + " · " + s.frames + " frames, " + s.dropped + " dropped · " +
      (8 * s.bytes / Math.max(s.uptimeSeconds, 1) / 1e6).toFixed(2) + " Mbit/s · " +
      s.receivers + " receiving, " + s.viewers + " watching here · up " + minutes + ":" + String(seconds).padStart(2, "0") +
      (s.cameraLosses > 0 ? " · camera lost " + s.cameraLosses + "×, back " + s.cameraReturns + "×" : "");
  } catch (e) { status.textContent = "status unavailable"; }
}
refreshStatus();
setInterval(refreshStatus, 2000);

const answer = document.getElementById("answer");
for (const [id, path] of [["keyframe", "/api/keyframe"], ["rotate", "/api/rotate"]]) {
  document.getElementById(id).addEventListener("click", async () => {
    try { answer.textContent = (await (await fetch(path, { method: "POST" })).json()).message; }
    catch (e) { answer.textContent = "no answer: " + e; }
  });
}

const files = document.getElementById("files"), nofiles = document.getElementById("nofiles");
const playback = document.getElementById("playback");
function cell(row, text, numeric) {
  const td = row.insertCell(); td.textContent = text; if (numeric) td.className = "n"; return td;
}
function link(td, text, href, onclick) {
  const a = document.createElement("a"); a.textContent = text; a.href = href;
  if (onclick) a.addEventListener("click", (e) => { e.preventDefault(); onclick(); });
  td.append(a, " ");
}
async function refreshRecordings() {
  try {
    const list = (await (await fetch("/api/recordings", { cache: "no-store" })).json()).recordings;
    files.replaceChildren();
    nofiles.hidden = list.length > 0;
    for (const r of list) {
      const row = files.insertRow();
      cell(row, r.name);
      cell(row, (r.bytes / 1e6).toFixed(1) + " MB", true);
      const d = r.durationSeconds;
      cell(row, d == null ? "" : Math.floor(d / 60) + ":" + String(Math.round(d % 60)).padStart(2, "0"), true);
      const actions = cell(row, "");
      if (r.playsInPage) link(actions, "play", r.url, () => { playback.hidden = false; playback.src = r.url; playback.play().catch(() => {}); });
      link(actions, "download", r.url + "?download");
    }
  } catch (e) { nofiles.textContent = "recordings unavailable"; nofiles.hidden = false; }
}
refreshRecordings();
setInterval(refreshRecordings, 5000);

// The newest 20 events, newest first, each with its first picture (made when the event starts;
// asked for again once if it was not ready yet). Redrawn only when the list changes.
const events = document.getElementById("events"), eventSection = document.getElementById("eventsection");
let eventsShown = "";
async function refreshEvents() {
  try {
    const list = (await (await fetch("/api/events", { cache: "no-store" })).json()).events.slice(-20).reverse();
    const key = JSON.stringify(list);
    if (key === eventsShown) return;
    eventsShown = key;
    events.replaceChildren();
    eventSection.hidden = list.length === 0;
    for (const e of list) {
      const img = document.createElement("img");
      img.className = "thumb"; img.alt = "";
      const src = "/api/events/" + e.id + "/thumbnail.jpg?start=" + encodeURIComponent(e.start);
      img.onerror = () => {
        if (img.dataset.again) { img.hidden = true; return; }
        img.dataset.again = "1";
        setTimeout(() => { img.src = src + "&again=1"; }, 1000);
      };
      img.src = src;
      const row = events.insertRow();
      row.insertCell().append(img);
      cell(row, "#" + e.id + " " + e.trigger + (e.label ? " · " + e.label : ""));
      cell(row, new Date(e.start).toLocaleTimeString() + (e.end ? " – " + new Date(e.end).toLocaleTimeString() : " (recording)"));
      cell(row, (e.files || []).map((f) => f.split("/").pop()).join(" ") + (e.error ? " error: " + e.error : ""));
    }
  } catch (e) { /* the next refresh tries again */ }
}
refreshEvents();
setInterval(refreshEvents, 3000);
</script>
</body>
</html>
"""#
    }
}
