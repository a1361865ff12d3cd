import Glibc
import NetStream
import Pipeline
import Synchronization

/// Sends the stream to one peer (a TCP receiver, a media server) from a thread of its own,
/// behind a bounded queue; the `PeerTransport` does the writing.
///
/// `offer` never blocks the encoder thread. Chunks are shared by reference, not copied.
/// The peer starts at an IDR (which carries SPS+PPS). When its queue overflows, everything
/// queued is dropped and it skips ahead to the next IDR, so it never gets half an access
/// unit or a picture whose references it lacks; the skip is counted and logged.
///
/// Eviction, so peers that don't keep up never hold a slot for long: a peer is dropped
/// when one access unit takes it more than `stallTimeout` to take (it reads far slower
/// than the stream, or not at all, however little it reads now and then), and as soon as
/// it closes its side of the connection (noticed within 200 ms, even while it waits for
/// an IDR).
final class PeerSender: @unchecked Sendable {
    let transport: PeerTransport
    let name: String
    private let queue: BlockingQueue<StreamChunk>
    private let log: NetworkEventLog
    private let stallTimeoutMilliseconds: Int
    private var worker: WorkerThread?
    private let state = Mutex(State())
    private let abortDeadline = Atomic<UInt64>(0)
    private let closing = Atomic<Bool>(false)
    /// Set as the thread's last act: `reap` then joins without waiting.
    private let threadEnded = Atomic<Bool>(false)

    struct State {
        /// Not started yet, or skipping after an overflow: only an IDR is taken.
        var waitingForIDR = true
        var skipping = false
        var alive = true
        var frames = 0
        var bytes = 0
        var idrFrames = 0
        var skippedFrames = 0
        /// Frames offered before its first IDR (it joined mid-GOP) or after it went away.
        var framesNotSent = 0
        var overflows = 0
        var failure: String?
        var latency = LatencySamples()
        var firstSequence: UInt64?
    }

    struct Summary {
        var frames: Int
        var bytes: Int
        var idrFrames: Int
        var skippedFrames: Int
        var framesNotSent: Int
        var overflows: Int
        var failure: String?
        var latency: LatencySamples
    }

    init(transport: PeerTransport, name: String, queueCapacity: Int, stallTimeoutSeconds: Double,
         log: @escaping NetworkEventLog) {
        self.transport = transport
        self.name = name
        self.log = log
        queue = BlockingQueue(capacity: max(2, queueCapacity))
        stallTimeoutMilliseconds = Int(stallTimeoutSeconds * 1000)
    }

    var isAlive: Bool { state.withLock { $0.alive } }
    /// At least one access unit reached the peer.
    var hasSent: Bool { state.withLock { $0.frames > 0 } }
    /// Its thread has returned: `reap` won't block.
    var hasEnded: Bool { threadEnded.load(ordering: .acquiring) }

    func start() {
        let worker = WorkerThread(name: "peer-\(name)") { [self] in self.run() }
        self.worker = worker
        worker.start()
    }

    /// Takes over one reference to `chunk`. Called on the encoder thread; never blocks.
    func offer(_ chunk: StreamChunk) {
        enum Action { case push, drop, overflow }
        let action: Action = state.withLock { s in
            guard s.alive else {
                s.framesNotSent += 1
                return .drop
            }
            if s.waitingForIDR {
                guard chunk.isIDR else {
                    if s.skipping { s.skippedFrames += 1 } else { s.framesNotSent += 1 }
                    return .drop
                }
                s.waitingForIDR = false
                s.skipping = false
            }
            return .push
        }
        switch action {
        case .drop:
            chunk.release()
        case .push, .overflow:
            if queue.tryPush(chunk) { return }
            guard isAlive else {
                chunk.release()
                state.withLock { $0.framesNotSent += 1 }
                return
            }
            // Full: the peer is too slow. Drop what waits and go on from the next IDR,
            // or from this chunk if it is one.
            var dropped = 0
            queue.drain { $0.release(); dropped += 1 }
            let resumesNow = chunk.isIDR && queue.tryPush(chunk)
            if !resumesNow {
                chunk.release()
                dropped += 1
            }
            let overflows: Int = state.withLock { s in
                s.skippedFrames += dropped
                s.overflows += 1
                if !resumesNow {
                    s.waitingForIDR = true
                    s.skipping = true
                }
                return s.overflows
            }
            log("\(name): too slow, skipped \(dropped) frames, resuming at \(resumesNow ? "this" : "the next") IDR (skip #\(overflows))")
        }
    }

    private func run() {
        var peerClosed = false
        while true {
            guard let chunk = queue.pop(timeoutNanoseconds: 200_000_000) else {
                if closing.load(ordering: .acquiring) && queue.isEmpty { break }
                if !peerClosed { peerClosed = !stillOpen() }
                if peerClosed { closedByPeer() }
                if !isAlive { break }
                continue
            }
            if !isAlive {
                chunk.release()
                state.withLock { $0.framesNotSent += 1 }
                continue
            }
            do {
                try send(chunk)
                chunk.release()
            } catch {
                chunk.release()
                state.withLock { $0.framesNotSent += 1 }
                fail(error)
            }
            if !peerClosed { peerClosed = !stillOpen() }
            if peerClosed { closedByPeer() }
        }
        var unsent = 0
        queue.drain { $0.release(); unsent += 1 }
        if unsent > 0 { state.withLock { $0.framesNotSent += unsent } }
        transport.close(abort: { [self] in
            let d = abortDeadline.load(ordering: .relaxed)
            return d != 0 && monotonicNanoseconds() >= d
        })
        threadEnded.store(true, ordering: .releasing)
    }

    /// The peer closed its side: it is gone (a receiver has nothing to say, so a half-close
    /// is read as leaving). Frees its slot now rather than at the next failed send.
    private func closedByPeer() {
        guard isAlive else { return }
        fail(SocketError("recv", .connectionReset, address: transport.peerAddress), message: "went away (it closed the connection)")
    }

    private func stillOpen() -> Bool {
        do {
            return try transport.isOpen()
        } catch {
            fail(error)
            return false
        }
    }

    private func send(_ chunk: StreamChunk) throws {
        let now = monotonicNanoseconds()
        let lagDeadline = now + UInt64(stallTimeoutMilliseconds) * 1_000_000
        try transport.send(chunk, stallTimeoutMilliseconds: stallTimeoutMilliseconds) {
            let d = self.abortDeadline.load(ordering: .relaxed)
            let t = monotonicNanoseconds()
            return (d != 0 && t >= d) || t >= lagDeadline
        }
        let done = monotonicNanoseconds()
        if done >= lagDeadline { throw SocketError("send", .timedOut, address: transport.peerAddress) }
        state.withLock { s in
            s.frames += 1
            s.bytes += chunk.bytes.count
            if chunk.isIDR { s.idrFrames += 1 }
            if chunk.captureTimeNanoseconds > 0 && done >= chunk.captureTimeNanoseconds {
                s.latency.add(done - chunk.captureTimeNanoseconds)
            }
        }
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
                message = d != 0 && monotonicNanoseconds() >= d ? "could not take the rest of the stream before the recording ended"
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
        queue.close()
    }

    /// Ends this peer: sends what is queued (giving up after `flushTimeout`), then closes.
    func finish(flushTimeoutSeconds: Double) -> Summary {
        beginFinish(flushTimeoutSeconds: flushTimeoutSeconds)
        return reap()
    }

    /// Lets the thread send what is queued and close, without waiting for it (see `reap`).
    func beginFinish(flushTimeoutSeconds: Double) {
        let deadline = monotonicNanoseconds() + UInt64(flushTimeoutSeconds * 1e9)
        // An earlier abortNow stands.
        _ = abortDeadline.compareExchange(expected: 0, desired: deadline, ordering: .relaxed)
        closing.store(true, ordering: .releasing)
        queue.close()
    }

    /// Gives up at once whatever the peer is waiting on (a send, a flush, a close): a second
    /// interrupt means stop waiting. What it already took stays sent.
    func abortNow() {
        abortDeadline.store(max(1, monotonicNanoseconds()), ordering: .relaxed)
        closing.store(true, ordering: .releasing)
        queue.close()
    }

    /// Stops a peer that is already dead (its thread ends by itself).
    func reap() -> Summary {
        closing.store(true, ordering: .releasing)
        queue.close()
        worker?.join()
        worker = nil
        return summary
    }

    var summary: Summary {
        state.withLock { s in
            Summary(frames: s.frames, bytes: s.bytes, idrFrames: s.idrFrames, skippedFrames: s.skippedFrames,
                    framesNotSent: s.framesNotSent, overflows: s.overflows, failure: s.failure, latency: s.latency)
        }
    }
}
