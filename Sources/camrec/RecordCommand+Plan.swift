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

/// What one recording will do, wired and not started: the source, one encoder and one hub per codec,
/// the outputs (each subscribed to its codec's hub by the output set), the keyframe gate every IDR
/// request goes through, and the recorder between them. `RecordCommand.run` adds what a process has
/// (signals, the status line, the HTTP server, the summary); a test can build one from the same
/// arguments and run it without spawning camrec.
struct RecordingPlan {
    let source: FrameSource
    /// The codecs in use, the default one first.
    let codecs: [VideoCodec]
    let encoders: [VideoCodec: VideoEncoder]
    let keyframeInterval: Int
    let keyframes: KeyframeGate
    let hubs: [VideoCodec: StreamHub]
    /// Every output, in the order of the command line (then --listen, then the live view).
    let outputs: [StreamOutput]
    let fileOutputs: [RecordingFileOutput]
    let liveView: LiveViewOutput?
    /// `--event-output`: clips around triggers, from the default codec's hub.
    let events: EventRecorder?
    let outputSet: OutputSet
    let recorder: Recorder
    /// `--audio`: the sound, published into the hubs for the container files.
    let sound: AudioCapture?

    var videoEncoder: VideoEncoder { encoders[codecs[0]]! }
}

extension RecordCommand {
    /// Whether an output needs libavformat (and so libavcodec): a container file, a media server, the
    /// live view (fragmented MP4), event clips (their container may be any).
    var needsLibav: Bool {
        http != nil || events.eventOutput != nil || sound.isOn || outputs.contains { target in
            target != "-" && !TCPEndpoint.looksLikeURL(target)
                && (MediaServerURL.looksLikeURL(target) || ContainerFormat(fileName: target) != .raw)
        }
    }

    /// Opens the source and the encoders and wires the outputs to them; throws a `RecordingFailure`
    /// (or the live view's own error) when one cannot be made.
    func makePlan(logger: Logger) throws -> RecordingPlan {
        let rate = fps ?? 30
        let source: FrameSource
        do {
            source = try waitingWhileBusy(seconds: wait) { try makeSource(fps: rate) }
        } catch {
            throw Recorder.classify(error)
        }
        // Masks that hide the whole picture are a usage error, found before any output is created.
        _ = try events.motionSettings(size: source.frameSize)
        let interval = keyframeInterval ?? max(1, Int(source.framesPerSecond.rounded()))
        let codecs = codecsInUse
        var encoders: [VideoCodec: VideoEncoder] = [:]
        for codec in codecs where cameraCodec != nil {
            do {
                encoders[codec] = try makeCameraEncoder(source: source, codec: codec, interval: interval, logger: logger)
            } catch {
                throw Recorder.classify(error)
            }
        }
        for codec in codecs where cameraCodec == nil {
            var settings = EncoderSettings(codec: codec, size: source.frameSize, framesPerSecond: source.framesPerSecond,
                                           keyframeInterval: interval, bitrate: bitrate?.bitsPerSecond, constantQP: qp,
                                           profile: profile, preset: preset, slicesPerPicture: slices, softwareThreads: threads)
            // Two encodings share one pool: libx264 takes the I420 that libx265 needs.
            settings.planarInput = codecs.count > 1
            settings.encoderSEI = encoderSei
            do {
                encoders[codec] = try makeEncoder(settings: settings, softwareOnly: codecs.count > 1, logger: logger)
            } catch {
                throw Recorder.classify(error)
            }
        }
        // libav* is opened on first use; a recording with a container, a media server, the live view or
        // event clips opens it here, so a missing library ends it before any output file exists.
        if needsLibav, let reason = LibavLibraries.loadFailure() {
            throw Recorder.classify(EncoderError(.unavailable, reason))
        }
        let soundParts = try makeSound()
        let soundEncoder = soundParts?.encoder
        let sourceName = stableSourceName(device: device, testPattern: testPattern, testScene: testScene, input: input)
        var fileOutputs: [RecordingFileOutput] = []
        // Every IDR request of the recording (receivers, servers, viewers, snapshots, rotations) goes through this gate.
        let keyframes = KeyframeGate(minimumIntervalSeconds: 1)
        var streamOutputs: [StreamOutput] = []
        var outputsByCodec: [VideoCodec: [StreamOutput]] = [:]
        var rtspServer: RTSPServer?
        func add(_ output: StreamOutput, _ codec: VideoCodec) {
            streamOutputs.append(output)
            outputsByCodec[codec, default: []].append(output)
        }
        do {
            for target in outputs {
                let codec = codec(of: target)
                if target == "-" {
                    add(QueuedOutput(sink: StandardOutputSink(), timingSEICodec: timingSei ? codec : nil), codec)
                } else if TCPEndpoint.looksLikeURL(target) {
                    add(makeNetworkOutput(try TCPEndpoint(url: target), codec: codec), codec)
                } else if MediaServerURL.looksLikeURL(target) {
                    add(makePublishOutput(try MediaServerURL(target), codec: codec, audio: soundEncoder?.track,
                                          framesPerSecond: source.framesPerSecond), codec)
                } else {
                    let output = try files.makeOutput(target, codec: codec, device: sourceName, overwrite: overwrite,
                                                      framesPerSecond: source.framesPerSecond, timingSEI: timingSei,
                                                      audio: soundEncoder?.track)
                    fileOutputs.append(output)
                    add(output, codec)
                }
            }
            for spec in listen {
                add(makeNetworkOutput(try TCPEndpoint(listenSpec: spec), codec: defaultCodec), defaultCodec)
            }
            rtspServer = try makeRTSPServer(framesPerSecond: source.framesPerSecond)
            if let server = rtspServer {
                // The default encoding at `/` and its name; another encoding at its name only. The sound is
                // each one's second track.
                let sound = soundEncoder.map { encoder in
                    RTSPMount.Sound(track: RTPAudioTrack(codec: encoder.codec == .aac ? .aac(audioSpecificConfig: encoder.track.codecConfiguration) : .opus,
                                                         sampleRate: encoder.format.sampleRate, channels: encoder.format.channels),
                                    primingSamples: encoder.track.primingSamples)
                }
                for codec in codecs {
                    let name = codec == .h264 ? "/h264" : "/h265"
                    add(server.mount(codec: codec, paths: codec == defaultCodec ? ["/", name] : [name], sound: sound), codec)
                }
            }
        } catch {
            throw Recorder.classify(error)
        }
        var liveView: LiveViewOutput?
        if http != nil {
            let live = try LiveViewOutput(label: "http live view", framesPerSecond: source.framesPerSecond, audio: soundEncoder?.track,
                                          log: networkLog())
            add(live, defaultCodec)
            liveView = live
        }
        let eventRecorder: EventRecorder?
        do {
            eventRecorder = try events.makeRecorder(codec: defaultCodec, device: sourceName, framesPerSecond: source.framesPerSecond,
                                                    audio: soundEncoder?.track)
        } catch {
            throw Recorder.classify(error)
        }
        if let eventRecorder { add(eventRecorder, defaultCodec) }
        logger.info("recording \(source.summary) with \(codecs.map { encoders[$0]!.name }.joined(separator: " and ")), IDR every \(interval) frames")
        // One hub per encoding; the live view's snapshots read the newest picture group from its ring,
        // event clips their pre-roll.
        let defaultRing = eventRecorder?.configuration.ringBounds(framesPerSecond: source.framesPerSecond, keyframeInterval: interval)
            ?? (http != nil ? .newestPictureGroup : RingBounds(seconds: 0, maximumBytes: 0, maximumFrames: 0))
        let hubs = Dictionary(uniqueKeysWithValues: codecs.map { codec in
            (codec, StreamHub(label: codec.rawValue, ring: codec == defaultCodec ? defaultRing
                                : RingBounds(seconds: 0, maximumBytes: 0, maximumFrames: 0), keyframes: keyframes))
        })
        let branches = codecs.map { codec in
            EncodingBranch(encoder: encoders[codec]!, hub: hubs[codec]!, codec: codec, slicesPerPicture: slices,
                           layout: encoderSei ? .encoderUnits : .bare)
        }
        let outputSet = OutputSet(codecs.flatMap { codec in (outputsByCodec[codec] ?? []).map { (output: $0, hub: hubs[codec]!) } })
        let recorder = Recorder(source: source, branches: branches, keyframeInterval: interval,
                                limits: .init(frames: frames, durationSeconds: duration), logger: logger)
        keyframes.connect { [weak recorder] in recorder?.requestKeyframe() }
        rtspServer?.use(timeline: recorder.timeline)
        let sound = soundParts.map { parts in
            AudioCapture(source: parts.source, encoder: parts.encoder, hubs: codecs.map { hubs[$0]! }, timeline: recorder.timeline)
        }
        if let sound {
            logger.info("sound: \(sound.source.summary), \(sound.encoder.codec.displayName) at \(sound.encoder.bitrate) bit/s")
            // Where the sound goes and where it does not, in one line: raw outputs keep their contract.
            let silent = outputs.filter { !carriesSound($0) } + listen.map { "--listen \($0)" }
            let clips = eventRecorder?.configuration.files.takesAudio == true ? ["event clips \(events.eventOutput ?? "")"] : []
            let page = http != nil ? ["the live view"] : []
            let served = rtsp.map { ["--rtsp \($0)"] } ?? []
            printLine("camrec: sound goes into \((outputs.filter(carriesSound) + clips + page + served).joined(separator: ", "))"
                + (silent.isEmpty ? "" : "; \(silent.joined(separator: ", ")) \(silent.count == 1 ? "carries" : "carry") video only"))
        }
        return RecordingPlan(source: source, codecs: codecs, encoders: encoders, keyframeInterval: interval, keyframes: keyframes,
                             hubs: hubs, outputs: streamOutputs, fileOutputs: fileOutputs, liveView: liveView, events: eventRecorder,
                             outputSet: outputSet, recorder: recorder, sound: sound)
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
        return try V4L2CaptureSource(path: device ?? "/dev/video0", request: request, recordPriority: !shared)
    }

    func makeEncoder(settings: EncoderSettings, softwareOnly: Bool, logger: Logger) throws -> VideoEncoder {
        let chosen: EncoderPreference = switch encoder {
        case .auto: .auto
        case .software: .software
        case .vaapi: .vaapi
        case .camera: .auto   // never: the camera's stream has an encoder of its own (`makeCameraEncoder`)
        }
        // Two encodings from one capture share a plain pool: both in software.
        let preference = softwareOnly ? .software : chosen
        let choice = try EncoderSelection.make(preference, settings: settings, vaapiDevice: vaapiDevice)
        // auto says what it chose, in one line; an explicit choice needs no comment.
        if let note = choice.note { printLine("camrec: \(note)") }
        logger.debug("encoder: \(choice.encoder.name)")
        if let vaapi = choice.encoder as? VAAPIEncoder { logger.info("VA-API: \(vaapi.configuration)") }
        return choice.encoder
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
