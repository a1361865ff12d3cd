/// What an output reports when the recording ends.
public struct OutputReport: Sendable {
    public var label: String
    /// Final path of a file output.
    public var path: String?
    public var bytes: Int = 0
    public var frames: Int = 0
    public var idrFrames: Int = 0
    /// Chunks this output had to skip (a slow network receiver); files never skip.
    public var skippedFrames: Int = 0
    public var error: OutputError?

    public init(label: String, path: String? = nil) {
        self.label = label
        self.path = path
    }
}

/// A destination of the finished stream: a file, stdout, a TCP peer.
///
/// `open()` runs before capture starts, so a bad path fails before anything is
/// recorded. `submit` is called on the encoder thread and must not block on the
/// destination for long; `finish()` writes what is queued and settles the output.
public protocol StreamOutput: AnyObject, Sendable {
    var label: String { get }
    func open() throws
    /// Takes over one reference to `chunk`.
    func submit(_ chunk: StreamChunk)
    /// Writes out everything queued and closes; nothing submitted before is lost.
    func finish() -> OutputReport
    /// Set once the output has failed for good; the recorder stops on a failed file.
    var failure: OutputError? { get }
    /// Called once, from the output's own thread, when it fails.
    var onFailure: (@Sendable (OutputError) -> Void)? { get set }
    /// "Stop waiting" (a second SIGINT/SIGTERM): an output whose destination can block for
    /// ever (a pipe nobody reads) gives up what is still queued so `finish()` returns at once.
    /// Files are never abandoned: what they hold is finished and kept.
    func abandon()
}

extension StreamOutput {
    public func abandon() {}
}
