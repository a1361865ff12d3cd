import Capture
import Frames
import Threading

/// What the capture thread hands the encoding loop.
enum CaptureItem {
    case frame(PixelBuffer)
    /// The camera went away: every branch puts out what its encoder holds, then says so on the queue.
    case sourceGap(BlockingQueue<Bool>)
}

/// What the encoding loop hands a branch's encoder thread.
enum BranchWork {
    case frame(PixelBuffer, forceKeyframe: Bool)
    case sourceGap(BlockingQueue<Bool>)
}

/// Keeps sequence numbers and presentation times running on across a camera that came back (a new
/// source counts both from zero again): the first frame after the gap follows the last one before
/// it, later by as long as the camera was away, so outputs see one stream with a pause in it.
struct SourceContinuity {
    private var last: (sequence: UInt64, presentation: UInt64, capture: UInt64)?
    private var rebasePending = false
    private var base: (sequence: UInt64, presentation: UInt64, newSequence: UInt64, newPresentation: UInt64)?

    mutating func sourceChanged() { rebasePending = true }

    mutating func carryOn(_ buffer: PixelBuffer) {
        if rebasePending, let last {
            rebasePending = false
            let away = buffer.captureTimeNanoseconds > last.capture ? buffer.captureTimeNanoseconds - last.capture : 1_000_000
            base = (last.sequence &+ 1, last.presentation &+ away, buffer.sequence, buffer.presentationTimeNanoseconds)
        }
        if let base {
            buffer.sequence = base.sequence &+ (buffer.sequence &- base.newSequence)
            buffer.presentationTimeNanoseconds = base.presentation &+ (buffer.presentationTimeNanoseconds &- base.newPresentation)
        }
        last = (buffer.sequence, buffer.presentationTimeNanoseconds, buffer.captureTimeNanoseconds)
    }
}

extension Recorder {
    /// The counters of every source this recording has read, the current one included.
    public var sourceStatistics: SourceStatistics {
        let earlier = earlierStatistics.withLock { $0 }
        return earlier.adding(source.statistics)
    }

    /// Runs on a branch's encoder thread at a gap: its encoder puts out every frame it holds.
    func finishPending(_ branch: EncodingBranch, then done: BlockingQueue<Bool>) {
        if !branch.encoderFailed {
            do {
                try branch.encoder.finishPending()
            } catch {
                branch.encoderFailed = true
                fail(Self.classify(error))
            }
        }
        _ = done.push(true)
    }

    /// After `lost` stopped delivering: nil ends the recording (a stop, an end of file, no
    /// `Hooks.sourceReturn`, or the camera not back in time); otherwise the camera that came back, streaming
    /// into the same pool. Before waiting, everything captured is encoded and published, and
    /// `Hooks.onSourceLost` lets the outputs end their files there.
    func awaitReturn(after lost: FrameSource, frames: BlockingQueue<CaptureItem>, pool: PixelBufferPool,
                     hooks: Hooks) -> FrameSource? {
        guard let sourceReturn = hooks.sourceReturn, let end = lost.end, end != .finished else { return nil }
        // A stop that came with the loss (SIGINT as the camera went) ends the recording as asked, not as lost.
        if shared.withLock({ s -> Bool in if s.stopRequested { s.stoppedWhileWaiting = true }; return s.stopRequested }) {
            return nil
        }
        let done = BlockingQueue<Bool>(capacity: branchCount)
        _ = frames.push(.sourceGap(done))
        for _ in 0..<branchCount { _ = done.pop() }
        hooks.onSourceLost?(end)
        let lostAt = MonotonicClock.now()
        while true {
            switch sourceReturn.waitForReturn(of: lost) {
            case .cancelled:
                shared.withLock { $0.stoppedWhileWaiting = true }
                return nil
            case .timedOut(let seconds):
                let what = switch end {
                case .deviceLost(let m), .stalled(let m): m
                case .finished: "the camera ended"
                }
                fail(.deviceLost("\(what), and it did not come back within \(formatSeconds(seconds)) s"))
                shared.withLock { $0.stoppedWhileWaiting = true }
                return nil
            case .returned(let next):
                guard next.poolBuffersHeld <= lost.poolBuffersHeld else {
                    logger.warning("the camera came back wanting \(next.poolBuffersHeld) buffers, not \(lost.poolBuffersHeld): waiting for it again")
                    next.stop()
                    continue
                }
                // The camera's own JPEGs go on to the same viewers.
                if let camera = next as? V4L2CaptureSource, let before = lost as? V4L2CaptureSource {
                    camera.jpegSink = before.jpegSink
                }
                do {
                    try next.start(pool: pool)
                } catch {
                    logger.warning("the camera came back but would not start streaming (\(error)): waiting for it again")
                    next.stop()
                    continue
                }
                let previous = lost.statistics
                earlierStatistics.withLock { $0 = $0.adding(previous) }
                currentSource.withLock { $0 = next }
                // A stop that came while it was starting: the loop sees it at the next frame.
                if shared.withLock({ $0.stopRequested }) { next.stop() }
                hooks.onSourceReturned?(next, Double(MonotonicClock.now() - lostAt) / 1e9)
                return next
            }
        }
    }

    private func formatSeconds(_ seconds: Double) -> String {
        seconds.isFinite ? String(Int(seconds.rounded())) : "?"
    }
}

extension SourceStatistics {
    /// Both sources' counters together.
    func adding(_ other: SourceStatistics) -> SourceStatistics {
        var sum = self
        sum.delivered += other.delivered
        sum.dropped += other.dropped
        sum.errored += other.errored
        sum.bytesWrittenByCPU += other.bytesWrittenByCPU
        sum.requeuedAfterRefusal += other.requeuedAfterRefusal
        sum.sequenceWraps += other.sequenceWraps
        sum.skippedByDevice += other.skippedByDevice
        sum.poolEmpty += other.poolEmpty
        return sum
    }
}
