import Frames
/// Follows V4L2's 32-bit buffer sequence numbers: counts the frames missing between two
/// buffers (the device dropped them) and extends the count to 64 bits across a wrap.
struct SequenceTracker {
    private var last: UInt32?
    /// The frame's sequence since the first one seen, continuing across 32-bit wraps.
    private(set) var extended: UInt64 = 0
    /// How often the 32-bit number wrapped around to 0.
    private(set) var wraps: UInt64 = 0

    /// Records `sequence` and returns how many frames were skipped before it.
    mutating func record(_ sequence: UInt32) -> UInt64 {
        defer { last = sequence }
        guard let last else { return 0 }
        // Wrapping subtraction: 0xFFFFFFFF → 0 is a step of one, not a jump back.
        let step = sequence &- last
        if step == 0 || step >= 0x8000_0000 {
            // A driver that does not count (always 0), or one that restarted: no gap to report.
            extended += 1
            return 0
        }
        if sequence < last { wraps += 1 }
        extended += UInt64(step)
        return UInt64(step - 1)
    }
}
