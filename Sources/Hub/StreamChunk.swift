import Synchronization

/// One access unit of the finished stream (4-byte start codes, parameter sets
/// ahead of IDRs), or one encoded audio packet beside it, shared by every output that sends it.
///
/// Chunks are reference counted by hand and go back to their pool when the last
/// output is done, so steady-state recording reuses the same byte storage.
/// Sendable by its invariant: written by its producer before it is shared, read-only while held (StreamHubTests).
public final class StreamChunk: @unchecked Sendable {
    /// The stream bytes; capacity is kept across reuse. Read-only once published: every subscriber
    /// reads the same storage from its own thread, so a mutating access (even `withUnsafeMutableBytes`,
    /// which may copy and store a new buffer) would race with the readers. The producer writes through `fill`.
    public private(set) var bytes: [UInt8] = []
    /// What the bytes are: an access unit of the hub's video, or one packet of the recording's sound
    /// (offered only to subscribers that take audio; never an IDR, never in the ring).
    public var kind = Kind.video
    public enum Kind: Sendable { case video, audio }
    public var isIDR = false
    /// Source sequence number of the frame in this chunk.
    public var sequence: UInt64 = 0
    public var presentationTimeNanoseconds: UInt64 = 0
    public var captureTimeNanoseconds: UInt64 = 0
    /// Audio: how long the packet plays (its samples at the track's rate); 0 for video.
    public var durationNanoseconds: UInt64 = 0

    private let references = Atomic<Int>(0)
    private unowned let pool: StreamChunkPool

    init(pool: StreamChunkPool) {
        self.pool = pool
    }

    /// Writes the access unit: only by its producer, before the chunk is published or shared.
    public func fill<R>(_ body: (inout [UInt8]) throws -> R) rethrows -> R {
        try body(&bytes)
    }

    /// Adds `count` holders; called before the chunk is handed to outputs.
    public func retain(_ count: Int = 1) {
        references.add(count, ordering: .relaxed)
    }

    /// Drops one holder; the last one returns the chunk to its pool.
    public func release() {
        if references.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            pool.recycle(self)
        }
    }
}

/// Free chunks, grown only up to the most ever in flight at once.
public final class StreamChunkPool: Sendable {
    private let free = Mutex<[StreamChunk]>([])
    /// Chunks ever created; flat in steady state.
    public var allocatedCount: Int { allocated.load(ordering: .relaxed) }
    private let allocated = Atomic<Int>(0)

    public init() {}

    /// A chunk with no holders and empty bytes (capacity kept).
    public func take() -> StreamChunk {
        if let chunk = free.withLock({ $0.popLast() }) {
            chunk.fill { $0.removeAll(keepingCapacity: true) }
            return chunk
        }
        allocated.add(1, ordering: .relaxed)
        return StreamChunk(pool: self)
    }

    func recycle(_ chunk: StreamChunk) {
        free.withLock { $0.append(chunk) }
    }
}
