import Glibc
import Pipeline
import Synchronization

/// `tcp://HOST:PORT`: pushes the stream to a receiver that listens there.
///
/// If the receiver is not up yet, or goes away, recording goes on and this output keeps
/// reconnecting with backoff (0.25 s doubling to 5 s); each new connection resumes at an
/// IDR (one is requested, rate-limited), so it always begins with SPS+PPS+IDR. Never
/// reports a failure to the recorder: a receiver's trouble only affects this output.
public final class TCPPushOutput: StreamOutput, @unchecked Sendable {
    public let endpoint: TCPEndpoint
    public var label: String { endpoint.description }
    public var onFailure: (@Sendable (OutputError) -> Void)?
    public var failure: OutputError? { nil }

    private let keyframes: KeyframeRequestGate?
    private let log: NetworkEventLog
    private let queueCapacity: Int
    private let stallTimeoutSeconds: Double
    private let connectTimeoutMilliseconds: Int32 = 2000
    private let current = Mutex<TCPPeerSender?>(nil)
    private let stopping = Atomic<Bool>(false)
    private var connector: WorkerThread?
    private let totals = Mutex(Totals())

    private struct Totals {
        var connections = 0
        var missedWhileDisconnected = 0
        var sent = PeerTotals()
    }

    /// Each access unit carries camrec's timing note (`--no-timing-sei` turns it off).
    private let sendsTimingSEI: Bool

    public init(endpoint: TCPEndpoint, keyframes: KeyframeRequestGate?, queueCapacity: Int = 60,
                stallTimeoutSeconds: Double = 10, sendsTimingSEI: Bool = true, log: @escaping NetworkEventLog) {
        self.endpoint = endpoint
        self.keyframes = keyframes
        self.queueCapacity = queueCapacity
        self.stallTimeoutSeconds = stallTimeoutSeconds
        self.sendsTimingSEI = sendsTimingSEI
        self.log = log
    }

    /// Tries once to connect before capture starts, so a receiver that is already up gets
    /// the stream from its very first frame; then keeps trying in the background.
    public func open() throws {
        let firstError = tryConnect()
        if let firstError {
            log("\(label): receiver not reachable yet (\(firstError)); recording goes on, retrying in the background")
        }
        let connector = WorkerThread(name: "tcp-connect") { [self] in self.connectLoop(initialFailure: firstError != nil) }
        self.connector = connector
        connector.start()
    }

    /// Nil on success, else why not.
    private func tryConnect() -> String? {
        guard let host = endpoint.host else { return "no host" }
        do {
            let connection = try TCPConnection.connect(host: host, port: endpoint.port, timeoutMilliseconds: connectTimeoutMilliseconds)
            let peer = TCPPeerSender(connection: connection, name: "receiver \(connection.peerAddress)",
                                     queueCapacity: queueCapacity, stallTimeoutSeconds: stallTimeoutSeconds,
                                     sendsTimingSEI: sendsTimingSEI, log: log)
            peer.start()
            let n = totals.withLock { t -> Int in
                t.connections += 1
                return t.connections
            }
            current.withLock { $0 = peer }
            if n > 1 { log("\(label): reconnected (connection #\(n)); resuming at the next IDR") }
            keyframes?.request()
            return nil
        } catch {
            return "\(error)"
        }
    }

    private func connectLoop(initialFailure: Bool) {
        var backoff: UInt64 = 250_000_000
        var failing = initialFailure
        var attempts = 0
        while !stopping.load(ordering: .relaxed) {
            if let peer = current.withLock({ $0 }) {
                if peer.isAlive {
                    sleep(nanoseconds: 100_000_000) { stopping.load(ordering: .relaxed) }
                    continue
                }
                current.withLock { $0 = nil }
                account(peer.reap())
                backoff = 250_000_000
            }
            if failing {
                sleep(nanoseconds: backoff) { stopping.load(ordering: .relaxed) }
                if stopping.load(ordering: .relaxed) { break }
                backoff = min(backoff * 2, 5_000_000_000)
            }
            attempts += 1
            if let error = tryConnect() {
                if !failing { log("\(label): cannot reach the receiver (\(error)); retrying with backoff up to 5 s") }
                failing = true
            } else {
                failing = false
                attempts = 0
            }
        }
    }

    private func account(_ s: TCPPeerSender.Summary) {
        totals.withLock { $0.sent.add(s) }
    }

    public func submit(_ chunk: StreamChunk) {
        if let peer = current.withLock({ $0 }) {
            peer.offer(chunk)
        } else {
            totals.withLock { $0.missedWhileDisconnected += 1 }
            chunk.release()
        }
    }

    public func finish() -> OutputReport {
        stopping.store(true, ordering: .relaxed)
        connector?.join()
        connector = nil
        if let peer = current.withLock({ p -> TCPPeerSender? in defer { p = nil }; return p }) {
            account(peer.finish(flushTimeoutSeconds: 5))
        }
        let all = totals.withLock { $0 }
        let t = all.sent
        var words = ["\(label): sent \(t.frames) frames over \(all.connections) connection\(all.connections == 1 ? "" : "s")"]
        if all.connections == 0 { words = ["\(label): the receiver was never reachable; nothing sent"] }
        if all.missedWhileDisconnected > 0 { words.append("\(all.missedWhileDisconnected) recorded while disconnected") }
        if t.skipped > 0 { words.append("\(t.skipped) skipped in \(t.overflows) catch-ups to an IDR") }
        if let latency = t.latency.summary { words.append("capture to sent: \(latency)") }
        log(words.joined(separator: "; "))
        return t.report(label: label)
    }
}
