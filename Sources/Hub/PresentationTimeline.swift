import Threading

/// How a recording's monotonic capture times (V4L2 buffer stamps, ALSA period stamps, the test
/// sources' schedule: all CLOCK_MONOTONIC) map onto its presentation times, which start at zero with
/// the first frame. Audio is stamped through it, so both tracks come from one clock and never from
/// sample or frame counts alone.
///
/// The recorder sets it at the first frame, and again at the first frame after a camera came back
/// (presentation time runs on across the gap, capture time jumped by the gap).
public final class PresentationTimeline: Sendable {
    private struct State {
        /// Capture time minus presentation time, in nanoseconds; nil before the first frame.
        var offset: Int64?
        var closed = false
    }
    private let state = Monitor(State())

    public init() {}

    /// The frame captured at `capture` is presented at `presentation`.
    public func anchor(capture: UInt64, presentation: UInt64) {
        state.change { $0.offset = Int64(bitPattern: capture &- presentation) }
    }

    /// The presentation time of something captured at `capture`: nil before the first frame, or when it
    /// came before presentation time zero.
    public func presentation(ofCapture capture: UInt64) -> UInt64? {
        guard let offset = state.withLock({ $0.offset }) else { return nil }
        let time = Int64(bitPattern: capture) &- offset
        return time >= 0 ? UInt64(time) : nil
    }

    /// The capture time presented at `presentation`; nil before the first frame.
    public func capture(ofPresentation presentation: UInt64) -> UInt64? {
        state.withLock { $0.offset }.map { UInt64(bitPattern: Int64(bitPattern: presentation) &+ $0) }
    }

    /// Waits for the first frame: the capture time presented at zero; nil when `close()` came first.
    public func waitForStart() -> UInt64? {
        state.wait(until: { $0.offset != nil || $0.closed }) { $0.offset.map { UInt64(bitPattern: $0) } }
    }

    /// No frame is coming (the recording ended or never started): `waitForStart` returns.
    public func close() {
        state.change { $0.closed = true }
    }
}
