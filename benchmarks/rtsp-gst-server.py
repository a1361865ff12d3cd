#!/usr/bin/python3
"""GStreamer's gst-rtsp-server serving a pre-encoded H.264 file at its own pace, for benchmarks/rtsp-clients.sh:
one shared media factory (every client is served from one pipeline: the file is read, parsed and payloaded
once), RTP over TCP interleaved or UDP unicast, packets of at most MTU bytes. The file is camrec's own
recording of the same test pattern, so both servers send the same bytes. A non-live file source in a shared
media plays from the first PLAY on, paced by the pipeline clock at the frames' timestamps.

  rtsp-gst-server.py FILE.mkv PORT [MTU=1400]
Serves rtsp://127.0.0.1:PORT/cam until killed. Needs python3-gi and gir1.2-gst-rtsp-server-1.0.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402

if len(sys.argv) < 3:
    sys.exit(__doc__)
path, port = sys.argv[1], sys.argv[2]
mtu = int(sys.argv[3]) if len(sys.argv) > 3 else 1400
Gst.init(None)
server = GstRtspServer.RTSPServer()
server.set_address("127.0.0.1")
server.set_service(port)
factory = GstRtspServer.RTSPMediaFactory()
# The file is Matroska, for the frames' timestamps (ffmpeg -c copy of camrec's raw recording: the same NAL
# units); the stream has SPS and PPS before every IDR in-band, as camrec sends it, so the payloader adds none.
factory.set_launch(f"( filesrc location={path} ! matroskademux ! h264parse ! video/x-h264,alignment=au "
                   f"! rtph264pay name=pay0 pt=96 mtu={mtu} config-interval=0 )")
factory.set_shared(True)
server.get_mount_points().add_factory("/cam", factory)
server.attach(None)
print(f"serving rtsp://127.0.0.1:{port}/cam", flush=True)
GLib.MainLoop().run()
