import Hub
import Bitstream
import Capture
import Frames
import Encoder
import Glibc
import Logging
import Outputs
import Pipeline
import Synchronization

/// Runs one recording: source → pool buffer → encoder → stream writer → hub.
///
/// The source runs on its own capture thread and only waits for the pool (a live
/// source drops instead); the encoder and stream writer run on the calling
/// thread (or one thread per encoder with several). It publishes each access unit
/// into its branch's hub and knows no output: they subscribe there (`OutputSet`). A
/// stop from any thread (signal, failed output) ends capture, and everything captured
/// so far is encoded, flushed and published before `run()` closes the hubs and returns.
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
    /// One encoding, or one per codec; the first is the one `progress` and the result count.
    private let branches: [EncodingBranch]
    private let keyframeInterval: Int
    private let limits: Limits
    private let logger: Logger
    private let chunkPool = StreamChunkPool()
    private let shared = Mutex(Shared())
    private struct Shared {
        var failure: RecordingFailure?
        var progress = Progress()
        var stopRequested = false
        var keyframeRequested = false
    }

    /// Several encodings of one capture: every branch gets every frame (or skips it when it is behind).
    public init(source: FrameSource, branches: [EncodingBranch], keyframeInterval: Int, limits: Limits, logger: Logger) {
        precondition(!branches.isEmpty, "at least one encoder")
        self.source = source
        self.branches = branches
        self.keyframeInterval = max(1, keyframeInterval)
        self.limits = limits
        self.logger = logger
    }

    /// One encoding into `hub`; connects the hub's keyframe gate to this recorder.
    public convenience init(source: FrameSource, encoder: VideoEncoder, hub: StreamHub, keyframeInterval: Int,
                            limits: Limits, slicesPerPicture: Int = 1, codec: VideoCodec = .h264, logger: Logger) {
        self.init(source: source, branches: [EncodingBranch(encoder: encoder, hub: hub, codec: codec, slicesPerPicture: slicesPerPicture)],
                  keyframeInterval: keyframeInterval, limits: limits, logger: logger)
        hub.keyframes.connect { [weak self] in self?.requestKeyframe() }
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

    /// Forces an IDR at the next frame. Outputs ask through their hub's `KeyframeGate`, which is
    /// connected here and rate-limits them.
    public func requestKeyframe() {
        shared.withLock { $0.keyframeRequested = true }
    }

    /// Ends the recording because of `failure` (an output that failed for good); the first failure stands.
    public func stop(failing failure: RecordingFailure) {
        fail(failure)
    }

    private func fail(_ failure: RecordingFailure) {
        shared.withLock { if $0.failure == nil { $0.failure = failure } }
        stop()
    }

    public func run() -> RecordingResult {
        var result = RecordingResult()
        // However it ends, the hubs close: every subscriber takes what it holds, then sees the end.
        defer { for branch in branches { branch.hub.close() } }
        let pool: PixelBufferPool
        do {
            for branch in branches {
                try branch.encoder.start()
                // SPS/PPS the encoder gave out of band (VA-API drivers that write none in the stream).
                if let sets = branch.encoder.parameterSets { branch.writer.rememberParameterSets(fromAnnexB: sets) }
            }
            pool = try makePool()
            try source.start(pool: pool)
            // A signal may have asked to stop before the source existed: stop it now.
            if shared.withLock({ $0.stopRequested }) { source.stop() }
            logger.info("capture: \(source.summary)")
        } catch {
            result.failure = Self.classify(error)
            return result
        }
        // Each branch encodes on a thread of its own from a short queue; one encoder is the one-branch case.
        let release = SharedFrameRelease(pool: pool, branchCount: branches.count)
        for branch in branches {
            branch.encoder.onBufferDone = { buffer in release.release(buffer) }
            branch.encoder.onPacket = { [unowned self, unowned branch] packet in self.publish(packet, from: branch) }
        }
        startBranchThreads(release: release)

        let frames = BlockingQueue<PixelBuffer>(capacity: pool.capacity)
        let capture = WorkerThread(name: "capture") { [unowned self] in
            self.captureLoop(into: frames)
        }
        capture.start()

        var sinceKeyframe = 0
        while let buffer = frames.pop() {
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
            hand(buffer, forceKeyframe: force, release: release)
        }
        capture.join()
        for branch in branches { branch.queue?.close() }
        for branch in branches { branch.worker?.join() }
        pool.close()

        let progress = shared.withLock { $0.progress }
        result.framesEncoded = progress.frames
        result.bytes = progress.bytes
        result.idrFrames = branches[0].idrCount
        result.repairedAccessUnits = branches.reduce(0) { $0 + $1.repairedCount }
        for branch in branches where branch.skippedFrames.load(ordering: .relaxed) > 0 {
            logger.notice("\(branch.encoder.name) skipped \(branch.skippedFrames.load(ordering: .relaxed)) frames to keep up with the capture")
        }
        result.source = source.statistics
        logger.info("capture counters: \(result.source.fields)")
        result.durationSeconds = branches[0].firstPresentation.map { first in
            Double(progress.lastPresentationNanoseconds - first) / 1e9 + 1 / source.framesPerSecond
        } ?? 0
        switch source.end {
        case .deviceLost(let m): fail(.deviceLost(m))
        case .stalled(let m): fail(.deviceStalled(m))
        case .finished, nil: break
        }
        result.failure = shared.withLock { $0.failure }
        return result
    }


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

    /// Runs on a branch's encoder thread for every access unit its encoder produces.
    private func publish(_ packet: EncodedPacket, from branch: EncodingBranch) {
        let chunk = chunkPool.take()
        let info: AccessUnitInfo
        do {
            info = try chunk.fill { try branch.writer.write(accessUnit: packet.data, into: &$0) }
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
        if info.isIDR { branch.idrCount += 1 }
        if info.insertedParameterSets { branch.repairedCount += 1 }
        if branch.firstPresentation == nil { branch.firstPresentation = packet.presentationTimeNanoseconds }
        let primary = branch === branches[0]
        if primary {
            shared.withLock {
                $0.progress.frames += 1
                $0.progress.bytes += chunk.bytes.count
                $0.progress.lastPresentationNanoseconds = packet.presentationTimeNanoseconds
            }
        }
        if primary, let onFrameTimed {
            let now = MonotonicClock.now()
            let started = encodeStarts.withLock { $0[Int(packet.sequence % 64)] }
            onFrameTimed(FrameTiming(
                encodeNanoseconds: started.sequence == packet.sequence && now >= started.nanoseconds ? now - started.nanoseconds : nil,
                captureToOutputsNanoseconds: packet.captureTimeNanoseconds > 0 && now >= packet.captureTimeNanoseconds
                    ? now - packet.captureTimeNanoseconds : nil))
        }
        chunk.retain()
        branch.hub.publish(chunk)
    }

    /// The pool every branch encodes from: with one encoder, the encoder's own (for VA-API its
    /// buffers are mapped GPU surfaces); with several, one plain pool in the format they share,
    /// big enough for each one's frames in flight and queued.
    private func makePool() throws -> PixelBufferPool {
        let (width, height) = (source.frameSize.width, source.frameSize.height)
        if branches.count == 1 {
            let encoder = branches[0].encoder
            // A file source waits for a free buffer instead of dropping: one to read the next frame into
            // while the encoder holds its own is enough; more would only fill up (reading ahead of the
            // encoder) and commit their memory (102 MB peak at 1080p with 4, 93 MB with 1; same speed).
            let headroom = source.isLive
                ? Self.stallHeadroom(framesPerSecond: source.framesPerSecond,
                                     frameBytes: encoder.inputFormat.packedFrameSize(width: width, height: height))
                : 1
            return encoder.makePool(width: width, height: height,
                                    capacity: encoder.maximumBuffersInFlight + headroom + source.poolBuffersHeld)
        }
        let format = branches[0].encoder.inputFormat
        if let other = branches.first(where: { $0.encoder.inputFormat != format }) {
            throw EncoderError(.unavailable, "\(branches[0].encoder.name) takes \(format) and \(other.encoder.name) \(other.encoder.inputFormat): "
                + "two encodings from one capture need one pixel format")
        }
        let inFlight = branches.reduce(0) { $0 + $1.encoder.maximumBuffersInFlight + branchQueueDepth }
        return PixelBufferPool(format: format, width: width, height: height,
                               capacity: inFlight + Self.minimumSpareBuffers + source.poolBuffersHeld)
    }

    /// Spare pool buffers for a live source beyond those the encoder and the source hold: frames
    /// that wait while the encoder is held up (its cold first frames, another process on the CPU, a slow disk)
    /// instead of being dropped. Two seconds of video within 64 MiB, never fewer than 4. A
    /// buffer's memory is committed when first written, so spares a recording never needs cost
    /// nothing. (In the test VM, 4 spares at 10 fps ran out while camrec itself started up.)
    static func stallHeadroom(framesPerSecond: Double, frameBytes: Int) -> Int {
        guard framesPerSecond.isFinite, framesPerSecond > 0, frameBytes > 0 else { return minimumSpareBuffers }
        let twoSeconds = Int(min(framesPerSecond * 2, 1_000).rounded(.up))
        let withinBudget = (64 << 20) / frameBytes
        return max(minimumSpareBuffers, min(twoSeconds, withinBudget))
    }

    /// Frames each of several encodings may be behind: half a second for a live source, so that a slow
    /// start costs no skip; two for a file, whose reading simply waits (deeper queues only filled up
    /// with frames read ahead, and committed their memory: 305 MB at 1080p for H.264 and H.265).
    private var branchQueueDepth: Int {
        source.isLive ? EncodingBranch.queueDepth(framesPerSecond: source.framesPerSecond) : 2
    }

    /// Spare pool buffers whatever the source: the capture side always has one to fill next.
    static let minimumSpareBuffers = 4

    /// Each branch encodes on a thread of its own from its queue, and flushes at the end.
    private func startBranchThreads(release: SharedFrameRelease) {
        for branch in branches {
            // One encoding waits for its branch (the pool bounds what is ahead); several keep branchQueueDepth each.
            let depth = branches.count == 1 ? Self.minimumSpareBuffers : branchQueueDepth
            let queue = BlockingQueue<(PixelBuffer, Bool)>(capacity: depth)
            branch.queue = queue
            let worker = WorkerThread(name: "encode-\(branch.codec.rawValue)") { [unowned self, unowned branch] in
                while let (buffer, force) = queue.pop() {
                    if branch.encoderFailed {
                        release.release(buffer)
                        continue
                    }
                    do {
                        try branch.encoder.encode(buffer, forceKeyframe: force)
                    } catch {
                        branch.encoderFailed = true
                        self.fail(Self.classify(error))
                    }
                }
                if !branch.encoderFailed {
                    do { try branch.encoder.flush() } catch { self.fail(Self.classify(error)) }
                }
            }
            branch.worker = worker
            worker.start()
        }
    }

    /// Gives a frame to every branch. With several encodings of a live source, one whose queue is full
    /// skips it (and owes an IDR if this was one) so the other never waits. Otherwise the branch is
    /// waited for: a file loses nothing, and one live encoding that falls behind backs up into the
    /// pool's headroom, where the source drops and counts what does not fit.
    private func hand(_ buffer: PixelBuffer, forceKeyframe force: Bool, release: SharedFrameRelease) {
        release.hold(buffer)
        let mayskip = source.isLive && branches.count > 1
        for branch in branches {
            let forceHere = force || branch.owesIDR
            let taken = mayskip ? branch.queue?.tryPush((buffer, forceHere)) : branch.queue?.push((buffer, forceHere))
            if taken == true {
                branch.owesIDR = false
            } else {
                branch.owesIDR = forceHere
                branch.skippedFrames.add(1, ordering: .relaxed)
                release.release(buffer)
            }
        }
    }

    /// What a thrown error means for the recording: which part failed (the exit status follows from it).
    public static func classify(_ error: Error) -> RecordingFailure {
        switch error {
        case let e as CaptureError: return .source(e)
        case let e as EncoderError: return .encoder(e)
        case let e as OutputError: return .output(e)
        case let e as RecordingFailure: return e
        default: return .encoder(EncoderError(.failed, "\(error)"))
        }
    }
}
