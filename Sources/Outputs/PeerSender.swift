import Frames
import Glibc
import Hub
import Threading
import NetStream
import Synchronization

/// Sends the stream to one peer (a media server) from a thread of its own; the
/// `PeerTransport` does the writing. What it sends comes from its hub subscription
/// (`.skipToIDR`): the peer starts at an IDR (which carries SPS+PPS), and when it falls behind
/// by the subscription's depth the hub drops what waits and resumes it at the next IDR, so it never
/// gets half an access unit or a picture whose references it lacks, and never holds up capture.
///
/// Eviction, so peers that don't keep up never hold a slot for long: a peer is dropped
/// when one access unit takes it more than `stallTimeout` to take (it reads far slower
/// than the stream, or not at all, however little it reads now and then), and as soon as
/// it closes its side of the connection (noticed within 200 ms, even while it waits for
/// an IDR).
///
/// The transport is the sending thread's alone: `start` hands it over (`sending`), and nothing else
/// keeps it, so the compiler holds every other thread off it.
final class PeerSender: Sendable {
    let peerAddress: String
    let name: String
    private let subscription: Subscription
    private let log: NetworkEventLog
    private let stallTimeoutMilliseconds: Int
    private let worker = Mutex<WorkerThread?>(nil)
    private let state = Mutex(State())
    private let abortDeadline = Atomic<UInt64>(0)
    /// Woken when `abortDeadline` is set, so a pause in `close` ends then, not at its end.
    private let abortChanged = WakeSignal()
    private let closing = Atomic<Bool>(false)
    /// Set as the thread's last act: `reap` then joins without waiting.
    private let threadEnded = Atomic<Bool>(false)
    /// Called when `hasSent`, `isAlive` or `hasEnded` changes, so an owner can wait instead of polling.
    private let onChange: @Sendable () -> Void

    struct State {
        var alive = true
        var frames = 0
        var bytes = 0
        var idrFrames = 0
        /// Taken from the subscription but not sent (it failed or was aborted on the way).
        var lost = 0
        var failure: String?
        var latency = LatencySamples()
    }

    struct Summary {
        var frames: Int
        var bytes: Int
        var idrFrames: Int
        var skippedFrames: Int
        /// Offered before its first IDR (it joined mid-GOP), or after it failed or left.
        var framesNotSent: Int
        var overflows: Int
        var failure: String?
        var latency: LatencySamples
        /// Every access unit the hub offered it (sent, skipped or not sent).
        var offered: Int
    }

    init(peerAddress: String, name: String, subscription: Subscription, stallTimeoutSeconds: Double,
         log: @escaping NetworkEventLog, onChange: @escaping @Sendable () -> Void = {}) {
        self.peerAddress = peerAddress
        self.onChange = onChange
        self.name = name
        self.log = log
        self.subscription = subscription
        stallTimeoutMilliseconds = stallMilliseconds(stallTimeoutSeconds)
    }

    var isAlive: Bool { state.withLock { $0.alive } }
    /// At least one access unit reached the peer.
    var hasSent: Bool { state.withLock { $0.frames > 0 } }
    /// Its thread has returned: `reap` won't block.
    var hasEnded: Bool { threadEnded.load(ordering: .acquiring) }

    func start(_ transport: sending PeerTransport) {
        let worker = WorkerThread(name: "peer-\(name)") { [self] in self.run(transport) }
        self.worker.withLock { $0 = worker }
        worker.start()
    }

    private func run(_ transport: PeerTransport) {
        var peerClosed = false
        loop: while true {
            switch subscription.next(timeoutNanoseconds: 200_000_000) {
            case .ended:
                break loop
            case .timedOut:
                if closing.load(ordering: .acquiring) && subscription.queued == 0 { break loop }
                if !peerClosed { peerClosed = !stillOpen(transport) }
                if peerClosed { closedByPeer() }
                if !isAlive { break loop }
            case .chunk(let chunk):
                defer { chunk.release() }
                guard isAlive else {
                    state.withLock { $0.lost += 1 }
                    continue
                }
                do {
                    try send(chunk, on: transport)
                } catch {
                    state.withLock { $0.lost += 1 }
                    fail(error)
                }
                if !peerClosed { peerClosed = !stillOpen(transport) }
                if peerClosed { closedByPeer() }
            }
        }
        subscription.stopTaking()
        transport.close(abort: { [self] in
            let d = abortDeadline.load(ordering: .relaxed)
            return d != 0 && MonotonicClock.now() >= d
        }, pause: { [self] nanoseconds in pause(nanoseconds) })
        threadEnded.store(true, ordering: .releasing)
        onChange()
    }

    /// Waits `nanoseconds`, or until the abort deadline (set now or later, by `beginFinish` or `abortNow`).
    private func pause(_ nanoseconds: UInt64) {
        let end = MonotonicClock.now() + nanoseconds
        while true {
            let now = MonotonicClock.now()
            let d = abortDeadline.load(ordering: .relaxed)
            let until = d != 0 ? min(end, d) : end
            guard now < until else { return }
            abortChanged.wait(nanoseconds: until - now)
        }
    }

    /// The peer closed its side: it is gone (a receiver has nothing to say, so a half-close
    /// is read as leaving). Frees its slot now rather than at the next failed send.
    private func closedByPeer() {
        guard isAlive else { return }
        fail(SocketError("recv", .connectionReset, address: peerAddress), message: "went away (it closed the connection)")
    }

    private func stillOpen(_ transport: PeerTransport) -> Bool {
        do {
            return try transport.isOpen()
        } catch {
            fail(error)
            return false
        }
    }

    private func send(_ chunk: StreamChunk, on transport: PeerTransport) throws {
        let now = MonotonicClock.now()
        let lagDeadline = now + UInt64(stallTimeoutMilliseconds) * 1_000_000
        try transport.send(chunk, stallTimeoutMilliseconds: stallTimeoutMilliseconds) {
            let d = self.abortDeadline.load(ordering: .relaxed)
            let t = MonotonicClock.now()
            return (d != 0 && t >= d) || t >= lagDeadline
        }
        let done = MonotonicClock.now()
        if done >= lagDeadline { throw SocketError("send", .timedOut, address: peerAddress) }
        // The counts and latency are the picture's; sound beside it is not a frame.
        guard chunk.kind == .video else { return }
        let first = state.withLock { s -> Bool in
            s.frames += 1
            s.bytes += chunk.bytes.count
            if chunk.isIDR { s.idrFrames += 1 }
            if chunk.captureTimeNanoseconds > 0 && done >= chunk.captureTimeNanoseconds {
                s.latency.add(done - chunk.captureTimeNanoseconds)
            }
            return s.frames == 1
        }
        if first { onChange() }
    }

    private func fail(_ error: Error, message knownMessage: String? = nil) {
        var message: String
        if let knownMessage {
            message = knownMessage
        } else if let e = error as? SocketError {
            switch e.errno {
            case .timedOut: message = "fell behind: one access unit took it over \(stallTimeoutMilliseconds / 1000) s; disconnected"
            case .canceled:
                let d = abortDeadline.load(ordering: .relaxed)
                message = d != 0 && MonotonicClock.now() >= d ? "could not take the rest of the stream before the recording ended"
                    : "fell behind: one access unit took it over \(stallTimeoutMilliseconds / 1000) s; disconnected"
            case .brokenPipe, .connectionReset: message = "went away (\(e.call)(): \(e.errno))"
            default: message = "failed: \(e)"
            }
        } else {
            message = "failed: \(error)"
        }
        let first = state.withLock { s -> Bool in
            defer { s.alive = false }
            if s.alive { s.failure = message }
            return s.alive
        }
        if first { log("\(name) \(message)") }
        closing.store(true, ordering: .releasing)
        if first { onChange() }
        // Later access units are only counted, and what waits is let go now.
        subscription.stopTaking()
    }

    /// Ends this peer: sends what is queued (giving up after `flushTimeout`), then closes.
    func finish(flushTimeoutSeconds: Double) -> Summary {
        beginFinish(flushTimeoutSeconds: flushTimeoutSeconds)
        return reap()
    }

    /// Lets the thread send what is queued and close, without waiting for it (see `reap`).
    func beginFinish(flushTimeoutSeconds: Double) {
        let deadline = MonotonicClock.now() + UInt64(flushTimeoutSeconds * 1e9)
        // An earlier abortNow stands.
        _ = abortDeadline.compareExchange(expected: 0, desired: deadline, ordering: .relaxed)
        closing.store(true, ordering: .releasing)
        abortChanged.wake()
    }

    /// Gives up at once whatever the peer is waiting on (a send, a flush, a close): a second
    /// interrupt means stop waiting. What it already took stays sent.
    func abortNow() {
        abortDeadline.store(max(1, MonotonicClock.now()), ordering: .relaxed)
        closing.store(true, ordering: .releasing)
        abortChanged.wake()
    }

    /// Stops a peer that is already dead (its thread ends by itself).
    func reap() -> Summary {
        closing.store(true, ordering: .releasing)
        worker.withLock { $0.take() }?.join()
        subscription.cancel()
        return summary
    }

    var summary: Summary {
        let s = state.withLock { $0 }
        return subscription.peerSummary(frames: s.frames, bytes: s.bytes, idrFrames: s.idrFrames, lost: s.lost,
                                        failure: s.failure, latency: s.latency)
    }
}
