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
    public var outputs: [OutputReport] = []
    public var failure: RecordingFailure?
    /// Access units where the writer had to insert SPS/PPS or fix start codes.
    public var repairedAccessUnits = 0

    public var exitStatus: ExitStatus { failure?.exitStatus ?? .success }
}
