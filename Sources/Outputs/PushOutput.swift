import Bitstream
import Frames
import Glibc
import Hub
import NetStream
import Threading
import Synchronization

/// Pushes the stream to a media server (`rtsp://`, `rtmp://`, `srt://`, through libavformat, whose
/// writers block: so a `PeerSender` thread, where `tcp://` has `TCPPushOutput` on SwiftNIO).
///
/// If the peer is not up yet, or goes away, recording goes on and this output keeps
/// reconnecting with backoff (0.25 s doubling to 5 s); each new connection resumes at an
/// IDR (one is requested, rate-limited), so it always begins with SPS+PPS+IDR. Never
/// reports a failure to the recorder: a peer's trouble only affects this output.
public final class PushOutput: StreamOutput, Sendable {
    /// A transport to the media server, connecting at its first send (the server needs the first
    /// IDR's SPS and PPS to describe the stream).
    public typealias MakeTransport = @Sendable () throws -> PeerTransport

    public var kind: OutputKind { .push }
    public let label: String
    public var failure: OutputError? { nil }

    /// "receiver" or "server", for log lines.
    private let peerKind: String
    private let makeTransport: MakeTransport
    /// Set by `open`, with the thread that keeps reconnecting.
    private let opened = Mutex<(hub: StreamHub, connector: WorkerThread)?>(nil)
    private let log: NetworkEventLog
    private let queueCapacity: Int
    private let takesAudio: Bool
    private let stallTimeoutSeconds: Double
    private let current = Mutex<PeerSender?>(nil)
    private let stopping = Atomic<Bool>(false)
    private let totals = Mutex(PushTotals())
    /// The current attempt's failure line is left out (the server is known to be down).
    private let quietAttempt = Atomic<Bool>(false)
    private let abandoned = Atomic<Bool>(false)
    /// Woken by a stop and by the current peer's first send and end: what the connect loop waits on.
    private let wakeups = WakeSignal()


    /// - Parameter takesAudio: the transport sends the recording's sound too (a media server's session).
    public init(label: String, peerKind: String, queueCapacity: Int = 60, stallTimeoutSeconds: Double = 10,
                takesAudio: Bool = false, log: @escaping NetworkEventLog, makeTransport: @escaping MakeTransport) {
        self.takesAudio = takesAudio
        self.label = label
        self.peerKind = peerKind
        self.queueCapacity = queueCapacity
        self.stallTimeoutSeconds = stallTimeoutSeconds
        self.log = log
        self.makeTransport = makeTransport
    }

    /// Tries once to connect before capture starts, so a receiver that is already up gets
    /// the stream from its very first frame; then keeps trying in the background.
    /// `onFailure` is never called: a peer's trouble only affects this output.
    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        var schedule = ReconnectSchedule(label: label, peerKind: peerKind, log: log)
        if let firstError = tryConnect(hub, failing: false) { schedule.firstAttemptFailed(firstError) }
        let connector = WorkerThread(name: "push-connect") { [self, schedule] in self.connectLoop(hub, schedule) }
        opened.withLock { $0 = (hub, connector) }
        connector.start()
    }

    /// Nil on success, else why not. A media server's session is only an attempt until its
    /// first access unit is sent (`announceIfReached`).
    private func tryConnect(_ hub: StreamHub, failing: Bool) -> String? {
        do {
            let transport = try makeTransport()
            let name = "\(peerKind) \(transport.peerAddress)"
            // The session starts at an IDR, asked for as it joins (under the hub's lock, so never one
            // more than it needs) unless the server is known to be down: then it waits for the next
            // regular one rather than add IDRs to every output.
            guard let subscription = hub.subscribe(name, from: .nextIDR, policy: .skipToIDR(depth: max(2, queueCapacity)),
                                                    askForIDR: !failing, withAudio: takesAudio,
                                                    onCatchUp: Subscription.catchUpLog(of: name, to: { [weak self] in self?.peerLog($0) })) else {
                transport.close(abort: { true }, pause: { _ in })
                return "the recording has ended"
            }
            let peer = PeerSender(peerAddress: transport.peerAddress, name: name, subscription: subscription,
                                  stallTimeoutSeconds: stallTimeoutSeconds, log: { [self] message in peerLog(message) },
                                  onChange: { [wakeups] in wakeups.wake() })
            // While the server is down, each attempt's failure is not news: the first was logged.
            quietAttempt.store(failing, ordering: .relaxed)
            peer.start(transport)
            current.withLock { $0 = peer }
            return nil
        } catch {
            return "\(error)"
        }
    }

    private func peerLog(_ message: String) {
        if !quietAttempt.load(ordering: .relaxed) { log(message) }
    }

    private func connectLoop(_ hub: StreamHub, _ schedule: ReconnectSchedule) {
        var schedule = schedule
        // A session is reached with its first access unit sent.
        var reached = false
        while !stopping.load(ordering: .relaxed) {
            if let peer = current.withLock({ $0 }) {
                if !reached && peer.hasSent {
                    reached = true
                    let n = totals.withLock { t -> Int in
                        t.connections += 1
                        return t.connections
                    }
                    quietAttempt.store(false, ordering: .relaxed)
                    schedule.reached(connection: n, streaming: true)
                }
                if peer.isAlive {
                    wakeups.wait()
                    continue
                }
                current.withLock { $0 = nil }
                account(peer.reap())
                if !reached { schedule.sessionRefused() }
            }
            if let wait = schedule.nextWait() {
                waitOut(wait)
                if stopping.load(ordering: .relaxed) { break }
            }
            if let error = tryConnect(hub, failing: schedule.failing) { schedule.connectFailed(error) }
            reached = false
        }
    }

    /// Waits `nanoseconds`, or less when stopped; wakes left by an earlier peer do not shorten it.
    private func waitOut(_ nanoseconds: UInt64) {
        let deadline = MonotonicClock.now() + nanoseconds
        while !stopping.load(ordering: .relaxed) {
            let now = MonotonicClock.now()
            guard now < deadline else { return }
            wakeups.wait(nanoseconds: deadline - now)
        }
    }

    private func account(_ s: PeerSender.Summary) {
        totals.withLock { $0.add(s) }
    }

    /// A second interrupt: stop waiting for the peer (connecting, sending or flushing) now.
    public func abandon() {
        abandoned.store(true, ordering: .relaxed)
        stopping.store(true, ordering: .relaxed)
        wakeups.wake()
        current.withLock { $0 }?.abortNow()
    }

    public var counters: OutputCounters {
        let (all, peer) = totals.withLock { t in (t, current.withLock { $0 }) }
        return all.counters(current: peer?.summary, currentAlive: peer?.isAlive == true)
    }

    public func finish() -> OutputReport {
        stopping.store(true, ordering: .relaxed)
        wakeups.wake()
        let running = opened.withLock { $0.take() }
        running?.connector.join()
        // The peer stays in `current` while it flushes, so `abandon` can reach it.
        if let peer = current.withLock({ $0 }) {
            account(peer.finish(flushTimeoutSeconds: abandoned.load(ordering: .relaxed) ? 0 : 5))
            current.withLock { $0 = nil }
        }
        let all = totals.withLock { $0 }
        log(all.summary(label: label, peerKind: peerKind, published: running?.hub.publishedCount ?? 0))
        return all.sent.report(kind: kind, label: label)
    }
}
