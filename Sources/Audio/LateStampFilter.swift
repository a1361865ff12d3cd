/// Takes the lateness out of a microphone's capture times.
///
/// A block's timestamp is taken when the kernel gets to the device, so it can come late, never early:
/// a CPU held off (a busy host under a VM, interrupts masked) stamps the blocks it then catches up on
/// tens of milliseconds after their samples came in. Taken as truth, one such stamp puts silence into
/// the sound and takes the stretch seconds to win back (seen in a loaded VM: +18 ms, 5 s to recover,
/// and the measured rate 1000 ppm off). So each stamp is set against the input's own count: the
/// samples read since the filter started, at the measured rate, say when the block began. The
/// earliest of those in a window of the last second of input (less while the rate is not yet well
/// measured: 0.5% off is 5 ms a second) is the truth, and a block's lateness beyond it is taken off.
/// A stamp that is early against that (input from before a restart, a clock stepped back) moves it at
/// once; one that is late only counts once the whole window agrees with it.
///
/// Fixed storage, so planning a block allocates nothing.
struct LateStampFilter: Sendable {
    /// How many blocks the window holds at most (a second of 10 ms periods, read one or two at a time).
    static let capacity = 128
    let sampleRate: Int
    /// The blocks' stamps and the samples read before each, a ring: `count` of them ending at `newest`.
    private var stamps = InlineArray<128, UInt64>(repeating: 0)
    private var inputs = InlineArray<128, UInt64>(repeating: 0)
    private var newest = -1
    private var count = 0
    private var input: UInt64 = 0
    /// Blocks stamped more than `noticeable` late, and the most any was (ns), for the closing report.
    private(set) var lateBlocks = 0
    private(set) var mostLate: UInt64 = 0
    static let noticeable: UInt64 = 5_000_000

    init(sampleRate: Int) {
        self.sampleRate = sampleRate
    }

    /// Starts afresh with the next block (the first, or the first after an overrun lost samples: the
    /// count no longer says how long the input took).
    mutating func restart() {
        count = 0
        newest = -1
        input = 0
    }

    /// The block's capture time with its lateness taken off; `drift` is the input's measured rate off
    /// nominal (0.005: 0.5% fast), so the count of samples says how long they took; `window`: how many
    /// samples of input back the blocks it is set against began.
    mutating func filter(captureTime: UInt64, frames: Int, drift: Double, window: Int) -> UInt64 {
        let nanosecondsPerSample = 1e9 / (Double(sampleRate) * (1 + drift))
        var lateness = 0.0
        var index = newest
        for _ in 0..<count {
            // Against each block in the window, this stamp is late by what it exceeds the earlier one's
            // by, less what the samples between took.
            guard input - inputs[index] <= UInt64(max(window, 0)) else { break }
            let apart = Double(Int64(bitPattern: captureTime &- stamps[index]))
            lateness = max(lateness, apart - Double(input - inputs[index]) * nanosecondsPerSample)
            index = (index + Self.capacity - 1) % Self.capacity
        }
        newest = (newest + 1) % Self.capacity
        stamps[newest] = captureTime
        inputs[newest] = input
        count = min(count + 1, Self.capacity)
        input += UInt64(frames)
        let late = UInt64(lateness.rounded())
        if late > Self.noticeable { lateBlocks += 1 }
        mostLate = max(mostLate, late)
        return captureTime > late ? captureTime - late : 0
    }
}
