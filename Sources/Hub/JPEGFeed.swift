import Frames
import Synchronization

/// The recording's pictures as JPEGs: a stream of their own beside the hubs' access units, for
/// `/stream.mjpg` and an MJPEG camera's `/snapshot.jpg`. The producer is the MJPEG camera itself (its
/// own JPEGs, every frame) or, for a raw camera or the test pattern, one JPEG encode of a frame that
/// some reader is due for (`wants`), shared by every reader.
///
/// Readers come and go. Each holds at most the one picture it is sending and, when it asks again, gets
/// the newest picture it is due for: a queue of one where the newest wins, so a reader that stops
/// reading costs one slot and never holds up the producer, which never waits. Pictures live in slots
/// made up front (one per reader, one for the newest, one being filled) whose memory grows to the
/// largest JPEG and is reused: publishing allocates nothing once it has.
public final class JPEGFeed: JPEGPictureSink, Sendable {
    /// One JPEG, shared by every reader that takes it; read it only while holding it (between `next`
    /// and the reader's next call or `leave`).
    /// A pooled buffer, like `PixelBuffer`: Sendable by its invariant, filled by the producer only while no
    /// reader holds it (`holders`, under the feed's lock), read by readers only while they hold it (JPEGFeedTests).
    public final class Picture: @unchecked Sendable {
        private var storage = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        public fileprivate(set) var count = 0
        /// Source frame number, and the frame's presentation time.
        public fileprivate(set) var sequence: UInt64 = 0
        public fileprivate(set) var presentationTimeNanoseconds: UInt64 = 0
        /// Readers holding it, and the producer while it fills it; guarded by the feed's lock.
        fileprivate var holders = 0

        public var jpeg: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: storage.baseAddress, count: count) }

        /// Copies `bytes` in; grows (allocates) only for a JPEG larger than any before.
        fileprivate func fill(_ bytes: UnsafeRawBufferPointer) {
            if bytes.count > storage.count {
                storage.deallocate()
                // A quarter more, so a camera's JPEGs growing by a few bytes don't reallocate every frame.
                storage = .allocate(byteCount: bytes.count + bytes.count / 4, alignment: 16)
            }
            if let base = bytes.baseAddress { storage.baseAddress!.copyMemory(from: base, byteCount: bytes.count) }
            count = bytes.count
        }

        deinit { storage.deallocate() }
    }

    /// One viewer: takes pictures at its own rate through `next`. What it has taken is the feed's,
    /// under the feed's lock (`ReaderState`).
    public final class Reader: Sendable {
        fileprivate unowned let feed: JPEGFeed

        fileprivate init(feed: JPEGFeed) {
            self.feed = feed
        }

        /// The newest picture it is due for, once there is one (the one it held goes back); nil when
        /// the feed has ended or the reader has left (or its task was cancelled).
        public func next() async -> Picture? {
            let picture = await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    feed.ask(self, continuation)
                }
            } onCancel: {
                feed.leave(self)
            }
            // The producer filled the picture before handing it over under the lock and resuming this
            // wait, which orders it; but ThreadSanitizer sees no edge from a continuation's resume to
            // the task it resumes (Swift 6.3's runtime: JPEGFeedTests reported the fill against the
            // reader's read on every run), so the reader takes the lock once before it reads. One
            // uncontended lock a picture a reader.
            if picture != nil { feed.synchronizeWithProducer() }
            return picture
        }
    }

    /// A reader's place in the feed, under its lock.
    private struct ReaderState {
        let reader: Reader
        /// Time between two pictures it takes (0: every picture), on a schedule of its own: the picture
        /// due next is the first at or after `nextDue` (less an eighth of the interval, for a camera's
        /// jitter), so it gets its rate on average whatever the source's rate.
        let interval: UInt64
        var nextDue: UInt64?
        var lastSequence: UInt64?
        var held: Picture?
        var waiting: CheckedContinuation<Picture?, Never>?

        /// Whether a picture presented at `time` is due for this reader.
        func isDue(_ time: UInt64) -> Bool {
            guard let nextDue else { return true }
            return time &+ interval / 8 >= nextDue
        }
    }

    private struct State {
        var slots: [Picture]
        var newest: Picture?
        /// The readers that have joined and not left.
        var readers: [ReaderState] = []
        var ended = false
        var published = 0
        /// Pictures the producer had no free slot for (cannot happen with the slots counted above).
        var noSlot = 0
    }
    private let state: Mutex<State>
    /// Most readers at once.
    public let maximumReaders: Int
    /// The producer publishes every frame (an MJPEG camera) rather than only those `wants` says.
    public let everyFrame: Bool

    public init(maximumReaders: Int = 32, everyFrame: Bool) {
        self.maximumReaders = maximumReaders
        self.everyFrame = everyFrame
        state = Mutex(State(slots: (0..<(maximumReaders + 2)).map { _ in Picture() }))
    }

    /// A reader that wants at most `framesPerSecond` pictures a second (nil: every one); nil when
    /// `maximumReaders` are reading or the feed has ended.
    public func join(framesPerSecond: Double?) -> Reader? {
        let interval = framesPerSecond.map { UInt64(1e9 / $0) } ?? 0
        let reader = Reader(feed: self)
        return state.withLock { s in
            guard !s.ended, s.readers.count < maximumReaders else { return nil }
            s.readers.append(ReaderState(reader: reader, interval: interval))
            return reader
        }
    }

    /// The reader is done: the picture it held goes back, a wait ends with nil.
    public func leave(_ reader: Reader) {
        let waiting = state.withLock { s -> CheckedContinuation<Picture?, Never>? in
            guard let index = s.readers.firstIndex(where: { $0.reader === reader }) else { return nil }
            let gone = s.readers.remove(at: index)
            if let held = gone.held { held.holders -= 1 }
            return gone.waiting
        }
        waiting?.resume(returning: nil)
    }

    /// Takes and drops the lock: what was done under it before is visible after (see `Reader.next`).
    fileprivate func synchronizeWithProducer() { state.withLock { _ in } }

    public var readerCount: Int { state.withLock { $0.readers.count } }
    /// Pictures published so far.
    public var publishedCount: Int { state.withLock { $0.published } }

    /// Whether a frame presented at `presentationTimeNanoseconds` is worth a JPEG: some reader is due for it.
    public func wants(presentationTimeNanoseconds time: UInt64) -> Bool {
        state.withLock { s in !s.ended && s.readers.contains { $0.isDue(time) } }
    }

    /// The newest picture's bytes and frame number (for `/snapshot.jpg`); nil before the first.
    public func newestJPEG() -> (jpeg: [UInt8], sequence: UInt64)? {
        state.withLock { s in s.newest.map { (Array($0.jpeg), $0.sequence) } }
    }

    /// A new newest picture, copied in (a free slot's memory reused); the readers waiting that are due
    /// for it get it. Called on the producer's thread; never waits for a reader.
    public func publish(jpeg: UnsafeRawBufferPointer, sequence: UInt64, presentationTimeNanoseconds: UInt64) {
        let slot = state.withLock { s -> Picture? in
            guard !s.ended, let free = s.slots.first(where: { $0.holders == 0 && $0 !== s.newest }) else {
                s.noSlot += 1
                return nil
            }
            free.holders = 1
            return free
        }
        guard let slot else { return }
        // Outside the lock: no reader can take a slot that is not the newest.
        slot.fill(jpeg)
        slot.sequence = sequence
        slot.presentationTimeNanoseconds = presentationTimeNanoseconds
        // At most `maximumReaders` continuations, on the stack of this call: no array per picture.
        state.withLock { s in
            slot.holders -= 1
            s.newest = slot
            s.published += 1
        }
        while let (continuation, picture) = state.withLock({ s in handOutOne(&s) }) {
            continuation.resume(returning: picture)
        }
    }

    /// One waiting reader due for the newest picture, given it (so resumed outside the lock).
    private func handOutOne(_ s: inout State) -> (CheckedContinuation<Picture?, Never>, Picture)? {
        guard let newest = s.newest else { return nil }
        for i in s.readers.indices where s.readers[i].waiting != nil && take(newest, for: &s.readers[i]) {
            defer { s.readers[i].waiting = nil }
            return (s.readers[i].waiting!, newest)
        }
        return nil
    }

    /// Gives `picture` to `reader` if it is new to it and due; under the lock.
    private func take(_ picture: Picture, for reader: inout ReaderState) -> Bool {
        if let last = reader.lastSequence, picture.sequence <= last { return false }
        guard reader.isDue(picture.presentationTimeNanoseconds) else { return false }
        picture.holders += 1
        reader.held = picture
        reader.lastSequence = picture.sequence
        // On schedule; a reader that fell behind (a slow connection) starts a new one from this picture.
        let time = picture.presentationTimeNanoseconds
        let base = reader.nextDue.map { $0 &+ reader.interval > time ? $0 : time } ?? time
        reader.nextDue = base &+ reader.interval
        return true
    }

    fileprivate func ask(_ reader: Reader, _ continuation: CheckedContinuation<Picture?, Never>) {
        let answer = state.withLock { s -> Picture?? in
            // A reader that left (or was never let in) gets nil.
            guard let i = s.readers.firstIndex(where: { $0.reader === reader }) else { return .some(nil) }
            if let held = s.readers[i].held { held.holders -= 1 }
            s.readers[i].held = nil
            if s.ended { return .some(nil) }
            if let newest = s.newest, take(newest, for: &s.readers[i]) { return .some(newest) }
            s.readers[i].waiting = continuation
            return .none
        }
        if let answer { continuation.resume(returning: answer) }
    }

    /// No more pictures: every reader's wait ends with nil.
    public func close() {
        let waiting = state.withLock { s -> [CheckedContinuation<Picture?, Never>] in
            s.ended = true
            defer { for i in s.readers.indices { s.readers[i].waiting = nil } }
            return s.readers.compactMap(\.waiting)
        }
        for continuation in waiting { continuation.resume(returning: nil) }
    }
}
