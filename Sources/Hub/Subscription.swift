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
public final class Subscription: Sendable {
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
    /// The hub rings it once it has offered the access unit to every subscriber (`ringIfDue`), so that
    /// subscribers sharing a doorbell (the RTSP clients of one event loop) are woken once a picture.
    public let doorbell: SubscriptionDoorbell?
    /// The hub it is in, for `cancel`.
    weak let hub: StreamHub?

    /// The queue and its flags, touched only with the monitor's lock held: the encoder thread gives,
    /// the subscriber's thread or task takes.
    private struct Queue {
        var ring: [StreamChunk?]
        var head = 0
        var count = 0
        let capacity: Int
        var waitingForIDR: Bool
        /// Sound that came while waiting for an IDR (retained), newest last: a packet of sound can come
        /// before the picture of its moment (the video encoder takes longer), so what belongs at or after
        /// the IDR is delivered after it rather than lost.
        var soundBeforeIDR: [StreamChunk] = []
        var ended = false
        var woken = false
        var stoppedTaking = false
        var counters = Counters()
        var waiter: CheckedContinuation<StreamChunk?, Never>?
        var waiterCancelled = false
        /// Something was queued since the hub last rang the doorbell.
        var doorbellDue = false

        var isFull: Bool { count == capacity }

        mutating func append(_ chunk: StreamChunk) {
            ring[(head + count) % capacity] = chunk
            count += 1
        }

        mutating func removeFirst() -> StreamChunk? {
            guard count > 0 else { return nil }
            let chunk = ring[head]
            ring[head] = nil
            head = (head + 1) % capacity
            count -= 1
            return chunk
        }

        mutating func releaseSoundBeforeIDR() {
            for chunk in soundBeforeIDR { chunk.release() }
            soundBeforeIDR.removeAll(keepingCapacity: true)
        }
    }
    private let queue: Monitor<Queue>
    /// About 10.9 s of sound at 48 kHz, as a file's muxer holds: an encoder's first IDR came more than
    /// 2.7 s after the sound began (the 128 this was) in the test VM starved by its host, and the
    /// file's sound then began late.
    static let mostSoundBeforeIDR = 512

    /// - Parameter backlog: access units from the hub's ring to begin with (already retained once each).
    init(name: String, policy: Policy, backlog: ArraySlice<StreamChunk>, takesAudio: Bool = false, hub: StreamHub? = nil,
         onCatchUp: CatchUpHandler? = nil, doorbell: SubscriptionDoorbell? = nil) {
        self.name = name
        self.onCatchUp = onCatchUp
        self.doorbell = doorbell
        self.policy = policy
        self.takesAudio = takesAudio
        self.hub = hub
        // Audio packets come between the frames (about 47 a second at 48 kHz, 94 at 96 kHz against
        // 30 frames): room for them, so the depth still means as much picture.
        let capacity = policy.depth * (takesAudio ? 4 : 1) + backlog.count
        var q = Queue(ring: Array(repeating: nil, count: capacity), capacity: capacity, waitingForIDR: backlog.isEmpty)
        if takesAudio { q.soundBeforeIDR.reserveCapacity(Self.mostSoundBeforeIDR) }
        for chunk in backlog { q.append(chunk) }
        q.counters.offered = backlog.count { $0.kind == .video }
        queue = Monitor(q)
    }

    deinit {
        queue.withLock { q in
            while let chunk = q.removeFirst() { chunk.release() }
            q.releaseSoundBeforeIDR()
        }
    }

    private enum Offered {
        case kept
        case letGo
        /// `.lossless` with a full queue: the encoder waits for room.
        case mustWait
        case caughtUp(dropped: Int, resumes: Bool, catchUps: Int)
    }

    /// Called by the hub on the encoder thread with one reference to `chunk`, which this takes over.
    /// Waits only under `.lossless` with a full queue.
    func offer(_ chunk: StreamChunk) {
        let frame = chunk.kind == .video ? 1 : 0
        let offered = queue.withLock { q -> Offered in
            q.counters.offered += frame
            if q.ended || q.stoppedTaking {
                q.counters.notTaken += frame
                return .letGo
            }
            if q.waitingForIDR {
                guard chunk.isIDR else {
                    // Sound before the picture starts (or resumes) waits: what belongs at or after the
                    // IDR follows it; the rest is let go then (both start at the IDR).
                    if chunk.kind == .audio {
                        if q.soundBeforeIDR.count == Self.mostSoundBeforeIDR { q.soundBeforeIDR.removeFirst().release() }
                        q.soundBeforeIDR.append(chunk)
                        return .kept
                    }
                    if q.counters.catchUps > 0 { q.counters.skipped += 1 } else { q.counters.beforeStart += 1 }
                    return .letGo
                }
                q.waitingForIDR = false
            }
            if q.isFull {
                if case .lossless = policy { return .mustWait }
                // Too slow: drop what waits and go on from this IDR, or wait for the next one. (Releasing
                // under the lock only takes the chunk pool's lock, which never calls back here.)
                var dropped = 0
                while let old = q.removeFirst() {
                    if old.kind == .video { dropped += 1 }
                    old.release()
                }
                let resumes = chunk.isIDR
                q.counters.skipped += dropped + (resumes ? 0 : frame)
                q.counters.catchUps += 1
                q.waitingForIDR = !resumes
                if resumes {
                    deliver(chunk, &q)
                    deliverSoundBeforeIDR(from: chunk.presentationTimeNanoseconds, &q)
                }
                return .caughtUp(dropped: dropped + (resumes ? 0 : frame), resumes: resumes, catchUps: q.counters.catchUps)
            }
            deliver(chunk, &q)
            if chunk.isIDR && !q.soundBeforeIDR.isEmpty { deliverSoundBeforeIDR(from: chunk.presentationTimeNanoseconds, &q) }
            return .kept
        }
        switch offered {
        case .kept: return
        case .letGo: chunk.release()
        case .caughtUp(let dropped, let resumes, let catchUps):
            if !resumes { chunk.release() }
            onCatchUp?(dropped, resumes, catchUps)
        case .mustWait:
            let kept = queue.wait(as: .givers, until: { !$0.isFull || $0.ended || $0.stoppedTaking }) { q -> Bool in
                if q.ended || q.stoppedTaking {
                    q.counters.notTaken += frame
                    return false
                }
                deliver(chunk, &q)
                if chunk.isIDR && !q.soundBeforeIDR.isEmpty { deliverSoundBeforeIDR(from: chunk.presentationTimeNanoseconds, &q) }
                return true
            }
            if !kept { chunk.release() }
        }
    }

    /// After the IDR at `start`: the sound that came before it but belongs at or after it, while there
    /// is room. Called with the lock held.
    private func deliverSoundBeforeIDR(from start: UInt64, _ q: inout Queue) {
        for i in q.soundBeforeIDR.indices {
            let chunk = q.soundBeforeIDR[i]
            if chunk.presentationTimeNanoseconds >= start && !q.isFull && !q.ended && !q.stoppedTaking {
                deliver(chunk, &q)
            } else {
                chunk.release()
            }
        }
        q.soundBeforeIDR.removeAll(keepingCapacity: true)
    }

    /// Hands `chunk` to a waiting task, or queues it. Called with the lock held; leaves it held.
    private func deliver(_ chunk: StreamChunk, _ q: inout Queue) {
        if let waiter = q.waiter {
            q.waiter = nil
            if chunk.kind == .video { q.counters.taken += 1 }
            waiter.resume(returning: chunk)
            return
        }
        q.append(chunk)
        queue.signal(.takers)
        if doorbell != nil { q.doorbellDue = true }
    }

    /// Rings the doorbell if something was queued since it last rang: called by the hub after an offer
    /// to every subscriber.
    func ringIfDue() {
        guard let doorbell else { return }
        let due = queue.withLock { q in
            defer { q.doorbellDue = false }
            return q.doorbellDue
        }
        if due { doorbell.ring() }
    }

    /// The next access unit (one reference, for the caller to release), waiting while there is
    /// none; nil once the stream has ended and everything queued was taken.
    public func next() -> StreamChunk? {
        queue.wait(as: .takers, until: { $0.count > 0 || $0.ended }) { q in take(&q) }
    }

    /// Like `next()`, but gives up after `timeoutNanoseconds`.
    public func next(timeoutNanoseconds: UInt64) -> Next {
        queue.wait(until: { $0.count > 0 || $0.ended }, nanoseconds: timeoutNanoseconds) { q, _ in
            if let chunk = take(&q) { return .chunk(chunk) }
            return q.ended ? .ended : .timedOut
        }
    }

    /// Like `next()`, but returns `.timedOut` once everything queued before a `wake()` has been taken:
    /// how a subscriber hears, in order with the stream, of something that is not an access unit (the
    /// camera went away after the last one).
    public func nextUnlessWoken() -> Next {
        queue.wait(as: .takers, until: { $0.count > 0 || $0.ended || $0.woken }) { q in
            if let chunk = take(&q) { return .chunk(chunk) }
            if q.ended { return .ended }
            q.woken = false
            return .timedOut
        }
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
        queue.withLock { q in
            q.woken = true
            queue.broadcast()
        }
    }

    /// The next access unit for async code (a WebSocket handler): suspends, never blocks a thread.
    /// Nil once the stream has ended, or when the calling task is cancelled. One task at a time.
    public func nextAsync() async -> StreamChunk? {
        queue.withLock { $0.waiterCancelled = false }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<StreamChunk?, Never>) in
                let answer = queue.withLock { q -> StreamChunk?? in
                    if let chunk = take(&q) { return .some(chunk) }
                    if q.ended || q.waiterCancelled { return .some(nil) }
                    q.waiter = continuation
                    return .none
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = queue.withLock { q -> CheckedContinuation<StreamChunk?, Never>? in
                q.waiterCancelled = true
                defer { q.waiter = nil }
                return q.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    /// The next access unit if one is queued, without waiting: `.timedOut` when none is, `.ended` once
    /// the stream has ended and everything queued was taken. For a consumer woken by its doorbell.
    public func poll() -> Next {
        queue.withLock { q in
            if let chunk = take(&q) { return .chunk(chunk) }
            return q.ended ? .ended : .timedOut
        }
    }

    /// Called with the lock held.
    private func take(_ q: inout Queue) -> StreamChunk? {
        guard let chunk = q.removeFirst() else { return nil }
        if chunk.kind == .video { q.counters.taken += 1 }
        queue.signal(.givers)
        return chunk
    }

    /// The subscriber takes nothing more (it failed or left): what is queued is dropped and later
    /// offers are only counted, until it is removed from the hub with `cancel()`.
    public func stopTaking() {
        queue.withLock { q in
            q.stoppedTaking = true
            while let chunk = q.removeFirst() {
                if chunk.kind == .video { q.counters.notTaken += 1 }
                chunk.release()
            }
            q.releaseSoundBeforeIDR()
            queue.broadcast()
        }
    }

    /// Leaves the hub: nothing more is offered; what is queued is dropped and `next` returns nil.
    public func cancel() {
        hub?.remove(self)
        stopTaking()
        end()
    }

    /// The stream ended (the hub closed, or `cancel`): `next` returns what is queued, then nil.
    func end() {
        let waiter = queue.withLock { q -> CheckedContinuation<StreamChunk?, Never>? in
            q.ended = true
            defer { q.waiter = nil }
            queue.broadcast()
            return q.waiter
        }
        waiter?.resume(returning: nil)
        doorbell?.ring()
    }

    public var snapshot: Counters { queue.withLock { $0.counters } }

    /// Access units queued now.
    public var queued: Int { queue.withLock { $0.count } }
}
