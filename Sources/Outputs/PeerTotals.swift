/// What the receivers of one TCP output were sent, summed over every connection it had.
struct PeerTotals {
    var frames = 0
    var bytes = 0
    var idrFrames = 0
    var skipped = 0
    var overflows = 0
    var latency = LatencySamples()

    /// Adds up one connection that ended.
    mutating func add(_ s: PeerSender.Summary) {
        frames += s.frames
        bytes += s.bytes
        idrFrames += s.idrFrames
        skipped += s.skippedFrames
        overflows += s.overflows
        for v in s.latency.values { latency.add(v) }
    }

    func report(label: String) -> OutputReport {
        var report = OutputReport(label: label)
        report.frames = frames
        report.bytes = bytes
        report.idrFrames = idrFrames
        report.skippedFrames = skipped
        return report
    }
}
