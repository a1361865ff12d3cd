import Bitstream
import Glibc
import Hub
import NetStream
import Pipeline
import Synchronization

/// `tcp://[HOST]:PORT?listen` / `--listen [HOST:]PORT`: serves the stream to the
/// receivers that connect, up to `maximumReceivers` at once (default sized by memory,
/// see `defaultMaximumReceivers`).
///
/// The accept thread never waits on a peer: it takes every pending connection in one
/// go (backlog 512) and joins only peer threads that have already ended. Peers that
/// fall behind or close are evicted by `PeerSender`, so their slots free up within
/// `stallTimeoutSeconds`.
///
/// Each receiver gets its own `PeerSender` (a thread, and a `.skipToIDR` subscription to the hub) and
/// starts with SPS+PPS+IDR; a join asks the hub's gate for an IDR (rate-limited), so a late
/// joiner waits at most about a frame, not a GOP. A receiver leaving or failing never
/// affects the others, the recording or its files.
public final class TCPListenOutput: StreamOutput, @unchecked Sendable {
    public let endpoint: TCPEndpoint
    public var label: String { endpoint.description }
    public var onFailure: (@Sendable (OutputError) -> Void)?
    public var failure: OutputError? { nil }
    /// The port bound (after `open()`; useful with port 0).
    public private(set) var boundPort: UInt16 = 0

    private var hub: StreamHub?
    private let log: NetworkEventLog
    private let queueCapacity: Int
    private let stallTimeoutSeconds: Double
    private let maximumReceivers: Int
    private var listener: TCPListener?
    private var acceptor: WorkerThread?
    private let stopping = Atomic<Bool>(false)
    private let peers = Mutex<[PeerSender]>([])
    private let abandoned = Atomic<Bool>(false)
    private let totals = Mutex(Totals())

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

    public func open(hub: StreamHub) throws {
        self.hub = hub
        let listener: TCPListener
        do {
            listener = try TCPListener(host: endpoint.host, port: endpoint.port)
        } catch let error as SocketError {
            let hint = error.errno == .addressInUse ? "; another program (or camrec) listens there: choose another port"
                : error.errno == .permissionDenied ? "; ports below 1024 need root: choose a higher one" : ""
            throw OutputError(.unwritable, "cannot listen on \(label): \(error)\(hint)")
        } catch {
            throw OutputError(.unwritable, "cannot listen on \(label): \(error)")
        }
        self.listener = listener
        boundPort = listener.port
        log("listening for receivers on " + listener.addresses.map { "tcp://\($0)" }.joined(separator: ", "))
        let acceptor = WorkerThread(name: "tcp-accept") { [self] in self.acceptLoop(listener) }
        self.acceptor = acceptor
        acceptor.start()
    }

    /// Bytes one receiver may cost at most: its kernel send buffer (256 KiB, doubled by
    /// the kernel), its thread's stack as touched, and its queue (references to chunks the
    /// recording holds anyway); rounded up to 2 MiB.
    public static let bytesPerReceiver = 2 << 20

    /// A quarter of the memory available now (MemAvailable in /proc/meminfo) divided by
    /// `bytesPerReceiver`, and at most the file descriptors left (RLIMIT_NOFILE less 64
    /// for the recording); between 16 and 4096.
    public static func defaultMaximumReceivers() -> Int {
        var available = 1 << 30
        if let file = fopen("/proc/meminfo", "r") {
            defer { fclose(file) }
            var line = [CChar](repeating: 0, count: 256)
            while fgets(&line, Int32(line.count), file) != nil {
                let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                guard text.hasPrefix("MemAvailable:") else { continue }
                let digits = text.split(separator: " ").dropFirst().first.flatMap { Int($0) }
                if let kib = digits, kib > 0, kib < Int.max / 1024 { available = kib * 1024 }
            }
        }
        var byMemory = available / 4 / bytesPerReceiver
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < 1 << 20 {
            byMemory = min(byMemory, Int(limit.rlim_cur) - 64)
        }
        return min(max(byMemory, 16), 4096)
    }

    private func acceptLoop(_ listener: TCPListener) {
        var lastAcceptError = ""
        var waitMilliseconds: Int32 = 200
        while !stopping.load(ordering: .relaxed) {
            reapDeadPeers()
            let connection: TCPConnection?
            do {
                // After a connection, look again at once: a burst of joins is taken in one go.
                connection = try listener.accept(timeoutMilliseconds: waitMilliseconds)
                waitMilliseconds = connection == nil ? 200 : 0
            } catch {
                // EMFILE and the like: say so once, back off, keep serving the others.
                if "\(error)" != lastAcceptError { log("\(label): \(error)") }
                lastAcceptError = "\(error)"
                usleep(200_000)
                continue
            }
            guard let connection else { continue }
            let count = peers.withLock { $0.count }
            if count >= maximumReceivers {
                log("\(label): refusing receiver \(connection.peerAddress): already serving \(count) (the most allowed)")
                connection.close()
                continue
            }
            let name = "receiver \(connection.peerAddress)"
            guard let hub, let subscription = hub.subscribe(name, from: .nextIDR, policy: .skipToIDR(depth: max(2, queueCapacity))) else {
                connection.close()
                continue
            }
            let peer = PeerSender(transport: TCPTransport(connection: connection, name: name, sendsTimingSEI: sendsTimingSEI, codec: codec, log: log),
                                  name: name, subscription: subscription, stallTimeoutSeconds: stallTimeoutSeconds, log: log)
            peer.start()
            peers.withLock { $0.append(peer) }
            let n = totals.withLock { t -> Int in
                t.receivers += 1
                return t.receivers
            }
            let forced = hub.keyframes.request()
            log("receiver \(connection.peerAddress) joined (\(count + 1) connected, #\(n)); "
                + (forced ? "IDR requested" : "starts at the next IDR"))
        }
    }

    /// Takes out peers whose threads have ended; never waits for one.
    private func reapDeadPeers() {
        let dead = peers.withLock { list -> [PeerSender] in
            let dead = list.filter { $0.hasEnded }
            if !dead.isEmpty { list.removeAll { $0.hasEnded } }
            return dead
        }
        for peer in dead { account(peer, peer.reap(), ending: "left") }
    }

    private func account(_ peer: PeerSender, _ s: PeerSender.Summary, ending: String) {
        totals.withLock { $0.sent.add(s) }
        var line = "\(peer.name) \(ending) after \(s.frames) frames"
        if s.skippedFrames > 0 { line += ", \(s.skippedFrames) skipped in \(s.overflows) catch-ups" }
        if s.framesNotSent > 0 { line += ", \(s.framesNotSent) not sent (before its first IDR or after it left)" }
        if let latency = s.latency.summary { line += "; capture to sent: \(latency)" }
        log(line)
    }

    /// A second interrupt: stop waiting for receivers that are still taking the end of the stream.
    public func abandon() {
        abandoned.store(true, ordering: .relaxed)
        for peer in peers.withLock({ $0 }) { peer.abortNow() }
    }

    public var counters: OutputCounters {
        let (ended, live) = totals.withLock { t in (t.sent, peers.withLock { $0 }) }
        var sent = ended
        for peer in live { sent.add(peer.summary) }
        var counters = OutputCounters()
        counters.frames = sent.frames
        counters.bytes = sent.bytes
        counters.skippedFrames = sent.skipped
        counters.peers = live.filter(\.isAlive).count
        return counters
    }

    public func finish() -> OutputReport {
        stopping.store(true, ordering: .relaxed)
        acceptor?.join()
        acceptor = nil
        listener?.close()
        // Flush all at once: each has its own thread, so a slow one costs the others nothing. They
        // stay in `peers` while they flush, so `abandon` can reach them.
        let remaining = peers.withLock { $0 }
        let deadline = abandoned.load(ordering: .relaxed) ? 0 : 5.0
        for peer in remaining { peer.beginFinish(flushTimeoutSeconds: deadline) }
        for peer in remaining { account(peer, peer.reap(), ending: peer.isAlive ? "served to the end" : "left") }
        peers.withLock { $0 = [] }
        let (receivers, t) = totals.withLock { ($0.receivers, $0.sent) }
        var line = "\(label): served \(receivers) receiver\(receivers == 1 ? "" : "s"), \(t.frames) frames in all"
        if t.skipped > 0 { line += ", \(t.skipped) skipped" }
        if let latency = t.latency.summary { line += "; capture to sent: \(latency)" }
        log(line)
        return t.report(label: label)
    }
}
