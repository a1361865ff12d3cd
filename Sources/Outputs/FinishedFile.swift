/// A file an output finished and moved to its final name.
public struct FinishedFile: Sendable {
    public init(path: String, frames: Int, idrFrames: Int, bytes: Int, durationSeconds: Double,
                timestampsPath: String? = nil, error: OutputError? = nil, format: ContainerFormat = .raw) {
        self.path = path
        self.frames = frames
        self.idrFrames = idrFrames
        self.bytes = bytes
        self.durationSeconds = durationSeconds
        self.timestampsPath = timestampsPath
        self.error = error
        self.format = format
    }

    public var path: String
    public var frames: Int
    public var idrFrames: Int
    public var bytes: Int
    /// Presentation time covered, first frame to past the last.
    public var durationSeconds: Double
    /// The sidecar timestamps file, if one was written.
    public var timestampsPath: String?
    /// The container it was written in (raw Annex-B for `.h264`).
    public var format: ContainerFormat = .raw
    /// Frames whose presentation time did not move forward and was moved to just after the last.
    public var clampedTimestamps = 0
    /// The source frame numbers of its first and last access units.
    public var firstFrame: UInt64?
    public var lastFrame: UInt64?
    public var firstPresentationNanoseconds: UInt64?
    /// Set when the file was cut short by a failure (it still holds every whole frame before it).
    public var error: OutputError?
}
