import Hub

/// What kind of destination an output is: the summary lines and `/metrics` (as its `kind` label)
/// tell outputs apart by it, never by their labels, which are names the user gave.
public enum OutputKind: String, Sendable {
    /// Recording files (`RecordingFileOutput`): each says when it is finished, in a line of its own.
    case file
    /// A byte stream through a `ByteSink` (`QueuedOutput`): camrec's `-`.
    case stdout
    /// Connecting out, one peer at a time: tcp://HOST:PORT, a media server (rtsp://, rtmp://, srt://).
    case push
    /// Receivers connecting in: tcp://…?listen, --listen.
    case listen
    /// The live view's viewers (--http).
    case browser
    /// Event clips (--event-output).
    case events
    /// An RTSP mount (--rtsp).
    case rtsp
}

/// What an output reports when the recording ends.
public struct OutputReport: Sendable {
    public var kind: OutputKind
    public var label: String
    /// Final path of a file output.
    public var path: String?
    public var bytes: Int = 0
    public var frames: Int = 0
    public var idrFrames: Int = 0
    /// Chunks this output had to skip (a slow network receiver); files never skip.
    public var skippedFrames: Int = 0
    public var error: OutputError?

    public init(kind: OutputKind, label: String, path: String? = nil) {
        self.kind = kind
        self.label = label
        self.path = path
    }
}

/// What an output has done so far (for `/metrics`); read from any thread while it runs.
public struct OutputCounters: Sendable, Equatable {
    /// Access units written or sent (summed over every receiver of a network output).
    public var frames = 0
    public var bytes = 0
    /// Access units a slow receiver skipped to catch up at an IDR.
    public var skippedFrames = 0
    /// Connections after the first (outputs that connect out).
    public var reconnects = 0
    /// Receivers or viewers connected now.
    public var peers = 0
    /// What each receiver says of its reception (RTSP clients' RTCP receiver reports).
    public var receptions: [ReceiverReception] = []
    public init() {}
}

/// One receiver's own account of what it gets: an RTSP client's RTCP (RFC 3550 §6.4.2).
public struct ReceiverReception: Sendable, Equatable {
    /// Its address (host:port) and its session.
    public var receiver: String
    public var session: String
    /// RTCP compound packets that parsed, and datagrams or frames on its RTCP channel that were not RTCP.
    public var reports = 0
    public var ignored = 0
    /// From its newest report block about the stream sent to it (nil before the first): packets lost
    /// since the start (RFC 3550's cumulative number, which duplicates can make negative), the fraction
    /// lost since its previous report (0 to 1), and the interarrival jitter in seconds.
    public var cumulativeLost: Int?
    public var fractionLost: Double?
    public var jitterSeconds: Double?

    public init(receiver: String, session: String) {
        self.receiver = receiver
        self.session = session
    }
}

/// A destination of the finished stream: a file, stdout, a TCP peer, the live view.
///
/// `open(hub:)` runs before capture starts, so a bad path fails before anything is recorded;
/// there the output subscribes to the hub of its encoding (or keeps it, to subscribe each peer as
/// it comes). It takes its access units from its subscriptions on threads or tasks of its own.
/// `finish()` runs after the hub has closed: it writes out what its subscriptions still hold and
/// settles the output.
public protocol StreamOutput: AnyObject, Sendable {
    var kind: OutputKind { get }
    var label: String { get }
    /// Starts the output on `hub`. `onFailure` is called once, from the output's own thread, when it
    /// fails later, while recording.
    func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws
    /// Writes out everything its subscriptions hold and closes; nothing published before is lost.
    func finish() -> OutputReport
    /// What it has written or sent so far.
    var counters: OutputCounters { get }
    /// Set once the output has failed for good; the recorder stops on a failed file.
    var failure: OutputError? { get }
    /// "Stop waiting" (a second SIGINT/SIGTERM): an output whose destination can block for
    /// ever (a pipe nobody reads) gives up what is still queued so `finish()` returns at once.
    /// Files are never abandoned: what they hold is finished and kept.
    func abandon()
}

extension StreamOutput {
    public func abandon() {}

    /// Opens an output whose later failure only its `failure` and report tell (tests, a clip's parts).
    public func open(hub: StreamHub) throws {
        try open(hub: hub, onFailure: { _ in })
    }
}
