import Hub
import Bitstream
import Capture
import Frames
import Encoder
import Glibc
import Logging
import Outputs
import Threading
import Synchronization

/// Runs one recording: source → pool buffer → encoder → stream writer → hub.
///
/// The source runs on its own capture thread and only waits for the pool (a live
/// source drops instead); the encoder and stream writer run on the calling
/// thread (or one thread per encoder with several). It publishes each access unit
/// into its branch's hub and knows no output: they subscribe there (`OutputSet`). A
/// stop from any thread (signal, failed output) ends capture, and everything captured
/// so far is encoded, flushed and published before `run()` closes the hubs and returns.
public final class Recorder: Sendable {
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
    /// What the rest of camrec hears of the recording, and lends it: given to `run`, before any of its
    /// threads exist, and read by each as its own copy (no lock per frame).
    public struct Hooks: Sendable {
        /// Called on the encoder thread for every access unit; must be quick.
        public var onFrameTimed: (@Sendable (FrameTiming) -> Void)?
        /// Called on the recording thread with each frame before it is encoded (motion detection reads
        /// its luma here, with no copy); it must be quick and must not keep the buffer.
        public var onFrameBeforeEncoding: (@Sendable (PixelBuffer) -> Void)?
        /// `/stream.mjpg`'s pictures: an MJPEG camera's own JPEGs, or one JPEG encode (`PictureTap`) of each
        /// frame a viewer is due for. Closed when the recording ends.
        public var pictures: JPEGFeed?
        /// With `--on-camera-lost wait`: where a lost camera is waited for. nil ends the recording at a loss.
        public var sourceReturn: SourceReturn?
        /// Called on the capture thread after a loss, once every frame captured before it is encoded and
        /// published (files may end there), before waiting for the camera.
        public var onSourceLost: (@Sendable (SourceEnd) -> Void)?
        /// Called on the capture thread when the camera is back and streaming, with the seconds it was away.
        public var onSourceReturned: (@Sendable (FrameSource, Double) -> Void)?
        /// Called on the recording thread once every frame is encoded and published, before the hubs close,
        /// with the presentation time the video ends at (the last frame's plus one frame): the sound is
        /// finished up to there, so both tracks end together.
        public var onVideoEnded: (@Sendable (_ endPresentationNanoseconds: UInt64?) -> Void)?
        /// Called on the capture thread when no frame will come past a presentation time, before the
        /// encoders have put out what they hold (a slow encoder's backlog and flush can take seconds): once
        /// the last frame has been captured, and at a camera loss (until `onCaptureResumed`). Sound beyond
        /// it has no picture to go with.
        public var onCaptureEnded: (@Sendable (_ endPresentationNanoseconds: UInt64) -> Void)?
        /// Called on the capture thread with the first frame after a camera came back, before it is
        /// encoded: frames come again from its presentation time on.
        public var onCaptureResumed: (@Sendable (_ presentationNanoseconds: UInt64) -> Void)?
        /// Called on the capture thread when a live source dropped frames because no pool buffer was free,
        /// that is the encoder is behind the camera, with how many so far: when it first happens, then at
        /// most once every `EncoderBehindNotice.interval` while it goes on.
        public var onEncoderBehind: (@Sendable (_ droppedSoFar: UInt64) -> Void)?

        public init() {}
    }
    /// When recent frames went into the encoder, by sequence number modulo its size.
    let encodeStarts = Mutex([(sequence: UInt64, nanoseconds: UInt64)](repeating: (.max, 0), count: 64))

    /// The source frames come from now: another one after a camera came back (`sourceReturn`).
    let currentSource: Mutex<FrameSource>
    var source: FrameSource { currentSource.withLock { $0 } }
    /// Counters of the sources before the current one.
    let earlierStatistics = Mutex(SourceStatistics())
    /// Capture times to presentation times, anchored at the first frame (and the first after a camera
    /// came back): how the recording's sound is stamped on the video's clock.
    public let timeline = PresentationTimeline()
    /// One encoding, or one per codec; the first is the one `progress` and the result count. Held here
    /// only until `run()` takes them: from then on they are the recording's threads' (`EncodingBranch`).
    let unstartedBranches: Mutex<[EncodingBranch]?>
    let branchCount: Int
    private let keyframeInterval: Int
    private let limits: Limits
    let logger: Logger
    let chunkPool = StreamChunkPool()
    let shared = Mutex(Shared())
    struct Shared {
        var failure: RecordingFailure?
        var progress = Progress()
        var stopRequested = false
        var keyframeRequested = false
        /// A stop came while waiting for a lost camera: the loss does not end the recording with a failure.
        var stoppedWhileWaiting = false
        /// The run's `Hooks.sourceReturn`, for a stop to cancel its wait.
        var sourceReturn: SourceReturn?
    }

    /// Several encodings of one capture: every branch gets every frame (or skips it when it is behind).
    public init(source: FrameSource, branches: sending [EncodingBranch], keyframeInterval: Int, limits: Limits, logger: Logger) {
        precondition(!branches.isEmpty, "at least one encoder")
        currentSource = Mutex(source)
        branchCount = branches.count
        unstartedBranches = Mutex(branches)
        self.keyframeInterval = max(1, keyframeInterval)
        self.limits = limits
        self.logger = logger
    }

    /// One encoding into `hub`; connects the hub's keyframe gate to this recorder.
    public convenience init(source: FrameSource, encoder: sending VideoEncoder, hub: StreamHub, keyframeInterval: Int,
                            limits: Limits, slicesPerPicture: Int = 1, codec: VideoCodec = .h264, logger: Logger) {
        self.init(source: source, branches: [EncodingBranch(encoder: encoder, hub: hub, codec: codec, slicesPerPicture: slicesPerPicture)],
                  keyframeInterval: keyframeInterval, limits: limits, logger: logger)
        hub.keyframes.connect { [weak self] in self?.requestKeyframe() }
    }

    public var progress: Progress {
        var p = shared.withLock { $0.progress }
        let statistics = sourceStatistics
        p.dropped = statistics.dropped
        p.errored = statistics.errored
        return p
    }

    /// Ends the recording cleanly; safe from any thread, any number of times.
    public func stop() {
        let (first, sourceReturn) = shared.withLock { s -> (Bool, SourceReturn?) in
            defer { s.stopRequested = true }
            return (!s.stopRequested, s.sourceReturn)
        }
        if first {
            source.stop()
            sourceReturn?.cancel()
        }
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

    func fail(_ failure: RecordingFailure) {
        shared.withLock { if $0.failure == nil { $0.failure = failure } }
        stop()
    }

    /// Runs the recording to its end; once.
    public func run(hooks: Hooks = Hooks()) -> RecordingResult {
        guard let branches = unstartedBranches.withLock({ $0.take() }) else { preconditionFailure("a Recorder runs once") }
        var result = RecordingResult()
        // A stop from now on cancels a wait for the camera; one before it finds none to cancel.
        shared.withLock { $0.sourceReturn = hooks.sourceReturn }
        // However it ends, the hubs close: every subscriber takes what it holds, then sees the end.
        defer {
            timeline.close()
            for branch in branches { branch.hub.close() }
        }
        let pool: PixelBufferPool
        do {
            for branch in branches {
                try branch.encoder.start()
                // SPS/PPS the encoder gave out of band (VA-API drivers that write none in the stream).
                if let sets = branch.encoder.parameterSets { branch.writer.rememberParameterSets(fromAnnexB: sets) }
            }
            // One more for the frame the JPEG tap may be encoding (an MJPEG camera's own JPEGs need none).
            pool = try makePool(for: branches, tapped: hooks.pictures != nil)
            try source.start(pool: pool)
            // A signal may have asked to stop before the source existed: stop it now.
            if shared.withLock({ $0.stopRequested }) { source.stop() }
            logger.info("capture: \(source.summary)")
        } catch {
            result.failure = Self.classify(error)
            return result
        }
        defer { hooks.pictures?.close() }
        // An MJPEG camera hands on its own JPEGs; any other source's frames are encoded here for viewers.
        var tap: PictureTap?
        if let pictures = hooks.pictures {
            if let camera = source as? V4L2CaptureSource, camera.pixelFormat.isJPEG {
                camera.jpegSink = pictures
            } else if let camera = source as? V4L2CaptureSource, camera.deliversCompressedVideo {
                // A camera's own H.264/H.265: no pixels to make JPEGs of (/stream.mjpg stays empty).
                logger.notice("/stream.mjpg has no pictures: the camera sends \(camera.pixelFormat), not pixels")
            } else {
                do {
                    tap = try PictureTap(feed: pictures, frameSize: source.frameSize, logger: logger)
                } catch {
                    logger.warning("/stream.mjpg has no pictures: \(error)")
                }
            }
        }
        // Each branch encodes on a thread of its own from a short queue; one encoder is the one-branch case.
        let release = SharedFrameRelease(pool: pool, branchCount: branches.count, tapped: tap != nil)
        tap?.start(release: release)
        for branch in branches {
            branch.encoder.onBufferDone = { buffer in release.release(buffer) }
            let primary = branch === branches[0]
            branch.encoder.onPacket = { [unowned self, unowned branch] packet in
                self.publish(packet, from: branch, primary: primary, onFrameTimed: hooks.onFrameTimed)
            }
        }
        startBranchThreads(branches, release: release)

        let frames = BlockingQueue<CaptureItem>(capacity: pool.capacity)
        let hubs = branches.map(\.hub)
        let capture = WorkerThread(name: "capture") { [unowned self] in
            self.captureLoop(into: frames, pool: pool, hooks: hooks, hubs: hubs)
        }
        capture.start()

        var sinceKeyframe = 0
        let passthrough = branches.contains { $0.encoder.isPassthrough }
        while let item = frames.pop() {
            let buffer: PixelBuffer
            switch item {
            case .frame(let frame):
                buffer = frame
            case .sourceGap(let done):
                // Everything before the gap is encoded and put out; the first frame after it is an IDR.
                sinceKeyframe = 0
                for branch in branches {
                    if let queue = branch.queue { _ = queue.push(.sourceGap(done)) } else { finishPending(branch, then: done) }
                }
                continue
            }
            let requested = shared.withLock { s -> Bool in
                defer { s.keyframeRequested = false }
                return s.keyframeRequested
            }
            // A camera that encodes keeps its own IDR period; it is only asked for one at the start and on request.
            let force = sinceKeyframe == 0 || (!passthrough && sinceKeyframe >= keyframeInterval) || requested
            if force {
                sinceKeyframe = 0
                // Before the encoders see it: a subscriber joining from now on knows this IDR is coming. Not
                // for a camera: whether and when its IDR comes is the camera's.
                if !passthrough { for branch in branches { branch.hub.keyframes.noteForced(sequence: buffer.sequence) } }
            }
            sinceKeyframe += 1
            if hooks.onFrameTimed != nil {
                let entry = (buffer.sequence, MonotonicClock.now())
                encodeStarts.withLock { $0[Int(entry.0 % 64)] = entry }
            }
            hooks.onFrameBeforeEncoding?(buffer)
            hand(buffer, to: branches, forceKeyframe: force, release: release, tap: tap)
        }
        capture.join()
        for branch in branches { branch.queue?.close() }
        for branch in branches { branch.worker?.join() }
        for branch in branches where branch.queue == nil && !branch.encoderFailed {
            do { try branch.encoder.flush() } catch { fail(Self.classify(error)) }
        }
        for branch in branches { if let line = branch.encoder.closingSummary { logger.info("\(line)") } }
        tap?.finish()
        pool.close()

        let progress = shared.withLock { $0.progress }
        result.framesEncoded = progress.frames
        result.bytes = progress.bytes
        result.idrFrames = branches[0].idrCount
        result.repairedAccessUnits = branches.reduce(0) { $0 + $1.repairedCount }
        for branch in branches where branch.skippedFrames > 0 {
            logger.notice("\(branch.encoder.name) skipped \(branch.skippedFrames) frames to keep up with the capture")
        }
        result.source = sourceStatistics
        logger.info("capture counters: \(result.source.fields)")
        result.durationSeconds = branches[0].firstPresentation.map { first in
            Double(progress.lastPresentationNanoseconds - first) / 1e9 + 1 / source.framesPerSecond
        } ?? 0
        let fps = source.framesPerSecond
        hooks.onVideoEnded?(branches[0].firstPresentation == nil ? nil
                      : progress.lastPresentationNanoseconds + Self.frameInterval(fps))
        switch shared.withLock({ $0.stoppedWhileWaiting }) ? nil : source.end {
        case .deviceLost(let m): fail(.deviceLost(m))
        case .stalled(let m): fail(.deviceStalled(m))
        case .finished, nil: break
        }
        result.failure = shared.withLock { $0.failure }
        return result
    }


    private func captureLoop(into frames: BlockingQueue<CaptureItem>, pool: PixelBufferPool, hooks: Hooks, hubs: [StreamHub]) {
        defer { frames.close() }
        var delivered = 0
        let durationLimit = limits.durationSeconds.map { UInt64($0 * 1e9) }
        var firstTime: UInt64?
        var source = self.source
        var continuity = SourceContinuity()
        var anchorPending = true
        var framesToLog = 0
        var behind = EncoderBehindNotice()
        var lastPushed: UInt64?
        var endTold = false
        var resumed = false
        while true {
            if let max = limits.frames, delivered >= max { break }
            let buffer: PixelBuffer?
            do {
                buffer = try source.nextFrame()
            } catch {
                fail(Self.classify(error))
                break
            }
            guard let buffer else {
                if let lastPushed, hooks.sourceReturn != nil {
                    hooks.onCaptureEnded?(lastPushed &+ Self.frameInterval(source.framesPerSecond))
                    endTold = true
                }
                guard let next = awaitReturn(after: source, frames: frames, pool: pool, hooks: hooks) else { break }
                resumed = lastPushed != nil
                source = next
                continuity.sourceChanged()
                anchorPending = true
                continue
            }
            continuity.carryOn(buffer)
            if let onEncoderBehind = hooks.onEncoderBehind, case let dropped = sourceStatistics.poolEmpty,
               behind.isDue(poolEmpty: dropped, now: MonotonicClock.now()) {
                onEncoderBehind(dropped)
            }
            if anchorPending {
                anchorPending = false
                timeline.anchor(capture: buffer.captureTimeNanoseconds, presentation: buffer.presentationTimeNanoseconds)
                if resumed { hooks.onCaptureResumed?(buffer.presentationTimeNanoseconds) }
                resumed = false
                framesToLog = 2
            }
            if framesToLog > 0 {
                // For a check against another clock (a player's log of when it played a click): the
                // anchor and the frame after it (a container may show its first frame from zero).
                framesToLog -= 1
                logger.debug("timeline: frame \(buffer.sequence) captured at monotonic \(buffer.captureTimeNanoseconds) ns is presented at \(buffer.presentationTimeNanoseconds) ns")
            }
            let start = firstTime ?? buffer.presentationTimeNanoseconds
            firstTime = start
            if let durationLimit, buffer.presentationTimeNanoseconds - start >= durationLimit {
                buffer.recycle()
                break
            }
            delivered += 1
            lastPushed = buffer.presentationTimeNanoseconds
            endTold = false
            let captured = StreamHub.PublishedFrame(sequence: buffer.sequence, presentationTimeNanoseconds: buffer.presentationTimeNanoseconds)
            for hub in hubs { hub.noteCaptured(captured) }
            frames.push(.frame(buffer))
        }
        // Told here, not once the encoders have caught up: behind a starved CPU they held 22 s of frames
        // (a pool's stall headroom), and the sound captured meanwhile went on into the file past its picture.
        if let lastPushed, !endTold { hooks.onCaptureEnded?(lastPushed &+ Self.frameInterval(source.framesPerSecond)) }
        source.stop()
    }

    /// One frame's time in nanoseconds at `fps`; 0 when unknown. (A V4L2 rate is at least 1/4294967295 fps: it fits.)
    static func frameInterval(_ fps: Double) -> UInt64 {
        fps > 0 && fps.isFinite ? UInt64(1e9 / fps) : 0
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

/// When to say that frames are being dropped because the encoder is behind a live source: at the first
/// such drop, then at most once an interval while more follow (a log line per frame would flood it).
struct EncoderBehindNotice {
    static let interval: UInt64 = 10_000_000_000
    private var reported: UInt64 = 0
    private var lastNanoseconds: UInt64?

    /// `now` is read only when frames were dropped since the last line: capture asks every frame.
    mutating func isDue(poolEmpty: UInt64, now: @autoclosure () -> UInt64) -> Bool {
        guard poolEmpty > reported else { return false }
        let time = now()
        if let last = lastNanoseconds, time &- last < Self.interval { return false }
        reported = poolEmpty
        lastNanoseconds = time
        return true
    }
}
