import Capture
import Frames
import Outputs

/// What a finished recording did.
public struct RecordingResult: Sendable {
    public var framesEncoded = 0
    public var idrFrames = 0
    public var bytes = 0
    /// Presentation time from the first to past the last frame.
    public var durationSeconds = 0.0
    public var source = SourceStatistics()
    /// Filled by whoever ran the outputs (`OutputSet.finish`), after the recording.
    public var outputs: [OutputReport] = []
    public var failure: RecordingFailure?
    /// Access units where the writer had to insert SPS/PPS or fix start codes.
    public var repairedAccessUnits = 0

    public init() {}


    /// The outputs' reports joined in: the recording's own failure first, else the first output's.
    public mutating func settle(outputs reports: [OutputReport]) {
        outputs = reports
        if failure == nil, let error = reports.compactMap(\.error).first { failure = .output(error) }
    }
}
