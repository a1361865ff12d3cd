import Bitstream
import Frames
import Glibc
import NIOCore
import NetStream
import Outputs
import Threading
import ServiceLifecycle
import Synchronization
import SystemPackage

/// `camrec receive`: takes a raw H.264 stream from TCP, checks it and stores it.
///
/// Connects to a sender (and reconnects with backoff when it goes away) or accepts one
/// pushing sender at a time. Reassembles access units from whatever pieces TCP delivers,
/// starts output only at an IDR with SPS+PPS (per connection), decodes every access unit
/// with libavcodec to verify it, reports decode errors and gaps in camrec's sequence
/// numbers, strips camrec's timing notes (so the copy is the sender's stream byte for
/// byte) and measures latency from them.
public final class StreamReceiver: Service, Sendable {
    public enum Source: Sendable {
        case connect(TCPEndpoint)
        case listen(TCPEndpoint)
    }

    public struct Options: Sendable {
        public var source: Source
        public var maximumFrames: Int?
        public var maximumDurationSeconds: Double?
        /// A sender that sends this many bytes without a start code (or without an IDR to
        /// start from) is not sending H.264: it is disconnected.
        public var garbageLimitBytes = 8 << 20
        /// Bytes one access unit may take once the stream has started; nil means what the
        /// SPS's level allows (`AccessUnitLimit`). Tests set it small.
        public var accessUnitLimitBytes: Int?
        /// Silence from a connected sender for this long ends the connection.
        public var idleTimeoutSeconds = 20.0
        /// Per-frame latency lines (sequence, capture→received, capture→decoded, send→received,
        /// in microseconds) written here, for plots and docs/PERFORMANCE.md.
        public var latencyLogPath: String?

        public init(source: Source, maximumFrames: Int? = nil, maximumDurationSeconds: Double? = nil) {
            self.source = source
            self.maximumFrames = maximumFrames
            self.maximumDurationSeconds = maximumDurationSeconds
        }
    }

    /// Live figures, for the status line and the summary.
    public struct Progress: Sendable {
        public var frames = 0
        public var idrFrames = 0
        public var bytes = 0
        public var decodedFrames = 0
        public var decodeErrors = 0
        /// Jumps in camrec's sequence numbers within a connection, and the frames missing.
        public var gaps = 0
        public var missingFrames = 0
        /// Connections after the first.
        public var reconnects = 0
        public var connections = 0
        /// Pictures before the first IDR of a connection, not written.
        public var skippedBeforeStart = 0
        /// Last access units cut short by a sender going away, not written.
        public var truncated = 0
        /// Frames that came with camrec's timing note (`--timing-sei` on the sender): the ones with
        /// latency figures.
        public var timedFrames = 0
        /// Connections dropped because what came was not H.264.
        public var garbageConnections = 0
        /// Connections dropped because one access unit outgrew `AccessUnitLimit`.
        public var oversizedConnections = 0
        public var connected = false
        public var senderAddress: String?
        /// The latest sample, nanoseconds; 0 without camrec timing notes.
        public var lastLatencyNanoseconds: UInt64 = 0
        public var width = 0
        public var height = 0
    }

    public struct Result: Sendable {
        public var progress: Progress
        /// Capture → last byte of the access unit received.
        public var arrivalLatency: LatencySamples
        /// Capture → decoded (includes waiting for the next access unit's start code).
        public var decodedLatency: LatencySamples
        /// Sender's send start → last byte received.
        public var transferLatency: LatencySamples
        public var outputPath: String?
        public var outputError: OutputError?
        public var durationSeconds: Double
    }

    let options: Options
    private let makeSink: @Sendable () -> ByteSink?
    let log: NetworkEventLog
    let shared = Mutex(Progress())
    private let control = Mutex(Control())
    private let kept = Mutex<Swift.Result<Result, Error>?>(nil)

    /// What `stop` reaches: the receiving task, the connection it is on, the listener.
    private struct Control {
        var stopping = false
        var task: Task<Result, Error>?
        var connection: SenderConnection?
        var listener: SenderListener?
    }

    /// - Parameter sink: makes the output, on the receiving task (nil: the stream is only checked).
    public init(options: Options, sink: @escaping @Sendable () -> ByteSink?, log: @escaping NetworkEventLog) {
        self.options = options
        makeSink = sink
        self.log = log
    }

    public var progress: Progress { shared.withLock { $0 } }

    /// Ends `run()` at once: the connection and the listener close, a reconnect's backoff ends; safe
    /// from any thread, and more than once.
    public func stop() {
        let (task, connection, listener) = control.withLock { c in
            c.stopping = true
            return (c.task, c.connection, c.listener)
        }
        task?.cancel()
        connection?.close()
        listener?.close()
    }
    var stopping: Bool { control.withLock { $0.stopping } }

    /// As a service of camrec's group: opens the output (and the listening socket), then receives until
    /// stopped (the group's shutdown stops it) or a limit is reached; what it got is `finishedOutcome`.
    /// The receiving runs on a thread of its own (decoding and writing block: they hold up neither
    /// NIO's event loops nor Swift's cooperative pool), its connections on NIO's event loops.
    public func run() async {
        let thread = ThreadExecutor(name: "receive")
        let task = Task(executorPreference: thread) { [self] in
            try await Run(receiver: self, sink: makeSink()).receive()
        }
        if control.withLock({ c in
            c.task = task
            return c.stopping
        }) { task.cancel() }
        let outcome = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await task.result
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
        kept.withLock { $0 = outcome }
        thread.shutdown()
    }

    /// What `run` ended with, read once the service group has ended (a group runs every service it is given).
    public var finishedOutcome: Swift.Result<Result, Error> {
        guard let outcome = kept.withLock({ $0 }) else { preconditionFailure("receive: the service group ended without running it") }
        return outcome
    }

    /// The connection being received from, for `stop`; false when stopping (it is then not taken).
    func adopt(_ connection: SenderConnection?) -> Bool {
        control.withLock { c in
            c.connection = connection
            return !c.stopping
        }
    }

    func adopt(_ listener: SenderListener) -> Bool {
        control.withLock { c in
            c.listener = listener
            return !c.stopping
        }
    }
}

func lastErrnoText() -> String { String(cString: strerror(errno)) }
