import Bitstream
import Capture
import Frames
import Encoder
import Glibc
import Logging
import Outputs
import Pipeline
import Synchronization

/// Runs one recording: source → pool buffer → encoder → stream writer → outputs.
///
/// The source runs on its own capture thread and only waits for the pool (a live
/// source drops instead); the encoder and stream writer run on the calling
/// thread; each output has its own thread. A stop from any thread (signal,
/// failed output) ends capture, and everything captured so far is encoded,
/// flushed and written before `run()` returns.
public final class Recorder: @unchecked Sendable {
    public struct Limits: Sendable {
        public var frames: Int?
        public var durationSeconds: Double?
        public init(frames: Int? = nil, durationSeconds: Double? = nil) {
            self.frames = frames
            self.durationSeconds = durationSeconds
        }
    }

    /// Live counters, read by the status line.
    public struct Progress: Sendable {
        public var frames = 0
        public var bytes = 0
        public var dropped: UInt64 = 0
        /// Of `dropped`, frames the camera delivered corrupt (flagged or short buffers).
        public var errored: UInt64 = 0
        public var lastPresentationNanoseconds: UInt64 = 0
    }

    /// How long one access unit took, for `/metrics`.
    public struct FrameTiming: Sendable {
        /// From handing the frame to the encoder to its access unit coming out.
        public var encodeNanoseconds: UInt64?
        /// From capture (the buffer's monotonic timestamp) to the access unit being handed to the outputs.
        public var captureToOutputsNanoseconds: UInt64?
    }
    /// Called on the encoder thread for every access unit; must be quick.
    public var onFrameTimed: (@Sendable (FrameTiming) -> Void)?
    /// When recent frames went into the encoder, by sequence number modulo its size.
    private let encodeStarts = Mutex([(sequence: UInt64, nanoseconds: UInt64)](repeating: (.max, 0), count: 64))

    private let source: FrameSource
    private let encoder: VideoEncoder
    private let outputs: [StreamOutput]
    private let keyframeInterval: Int
    private let limits: Limits
    private let logger: Logger
    private let chunkPool = StreamChunkPool()
    private var writer: AnnexBStreamWriter
    private let shared = Mutex(Shared())
    private struct Shared {
        var failure: RecordingFailure?
        var progress = Progress()
        var stopRequested = false
        var keyframeRequested = false
    }

    public init(source: FrameSource, encoder: VideoEncoder, outputs: [StreamOutput], keyframeInterval: Int,
                limits: Limits, slicesPerPicture: Int = 1, codec: VideoCodec = .h264, logger: Logger) {
        writer = AnnexBStreamWriter(codec: codec, maxSlicesPerPicture: max(1, slicesPerPicture))
        self.source = source
        self.encoder = encoder
        self.outputs = outputs
        self.keyframeInterval = max(1, keyframeInterval)
        self.limits = limits
        self.logger = logger
    }

    public var progress: Progress {
        var p = shared.withLock { $0.progress }
        let statistics = source.statistics
        p.dropped = statistics.dropped
        p.errored = statistics.errored
        return p
    }

    /// Ends the recording cleanly; safe from any thread, any number of times.
    public func stop() {
        let first = shared.withLock { s -> Bool in
            defer { s.stopRequested = true }
            return !s.stopRequested
        }
        if first { source.stop() }
    }

    /// "Stop waiting" after a second interrupt: outputs that could block the shutdown for ever
    /// (stdout into a pipe nobody reads) give up what they still hold; files finish as usual.
    public func abandonBlockingOutputs() {
        for output in outputs { output.abandon() }
        stop()
    }

    /// Asks for an IDR at the next frame (late joiners on the network).
    public func requestKeyframe() {
        shared.withLock { $0.keyframeRequested = true }
    }

    private func fail(_ failure: RecordingFailure) {
        shared.withLock { if $0.failure == nil { $0.failure = failure } }
        stop()
    }

    public func run() -> RecordingResult {
        var result = RecordingResult()
        // Outputs first: a bad path fails before the camera is touched.
        var opened: [StreamOutput] = []
        for output in outputs {
            do {
                try output.open()
                opened.append(output)
                output.onFailure = { [weak self] error in self?.fail(.output(error)) }
            } catch {
                let failure = error as? OutputError ?? OutputError(.unwritable, "\(output.label): \(error)")
                result.outputs = opened.map { $0.finish() }
                result.failure = .output(failure)
                return result
            }
        }
        let pool: PixelBufferPool
        do {
            try encoder.start()
            // SPS/PPS the encoder gave out of band (VA-API drivers that write none in the stream).
            if let sets = encoder.parameterSets { writer.rememberParameterSets(fromAnnexB: sets) }
            // The encoder's own pool: for VA-API its buffers are mapped GPU surfaces.
            pool = encoder.makePool(width: source.frameSize.width, height: source.frameSize.height,
                                    capacity: encoder.maximumBuffersInFlight + 4 + source.poolBuffersHeld)
            try source.start(pool: pool)
            // A signal may have asked to stop before the source existed: stop it now.
            if shared.withLock({ $0.stopRequested }) { source.stop() }
            logger.info("capture: \(source.summary)")
        } catch {
            result.outputs = opened.map { $0.finish() }
            result.failure = Self.classify(error)
            return result
        }
        encoder.onBufferDone = { pool.recycle($0) }
        encoder.onPacket = { [unowned self] packet in self.publish(packet) }

        let frames = BlockingQueue<PixelBuffer>(capacity: pool.capacity)
        let capture = WorkerThread(name: "capture") { [unowned self] in
            self.captureLoop(into: frames)
        }
        capture.start()

        var sinceKeyframe = 0
        var encoderFailed = false
        while let buffer = frames.pop() {
            if encoderFailed {
                pool.recycle(buffer)
                continue
            }
            let requested = shared.withLock { s -> Bool in
                defer { s.keyframeRequested = false }
                return s.keyframeRequested
            }
            let force = sinceKeyframe == 0 || sinceKeyframe >= keyframeInterval || requested
            if force { sinceKeyframe = 0 }
            sinceKeyframe += 1
            if onFrameTimed != nil {
                let entry = (buffer.sequence, MonotonicClock.now())
                encodeStarts.withLock { $0[Int(entry.0 % 64)] = entry }
            }
            do {
                try encoder.encode(buffer, forceKeyframe: force)
            } catch {
                encoderFailed = true
                fail(Self.classify(error))
            }
        }
        capture.join()
        if !encoderFailed {
            do { try encoder.flush() } catch { fail(Self.classify(error)) }
        }
        pool.close()

        result.outputs = opened.map { $0.finish() }
        let progress = shared.withLock { $0.progress }
        result.framesEncoded = progress.frames
        result.bytes = progress.bytes
        result.idrFrames = idrCount
        result.repairedAccessUnits = repairedCount
        result.source = source.statistics
        logger.info("capture counters: \(result.source.fields)")
        result.durationSeconds = firstPresentation.map { first in
            Double(progress.lastPresentationNanoseconds - first) / 1e9 + 1 / source.framesPerSecond
        } ?? 0
        switch source.end {
        case .deviceLost(let m): fail(.deviceLost(m))
        case .stalled(let m): fail(.deviceStalled(m))
        case .finished, nil: break
        }
        result.failure = shared.withLock { $0.failure }
        if result.failure == nil, let error = result.outputs.compactMap(\.error).first {
            result.failure = .output(error)
        }
        return result
    }

    private var idrCount = 0
    private var repairedCount = 0
    private var firstPresentation: UInt64?

    private func captureLoop(into frames: BlockingQueue<PixelBuffer>) {
        defer { frames.close() }
        var delivered = 0
        let durationLimit = limits.durationSeconds.map { UInt64($0 * 1e9) }
        var firstTime: UInt64?
        while true {
            if let max = limits.frames, delivered >= max { break }
            let buffer: PixelBuffer?
            do {
                buffer = try source.nextFrame()
            } catch {
                fail(Self.classify(error))
                break
            }
            guard let buffer else { break }
            let start = firstTime ?? buffer.presentationTimeNanoseconds
            firstTime = start
            if let durationLimit, buffer.presentationTimeNanoseconds - start >= durationLimit {
                buffer.recycle()
                break
            }
            delivered += 1
            frames.push(buffer)
        }
        source.stop()
    }

    /// Runs on the encoder thread for every access unit the encoder produces.
    private func publish(_ packet: EncodedPacket) {
        let chunk = chunkPool.take()
        let info: AccessUnitInfo
        do {
            info = try writer.write(accessUnit: packet.data, into: &chunk.bytes)
        } catch {
            chunk.retain()
            chunk.release()
            fail(.encoder(EncoderError(.failed, "the encoder produced a stream camrec cannot make valid: \(error)")))
            return
        }
        if info.heldBack || info.nalCount == 0 {
            // Parameter sets before the first picture, or only an encoder banner: not a frame.
            chunk.retain()
            chunk.release()
            return
        }
        chunk.isIDR = info.isIDR
        chunk.sequence = packet.sequence
        chunk.presentationTimeNanoseconds = packet.presentationTimeNanoseconds
        chunk.captureTimeNanoseconds = packet.captureTimeNanoseconds
        if info.isIDR { idrCount += 1 }
        if info.insertedParameterSets { repairedCount += 1 }
        if firstPresentation == nil { firstPresentation = packet.presentationTimeNanoseconds }
        shared.withLock {
            $0.progress.frames += 1
            $0.progress.bytes += chunk.bytes.count
            $0.progress.lastPresentationNanoseconds = packet.presentationTimeNanoseconds
        }
        if let onFrameTimed {
            let now = MonotonicClock.now()
            let started = encodeStarts.withLock { $0[Int(packet.sequence % 64)] }
            onFrameTimed(FrameTiming(
                encodeNanoseconds: started.sequence == packet.sequence && now >= started.nanoseconds ? now - started.nanoseconds : nil,
                captureToOutputsNanoseconds: packet.captureTimeNanoseconds > 0 && now >= packet.captureTimeNanoseconds
                    ? now - packet.captureTimeNanoseconds : nil))
        }
        chunk.retain(outputs.count + 1)
        for output in outputs { output.submit(chunk) }
        chunk.release()
    }

    static func classify(_ error: Error) -> RecordingFailure {
        switch error {
        case let e as CaptureError: return .source(e)
        case let e as EncoderError: return .encoder(e)
        case let e as OutputError: return .output(e)
        case let e as RecordingFailure: return e
        default: return .encoder(EncoderError(.failed, "\(error)"))
        }
    }
}
