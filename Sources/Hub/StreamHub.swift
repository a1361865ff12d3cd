import Synchronization

/// The seam between an encoder and everything that takes its stream. The recorder publishes each
/// access unit once; files, stdout, TCP receivers, media-server sessions, browsers and snapshots
/// subscribe and leave, each with its own bounded queue and policy, and none keeps IDR logic of
/// its own: a subscription starts at an IDR (the next one, the newest held, or one a pre-roll back),
/// and a slow one catches up at an IDR here.
///
/// The hub holds the recent stream (`RingBounds`: whole picture groups from an IDR), and every IDR
/// request goes through its `KeyframeGate`. Publishing allocates nothing per frame: subscribers are
/// read as a copy-on-write array that changes only when one joins or leaves.
public final class StreamHub: Sendable {
    public let label: String
    /// Every IDR request of this recording, rate-limited (shared by the hubs of one capture).
    public let keyframes: KeyframeGate

    private struct State {
        var subscribers: [Subscription] = []
        var ring: AccessUnitRing
        var closed = false
        var published = 0
        var newest: PublishedFrame?
    }

    /// The newest access unit published: which frame, and when it is presented.
    public struct PublishedFrame: Sendable, Equatable {
        public var sequence: UInt64
        public var presentationTimeNanoseconds: UInt64
        public init(sequence: UInt64, presentationTimeNanoseconds: UInt64) {
            self.sequence = sequence
            self.presentationTimeNanoseconds = presentationTimeNanoseconds
        }
    }
    private let state: Mutex<State>
    private let captured = Mutex<PublishedFrame?>(nil)

    public init(label: String, ring: RingBounds = RingBounds(seconds: 0, maximumBytes: 0, maximumFrames: 0),
                keyframes: KeyframeGate) {
        self.label = label
        self.keyframes = keyframes
        state = Mutex(State(ring: AccessUnitRing(bounds: ring)))
    }

    /// Hands one access unit to every subscriber; takes over one reference to `chunk`. Called on
    /// the encoder thread; waits only for a `.lossless` subscriber whose queue is full.
    public func publish(_ chunk: StreamChunk) {
        if chunk.kind == .audio { return publishAudio(chunk) }
        let subscribers = state.withLock { s -> [Subscription] in
            guard !s.closed else { return [] }
            s.ring.append(chunk)
            s.published += 1
            s.newest = PublishedFrame(sequence: chunk.sequence, presentationTimeNanoseconds: chunk.presentationTimeNanoseconds)
            return s.subscribers
        }
        if !subscribers.isEmpty { chunk.retain(subscribers.count) }
        for subscriber in subscribers { subscriber.offer(chunk) }
        chunk.release()
        for subscriber in subscribers { subscriber.ringIfDue() }
    }

    /// An audio packet (a producer beside the encoder: the recording's sound) for the subscribers that
    /// take audio, on the audio thread; takes over one reference. It is no frame: the newest frame and
    /// the published count are the video's; the ring keeps it beside the frames. A subscriber still
    /// waiting for its first IDR drops it, so its sound starts with its picture.
    private func publishAudio(_ chunk: StreamChunk) {
        // The subscriber list is read as a copy-on-write array, as for frames: nothing allocated per packet.
        let subscribers = state.withLock { s -> [Subscription] in
            guard !s.closed else { return [] }
            // Kept for a pre-roll with its sound (from the ring's first IDR on).
            s.ring.append(chunk)
            return s.subscribers
        }
        var takers = 0
        for subscriber in subscribers where subscriber.takesAudio { takers += 1 }
        if takers > 0 { chunk.retain(takers) }
        for subscriber in subscribers where subscriber.takesAudio { subscriber.offer(chunk) }
        chunk.release()
        for subscriber in subscribers where subscriber.takesAudio { subscriber.ringIfDue() }
    }

    /// A new subscriber. Nil once the hub has closed (the recording is over).
    /// - Parameter askForIDR: ask the gate for an IDR now, so a `.nextIDR` subscriber starts within
    ///   about a frame rather than a picture group (rate-limited).
    /// - Parameter withAudio: also offer the recording's audio packets (containers that carry sound).
    /// - Parameter doorbell: rung when the subscription has something to take (see `Subscription.poll`).
    public func subscribe(_ name: String, from start: Subscription.Start, policy: Subscription.Policy,
                          askForIDR: Bool = false, withAudio: Bool = false,
                          onCatchUp: Subscription.CatchUpHandler? = nil, doorbell: SubscriptionDoorbell? = nil) -> Subscription? {
        var joinedAfter: UInt64?
        let subscription: Subscription? = state.withLock { s in
            guard !s.closed else { return nil }
            var backlog: ArraySlice<StreamChunk> = []
            let begin: Int?
            switch start {
            case .nextIDR: begin = nil
            case .newestIDR: begin = s.ring.newestIDRIndex
            case .preroll(let seconds): begin = s.ring.startIndex(secondsBack: seconds)
            case .atOrBefore(let time): begin = s.ring.startIndex(atOrBefore: time)
            }
            if let begin {
                backlog = withAudio ? s.ring.chunks[begin...] : ArraySlice(s.ring.chunks[begin...].filter { $0.kind == .video })
                for chunk in backlog { chunk.retain() }
            }
            let subscription = Subscription(name: name, policy: policy, backlog: backlog, takesAudio: withAudio,
                                            hub: self, onCatchUp: onCatchUp, doorbell: doorbell)
            s.subscribers.append(subscription)
            joinedAfter = s.newest?.sequence
            return subscription
        }
        if subscription != nil && askForIDR { keyframes.requestFirstIDR(joinedAfter: joinedAfter) }
        return subscription
    }

    /// Asks the gate for an IDR for a subscriber that has joined and waits for its first one (or a
    /// file that rotates at its next IDR): nothing is asked when the recorder has already made a
    /// frame not yet published here an IDR (see `KeyframeGate.FirstIDR`).
    @discardableResult
    public func requestIDR() -> KeyframeGate.FirstIDR {
        keyframes.requestFirstIDR(joinedAfter: state.withLock { $0.newest?.sequence })
    }

    func remove(_ subscription: Subscription) {
        state.withLock { s in s.subscribers.removeAll { $0 === subscription } }
    }

    /// The end of the stream: every subscriber gets what is queued, then nil; the ring is let go.
    public func close() {
        let subscribers = state.withLock { s -> [Subscription] in
            s.closed = true
            s.ring.clear()
            defer { s.subscribers = [] }
            return s.subscribers
        }
        for subscriber in subscribers { subscriber.end() }
    }

    /// The access units from the newest IDR held to the newest (copies), and the newest one's frame
    /// number: enough to decode the newest picture. Nil before the first IDR or when the ring keeps nothing.
    public func newestPictureGroup() -> (accessUnits: [[UInt8]], sequence: UInt64)? {
        // Retained under the lock, copied outside it: a snapshot never holds up the encoder's publish.
        let held: ArraySlice<StreamChunk>? = state.withLock { s in
            guard let begin = s.ring.newestIDRIndex else { return nil }
            let group = s.ring.chunks[begin...]
            for chunk in group { chunk.retain() }
            return group
        }
        guard let held else { return nil }
        defer { for chunk in held { chunk.release() } }
        let pictures = held.filter { $0.kind == .video }
        guard let last = pictures.last else { return nil }
        return (pictures.map(\.bytes), last.sequence)
    }

    /// A copy of the IDR access unit (with its parameter sets) that a `.atOrBefore(time)` subscriber
    /// starts at, and its frame number: the first picture of a clip that starts there.
    public func keyframe(atOrBefore time: UInt64) -> (accessUnit: [UInt8], sequence: UInt64)? {
        let held: StreamChunk? = state.withLock { s in
            guard let begin = s.ring.startIndex(atOrBefore: time) else { return nil }
            let chunk = s.ring.chunks[begin]
            chunk.retain()
            return chunk
        }
        guard let held else { return nil }
        defer { held.release() }
        // A copy of its own: sharing the chunk's storage would make the encoder copy it when it reuses the chunk.
        return (held.bytes.withUnsafeBufferPointer { Array($0) }, held.sequence)
    }

    /// The newest access unit published so far; nil before the first.
    public var newest: PublishedFrame? { state.withLock { $0.newest } }
    /// The newest frame captured for this stream, encoded or not: the camera's "now". Behind a starved
    /// encoder the newest published lags it by up to the pool's stall headroom (seconds).
    public var newestCaptured: PublishedFrame? { captured.withLock { $0 } }

    /// Notes a frame as captured, before it is encoded (the recorder's capture thread, once a frame). A lock
    /// of its own: the capture thread never waits on the subscribers' state the encoder's thread holds.
    public func noteCaptured(_ frame: PublishedFrame) {
        captured.withLock { $0 = frame }
    }
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
    /// Access units published so far.
    public var publishedCount: Int { state.withLock { $0.published } }
    /// The stream has ended: nothing more is published, and `subscribe` returns nil.
    public var isClosed: Bool { state.withLock { $0.closed } }
    /// Access units and bytes the ring holds now.
    public var held: (frames: Int, bytes: Int) { state.withLock { ($0.ring.frames, $0.ring.bytes) } }
}
