import Bitstream
import Glibc
import Hub
import NetStream
import Pipeline
import Synchronization

/// Pushes the stream to one peer that is up somewhere else: a receiver listening at
/// `tcp://HOST:PORT`, or a media server (`rtsp://`, `rtmp://`, `srt://`, through libavformat).
///
/// If the peer is not up yet, or goes away, recording goes on and this output keeps
/// reconnecting with backoff (0.25 s doubling to 5 s); each new connection resumes at an
/// IDR (one is requested, rate-limited), so it always begins with SPS+PPS+IDR. Never
/// reports a failure to the recorder: a peer's trouble only affects this output.
public final class PushOutput: StreamOutput, @unchecked Sendable {
    /// A transport to the peer, connected (TCP) or connecting at its first send (a media server,
    /// which needs the first IDR's SPS and PPS to describe the stream).
    public typealias MakeTransport = @Sendable () throws -> PeerTransport

    public let label: String
    public var onFailure: (@Sendable (OutputError) -> Void)?
    public var failure: OutputError? { nil }

    /// "receiver" or "server", for log lines.
    private let peerKind: String
    private let makeTransport: MakeTransport
    private var hub: StreamHub?
    private let log: NetworkEventLog
    private let queueCapacity: Int
    private let stallTimeoutSeconds: Double
    private let current = Mutex<PeerSender?>(nil)
    private let stopping = Atomic<Bool>(false)
    private var connector: WorkerThread?
    private let totals = Mutex(Totals())
    /// The current attempt's failure line is left out (the server is known to be down).
    private let quietAttempt = Atomic<Bool>(false)
    private let abandoned = Atomic<Bool>(false)

    private struct Totals {
        var connections = 0
        /// Access units the hub offered to this output's connections, one after another.
        var offeredToPeers = 0
        var sent = PeerTotals()
    }

    public init(label: String, peerKind: String, queueCapacity: Int = 60,
                stallTimeoutSeconds: Double = 10, log: @escaping NetworkEventLog, makeTransport: @escaping MakeTransport) {
        self.label = label
        self.peerKind = peerKind
        self.queueCapacity = queueCapacity
        self.stallTimeoutSeconds = stallTimeoutSeconds
        self.log = log
        self.makeTransport = makeTransport
    }

    /// `tcp://HOST:PORT`: a raw Annex-B stream to a receiver, bare, or each access unit with
    /// camrec's timing note when `sendsTimingSEI`.
    public convenience init(endpoint: TCPEndpoint, queueCapacity: Int = 60,
                            stallTimeoutSeconds: Double = 10, sendsTimingSEI: Bool = false, codec: VideoCodec = .h264,
                            log: @escaping NetworkEventLog) {
        let connectTimeoutMilliseconds: Int32 = 2000
        self.init(label: endpoint.description, peerKind: "receiver", queueCapacity: queueCapacity,
                  stallTimeoutSeconds: stallTimeoutSeconds, log: log) {
            guard let host = endpoint.host else { throw OutputError(.unwritable, "no host") }
            let connection = try TCPConnection.connect(host: host, port: endpoint.port, timeoutMilliseconds: connectTimeoutMilliseconds)
            return TCPTransport(connection: connection, name: "receiver \(connection.peerAddress)", sendsTimingSEI: sendsTimingSEI, codec: codec, log: log)
        }
    }

    /// Tries once to connect before capture starts, so a receiver that is already up gets
    /// the stream from its very first frame; then keeps trying in the background.
    public func open(hub: StreamHub) throws {
        self.hub = hub
        let firstError = tryConnect(failing: false)
        if let firstError {
            log("\(label): \(peerKind) not reachable yet (\(firstError)); recording goes on, retrying in the background")
        }
        let connector = WorkerThread(name: "push-connect") { [self] in self.connectLoop(initialFailure: firstError != nil) }
        self.connector = connector
        connector.start()
    }

    /// Nil on success, else why not. A media server's session is only an attempt until its
    /// first access unit is sent (`announceIfReached`).
    private func tryConnect(failing: Bool) -> String? {
        guard let hub else { return "not opened" }
        do {
            let transport = try makeTransport()
            let name = "\(peerKind) \(transport.peerAddress)"
            guard let subscription = hub.subscribe(name, from: .nextIDR, policy: .skipToIDR(depth: max(2, queueCapacity))) else {
                transport.close(abort: { true })
                return "the recording has ended"
            }
            let peer = PeerSender(transport: transport, name: name, subscription: subscription,
                                  stallTimeoutSeconds: stallTimeoutSeconds, log: { [self] message in peerLog(message) })
            // While the server is down, each attempt's failure is not news: the first was logged.
            quietAttempt.store(failing && transport.connectsOnFirstSend, ordering: .relaxed)
            peer.start()
            current.withLock { $0 = peer }
            if transport.connectsOnFirstSend {
                // The session starts at an IDR; ask for one now unless the server is known to be
                // down (then wait for the next regular one rather than add IDRs to every output).
                if !failing { hub.keyframes.request() }
            } else {
                announce(afterFailures: failing)
                hub.keyframes.request()
            }
            return nil
        } catch {
            return "\(error)"
        }
    }

    private func peerLog(_ message: String) {
        if !quietAttempt.load(ordering: .relaxed) { log(message) }
    }

    /// Counts a connection that reached its peer, and says so when it is news.
    /// `streaming` when the first access unit has already gone (a media server's session).
    private func announce(afterFailures: Bool, streaming: Bool = false) {
        let n = totals.withLock { t -> Int in
            t.connections += 1
            return t.connections
        }
        quietAttempt.store(false, ordering: .relaxed)
        if n > 1 {
            log("\(label): reconnected (connection #\(n)); \(streaming ? "resumed at an IDR" : "resuming at the next IDR")")
        } else if afterFailures {
            log("\(label): connected to the \(peerKind); \(streaming ? "streaming from an IDR" : "streaming from the next IDR")")
        }
    }

    private func connectLoop(initialFailure: Bool) {
        var backoff: UInt64 = 250_000_000
        var failing = initialFailure
        var reached = current.withLock { $0.map { !$0.transport.connectsOnFirstSend } } ?? false
        while !stopping.load(ordering: .relaxed) {
            if let peer = current.withLock({ $0 }) {
                if !reached && peer.hasSent {
                    reached = true
                    announce(afterFailures: failing, streaming: true)
                    failing = false
                    backoff = 250_000_000
                }
                if peer.isAlive {
                    sleep(nanoseconds: 100_000_000) { stopping.load(ordering: .relaxed) }
                    continue
                }
                current.withLock { $0 = nil }
                account(peer.reap())
                if reached {
                    backoff = 250_000_000
                } else if !failing {
                    // A media server refused or never answered its first access unit.
                    log("\(label): retrying with backoff up to 5 s; recording goes on")
                    failing = true
                }
            }
            if failing {
                sleep(nanoseconds: backoff) { stopping.load(ordering: .relaxed) }
                if stopping.load(ordering: .relaxed) { break }
                backoff = min(backoff * 2, 5_000_000_000)
            }
            if let error = tryConnect(failing: failing) {
                if !failing { log("\(label): cannot reach the \(peerKind) (\(error)); retrying with backoff up to 5 s") }
                failing = true
                reached = false
            } else {
                reached = current.withLock { $0.map { !$0.transport.connectsOnFirstSend } } ?? false
                if reached { failing = false }
            }
        }
    }

    private func account(_ s: PeerSender.Summary) {
        totals.withLock {
            $0.sent.add(s)
            $0.offeredToPeers += s.offered
        }
    }

    /// A second interrupt: stop waiting for the peer (connecting, sending or flushing) now.
    public func abandon() {
        abandoned.store(true, ordering: .relaxed)
        stopping.store(true, ordering: .relaxed)
        current.withLock { $0 }?.abortNow()
    }

    public var counters: OutputCounters {
        let (all, peer) = totals.withLock { t in (t, current.withLock { $0 }) }
        var sent = all.sent
        if let peer { sent.add(peer.summary) }
        var counters = OutputCounters()
        counters.frames = sent.frames
        counters.bytes = sent.bytes
        counters.skippedFrames = sent.skipped
        counters.reconnects = max(0, all.connections - 1)
        counters.peers = peer?.isAlive == true ? 1 : 0
        return counters
    }

    public func finish() -> OutputReport {
        stopping.store(true, ordering: .relaxed)
        connector?.join()
        connector = nil
        // The peer stays in `current` while it flushes, so `abandon` can reach it.
        if let peer = current.withLock({ $0 }) {
            account(peer.finish(flushTimeoutSeconds: abandoned.load(ordering: .relaxed) ? 0 : 5))
            current.withLock { $0 = nil }
        }
        let all = totals.withLock { $0 }
        let t = all.sent
        // Published while no connection was subscribed: before the first, between two, after the last.
        let missedWhileDisconnected = max(0, (hub?.publishedCount ?? 0) - all.offeredToPeers)
        var words = ["\(label): sent \(t.frames) frames over \(all.connections) connection\(all.connections == 1 ? "" : "s")"]
        if all.connections == 0 { words = ["\(label): the \(peerKind) was never reachable; nothing sent"] }
        if missedWhileDisconnected > 0 { words.append("\(missedWhileDisconnected) recorded while disconnected") }
        if t.skipped > 0 { words.append("\(t.skipped) skipped in \(t.overflows) catch-ups to an IDR") }
        if let latency = t.latency.summary { words.append("capture to sent: \(latency)") }
        log(words.joined(separator: "; "))
        return t.report(label: label)
    }
}
