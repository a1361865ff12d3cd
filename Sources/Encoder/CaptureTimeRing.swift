/// Capture times by frame sequence, so an encoder's packets carry them out. No B-frames and at
/// most a few frames inside an encoder: a short ring is enough.
struct CaptureTimeRing {
    private var times = [UInt64](repeating: 0, count: 64)

    mutating func remember(sequence: UInt64, captureTimeNanoseconds: UInt64) {
        times[Int(sequence % UInt64(times.count))] = captureTimeNanoseconds
    }

    func captureTime(of sequence: UInt64) -> UInt64 {
        times[Int(sequence % UInt64(times.count))]
    }
}
