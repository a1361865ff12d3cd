#!/usr/bin/python3
"""WHEP viewers that do not decode (issue 52): N independent WebRTC peer connections in one process, each a
GStreamer webrtcbin of its own that offers to receive H.264 (and Opus with --sound), POSTs its offer to
camrec's /whep, sets the answer and counts the RTP packets of each track into a fakesink. Their CPU is
theirs, not camrec's (a process of its own). Each offers as GStreamer's whepsrc does: max-bundle, so every
section but the first is bundle-only (port 0). Used by benchmarks/webrtc-viewers.sh (20 of them) and the
browser suite (one, with sound).

  whep-clients.py URL N SECONDS [--sound]

Prints "connected K" once K viewers' ICE is connected (again as more come), then after SECONDS of every
one connected one line of JSON: "viewers", "connected", and per viewer its "video" and "audio" packets.
Each session is ended with DELETE at the end.
Needs python3-gi and gir1.2-gst-plugins-bad-1.0 (GstWebRTC), gstreamer1.0-nice.
"""
import json, os, sys, threading, time, urllib.request

import gi
gi.require_version("Gst", "1.0")
gi.require_version("GstWebRTC", "1.0")
gi.require_version("GstSdp", "1.0")
from gi.repository import GLib, Gst, GstSdp, GstWebRTC  # noqa: E402

Gst.init(None)
H264 = ("application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=102,"
        "packetization-mode=(string)1,profile-level-id=(string)42e01f")
OPUS = "application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111,encoding-params=(string)2"


class Viewer:
    def __init__(self, url, sound):
        self.url, self.resource, self.connected = url, None, False
        self.packets = {"video": 0, "audio": 0}
        self.pipeline = Gst.Pipeline.new()
        self.webrtc = Gst.ElementFactory.make("webrtcbin")
        self.webrtc.set_property("bundle-policy", GstWebRTC.WebRTCBundlePolicy.MAX_BUNDLE)
        self.pipeline.add(self.webrtc)
        # webrtcbin 1.22 makes no offer for a format without an ssrc.
        for index, caps in enumerate([H264] + ([OPUS] if sound else [])):
            self.webrtc.emit("add-transceiver", GstWebRTC.WebRTCRTPTransceiverDirection.RECVONLY,
                             Gst.Caps.from_string(f"{caps},ssrc=(uint){1000 + index}"))
        self.webrtc.connect("pad-added", self.pad_added)
        self.webrtc.connect("notify::ice-gathering-state", self.gathered)
        self.webrtc.connect("notify::ice-connection-state", self.ice_state)
        # The offer once webrtcbin asks for one: an offer made straight after PLAYING was now and then
        # NULL in 1.22 (both viewers of a run at load 8, none at load 4).
        self.offers = 0
        self.webrtc.connect("on-negotiation-needed", self.negotiate)
        self.pipeline.set_state(Gst.State.PLAYING)

    def negotiate(self, webrtc):
        if self.offers == 0:
            self.make_offer()

    def make_offer(self):
        self.offers += 1
        self.webrtc.emit("create-offer", None, Gst.Promise.new_with_change_func(self.offered, None))

    def offered(self, promise, _):
        reply = promise.get_reply()
        offer = reply.get_value("offer") if reply and reply.has_field("offer") else None
        if offer is None or offer.sdp is None:
            if self.offers == 1 and reply is not None:
                print(f"no offer: {reply.to_string()[:300]}", file=sys.stderr, flush=True)
            # Still NULL: ask again a little later (at most 20 times).
            if self.offers < 20:
                GLib.timeout_add(100, lambda: self.make_offer() and False)
            return
        self.webrtc.emit("set-local-description", offer, Gst.Promise.new())

    def gathered(self, webrtc, _):
        if webrtc.get_property("ice-gathering-state") != GstWebRTC.WebRTCICEGatheringState.COMPLETE:
            return
        sdp = webrtc.get_property("local-description").sdp.as_text()
        # Blocking HTTP off GStreamer's thread.
        threading.Thread(target=self.post, args=(sdp,), daemon=True).start()

    def post(self, sdp):
        request = urllib.request.Request(self.url + "/whep", data=sdp.encode(), method="POST",
                                         headers={"Content-Type": "application/sdp"})
        with urllib.request.urlopen(request, timeout=20) as response:
            self.resource = response.headers["Location"]
            answer = response.read().decode()
        if os.environ.get("WHEP_DEBUG"):
            print(f"offer:\n{sdp}\nanswer:\n{answer}", file=sys.stderr, flush=True)
        _, message = GstSdp.SDPMessage.new_from_text(answer)
        description = GstWebRTC.WebRTCSessionDescription.new(GstWebRTC.WebRTCSDPType.ANSWER, message)
        self.webrtc.emit("set-remote-description", description, Gst.Promise.new())

    def ice_state(self, webrtc, _):
        state = webrtc.get_property("ice-connection-state")
        if state in (GstWebRTC.WebRTCICEConnectionState.CONNECTED, GstWebRTC.WebRTCICEConnectionState.COMPLETED):
            self.connected = True

    def pad_added(self, webrtc, pad):
        if pad.get_direction() != Gst.PadDirection.SRC:
            return
        caps = pad.get_current_caps() or pad.query_caps(None)
        kind = caps.get_structure(0).get_string("media") or "video"
        sink = Gst.ElementFactory.make("fakesink")
        sink.set_property("sync", False)
        sink.set_property("async", False)
        self.pipeline.add(sink)
        sink.sync_state_with_parent()
        pad.link(sink.get_static_pad("sink"))
        pad.add_probe(Gst.PadProbeType.BUFFER, self.count, kind)

    def count(self, pad, info, kind):
        self.packets[kind] += 1
        return Gst.PadProbeReturn.OK

    def end(self):
        if self.resource:
            try:
                urllib.request.urlopen(urllib.request.Request(self.url + self.resource, method="DELETE"), timeout=5).read()
            except Exception:
                pass
        self.pipeline.set_state(Gst.State.NULL)


def main():
    url, n, seconds = sys.argv[1].rstrip("/"), int(sys.argv[2]), float(sys.argv[3])
    sound = "--sound" in sys.argv
    loop = GLib.MainLoop()
    threading.Thread(target=loop.run, daemon=True).start()
    viewers = []
    for _ in range(n):
        viewers.append(Viewer(url, sound))
        time.sleep(0.2)
    deadline, told = time.monotonic() + 60, 0
    while time.monotonic() < deadline:
        k = sum(v.connected for v in viewers)
        if k != told:
            print(f"connected {k}", flush=True)
            told = k
        if k == n:
            break
        time.sleep(0.2)
    time.sleep(seconds)
    print(json.dumps({"viewers": n, "connected": sum(v.connected for v in viewers),
                      "packets": [v.packets for v in viewers]}), flush=True)
    for v in viewers:
        v.end()
    loop.quit()


if __name__ == "__main__":
    main()
