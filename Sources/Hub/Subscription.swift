import Glibc
import Threading

/// Told when a subscription has something to take (an access unit queued, or the end), so that one
/// consumer can serve many subscriptions without a task waiting on each (`Subscription.poll`). Rung on
/// the producer's thread with the subscription's lock held: it must return at once and never call back
/// into the subscription.
public protocol SubscriptionDoorbell: AnyObject, Sendable {
    func ring()
}

/// One subscriber's view of a hub's stream: a bounded queue of shared access units that the hub
/// fills on the encoder thread and the subscriber empties on its own thread (`next`) or task
/// (`nextAsync`). It always begins at an IDR (which carries SPS and PPS).
///
/// Policies:
/// - `.lossless(depth)`: when the queue is full the encoder waits (files and stdout: nothing may be lost;
///   the capture side drops and counts instead);
/// - `.skipToIDR(depth)`: when the queue is full, what waits is dropped and the subscriber resumes at the
///   next IDR, so a slow peer never holds up capture or gets a picture whose references it lacks.
/// Sendable by its invariant: the queue and its flags are touched only with `queueLock` held (StreamHubTests).
public final class Subscription: @unchecked Sendable {
    public enum Start: Sendable, Equatable {
        /// From the next IDR published (a file, a receiver that joins now).
        case nextIDR
        /// From the newest IDR the hub holds (a snapshot, a browser that wants a picture at once).
        case newestIDR
        /// From the newest IDR at least this many seconds back, as far as the hub's ring reaches.
        case preroll(seconds: Double)
        /// From the newest IDR presented at or before this time, as far as the hub's ring reaches (an
        /// event clip: its trigger frame's time minus the pre-roll).
        case atOrBefore(presentationNanoseconds: UInt64)
    }

    public enum Policy: Sendable, Equatable {
        case lossless(depth: Int)
        case skipToIDR(depth: Int)

        var depth: Int {
            switch self {
            case .lossless(let d), .skipToIDR(let d): return max(1, min(d, 1 << 16))
            }
        }
    }

    /// What happened to the access units offered to this subscriber: frames only (audio packets beside
    /// them are not counted, so "skipped" in a summary is frames).
    public struct Counters: Sendable, Equatable {
        /// Taken by the subscriber (`next`).
        public var taken = 0
        /// Offered before its first IDR (it joined mid-picture-group).
        public var beforeStart = 0
        /// Dropped to catch up at an IDR (`.skipToIDR`), and how many times that happened.
        public var skipped = 0
        public var catchUps = 0
        /// Offered after it stopped taking, or left queued when it ended.
        public var notTaken = 0
        /// Every access unit offered (its ring backlog included).
        public var offered = 0
    }

    public enum Next {
        case chunk(StreamChunk)
        case timedOut
        case ended
    }

    public let name: String
    public let policy: Policy
    /// Offered the recording's audio packets too (`StreamChunk.Kind.audio`), in the order they come.
    public let takesAudio: Bool
    public typealias CatchUpHandler = @Sendable (_ dropped: Int, _ resumedAtThisIDR: Bool, _ catchUps: Int) -> Void
    /// Called on the encoder thread after a catch-up: frames dropped, whether this IDR resumed it at once.
    /// Given at `subscribe`, before the hub can call it.
    public let onCatchUp: CatchUpHandler?
    /// Rung when an access unit is queued (not when one is handed to a waiting `nextAsync`) and at the end.
    public let doorbell: SubscriptionDoorbell?

    private var ring: [StreamChunk?]
    private var head = 0
    private var count = 0
    private var capacity: Int
    private var waitingForIDR: Bool
    /// Sound that came while waiting for an IDR (retained), newest last: a packet of sound can come
    /// before the picture of its moment (the video encoder takes longer), so what belongs at or after
    /// the IDR is delivered after it rather than lost.
    private var soundBeforeIDR: [StreamChunk] = []
    /// About 2.7 s of sound at 48 kHz: far more than any encoder's delay.
    static let mostSoundBeforeIDR = 128
    private var ended = false
    private var woken = false
    private var stoppedTaking = false
    private var counters = Counters()
    private var waiter: CheckedContinuation<StreamChunk?, Never>?
    private var waiterCancelled = false
    private let queueLock = QueueLock()
    weak var hub: StreamHub?

    /// - Parameter backlog: access units from the hub's ring to begin with (already retained once each).
    init(name: String, policy: Policy, backlog: ArraySlice<StreamChunk>, takesAudio: Bool = false,
         onCatchUp: CatchUpHandler? = nil, doorbell: SubscriptionDoorbell? = nil) {
        self.name = name
        self.onCatchUp = onCatchUp
        self.doorbell = doorbell
        self.policy = policy
        self.takesAudio = takesAudio
        // Audio packets come between the frames (about 47 a second at 48 kHz, 94 at 96 kHz against
        // 30 frames): room for them, so the depth still means as much picture.
        capacity = policy.depth * (takesAudio ? 4 : 1) + backlog.count
        ring = Array(repeating: nil, count: capacity)
        waitingForIDR = backlog.isEmpty
        if takesAudio { soundBeforeIDR.reserveCapacity(Self.mostSoundBeforeIDR) }
        for chunk in backlog { append(chunk) }
        counters.offered = backlog.count { $0.kind == .video }
    }

    deinit {
        for i in 0..<count { ring[(head + i) % capacity]?.release() }
        for chunk in soundBeforeIDR { chunk.release() }
    }

    private func lock() { queueLock.lock() }
    private func unlock() { queueLock.unlock() }

    private func append(_ chunk: StreamChunk) {
        ring[(head + count) % capacity] = chunk
        count += 1
    }

    private func removeFirst() -> StreamChunk? {
        guard count > 0 else { return nil }
        let chunk = ring[head]
        ring[head] = nil
        head = (head + 1) % capacity
        count -= 1
        return chunk
    }

    /// Called by the hub on the encoder thread with one reference to `chunk`, which this takes over.
    /// Waits only under `.lossless` with a full queue.
    func offer(_ chunk: StreamChunk) {
        lock()
        let frame = chunk.kind == .video ? 1 : 0
        counters.offered += frame
        if ended || stoppedTaking {
            counters.notTaken += frame
            unlock()
            chunk.release()
            return
        }
        if waitingForIDR {
            guard chunk.isIDR else {
                // Sound before the picture starts (or resumes) waits: what belongs at or after the
                // IDR follows it; the rest is let go then (both start at the IDR).
                if chunk.kind == .audio {
                    if soundBeforeIDR.count == Self.mostSoundBeforeIDR { soundBeforeIDR.removeFirst().release() }
                    soundBeforeIDR.append(chunk)
                    unlock()
                    return
                }
                if counters.catchUps > 0 { counters.skipped += 1 } else { counters.beforeStart += 1 }
                unlock()
                chunk.release()
                return
            }
            waitingForIDR = false
        }
        if case .lossless = policy {
            while count == capacity && !ended && !stoppedTaking { queueLock.waitNotFull() }
            if ended || stoppedTaking {
                counters.notTaken += frame
                unlock()
                chunk.release()
                return
            }
        } else if count == capacity {
            // Too slow: drop what waits and go on from this IDR, or wait for the next one. (Releasing
            // under the lock only takes the chunk pool's lock, which never calls back here.)
            var dropped = 0
            while let old = removeFirst() {
                if old.kind == .video { dropped += 1 }
                old.release()
            }
            let resumes = chunk.isIDR
            counters.skipped += dropped + (resumes ? 0 : frame)
            counters.catchUps += 1
            waitingForIDR = !resumes
            let catchUps = counters.catchUps
            if resumes {
                deliver(chunk)
                deliverSoundBeforeIDR(from: chunk.presentationTimeNanoseconds)
            }
            unlock()
            if !resumes { chunk.release() }
            onCatchUp?(dropped + (resumes ? 0 : frame), resumes, catchUps)
            return
        }
        deliver(chunk)
        if chunk.isIDR && !soundBeforeIDR.isEmpty { deliverSoundBeforeIDR(from: chunk.presentationTimeNanoseconds) }
        unlock()
    }

    /// After the IDR at `start`: the sound that came before it but belongs at or after it, while there
    /// is room. Called with the lock held.
    private func deliverSoundBeforeIDR(from start: UInt64) {
        for chunk in soundBeforeIDR {
            if chunk.presentationTimeNanoseconds >= start && count < capacity && !ended && !stoppedTaking {
                deliver(chunk)
            } else {
                chunk.release()
            }
        }
        soundBeforeIDR.removeAll(keepingCapacity: true)
    }

    /// Called with the lock held.
    private func releaseSoundBeforeIDR() {
        for chunk in soundBeforeIDR { chunk.release() }
        soundBeforeIDR.removeAll(keepingCapacity: true)
    }

    /// Hands `chunk` to a waiting task, or queues it. Called with the lock held; leaves it held.
    private func deliver(_ chunk: StreamChunk) {
        if let waiter {
            self.waiter = nil
            if chunk.kind == .video { counters.taken += 1 }
            waiter.resume(returning: chunk)
            return
        }
        append(chunk)
        queueLock.signalNotEmpty()
        doorbell?.ring()
    }

    /// The next access unit (one reference, for the caller to release), waiting while there is
    /// none; nil once the stream has ended and everything queued was taken.
    public func next() -> StreamChunk? {
        lock()
        defer { unlock() }
        while count == 0 && !ended { queueLock.waitNotEmpty() }
        return take()
    }

    /// Like `next()`, but gives up after `timeoutNanoseconds`.
    public func next(timeoutNanoseconds: UInt64) -> Next {
        lock()
        defer { unlock() }
        if count == 0 && !ended {
            var deadline = QueueLock.deadline(afterNanoseconds: timeoutNanoseconds)
            while count == 0 && !ended {
                if !queueLock.waitNotEmpty(until: &deadline) { break }
            }
        }
        if let chunk = take() { return .chunk(chunk) }
        return ended ? .ended : .timedOut
    }

    /// Like `next()`, but returns `.timedOut` once everything queued before a `wake()` has been taken:
    /// how a subscriber hears, in order with the stream, of something that is not an access unit (the
    /// camera went away after the last one).
    public func nextUnlessWoken() -> Next {
        lock()
        defer { unlock() }
        while count == 0 && !ended && !woken { queueLock.waitNotEmpty() }
        if let chunk = take() { return .chunk(chunk) }
        if ended { return .ended }
        woken = false
        return .timedOut
    }

    /// A writer thread's loop: every access unit until the stream ends goes to `body` (and back to its
    /// pool after it), and `woken` runs where a `wake()` falls in the stream.
    public func drain(woken: () -> Void, _ body: (StreamChunk) -> Void) {
        while true {
            switch nextUnlessWoken() {
            case .chunk(let chunk):
                defer { chunk.release() }
                body(chunk)
            case .timedOut: woken()
            case .ended: return
            }
        }
    }

    /// Wakes the thread in `nextUnlessWoken()` once what is queued now has been taken.
    public func wake() {
        lock()
        woken = true
        queueLock.broadcast()
        unlock()
    }

    /// The next access unit for async code (a WebSocket handler): suspends, never blocks a thread.
    /// Nil once the stream has ended, or when the calling task is cancelled. One task at a time.
    public func nextAsync() async -> StreamChunk? {
        lock()
        waiterCancelled = false
        unlock()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<StreamChunk?, Never>) in
                lock()
                if let chunk = take() {
                    unlock()
                    continuation.resume(returning: chunk)
                } else if ended || waiterCancelled {
                    unlock()
                    continuation.resume(returning: nil)
                } else {
                    waiter = continuation
                    unlock()
                }
            }
        } onCancel: {
            lock()
            waiterCancelled = true
            let waiter = self.waiter
            self.waiter = nil
            unlock()
            waiter?.resume(returning: nil)
        }
    }

    /// The next access unit if one is queued, without waiting: `.timedOut` when none is, `.ended` once
    /// the stream has ended and everything queued was taken. For a consumer woken by its doorbell.
    public func poll() -> Next {
        lock()
        defer { unlock() }
        if let chunk = take() { return .chunk(chunk) }
        return ended ? .ended : .timedOut
    }

    /// Called with the lock held.
    private func take() -> StreamChunk? {
        guard let chunk = removeFirst() else { return nil }
        if chunk.kind == .video { counters.taken += 1 }
        queueLock.signalNotFull()
        return chunk
    }

    /// The subscriber takes nothing more (it failed or left): what is queued is dropped and later
    /// offers are only counted, until it is removed from the hub with `cancel()`.
    public func stopTaking() {
        lock()
        stoppedTaking = true
        while let chunk = removeFirst() {
            if chunk.kind == .video { counters.notTaken += 1 }
            chunk.release()
        }
        releaseSoundBeforeIDR()
        queueLock.broadcast()
        unlock()
    }

    /// Leaves the hub: nothing more is offered; what is queued is dropped and `next` returns nil.
    public func cancel() {
        hub?.remove(self)
        stopTaking()
        end()
    }

    /// The stream ended (the hub closed, or `cancel`): `next` returns what is queued, then nil.
    func end() {
        lock()
        ended = true
        let waiter = self.waiter
        self.waiter = nil
        queueLock.broadcast()
        unlock()
        waiter?.resume(returning: nil)
        doorbell?.ring()
    }

    public var snapshot: Counters {
        lock()
        defer { unlock() }
        return counters
    }

    /// Access units queued now.
    public var queued: Int {
        lock()
        defer { unlock() }
        return count
    }
}
