/// A file an output finished and moved to its final name.
public struct FinishedFile: Sendable {
    public var path: String
    public var frames: Int
    public var idrFrames: Int
    public var bytes: Int
    /// Presentation time covered, first frame to past the last.
    public var durationSeconds: Double
    /// The sidecar timestamps file, if one was written.
    public var timestampsPath: String?
    /// Set when the file was cut short by a failure (it still holds every whole frame before it).
    public var error: OutputError?
}
