/// The reconnect pacing and the log lines of a push output (`TCPPushOutput` on SwiftNIO, `PushOutput`
/// on a thread): both drive one of these, so their backoff and wording cannot drift apart.
///
/// While the peer is known to be down (`failing`), each attempt waits out a backoff of 0.25 s doubling
/// to 5 s, and only the first failure of an outage is logged; a connection that reaches its peer ends
/// the outage and resets the backoff, so a peer that leaves later is retried at once.
struct ReconnectSchedule {
    static let shortestBackoff: UInt64 = 250_000_000
    static let longestBackoff: UInt64 = 5_000_000_000

    let label: String
    /// "receiver" or "server", for log lines.
    let peerKind: String
    private let log: NetworkEventLog
    /// The peer is known to be down: attempts wait between them, and their failures are not news.
    private(set) var failing = false
    private var backoff = Self.shortestBackoff

    init(label: String, peerKind: String, log: @escaping NetworkEventLog) {
        self.label = label
        self.peerKind = peerKind
        self.log = log
    }

    /// The attempt made before capture starts did not connect.
    mutating func firstAttemptFailed(_ error: String) {
        log("\(label): \(peerKind) not reachable yet (\(error)); recording goes on, retrying in the background")
        failing = true
    }

    /// How long to wait before the next attempt (nil: try at once); each wait doubles the next.
    mutating func nextWait() -> UInt64? {
        guard failing else { return nil }
        defer { backoff = min(backoff * 2, Self.longestBackoff) }
        return backoff
    }

    /// An attempt could not connect.
    mutating func connectFailed(_ error: String) {
        if !failing { log("\(label): cannot reach the \(peerKind) (\(error)); retrying with backoff up to 5 s") }
        failing = true
    }

    /// A media server's session ended before its first access unit went (refused, or never answered).
    mutating func sessionRefused() {
        if !failing { log("\(label): retrying with backoff up to 5 s; recording goes on") }
        failing = true
    }

    /// Connection number `n` reached its peer; `streaming` when its first access unit has already gone.
    mutating func reached(connection n: Int, streaming: Bool) {
        if n > 1 {
            log("\(label): reconnected (connection #\(n)); \(streaming ? "resumed at an IDR" : "resuming at the next IDR")")
        } else if failing {
            log("\(label): connected to the \(peerKind); \(streaming ? "streaming from an IDR" : "streaming from the next IDR")")
        }
        failing = false
        backoff = Self.shortestBackoff
    }
}
