import Glibc
import NetStream
import Pipeline
import Synchronization

/// Sends the stream to one TCP peer from a thread of its own, behind a bounded queue.
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
final class TCPPeerSender: @unchecked Sendable {
    let connection: TCPConnection
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
        var ignoredInputBytes = 0
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

    /// Put a camrec timing note (TimestampSEI) at the head of every access unit.
    private let sendsTimingSEI: Bool

    init(connection: TCPConnection, name: String, queueCapacity: Int, stallTimeoutSeconds: Double,
         sendsTimingSEI: Bool = true, log: @escaping NetworkEventLog) {
        self.connection = connection
        self.sendsTimingSEI = sendsTimingSEI
        self.name = name
        self.log = log
        queue = BlockingQueue(capacity: max(2, queueCapacity))
        stallTimeoutMilliseconds = Int(stallTimeoutSeconds * 1000)
        connection.limitSendBuffer(bytes: 256 * 1024)
    }

    var isAlive: Bool { state.withLock { $0.alive } }
    /// Its thread has returned: `reap` won't block.
    var hasEnded: Bool { threadEnded.load(ordering: .acquiring) }

    func start() {
        let worker = WorkerThread(name: "tcp-\(name)") { [self] in self.run() }
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
        var input = [UInt8](repeating: 0, count: 4096)
        var note: [UInt8] = []
        note.reserveCapacity(96)
        var inputClosed = false
        while true {
            guard let chunk = queue.pop(timeoutNanoseconds: 200_000_000) else {
                if closing.load(ordering: .acquiring) && queue.isEmpty { break }
                if !inputClosed { inputClosed = !drainInput(&input) }
                if inputClosed { closedByPeer() }
                if !isAlive { break }
                continue
            }
            if !isAlive {
                chunk.release()
                state.withLock { $0.framesNotSent += 1 }
                continue
            }
            do {
                try send(chunk, note: &note)
                chunk.release()
            } catch {
                chunk.release()
                state.withLock { $0.framesNotSent += 1 }
                fail(error)
            }
            if !inputClosed { inputClosed = !drainInput(&input) }
            if inputClosed { closedByPeer() }
        }
        var unsent = 0
        queue.drain { $0.release(); unsent += 1 }
        if unsent > 0 { state.withLock { $0.framesNotSent += unsent } }
        connection.shutdownWrite()
        connection.close()
        threadEnded.store(true, ordering: .releasing)
    }

    /// The receiver closed its side: it is gone (a receiver has nothing to say, so a
    /// half-close is read as leaving). Frees its slot now rather than at the next failed send.
    private func closedByPeer() {
        guard isAlive else { return }
        fail(SocketError("recv", .connectionReset, address: connection.peerAddress), message: "went away (it closed the connection)")
    }

    private func send(_ chunk: StreamChunk, note: inout [UInt8]) throws {
        let now = monotonicNanoseconds()
        let lagDeadline = now + UInt64(stallTimeoutMilliseconds) * 1_000_000
        note.removeAll(keepingCapacity: true)
        if sendsTimingSEI { TimestampSEI(captureTimeNanoseconds: chunk.captureTimeNanoseconds, sendTimeNanoseconds: now,
                     sequence: chunk.sequence, accessUnitByteCount: UInt64(chunk.bytes.count)).appendAnnexB(to: &note) }
        try chunk.bytes.withUnsafeBytes { bytes in
            let split = TimestampSEI.insertionOffset(in: bytes)
            try note.withUnsafeBytes { noteBytes in
                try connection.send([UnsafeRawBufferPointer(rebasing: bytes[..<split]), noteBytes,
                                     UnsafeRawBufferPointer(rebasing: bytes[split...])],
                                    stallTimeoutMilliseconds: stallTimeoutMilliseconds) {
                    let d = self.abortDeadline.load(ordering: .relaxed)
                    let t = monotonicNanoseconds()
                    return (d != 0 && t >= d) || t >= lagDeadline
                }
            }
        }
        let done = monotonicNanoseconds()
        if done >= lagDeadline { throw SocketError("send", .timedOut, address: connection.peerAddress) }
        state.withLock { s in
            s.frames += 1
            s.bytes += chunk.bytes.count
            if chunk.isIDR { s.idrFrames += 1 }
            if chunk.captureTimeNanoseconds > 0 && done >= chunk.captureTimeNanoseconds {
                s.latency.add(done - chunk.captureTimeNanoseconds)
            }
        }
    }

    /// Reads and discards what the peer sends (receivers are not expected to send);
    /// false once it has closed its side.
    private func drainInput(_ buffer: inout [UInt8]) -> Bool {
        while true {
            let result: TCPConnection.ReceiveResult
            do {
                result = try buffer.withUnsafeMutableBytes { try connection.receive(into: $0, timeoutMilliseconds: 0) }
            } catch {
                fail(error)
                return false
            }
            switch result {
            case .timedOut:
                return true
            case .endOfStream:
                return false
            case .bytes(let n):
                let first = state.withLock { s -> Bool in
                    defer { s.ignoredInputBytes += n }
                    return s.ignoredInputBytes == 0
                }
                if first { log("\(name): ignoring bytes the receiver sends (camrec only sends H.264 on this connection)") }
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
        abortDeadline.store(monotonicNanoseconds() + UInt64(flushTimeoutSeconds * 1e9), ordering: .relaxed)
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
