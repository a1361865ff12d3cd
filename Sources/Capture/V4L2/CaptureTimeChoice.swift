/// Which time a frame was captured at: the driver's timestamp, or the time camrec dequeued it.
///
/// A driver that stamps with CLOCK_MONOTONIC and says so (`V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC`: uvcvideo,
/// vivid) has its stamp taken, frame by frame. Some stamp with CLOCK_MONOTONIC but leave the stamp's type
/// UNKNOWN (v4l2loopback 0.12.7 stamps a written picture with `ktime_get_ts64`): the dequeue time would
/// stand in for theirs and move with the load on the machine (a frame dequeued tens of milliseconds late
/// is placed that late against the sound). So an UNKNOWN stamp is taken when the stream's first is
/// plausible as CLOCK_MONOTONIC: not after the dequeue, and at most `plausibleAge` before it. That choice
/// holds for the whole stream, so one stream never mixes two clocks; a stamp of another clock (a writer's
/// own, from zero or from the epoch), a copied one, or none, leaves the dequeue time.
struct CaptureTimeChoice {
    enum Clock: Equatable { case driver, dequeue }

    /// Decided at the first UNKNOWN-type stamp; nil before it.
    private(set) var unknownStamps: Clock?

    /// Older than this at its dequeue, a stamp is not taken for a capture time: a camera hands over a
    /// frame within a few frame intervals, and v4l2loopback's oldest buffer is at most its ring's worth.
    static let plausibleAge: UInt64 = 1_000_000_000

    /// The capture time of a frame whose buffer carried `stamp` (nanoseconds, 0 for none) with `flags`,
    /// dequeued at `now` (CLOCK_MONOTONIC).
    mutating func captureTime(stamp: UInt64, flags: V4L2BufferFlags, dequeuedAt now: UInt64) -> UInt64 {
        if flags.hasMonotonicTimestamp { return stamp != 0 ? stamp : now }
        guard flags.hasUnknownTimestampType else { return now }
        let clock = unknownStamps ?? (stamp != 0 && stamp <= now && now - stamp <= Self.plausibleAge ? .driver : .dequeue)
        unknownStamps = clock
        // Once chosen, a stamp later than its dequeue is still no capture time (the frame came by then),
        // and a frame left unstamped takes its dequeue time, of the same clock.
        return clock == .driver && stamp != 0 ? min(stamp, now) : now
    }
}
