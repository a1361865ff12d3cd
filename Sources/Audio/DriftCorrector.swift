/// Keeps a microphone's samples on the recording's clock.
///
/// A microphone's clock is never exactly its nominal rate, and an overrun loses samples. Counting
/// samples would drift by the difference (0.5% is 18 s an hour); so every block read from the device
/// is placed by its own capture time (ALSA's hardware timestamp), and the corrector says how to bring
/// the output back to it: silence for a gap (an overrun, a late start), dropped samples for input
/// from before the start, and otherwise a gentle stretch or squeeze (the resampler's compensation)
/// that follows the measured rate and takes up the remaining error over a few seconds. A stamp that
/// comes late (a CPU held off) is first set against the blocks before it (`LateStampFilter`).
///
/// Pure arithmetic on sample counts and nanoseconds, so it can be tested against any clock.
public struct DriftCorrector: Sendable {
    public struct Plan: Sendable, Equatable {
        /// Zero samples to put out before this block.
        public var silence = 0
        /// Samples at the start of this block to leave out.
        public var drop = 0
        /// Samples to add (negative: remove) over the next `distance` output samples.
        public var compensation = 0
        public var distance = 0
    }

    public let sampleRate: Int
    /// The capture time of output sample 0.
    public let origin: UInt64
    /// An error larger than this is corrected at once (silence or a drop), not by stretching.
    public let hardLimit: Double
    /// Stretching never changes the rate by more than this fraction (2%: a pitch change no one hears
    /// in speech, and 20 ms of error corrected in a second).
    public let mostStretch = 0.02
    /// The smoothed error, in samples (output behind the input's time is positive).
    public private(set) var error = 0.0
    /// The input's rate against the monotonic clock, as a fraction off nominal (0.005: 0.5% fast).
    public private(set) var measuredDrift = 0.0
    /// Samples of silence put in so far.
    public private(set) var silenced: UInt64 = 0
    private var aligned = false
    /// Where the rate is measured from: a block's device stamp as it came and the samples of that block
    /// up to the stamped one, with the input read since the block began. The stamps themselves, not the
    /// block starts worked out from them at the measured rate: with seconds waiting behind a block (a
    /// reader starved after an overrun) a rate slightly off moved those starts by more than the span it
    /// was measured over, and each measurement threw the next further off (seen: 6700, -12000, 18000 ppm).
    private var anchorStamp: UInt64 = 0
    private var anchorBehind: UInt64 = 0
    private var inputSinceAnchor: UInt64 = 0
    private var stamps: LateStampFilter
    /// The samples' worth of time the rate was last measured over.
    private var measuredOver = 0.0
    /// The rate measured before the last placement afresh (an overrun), and the samples' worth of time
    /// it was measured over: a gap loses samples, not the clock, so it still counts, weighed by its span.
    /// Measured afresh alone, the 3.5 s after an overrun left it up to 570 ppm off.
    private var earlierDrift = 0.0
    private var earlierSpan = 0.0
    /// Blocks whose stamp came more than 5 ms late (the lateness taken off), and the most (ns).
    public var lateBlocks: Int { stamps.lateBlocks }
    public var mostLate: UInt64 { stamps.mostLate }

    public init(sampleRate: Int, origin: UInt64, hardLimitSeconds: Double = 0.02) {
        self.sampleRate = sampleRate
        self.origin = origin
        hardLimit = hardLimitSeconds * Double(sampleRate)
        stamps = LateStampFilter(sampleRate: sampleRate)
    }

    /// Plans one block of `frames` input samples whose first was captured at `captureTime`, when the
    /// output (what has been put out, and what the resampler holds) stands at `outputPosition`.
    /// `afterGap`: samples were lost just before it (an overrun), so it is placed exactly.
    public mutating func plan(captureTime: UInt64, frames: Int, outputPosition: Double, afterGap: Bool = false) -> Plan {
        plan(stamp: captureTime, behind: 0, frames: frames, outputPosition: outputPosition, afterGap: afterGap)
    }

    /// The same for a block whose first sample was `behind` samples before the device's `stamp`; they
    /// are timed at the rate measured so far.
    public mutating func plan(stamp: UInt64, behind: UInt64, frames: Int, outputPosition: Double, afterGap: Bool = false) -> Plan {
        // The rate as the clock's time for samples: within 10% (none is further off; a device's nonsense
        // must not turn a backlog into hours).
        let rate = max(-0.1, min(0.1, measuredDrift))
        let before = UInt64(min(Double(behind) * 1e9 / (Double(sampleRate) * (1 + rate)), Double(stamp)).rounded())
        // After a gap the count of samples no longer says how long they took.
        if !aligned || afterGap { stamps.restart() }
        // The count says the time only as well as the rate is known: unmeasured, to the clock's error
        // (0.5% is 5 ms a second), and measured over T, to about the stamps' jitter over T. So the window
        // is a tenth of T, from a tenth of a second to a second.
        let stamped = stamp > before ? stamp - before : 0
        let window = Int(min(Double(sampleRate), max(Double(sampleRate) / 10, measuredOver / 10)))
        let captureTime = stamps.filter(captureTime: stamped, frames: frames, drift: rate, window: window)
        let wanted = (Double(captureTime) - Double(origin)) * Double(sampleRate) / 1e9
        let raw = wanted - outputPosition
        var plan = Plan()
        if !aligned || afterGap || abs(raw) > hardLimit {
            // Placed exactly: the first block, after a gap, or an error no stretch should take up.
            if raw > 0 {
                plan.silence = Int(raw.rounded())
                silenced += UInt64(plan.silence)
            } else if raw < 0 {
                plan.drop = min(frames, Int((-raw).rounded()))
            }
            error = raw - Double(plan.silence) + Double(plan.drop)
            // Placed once some of it is kept: a block wholly before the start is no placement.
            aligned = plan.drop < frames
            // The count is measured afresh from here (a gap says nothing about the clock), and what was
            // measured before is kept to be weighed with it.
            earlierDrift = measuredDrift
            earlierSpan = measuredOver
            anchorStamp = stamp
            anchorBehind = behind
            inputSinceAnchor = UInt64(frames)
            return withCompensation(plan)
        }
        error += 0.1 * (raw - error)
        // The samples from the anchor's stamped one to this block's.
        let samples = Double(inputSinceAnchor) + Double(behind) - Double(anchorBehind)
        // The anchor's own stamp may have come late (the first read after a start or an overrun, when the
        // CPU is busiest; 15 ms is 500 ppm over 30 s): the reads of the fifth of a second after it say
        // when it was, to the rate's error over that fifth (1% off: 2 ms).
        if inputSinceAnchor <= UInt64(sampleRate / 5) {
            let implied = Double(stamp) - samples * 1e9 / (Double(sampleRate) * (1 + rate))
            if implied < Double(anchorStamp) { anchorStamp = UInt64(max(implied, 0)) }
        }
        let elapsed = (Double(stamp) - Double(anchorStamp)) * Double(sampleRate) / 1e9
        // After a second the count of samples against the clock tells the rate (a millisecond of
        // timestamp jitter is 0.1% of it, and less as it goes on); before, the error term alone steers.
        // The stamps as they came, both ends alike (the earliest in a window is early by the jitter),
        // but for one noticeably late: the rate stays as it was measured before it.
        if elapsed >= Double(sampleRate), stamped - captureTime <= LateStampFilter.noticeable {
            measuredOver = earlierSpan + elapsed
            measuredDrift = (earlierDrift * earlierSpan + (samples - elapsed)) / measuredOver
        }
        inputSinceAnchor += UInt64(frames)
        return withCompensation(plan)
    }

    private func withCompensation(_ plan: Plan) -> Plan {
        var plan = plan
        let distance = sampleRate
        // Follow the rate (a fast microphone gives more samples than the output may hold), and take up
        // the remaining error over the next second; re-planned with every block.
        let wanted = -measuredDrift * Double(distance) + error
        let most = mostStretch * Double(distance)
        plan.compensation = Int(max(-most, min(most, wanted)).rounded())
        plan.distance = distance
        return plan
    }
}
