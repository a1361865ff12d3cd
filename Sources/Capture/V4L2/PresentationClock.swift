import Frames
/// Turns device capture timestamps into presentation times starting at zero.
///
/// Presentation time is the capture time minus the first capture time, accumulated
/// frame by frame so that a clock that jumps (vivid's `wrap_timestamp`, a driver
/// restarting its counter) cannot make time run backwards or leap: a step that is
/// not forward, or longer than ten seconds, counts as one nominal frame interval.
struct PresentationClock {
    let nominalInterval: UInt64
    private var lastCapture: UInt64?
    private var lastPresentation: UInt64 = 0

    static let longestPlausibleStep: UInt64 = 10_000_000_000

    init(nominalInterval: UInt64) {
        self.nominalInterval = max(1, nominalInterval)
    }

    mutating func presentationTime(capturedAt time: UInt64) -> UInt64 {
        defer { lastCapture = time }
        guard let lastCapture else { return 0 }
        let step = time > lastCapture && time - lastCapture <= Self.longestPlausibleStep
            ? time - lastCapture : nominalInterval
        lastPresentation += step
        return lastPresentation
    }
}
