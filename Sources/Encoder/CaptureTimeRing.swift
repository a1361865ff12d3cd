import Frames

/// Capture and presentation times by frame sequence, so an encoder's packets carry out the frame's own
/// times (a camera's frames come when they come: their presentation follows their capture times, not
/// a count of frames at the nominal rate, so the sound, stamped from the same clock, stays with them).
/// No B-frames and at most a few frames inside an encoder: a short ring is enough.
struct CaptureTimeRing {
    private var sequences = [UInt64](repeating: .max, count: 64)
    private var captures = [UInt64](repeating: 0, count: 64)
    private var presentations = [UInt64](repeating: 0, count: 64)

    mutating func remember(sequence: UInt64, captureTimeNanoseconds: UInt64, presentationTimeNanoseconds: UInt64) {
        let slot = Int(sequence % UInt64(captures.count))
        sequences[slot] = sequence
        captures[slot] = captureTimeNanoseconds
        presentations[slot] = presentationTimeNanoseconds
    }

    func captureTime(of sequence: UInt64) -> UInt64 {
        captures[Int(sequence % UInt64(captures.count))]
    }

    /// The frame's own presentation time; for a frame it was never told of, frame `sequence` at `rate`.
    func presentationTime(of sequence: UInt64, orAt rate: (numerator: Int32, denominator: Int32)) -> UInt64 {
        let slot = Int(sequence % UInt64(presentations.count))
        return sequences[slot] == sequence ? presentations[slot] : Frames.presentationTime(of: sequence, rate: rate)
    }
}
