import Glibc

/// CLOCK_MONOTONIC in nanoseconds: the clock V4L2 stamps buffers with, so every
/// source and the status line agree on time.
public enum MonotonicClock {
    public static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Sleeps until the given monotonic time; returns at once if it has passed.
    public static func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}  // a deadline, not a poll: a paced frame or sample is due then
    }
}

/// The presentation time of frame `sequence` at `fps`, exact for whole rates (no drift from a
/// truncated frame interval: frame 270 at 30 fps is 9 s, not 8.99999991 s).
public func presentationTime(of sequence: UInt64, fps: Double) -> UInt64 {
    if fps == fps.rounded() { return sequence * 1_000_000_000 / UInt64(fps) }
    return UInt64((Double(sequence) * 1e9 / fps).rounded())
}

/// The presentation time in nanoseconds of frame `sequence` at `rate` (numerator/denominator frames a
/// second), exact (rounded down) and without overflow: the plain `sequence * 1e9 * denominator` passed
/// UInt64's range after a week of frames at 30000/1001.
public func presentationTime(of sequence: UInt64, rate: (numerator: Int32, denominator: Int32)) -> UInt64 {
    let frames = UInt64(rate.numerator), perSecondOfFrames = 1_000_000_000 * UInt64(rate.denominator)
    return sequence / frames * perSecondOfFrames + sequence % frames * perSecondOfFrames / frames
}
