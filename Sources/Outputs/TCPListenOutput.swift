import Bitstream
import Glibc
import Hub
import NIOCore
import NIOPosix
import NetStream
import Threading
import Synchronization
import SystemPackage
import SystemSupport

/// `tcp://[HOST]:PORT?listen` / `--listen [HOST:]PORT`: serves the stream to the
/// receivers that connect, up to `maximumReceivers` at once (default sized by memory,
/// see `defaultMaximumReceivers`).
///
/// On SwiftNIO: the listening sockets and every receiver live on NIO's event loops (one thread per
/// core, shared with the HTTP server), and each receiver is a task (`TCPReceiverSession`), not a
/// thread, so idle receivers cost no threads. A receiver over the limit is closed at once with no data.
///
/// Each receiver gets a `.skipToIDR` subscription to the hub and starts with SPS+PPS+IDR; a join asks
/// the hub's gate for an IDR (rate-limited), so a late joiner waits at most about a frame, not a GOP.
/// A receiver leaving or failing never affects the others, the recording or its files.
public final class TCPListenOutput: StreamOutput, Sendable {
    public let endpoint: TCPEndpoint
    public var kind: OutputKind { .listen }
    public var label: String { endpoint.description }
    public var failure: OutputError? { nil }
    /// The port bound (after `open()`; useful with port 0).
    public var boundPort: UInt16 { opened.withLock { $0.boundPort } }

    /// What `open` set up: the hub is there before the first receiver can be admitted.
    private let opened = Mutex(Opened())
    private struct Opened {
        var hub: StreamHub?
        var servers: [Channel] = []
        var boundPort: UInt16 = 0
    }
    private let log: NetworkEventLog
    private let queueCapacity: Int
    private let stallTimeoutSeconds: Double
    private let maximumReceivers: Int
    private let stopping = Atomic<Bool>(false)
    private let abandoned = Atomic<Bool>(false)
    private let sessions = Mutex<[TCPReceiverSession]>([])
    private let totals = Mutex(Totals())
    /// Signalled each time a session ends, so `finish` waits for the last without polling.
    private let sessionEnded = QueueLock()

    private struct Totals {
        var receivers = 0
        var sent = PeerTotals()
    }

    /// Each access unit carries camrec's timing note (`--timing-sei`); off, the stream is bare.
    private let sendsTimingSEI: Bool
    /// The stream's codec: the timing note is an SEI of that codec.
    private let codec: VideoCodec

    public init(endpoint: TCPEndpoint, queueCapacity: Int = 60,
                stallTimeoutSeconds: Double = 10, sendsTimingSEI: Bool = false, codec: VideoCodec = .h264, maximumReceivers: Int? = nil, log: @escaping NetworkEventLog) {
        self.codec = codec
        self.endpoint = endpoint
        self.queueCapacity = queueCapacity
        self.stallTimeoutSeconds = stallTimeoutSeconds
        self.sendsTimingSEI = sendsTimingSEI
        self.maximumReceivers = maximumReceivers ?? Self.defaultMaximumReceivers()
        self.log = log
    }

    /// `onFailure` is never called: a receiver's trouble only affects this output.
    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        opened.withLock { $0.hub = hub }
        let servers = try ServerSockets.bindServing(endpoint, action: "listen on \(label)") { [self] channel in admit(channel) }
        let port = UInt16(clamping: servers.first?.localAddress?.port ?? Int(endpoint.port))
        opened.withLock {
            $0.servers = servers
            $0.boundPort = port
        }
        let bound = servers.compactMap { $0.localAddress.map(Self.text) }
        log("listening for receivers on " + bound.map { "tcp://\($0)" }.joined(separator: ", "))
    }

    /// `127.0.0.1:9982`, `[::1]:9982`, as the log and the tests name peers.
    static func text(_ address: SocketAddress) -> String { ServerSockets.text(address) }

    /// Bytes one receiver may cost at most: its kernel send buffer (256 KiB, doubled by
    /// the kernel), its copy of the access unit in flight (as large as the largest), and its queue
    /// (references to chunks the recording holds anyway); rounded up to 2 MiB.
    public static let bytesPerReceiver = 2 << 20

    /// A quarter of the memory available now (MemAvailable in /proc/meminfo) divided by
    /// `bytesPerReceiver`, and at most the file descriptors left (RLIMIT_NOFILE less 64
    /// for the recording); between 16 and 4096.
    public static func defaultMaximumReceivers() -> Int {
        var available = 1 << 30
        for text in SystemFiles.lines(of: "/proc/meminfo") ?? [] where text.hasPrefix("MemAvailable:") {
            let digits = text.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            if let kib = digits, kib > 0, kib < Int.max / 1024 { available = kib * 1024 }
        }
        var byMemory = available / 4 / bytesPerReceiver
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < 1 << 20 {
            byMemory = min(byMemory, Int(limit.rlim_cur) - 64)
        }
        return min(max(byMemory, 16), 4096)
    }

    /// A new connection, on its event loop: refused at once over the limit, else subscribed and
    /// served by a task of its own.
    private func admit(_ channel: Channel) -> EventLoopFuture<Void> {
        let address = channel.remoteAddress.map(Self.text) ?? "?"
        guard let hub = opened.withLock({ $0.hub }), !stopping.load(ordering: .relaxed) else { return channel.close() }
        let count = sessions.withLock { $0.count }
        if count >= maximumReceivers {
            log("\(label): refusing receiver \(address): already serving \(count) (the most allowed)")
            return channel.close()
        }
        let name = "receiver \(address)"
        guard let subscription = hub.subscribe(name, from: .nextIDR, policy: .skipToIDR(depth: max(2, queueCapacity)),
                                               onCatchUp: Subscription.catchUpLog(of: name, to: log)) else {
            return channel.close()
        }
        let connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            connection = try NIOAsyncChannel(wrappingChannelSynchronously: channel)
        } catch {
            subscription.cancel()
            return channel.close()
        }
        let session = TCPReceiverSession(channel: channel, name: name, peerAddress: address, subscription: subscription,
                                         stallTimeoutSeconds: stallTimeoutSeconds, sendsTimingSEI: sendsTimingSEI, codec: codec, log: log)
        let (live, n) = sessions.withLock { list -> (Int, Int) in
            list.append(session)
            let n = totals.withLock { t -> Int in
                t.receivers += 1
                return t.receivers
            }
            return (list.count, n)
        }
        let start: String
        switch hub.requestIDR() {
        case .requested: start = "IDR requested"
        case .onItsWay: start = "an IDR is already on its way"
        case .atTheNextOne: start = "starts at the next IDR"
        }
        log("receiver \(address) joined (\(live) connected, #\(n)); \(start)")
        Task(executorPreference: EventLoopExecutor(channel.eventLoop)) { [self] in
            await session.run(connection)
            ended(session)
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }

    /// A session's task has returned: it leaves the hub and the list, and says what it got.
    private func ended(_ session: TCPReceiverSession) {
        session.leaveHub()
        let finishing = stopping.load(ordering: .relaxed)
        account(session.summary, name: session.name,
                ending: finishing && session.isAlive ? "served to the end" : "left")
        sessionEnded.lock()
        sessions.withLock { list in list.removeAll { $0 === session } }
        sessionEnded.broadcast()
        sessionEnded.unlock()
    }

    private func account(_ s: PeerSender.Summary, name: String, ending: String) {
        totals.withLock { $0.sent.add(s) }
        var line = "\(name) \(ending) after \(s.frames) frames"
        if s.skippedFrames > 0 { line += ", \(s.skippedFrames) skipped in \(s.overflows) catch-ups" }
        if s.framesNotSent > 0 { line += ", \(s.framesNotSent) not sent (before its first IDR or after it left)" }
        if let latency = s.latency.summary { line += "; capture to sent: \(latency)" }
        log(line)
    }

    /// A second interrupt: stop waiting for receivers that are still taking the end of the stream.
    public func abandon() {
        abandoned.store(true, ordering: .relaxed)
        for session in sessions.withLock({ $0 }) { session.abortNow() }
    }

    public var counters: OutputCounters {
        let (ended, live) = totals.withLock { t in (t.sent, sessions.withLock { $0 }) }
        var sent = ended
        for session in live { sent.add(session.summary) }
        var counters = OutputCounters()
        counters.frames = sent.frames
        counters.bytes = sent.bytes
        counters.skippedFrames = sent.skipped
        counters.peers = live.filter(\.isAlive).count
        return counters
    }

    public func finish() -> OutputReport {
        stopping.store(true, ordering: .relaxed)
        let servers = opened.withLock { s in
            defer { s.servers = [] }
            return s.servers
        }
        for server in servers { try? server.close().wait() }
        // The hub has closed: each session sends what it has queued (all at once: a slow one costs
        // the others nothing), within 5 s, or at once after a second interrupt.
        let deadline = abandoned.load(ordering: .relaxed) ? 0 : 5.0
        for session in sessions.withLock({ $0 }) { session.finish(within: deadline) }
        sessionEnded.lock()
        while !sessions.withLock({ $0.isEmpty }) { sessionEnded.waitNotEmpty() }
        sessionEnded.unlock()
        let (receivers, t) = totals.withLock { ($0.receivers, $0.sent) }
        var line = "\(label): served \(receivers) receiver\(receivers == 1 ? "" : "s"), \(t.frames) frames in all"
        if t.skipped > 0 { line += ", \(t.skipped) skipped" }
        if let latency = t.latency.summary { line += "; capture to sent: \(latency)" }
        log(line)
        return t.report(kind: kind, label: label)
    }
}
