import Capture
import Encoder
import Frames
import Hub
import Threading
import Synchronization

/// The recording's sound, a producer beside the video encoders: a source, the AAC encoder and the
/// hubs whose container subscribers take audio, on a thread of its own.
///
/// Every packet is stamped on the video's clock through the recorder's `PresentationTimeline`: the
/// capture time of its first sample, mapped to presentation time. It starts when the first frame is
/// captured and, at `finish`, ends where the video ends.
///
/// The source and the encoder are one thread's at a time: the audio thread's while it runs, then, once
/// it has been joined, `finish`'s. They live in an `Engine` (not Sendable) reached only through the
/// `engine` monitor, which each holds once, whole (no lock per block). The plan that made them keeps
/// them no longer (it reads only the encoder's Sendable track first).
public final class AudioCapture: Sendable {
    public struct Counters: Sendable, Equatable {
        /// Packets handed to the hubs.
        public var packets = 0
        /// Samples encoded.
        public var samples: UInt64 = 0
    }

    /// What the sound is, for the recording's first lines ("test tone 48000 Hz, mono, AAC at 128000 bit/s").
    public let summary: String
    private let engine: Monitor<Engine?>
    /// Outlives the engine: the outputs and their muxers hold the last packets after `finish` (a chunk
    /// returns to its pool through an unowned reference).
    private let chunks = StreamChunkPool()
    private let hubs: [StreamHub]
    private let timeline: PresentationTimeline
    private let worker = Mutex<WorkerThread?>(nil)
    private let state = Mutex(State())
    private struct State {
        var stopRequested = false
        var failure: EncoderError?
        var counters = Counters()
        var report: String?
        var threadPriority: ThreadPriority?
        /// Packets that begin in [publishingStart, publishingEnd) are handed on (`endPublishing`,
        /// `resumePublishing`): sound with a picture to go with.
        var publishingStart: UInt64 = 0
        var publishingEnd = UInt64.max
    }
    /// How many nice values the audio thread asks to be ahead of the rest of camrec: reading, resampling
    /// and encoding a second of sound costs a few hundredths of one, but a thread behind the video encoder
    /// for the CPU by the device's whole buffer loses all of it, where the video only drops frames.
    public static let threadPriorityLead: Int32 = 10

    /// `sound`: the source and its encoder, handed over: nothing else may use them from now on.
    /// `side`: a second encoder of the same samples and the feed of its own it hands its packets to
    /// (the WebRTC viewers' Opus), encoding only while the feed wants them; never published to the hubs.
    public init(sound: (source: any SoundSource, encoder: SoundEncoder), hubs: [StreamHub], timeline: PresentationTimeline,
                side: (encoder: SoundEncoder, feed: any SoundSideFeed)? = nil) {
        let (source, encoder) = sound
        precondition(source.format == encoder.format, "the encoder takes the source's format")
        precondition(side.map { $0.encoder.format == encoder.format } ?? true, "the side encoder takes the source's format")
        summary = "\(source.summary), \(encoder.codec.displayName) at \(encoder.bitrate) bit/s"
        engine = Monitor(Engine(source: source, encoder: encoder,
                                side: side.map { SoundSideEncoder(encoder: $0.encoder, feed: $0.feed) }))
        self.hubs = hubs
        self.timeline = timeline
    }

    public var counters: Counters { state.withLock { $0.counters } }
    public var failure: EncoderError? { state.withLock { $0.failure } }
    /// What happened to the source on the way (overruns), once `finish` has returned; nil when nothing did.
    public var report: String? { state.withLock { $0.report } }
    /// What the audio thread got when it asked to run `threadPriorityLead` ahead.
    public enum ThreadPriority: Sendable, Equatable {
        case raised(nice: Int32)
        case refused
    }
    /// Nil until the audio thread has started.
    public var threadPriority: ThreadPriority? { state.withLock { $0.threadPriority } }

    /// Starts the audio thread. `onFailure` is called once, if encoding fails (the video goes on without sound).
    public func start(onFailure: @escaping @Sendable (EncoderError) -> Void = { _ in }) {
        let worker = WorkerThread(name: "audio") { [unowned self] in
            let nice = ProcessNice.applyToCurrentThread(lead: Self.threadPriorityLead)
            state.withLock { $0.threadPriority = nice.map { .raised(nice: $0) } ?? .refused }
            // The engine is this thread's for as long as it runs (one lock, not one a block): `finish`
            // joins it before it takes the engine.
            self.engine.withLock { engine in
                guard let engine else { return }
                engine.onFailure = onFailure
                self.run(engine)
            }
        }
        self.worker.withLock { $0 = worker }
        worker.start()
    }

    private var stopRequested: Bool { state.withLock { $0.stopRequested || $0.failure != nil } }

    private func run(_ engine: Engine) {
        do {
            try engine.source.prepare()
        } catch {
            fail(error, engine)
            return
        }
        guard let origin = timeline.waitForStart() else { return }
        do {
            try engine.source.start(origin: origin)
            engine.started = true
            let frame = engine.encoder.frameSize
            while true {
                // The side encoder's frames are shorter (10 ms): it encodes each as soon as it has been captured.
                let ready = engine.side?.samplesToWaitFor(mainFrame: frame, source: engine.source) ?? frame
                guard try engine.source.waitForSamples(ready, shouldStop: { stopRequested }) else { break }
                if let side = engine.side {
                    // Its failure ends the side feed only: the recording's sound goes on.
                    do { try side.take(ready: ready, source: engine.source) } catch { engine.side = nil }
                }
                if ready == frame { encodeNext(frame, engine) }
            }
        } catch {
            fail(error, engine)
        }
    }

    /// How far past the picture's end (and before its return) sound is still handed on: the outputs
    /// cut it to their own picture's end and start; this only keeps seconds of it from piling up ahead
    /// of the picture in them (a file's muxer holds up to 10.9 s, then writes it anyway).
    public static let publishingMargin: UInt64 = 1_000_000_000

    /// No frame will come after `end` (a presentation time): packets that begin a margin past it are
    /// not handed to the hubs. The video's encoders may take seconds yet to finish (a slow preset's
    /// lookahead, a starved CPU, a camera lost), while this thread reads on in real time.
    public func endPublishing(atPresentation end: UInt64) {
        let limit = end > UInt64.max - Self.publishingMargin ? UInt64.max : end + Self.publishingMargin
        state.withLock { $0.publishingEnd = min($0.publishingEnd, limit) }
    }

    /// Frames come again from `start` (a camera came back): packets that begin a margin before it or
    /// later are handed on again; the rest of what was captured while it was away has no picture.
    public func resumePublishing(fromPresentation start: UInt64) {
        let from = start > Self.publishingMargin ? start - Self.publishingMargin : 0
        state.withLock { s in
            s.publishingStart = max(s.publishingStart, from)
            s.publishingEnd = .max
        }
    }

    /// Ends the sound where the video ends (`end`, a presentation time; nil when no frame was
    /// recorded): stops the thread, encodes the samples up to there and what the encoder holds, and
    /// hands it all to the hubs before they close. Call once, from the recording's thread.
    public func finish(atPresentation end: UInt64?) {
        state.withLock { $0.stopRequested = true }
        // A thread still waiting for the first frame hears that none will come.
        if end == nil { timeline.close() }
        worker.withLock { $0.take() }?.join()
        guard let engine = engine.withLock({ $0.take() }) else { return }
        let source = engine.source
        defer {
            source.stop()
            let report = source.report
            state.withLock { $0.report = report }
        }
        guard engine.started, failure == nil else { return }
        if let end, let endCapture = timeline.capture(ofPresentation: end) {
            while failure == nil {
                // A microphone has captured the last moments already; what it has not is silence.
                do { try source.collectCaptured() } catch { fail(error, engine); break }
                let next = source.captureTime(ofSample: source.position)
                guard next < endCapture else { break }
                let left = (endCapture - next) * UInt64(source.format.sampleRate) / 1_000_000_000
                guard left > 0 else { break }
                encodeNext(Int(min(UInt64(engine.encoder.frameSize), left)), engine)
                if left < UInt64(engine.encoder.frameSize) { break }
            }
        }
        guard failure == nil else { return }
        do {
            try engine.encoder.flush { publish($0, engine) }
        } catch {
            fail(error, engine)
        }
    }

    private func encodeNext(_ count: Int, _ engine: Engine) {
        engine.samplesSent += UInt64(count)
        let source = engine.source
        do {
            try engine.encoder.encode(sampleCount: count, fill: { channel, plane in
                source.write(channel: channel, into: plane)
            }, emit: { publish($0, engine) })
            source.advance(count)
            state.withLock { $0.counters.samples += UInt64(count) }
        } catch {
            fail(error, engine)
        }
    }

    private func fail(_ error: Error, _ engine: Engine) {
        let failure = error as? EncoderError ?? EncoderError(.failed, (error as? CaptureError)?.message ?? "the sound: \(error)")
        let first = state.withLock { s -> Bool in
            defer { if s.failure == nil { s.failure = failure } }
            return s.failure == nil
        }
        if first { engine.onFailure(failure) }
    }

    /// Stamps one packet with the presentation time of its first input sample and hands it to every hub.
    private func publish(_ packet: SoundEncoder.Packet, _ engine: Engine) {
        let firstInput = packet.firstSample + Int64(engine.encoder.track.primingSamples)
        let real = min(packet.sampleCount, Int64(engine.samplesSent) - packet.firstSample)
        guard firstInput >= 0, real > 0, !hubs.isEmpty else { return }
        let capture = engine.source.captureTime(ofSample: UInt64(firstInput))
        guard let presentation = timeline.presentation(ofCapture: capture),
              state.withLock({ s -> Bool in
                  guard presentation >= s.publishingStart, presentation < s.publishingEnd else { return false }
                  s.counters.packets += 1
                  return true
              }) else { return }
        let chunk = chunks.take()
        chunk.fill { $0.append(contentsOf: packet.bytes) }
        chunk.kind = .audio
        chunk.isIDR = false
        chunk.sequence = engine.sequence
        engine.sequence += 1
        chunk.presentationTimeNanoseconds = presentation
        chunk.captureTimeNanoseconds = capture
        chunk.durationNanoseconds = engine.source.format.nanoseconds(ofSample: UInt64(real))
        chunk.retain(hubs.count)
        for hub in hubs { hub.publish(chunk) }
    }

    /// What one thread at a time works with: the source, the encoder, and where the stream is.
    private final class Engine {
        let source: any SoundSource
        let encoder: SoundEncoder
        var side: SoundSideEncoder?
        var onFailure: @Sendable (EncoderError) -> Void = { _ in }
        var started = false
        var sequence: UInt64 = 0
        /// Samples handed to the encoder: the last packet plays only up to the last of them (the encoder
        /// pads its last frame to 1024 with silence and says the packet lasts that long).
        var samplesSent: UInt64 = 0

        init(source: any SoundSource, encoder: SoundEncoder, side: SoundSideEncoder?) {
            self.source = source
            self.encoder = encoder
            self.side = side
        }
    }
}
