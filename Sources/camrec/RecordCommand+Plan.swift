import ArgumentParser
import Audio
import Hub
import Bitstream
import Capture
import Containers
import Encoder
import Frames
import Glibc
import HTTPServer
import Libav
import Logging
import NetStream
import Outputs
import Recorder
import RTSP
import RTSPServer

/// The parts of a `RecordingPlan` that the command's options make: the source, the encoders, the network
/// outputs, the RTSP server.
extension RecordCommand {
    /// Whether an output needs libavformat (and so libavcodec): a container file other than MP4 without
    /// sound (camrec writes that itself), a media server, the live view (fragmented MP4), sound.
    var needsLibav: Bool {
        let clips = events.eventOutput.map { ContainerWriters.needLibav(ContainerFormat(fileName: $0), withSound: sound.isOn) } ?? false
        return http != nil || clips || sound.isOn || outputs.contains { target in
            target != "-" && !TCPEndpoint.looksLikeURL(target)
                && (MediaServerURL.looksLikeURL(target)
                    || ContainerWriters.needLibav(files.format ?? ContainerFormat(fileName: target), withSound: sound.isOn))
        }
    }

    func makeSource(fps: Double) throws -> FrameSource {
        if let input {
            guard let format = inputFormat.pixelFormat else { return try MJPEGFileSource(path: input, size: size, fps: fps) }
            return try RawFrameSource(path: input, format: format, size: size!, fps: fps)
        }
        if testPattern || testScene {
            return TestPatternSource(size: size ?? FrameSize(width: 1280, height: 720), fps: fps,
                                     picture: testScene ? .eventScene : .movingPattern,
                                     marksEachSecond: testPattern && sound.isOn)
        }
        // The camera is the default source. `self.fps` (not the 30 fps default) so the
        // camera's own rate is chosen when none is asked for.
        let request = V4L2FormatRequest(size: size, framesPerSecond: self.fps, pixelFormat: requestedPixelFormat)
        // CAMREC_V4L2_PRIORITY=interactive leaves camera controls adjustable by other programs
        // while recording (record priority, the default, locks them: EBUSY).
        let shared = getenv("CAMREC_V4L2_PRIORITY").map { String(cString: $0) == "interactive" } ?? false
        // Validated: 0.5 to 3600 s, so the nanoseconds fit.
        return try V4L2CaptureSource(path: cameraPath, request: request, recordPriority: !shared,
                                     stallTimeout: stallTimeout.map { UInt64($0 * 1e9) })
    }

    /// The camera's device node (when the source is a camera).
    var cameraPath: String { device ?? "/dev/video0" }

    /// The encoder for `settings` as --encoder asks, and with `auto`, the line saying what it chose.
    func makeEncoder(settings: EncoderSettings, softwareOnly: Bool, logger: Logger) throws -> (encoder: VideoEncoder, notice: String?) {
        let chosen: EncoderPreference = switch encoder {
        case .auto: .auto
        case .software: .software
        case .vaapi: .vaapi
        case .camera: .auto   // never: the camera's stream has an encoder of its own (`makeCameraEncoder`)
        }
        // Two encodings from one capture share a plain pool: both in software.
        let preference = softwareOnly ? .software : chosen
        let choice = try EncoderSelection.make(preference, settings: settings, vaapiDevice: vaapiDevice)
        logger.debug("encoder: \(choice.encoder.name)")
        if let vaapi = choice.encoder as? VAAPIEncoder { logger.info("VA-API: \(vaapi.configuration)") }
        // auto says what it chose, in one line; an explicit choice needs no comment.
        return (choice.encoder, choice.note.map { "camrec: \($0)" })
    }

    /// Publishing to a media server: the same queue, skip-to-IDR and reconnecting as a tcp:// push, on a
    /// thread of its own (libavformat's writers block).
    /// `audio`: the recording's sound goes to the server too.
    func makePublishOutput(_ server: MediaServerURL, codec: VideoCodec, audio: AudioTrackFormat? = nil,
                           framesPerSecond: Double = 30) -> StreamOutput {
        PushOutput(label: server.redacted, peerKind: "server", takesAudio: audio != nil, log: networkLog()) {
            MediaServerTransport(server: server, codec: codec, audio: audio, framesPerSecond: framesPerSecond)
        }
    }

    /// A push (tcp://HOST:PORT) or listening (?listen, --listen) output. Its messages (joins,
    /// leaves, skips, reconnects) go to stderr as they happen.
    func makeNetworkOutput(_ endpoint: TCPEndpoint, codec: VideoCodec) -> StreamOutput {
        let log = networkLog()
        if endpoint.listen {
            return TCPListenOutput(endpoint: endpoint, sendsTimingSEI: timingSei, codec: codec,
                                   maximumReceivers: maxReceivers, log: log)
        }
        return TCPPushOutput(endpoint: endpoint, sendsTimingSEI: timingSei, codec: codec, log: log)
    }

    /// `--rtsp`: the server, its sessions capped like --listen's receivers; nil without the option.
    func makeRTSPServer(framesPerSecond: Double) throws -> RTSPServer? {
        guard let rtsp, var endpoint = try? TCPEndpoint(listenSpec: rtsp) else { return nil }
        if endpoint.host == nil { endpoint.host = "127.0.0.1" }
        var configuration = RTSPServer.Configuration(endpoint: endpoint)
        configuration.maximumPacketBytes = rtspMtu ?? 1400
        configuration.maximumSessions = maxReceivers ?? TCPListenOutput.defaultMaximumReceivers()
        configuration.framesPerSecond = framesPerSecond
        if let rtspMulticast {
            let group = try Self.multicastGroup(rtspMulticast)
            configuration.multicast = (group.host, group.port, 1)
        }
        if let httpAuthFile {
            do {
                let credentials = try Credentials.load(path: httpAuthFile)
                configuration.authentication = RTSPAuthentication(user: credentials.user, password: credentials.password)
            } catch {
                throw Recorder.classify(OutputError(.unwritable, "--http-auth-file: \(error)"))
            }
        }
        return RTSPServer(configuration: configuration, log: networkLog())
    }

    /// `--rtsp-multicast GROUP[:PORT]`: an IPv4 multicast group and the first RTP port (5004, RFC 3551's
    /// default, when none is given); the ports of two encodings' RTP and RTCP must fit under 65536.
    static func multicastGroup(_ spec: String) throws -> (host: String, port: Int) {
        let parts = spec.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        var address = in_addr()
        guard inet_pton(AF_INET, parts[0], &address) == 1, (224...239).contains(UInt32(bigEndian: address.s_addr) >> 24) else {
            throw ValidationError("--rtsp-multicast \(spec): \(parts[0]) is not an IPv4 multicast group (224.0.0.0 to 239.255.255.255)")
        }
        guard parts.count == 1 || (Int(parts[1]).map { (1...65_532).contains($0) } ?? false) else {
            throw ValidationError("--rtsp-multicast \(spec): the port must be a number from 1 to 65532")
        }
        return (parts[0], parts.count == 1 ? 5004 : Int(parts[1])!)
    }

    /// Where network outputs' event lines go: stderr, above the status line.
    func networkLog() -> NetworkEventLog {
        let statusShown = StatusLine.stderrIsTerminal && logLevel <= .notice
        let quiet = logLevel > .notice
        return { message in
            guard !quiet else { return }
            writeStandardError((statusShown ? "\r\u{1B}[2K" : "") + "camrec: " + message + "\n")
        }
    }
}
