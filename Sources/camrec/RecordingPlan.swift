import Audio
import Bitstream
import Capture
import Containers
import Encoder
import HTTPServer
import Hub
import Libav
import Logging
import NetStream
import Outputs
import Recorder
import RTSP
import RTSPServer

/// What one recording will do, wired and not started: the source, one encoder and one hub per codec,
/// the outputs (each subscribed to its codec's hub by the output set), the keyframe gate every IDR
/// request goes through, and the recorder between them. Making one prints nothing: what camrec tells
/// the user of its choices is in `notices`. `RecordCommand.run` prints them and adds what a process
/// has (signals, the status line, the HTTP server, the summary); a test can build one from the same
/// arguments and run it without spawning camrec.
struct RecordingPlan {
    let source: FrameSource
    /// The codecs in use, the default one first.
    let codecs: [VideoCodec]
    /// The first encoding's encoder as the command speaks of it; the encoders themselves are the recorder's.
    let videoEncoder: EncoderDescription
    let encoderNames: [VideoCodec: String]
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
    /// The WebRTC viewers' shared Opus, when the recording's sound is AAC and `--http` serves WebRTC.
    let webRTCSound: WebRTCSoundFeed?
    /// Lines for stderr, in the order they arose, each starting "camrec: ": the encoder `auto` chose and
    /// why, the camera's codec controls, where the sound goes.
    let notices: [String]

    /// Opens the source and the encoders and wires the outputs to them, as `command` asks; throws a
    /// `RecordingFailure` (or the live view's own error) when one cannot be made.
    init(_ command: RecordCommand, logger: Logger) throws {
        var notices: [String] = []
        let source: FrameSource
        do {
            source = try waitingWhileBusy(seconds: command.wait, device: command.cameraPath) { try command.makeSource(fps: command.fps ?? 30) }
        } catch {
            throw Recorder.classify(error)
        }
        // Masks that hide the whole picture are a usage error, found before any output is created.
        _ = try command.events.motionSettings(size: source.frameSize)
        let interval = command.keyframeInterval ?? max(1, Int(source.framesPerSecond.rounded()))
        let codecs = command.codecsInUse
        let defaultCodec = command.defaultCodec
        var encoders: [VideoCodec: VideoEncoder] = [:]
        do {
            for codec in codecs {
                if command.cameraCodec != nil {
                    let made = try command.makeCameraEncoder(source: source, codec: codec, interval: interval, logger: logger)
                    encoders[codec] = made.encoder
                    notices.append(made.notice)
                } else {
                    var settings = EncoderSettings(codec: codec, size: source.frameSize, framesPerSecond: source.framesPerSecond,
                                                   keyframeInterval: interval, bitrate: command.bitrate?.bitsPerSecond,
                                                   constantQP: command.qp, profile: command.profile, preset: command.preset,
                                                   slicesPerPicture: command.slices, softwareThreads: command.threads)
                    // Two encodings share one pool: libx264 takes the I420 that libx265 needs.
                    settings.planarInput = codecs.count > 1
                    settings.encoderSEI = command.encoderSei
                    let made = try command.makeEncoder(settings: settings, softwareOnly: codecs.count > 1, logger: logger)
                    encoders[codec] = made.encoder
                    if let notice = made.notice { notices.append(notice) }
                }
            }
        } catch {
            throw Recorder.classify(error)
        }
        // libav* is opened on first use; a recording with a container, a media server, the live view or
        // event clips opens it here, so a missing library ends it before any output file exists.
        if command.needsLibav, let reason = LibavLibraries.loadFailure() {
            throw Recorder.classify(EncoderError(.unavailable, reason))
        }
        let soundParts = try command.makeSound()
        let soundEncoder = soundParts?.encoder
        let sourceName = stableSourceName(device: command.device, testPattern: command.testPattern,
                                          testScene: command.testScene, input: command.input)
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
            for target in command.outputs {
                let codec = command.codec(of: target)
                if target == "-" {
                    add(QueuedOutput(sink: StandardOutputSink(), timingSEICodec: command.timingSei ? codec : nil), codec)
                } else if TCPEndpoint.looksLikeURL(target) {
                    add(command.makeNetworkOutput(try TCPEndpoint(url: target), codec: codec), codec)
                } else if MediaServerURL.looksLikeURL(target) {
                    add(command.makePublishOutput(try MediaServerURL(target), codec: codec, audio: soundEncoder?.track,
                                                  framesPerSecond: source.framesPerSecond), codec)
                } else {
                    let output = try command.files.makeOutput(target, codec: codec, device: sourceName, overwrite: command.overwrite,
                                                              framesPerSecond: source.framesPerSecond, timingSEI: command.timingSei,
                                                              audio: soundEncoder?.track)
                    fileOutputs.append(output)
                    add(output, codec)
                }
            }
            for spec in command.listen {
                add(command.makeNetworkOutput(try TCPEndpoint(listenSpec: spec), codec: defaultCodec), defaultCodec)
            }
            rtspServer = try command.makeRTSPServer(framesPerSecond: source.framesPerSecond)
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
        if command.http != nil {
            let live = try LiveViewOutput(label: "http live view", framesPerSecond: source.framesPerSecond, audio: soundEncoder?.track,
                                          log: command.networkLog())
            add(live, defaultCodec)
            liveView = live
        }
        let eventRecorder: EventRecorder?
        do {
            eventRecorder = try command.events.makeRecorder(codec: defaultCodec, device: sourceName, framesPerSecond: source.framesPerSecond,
                                                            audio: soundEncoder?.track)
        } catch {
            throw Recorder.classify(error)
        }
        if let eventRecorder { add(eventRecorder, defaultCodec) }
        logger.info("recording \(source.summary) with \(codecs.map { encoders[$0]!.name }.joined(separator: " and ")), IDR every \(interval) frames")
        // One hub per encoding; the live view's snapshots read the newest picture group from its ring,
        // event clips their pre-roll.
        let defaultRing = eventRecorder?.configuration.ringBounds(framesPerSecond: source.framesPerSecond, keyframeInterval: interval)
            ?? (command.http != nil ? .newestPictureGroup : RingBounds(seconds: 0, maximumBytes: 0, maximumFrames: 0))
        let hubs = Dictionary(uniqueKeysWithValues: codecs.map { codec in
            (codec, StreamHub(label: codec.rawValue, ring: codec == defaultCodec ? defaultRing
                                : RingBounds(seconds: 0, maximumBytes: 0, maximumFrames: 0), keyframes: keyframes))
        })
        let branches = codecs.map { codec in
            EncodingBranch(encoder: encoders[codec]!, hub: hubs[codec]!, codec: codec, slicesPerPicture: command.slices,
                           layout: command.encoderSei ? .encoderUnits : .bare)
        }
        let outputSet = OutputSet(codecs.flatMap { codec in (outputsByCodec[codec] ?? []).map { (output: $0, hub: hubs[codec]!) } })
        let (videoEncoder, encoderNames) = (EncoderDescription(encoders[codecs[0]]!), encoders.mapValues(\.name))
        let recorder = Recorder(source: source, branches: branches, keyframeInterval: interval,
                                limits: .init(frames: command.frames, durationSeconds: command.duration), logger: logger)
        keyframes.connect { [weak recorder] in recorder?.requestKeyframe() }
        rtspServer?.use(timeline: recorder.timeline)
        var sound: AudioCapture?
        var webRTCSound: WebRTCSoundFeed?
        if let parts = soundParts {
            let side = command.http == nil ? nil : command.makeWebRTCSound(for: parts.encoder)
            webRTCSound = side?.feed
            sound = AudioCapture(sound: parts, hubs: codecs.map { hubs[$0]! }, timeline: recorder.timeline,
                                 side: side.map { ($0.encoder, $0.feed) })
        }
        if let sound {
            logger.info("sound: \(sound.summary)")
            notices.append(command.soundRouting(clips: eventRecorder?.configuration.files.takesAudio == true))
        }
        (self.source, self.codecs, self.keyframeInterval, self.keyframes) = (source, codecs, interval, keyframes)
        (self.videoEncoder, self.encoderNames) = (videoEncoder, encoderNames)
        (self.hubs, self.outputs, self.fileOutputs, self.liveView, self.events) = (hubs, streamOutputs, fileOutputs, liveView, eventRecorder)
        (self.outputSet, self.recorder, self.sound, self.notices) = (outputSet, recorder, sound, notices)
        self.webRTCSound = webRTCSound
    }
}

/// What the command says of an encoder (its name, and what the warnings tell apart), kept apart from the
/// encoder itself, which is the recording's.
struct EncoderDescription: Sendable {
    let name: String
    let isX264: Bool
    let isVAAPI: Bool

    init(_ encoder: VideoEncoder) {
        name = encoder.name
        isX264 = encoder is X264Encoder
        isVAAPI = encoder is VAAPIEncoder
    }
}
