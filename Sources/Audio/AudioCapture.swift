import Capture
import Encoder
import Frames
import Hub
import Pipeline
import Synchronization

/// The recording's sound, a producer beside the video encoders: a source, the AAC encoder and the
/// hubs whose container subscribers take audio, on a thread of its own.
///
/// Every packet is stamped on the video's clock through the recorder's `PresentationTimeline`: the
/// capture time of its first sample, mapped to presentation time. It starts when the first frame is
/// captured and, at `finish`, ends where the video ends.
public final class AudioCapture: @unchecked Sendable {
    public struct Counters: Sendable, Equatable {
        /// Packets handed to the hubs.
        public var packets = 0
        /// Samples encoded.
        public var samples: UInt64 = 0
    }

    public let source: any SoundSource
    public let encoder: SoundEncoder
    private let hubs: [StreamHub]
    private let timeline: PresentationTimeline
    private let chunks = StreamChunkPool()
    private var worker: WorkerThread?
    private var started = false
    private var sequence: UInt64 = 0
    /// Samples handed to the encoder: the last packet plays only up to the last of them (the encoder
    /// pads its last frame to 1024 with silence and says the packet lasts that long).
    private var samplesSent: UInt64 = 0
    private let state = Mutex(State())
    private struct State {
        var stopRequested = false
        var failure: EncoderError?
        var counters = Counters()
    }
    /// Called once, on the audio thread, if encoding fails; the video goes on without sound.
    public var onFailure: (@Sendable (EncoderError) -> Void)?

    public init(source: any SoundSource, encoder: SoundEncoder, hubs: [StreamHub], timeline: PresentationTimeline) {
        precondition(source.format == encoder.format, "the encoder takes the source's format")
        self.source = source
        self.encoder = encoder
        self.hubs = hubs
        self.timeline = timeline
    }

    public var counters: Counters { state.withLock { $0.counters } }
    public var failure: EncoderError? { state.withLock { $0.failure } }

    public func start() {
        let worker = WorkerThread(name: "audio") { [unowned self] in self.run() }
        self.worker = worker
        worker.start()
    }

    private var stopRequested: Bool { state.withLock { $0.stopRequested || $0.failure != nil } }

    private func run() {
        do {
            try source.prepare()
        } catch {
            fail(error)
            return
        }
        guard let origin = timeline.waitForStart() else { return }
        do {
            try source.start(origin: origin)
            started = true
            while try source.waitForSamples(encoder.frameSize, shouldStop: { stopRequested }) {
                encodeNext(encoder.frameSize)
            }
        } catch {
            fail(error)
        }
    }

    /// Ends the sound where the video ends (`end`, a presentation time; nil when no frame was
    /// recorded): stops the thread, encodes the samples up to there and what the encoder holds, and
    /// hands it all to the hubs before they close. Call once, from the recording's thread.
    public func finish(atPresentation end: UInt64?) {
        state.withLock { $0.stopRequested = true }
        // A thread still waiting for the first frame hears that none will come.
        if end == nil { timeline.close() }
        worker?.join()
        worker = nil
        defer { source.stop() }
        guard started, failure == nil else { return }
        if let end, let endCapture = timeline.capture(ofPresentation: end) {
            while failure == nil {
                // A microphone has captured the last moments already; what it has not is silence.
                do { try source.collectCaptured() } catch { fail(error); break }
                let next = source.captureTime(ofSample: source.position)
                guard next < endCapture else { break }
                let left = (endCapture - next) * UInt64(source.format.sampleRate) / 1_000_000_000
                guard left > 0 else { break }
                encodeNext(Int(min(UInt64(encoder.frameSize), left)))
                if left < UInt64(encoder.frameSize) { break }
            }
        }
        guard failure == nil else { return }
        do {
            try encoder.flush { publish($0) }
        } catch {
            fail(error)
        }
    }

    private func encodeNext(_ count: Int) {
        samplesSent += UInt64(count)
        do {
            try encoder.encode(sampleCount: count, fill: { channel, plane in source.write(channel: channel, into: plane) },
                               emit: { publish($0) })
            source.advance(count)
            state.withLock { $0.counters.samples += UInt64(count) }
        } catch {
            fail(error)
        }
    }

    private func fail(_ error: Error) {
        let failure = error as? EncoderError ?? EncoderError(.failed, (error as? CaptureError)?.message ?? "the sound: \(error)")
        let first = state.withLock { s -> Bool in
            defer { if s.failure == nil { s.failure = failure } }
            return s.failure == nil
        }
        if first { onFailure?(failure) }
    }

    /// Stamps one packet with the presentation time of its first input sample and hands it to every hub.
    private func publish(_ packet: SoundEncoder.Packet) {
        let firstInput = packet.firstSample + Int64(encoder.track.primingSamples)
        let real = min(packet.sampleCount, Int64(samplesSent) - packet.firstSample)
        guard firstInput >= 0, real > 0, !hubs.isEmpty else { return }
        let capture = source.captureTime(ofSample: UInt64(firstInput))
        guard let presentation = timeline.presentation(ofCapture: capture) else { return }
        let chunk = chunks.take()
        chunk.fill { $0.append(contentsOf: packet.bytes) }
        chunk.kind = .audio
        chunk.isIDR = false
        chunk.sequence = sequence
        sequence += 1
        chunk.presentationTimeNanoseconds = presentation
        chunk.captureTimeNanoseconds = capture
        chunk.durationNanoseconds = source.format.nanoseconds(ofSample: UInt64(real))
        state.withLock { $0.counters.packets += 1 }
        chunk.retain(hubs.count)
        for hub in hubs { hub.publish(chunk) }
    }
}
