import Encoder
import Frames
import SystemSupport

/// What camrec says when a live source drops frames because the encoder is behind it (the pool had no
/// free buffer): how many so far, the encoder's work, and what would let it keep up. camrec advises and
/// does not add libx264 threads by itself: frame threads put a frame of delay on every picture (the
/// default's point is none), the last frames before a reopen would be lost or delayed, and on a busy
/// machine more threads take the CPU from the rest of the pipeline (docs/PERFORMANCE.md, "Where one
/// libx264 thread stops keeping up").
struct EncoderBehindWarning {
    var encoder: String
    /// libx264 with one thread and one slice: the case where `--threads 2` is the advice.
    var oneX264Thread: Bool
    var threads: Int
    /// The software encoder's preset; nil for VA-API, whose speed is the GPU's.
    var preset: String?
    var size: FrameSize
    var framesPerSecond: Double

    func line(droppedSoFar dropped: UInt64) -> String {
        let threadCount = threads == 0 ? "the library's own thread count" : threads == 1 ? "1 thread" : "\(threads) threads"
        let software = preset.map { ", \(threadCount), preset \($0)" } ?? ""
        let work = "\(encoder)\(software), \(size) at \(framesPerSecond.decimalText(places: framesPerSecond.rounded() == framesPerSecond ? 0 : 2)) fps"
        let advice = oneX264Thread
            ? "--threads 2 (a frame of delay more), a faster --preset or a smaller --size would keep up"
            : preset == nil ? "a smaller --size or a lower --fps would keep up"
            : "a faster --preset, a smaller --size or a lower --fps would keep up"
        return "camrec: warning: the encoder is not keeping up with the camera: \(dropped) frame\(dropped == 1 ? "" : "s") dropped so far "
            + "(\(work)); \(advice)"
    }
}
