import Audio
import Capture
import Encoder
import HTTPServer
import Hub
import Logging
import NetStream
import Outputs
import Recorder
import RTSPServer
import SystemSupport

extension RecordCommand {
    /// `--http`'s server, a service of camrec's group; the recording waits for it (`waitForHTTPServer`).
    func makeHTTPServer(live: LiveViewOutput, recorder: Recorder, source: FrameSource,
                        encoderName: String, actions: LiveActions,
                        fileOutputs: [RecordingFileOutput], outputs: [StreamOutput], camera: CameraPresence,
                        webRTCSound: WebRTCSoundFeed?, hooks: inout Recorder.Hooks) throws -> LiveHTTPServer {
        // `/stream.mjpg`: an MJPEG camera's own JPEGs, or any other source's frames encoded while someone watches.
        let isMJPEGCamera = (source as? V4L2CaptureSource)?.pixelFormat.isJPEG == true
        let pictures = JPEGFeed(maximumReaders: 32, everyFrame: isMJPEGCamera)
        hooks.pictures = pictures
        guard let http, let endpoint = try? TCPEndpoint(listenSpec: http) else { preconditionFailure("validated") }
        let access: HTTPAccess
        do {
            access = try httpAuthFile.map { try HTTPAccess.load(authFile: $0) } ?? .open
        } catch {
            printError("--http-auth-file: \(error)")
            throw ReportedFailure(status: .usage)
        }
        let host = endpoint.host ?? "127.0.0.1"
        let started = ContinuousClock.now
        let (size, rate, sourceSummary) = (source.frameSize, source.framesPerSecond, source.summary)
        let server = LiveHTTPServer(host: host, port: Int(endpoint.port), live: live, access: access, status: { [weak recorder] in
            let progress = recorder?.progress
            let elapsed = ContinuousClock.now - started
            var status = LiveStatus(source: sourceSummary, width: size.width, height: size.height, framesPerSecond: rate,
                              encoder: encoderName, frames: progress?.frames ?? 0, dropped: Int(clamping: progress?.dropped ?? 0),
                              bytes: progress?.bytes ?? 0,
                              uptimeSeconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
                              receivers: outputs.reduce(0) { $0 + ($1 is LiveViewOutput ? 0 : $1.counters.peers) })
            let presence = camera.now
            status.camera = presence.lostSince == nil ? "present" : "lost"
            status.cameraLostSince = presence.lostSince
            status.cameraLosses = presence.losses
            status.cameraReturns = presence.returns
            return status
        }, actions: actions, metrics: makeMetrics(recorder: recorder, outputs: outputs, camera: camera, hooks: &hooks), recordings: RecordingShelf(shelves: fileOutputs.map { output in
            RecordingShelf.Shelf(pattern: output.namePattern, device: output.deviceName, finished: { output.finishedFiles })
        }), pictures: pictures, webRTC: webRTC(live: live, sound: webRTCSound), logger: Logger(label: "camrec"))
        return server
    }

    /// WebRTC viewers (`POST /whep`) when GStreamer's webrtcbin can be opened; else nil, and one line
    /// saying what to install (the page then plays MSE).
    private func webRTC(live: LiveViewOutput, sound: WebRTCSoundFeed?) -> WebRTCViewers? {
        if let reason = WebRTCViewers.unavailableReason() {
            writeStandardError("camrec: WebRTC is off, the live page plays MSE: \(reason)\n")
            return nil
        }
        return WebRTCViewers(live: live, soundFeed: sound, configuration: .init(stun: stun, turn: turn, maximumSessions: live.maximumViewers),
                             log: networkLog())
    }

    /// The WebRTC viewers' one Opus encode of an AAC recording's samples (64 kbit/s, 10 ms frames, each
    /// encoded as soon as it has been captured), or nil: the sound is Opus already, its rate is one Opus
    /// does not take (each viewer then decodes the AAC and encodes Opus in its own pipeline), it has more
    /// than two channels, WebRTC is off, or this libavcodec has no libopus.
    func makeWebRTCSound(for encoder: SoundEncoder) -> (encoder: SoundEncoder, feed: WebRTCSoundFeed)? {
        guard encoder.codec == .aac, SoundCodec.opus.sampleRates.contains(encoder.format.sampleRate), encoder.format.channels <= 2,
              WebRTCViewers.unavailableReason() == nil,
              let opus = try? SoundEncoder(codec: .opus, format: encoder.format, bitrate: 64_000, opusFrameMilliseconds: 10) else { return nil }
        return (opus, WebRTCSoundFeed(track: opus.track))
    }

    /// On the recording's thread, before capture starts: waits for the server to listen and says where.
    /// Nil when it does, else the line saying why it cannot serve (a port in use fails before anything
    /// is recorded).
    func waitForHTTPServer(_ server: LiveHTTPServer) -> String? {
        guard let http, let endpoint = try? TCPEndpoint(listenSpec: http) else { preconditionFailure("validated") }
        let host = endpoint.host ?? "127.0.0.1"
        do {
            let port = try server.waitUntilListening()
            writeStandardError("camrec: live view on http://\(hostAndPort(host, port))/\n")
            return nil
        } catch {
            return "cannot serve HTTP on \(host):\(endpoint.port): \(LiveHTTPServer.describe(error)); choose another port with --http"
        }
    }

    /// `/metrics`: the recorder's and every output's counters, and each access unit's timing.
    private func makeMetrics(recorder: Recorder, outputs: [StreamOutput], camera: CameraPresence,
                             hooks: inout Recorder.Hooks) -> LiveMetrics {
        let metrics = LiveMetrics { [weak recorder] in
            var now = LiveMetrics.Snapshot()
            let presence = camera.now
            now.cameraLosses = presence.losses
            now.cameraReturns = presence.returns
            now.cameraPresent = presence.lostSince == nil
            if let statistics = recorder?.sourceStatistics {
                now.framesCaptured = Int(clamping: statistics.delivered)
                now.framesDropped = Int(clamping: statistics.dropped)
                now.framesErrored = Int(clamping: statistics.errored)
            }
            if let progress = recorder?.progress {
                now.framesEncoded = progress.frames
                now.bytesEncoded = progress.bytes
            }
            now.outputs = outputs.map { ($0.label, $0.kind.rawValue, $0.counters) }
            if let events = outputs.lazy.compactMap({ $0 as? EventRecorder }).first {
                let totals = events.totals
                now.eventsEnabled = true
                for (trigger, count) in totals.events { now.events[trigger.rawValue] = count }
                for (trigger, count) in totals.triggers { now.eventTriggers[trigger.rawValue] = count }
                now.eventsOpen = totals.open
            }
            return now
        }
        hooks.onFrameTimed = { timing in
            metrics.record(encodeNanoseconds: timing.encodeNanoseconds, captureToOutputsNanoseconds: timing.captureToOutputsNanoseconds)
        }
        return metrics
    }
}
