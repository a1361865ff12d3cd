import Pipeline

/// How a recording's monotonic capture times (V4L2 buffer stamps, ALSA period stamps, the test
/// sources' schedule: all CLOCK_MONOTONIC) map onto its presentation times, which start at zero with
/// the first frame. Audio is stamped through it, so both tracks come from one clock and never from
/// sample or frame counts alone.
///
/// The recorder sets it at the first frame, and again at the first frame after a camera came back
/// (presentation time runs on across the gap, capture time jumped by the gap).
public final class PresentationTimeline: @unchecked Sendable {
    private let lock = QueueLock()
    /// Capture time minus presentation time, in nanoseconds; nil before the first frame.
    private var offset: Int64?
    private var closed = false

    public init() {}

    /// The frame captured at `capture` is presented at `presentation`.
    public func anchor(capture: UInt64, presentation: UInt64) {
        lock.lock()
        offset = Int64(bitPattern: capture &- presentation)
        lock.broadcast()
        lock.unlock()
    }

    /// The presentation time of something captured at `capture`: nil before the first frame, or when it
    /// came before presentation time zero.
    public func presentation(ofCapture capture: UInt64) -> UInt64? {
        lock.lock()
        defer { lock.unlock() }
        guard let offset else { return nil }
        let time = Int64(bitPattern: capture) &- offset
        return time >= 0 ? UInt64(time) : nil
    }

    /// The capture time presented at `presentation`; nil before the first frame.
    public func capture(ofPresentation presentation: UInt64) -> UInt64? {
        lock.lock()
        defer { lock.unlock() }
        return offset.map { UInt64(bitPattern: Int64(bitPattern: presentation) &+ $0) }
    }

    /// Waits for the first frame: the capture time presented at zero; nil when `close()` came first.
    public func waitForStart() -> UInt64? {
        lock.lock()
        defer { lock.unlock() }
        while offset == nil && !closed { lock.waitNotEmpty() }
        return offset.map { UInt64(bitPattern: $0) }
    }

    /// No frame is coming (the recording ended or never started): `waitForStart` returns.
    public func close() {
        lock.lock()
        closed = true
        lock.broadcast()
        lock.unlock()
    }
}
