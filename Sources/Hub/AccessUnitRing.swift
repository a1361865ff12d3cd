/// How much recent stream a hub keeps: enough picture groups to reach `seconds` back from the
/// newest access unit (so a subscriber can start that far back at an IDR), never more than
/// `maximumBytes` or `maximumFrames`. A single picture group over either bound is let go until
/// the next IDR: memory stays bounded whatever the encoder does.
public struct RingBounds: Sendable, Equatable {
    public var seconds: Double
    public var maximumBytes: Int
    public var maximumFrames: Int

    public init(seconds: Double, maximumBytes: Int, maximumFrames: Int) {
        self.seconds = seconds.isFinite ? max(0, seconds) : 0
        self.maximumBytes = max(0, maximumBytes)
        self.maximumFrames = max(0, maximumFrames)
    }

    /// The newest picture group only (what a snapshot needs), within 64 MiB and 1200 frames.
    public static let newestPictureGroup = RingBounds(seconds: 0, maximumBytes: 64 << 20, maximumFrames: 1200)
}

/// The recent access units, always starting at an IDR (or empty), with the recording's audio packets
/// among them in the order published (an event clip's pre-roll has its sound). Chunks are retained, not
/// copied; storage is reserved once, so keeping them allocates nothing per frame.
struct AccessUnitRing {
    let bounds: RingBounds
    private(set) var chunks: [StreamChunk] = []
    private(set) var bytes = 0
    /// Access units held (audio packets are not frames: `maximumFrames` bounds these).
    private(set) var frames = 0
    /// The newest access unit's presentation time: the ring's "now".
    private var newestFrame: UInt64 = 0

    init(bounds: RingBounds) {
        self.bounds = bounds
        chunks.reserveCapacity(min(bounds.maximumFrames, 4096))
    }

    /// Keeps `chunk` (one more reference) if the ring can start or go on with it.
    mutating func append(_ chunk: StreamChunk) {
        guard bounds.maximumFrames > 0, chunk.isIDR || !chunks.isEmpty else { return }
        chunk.retain()
        chunks.append(chunk)
        bytes += chunk.bytes.count
        // Time moves on with the picture: sound comes later than the frames of its moment, and its
        // times must not look like a clock gone backwards (which lets go of everything before the newest IDR).
        if chunk.kind == .video {
            frames += 1
            newestFrame = chunk.presentationTimeNanoseconds
        }
        evict(newest: newestFrame)
    }

    private mutating func evict(newest: UInt64) {
        let horizon = UInt64(bounds.seconds * 1e9)
        // Whole picture groups go from the front while the next one still reaches back far enough.
        while let next = secondIDRIndex(), newest &- chunks[next].presentationTimeNanoseconds >= horizon
                || newest < chunks[next].presentationTimeNanoseconds {
            dropFront(next)
        }
        while bytes > bounds.maximumBytes || frames > bounds.maximumFrames {
            if let next = secondIDRIndex() { dropFront(next) } else { clear() }
        }
    }

    private func secondIDRIndex() -> Int? {
        guard chunks.count > 1 else { return nil }
        return chunks[1...].firstIndex(where: \.isIDR)
    }

    private mutating func dropFront(_ count: Int) {
        for chunk in chunks[..<count] {
            bytes -= chunk.bytes.count
            if chunk.kind == .video { frames -= 1 }
            chunk.release()
        }
        chunks.removeFirst(count)
    }

    /// Where a subscriber starting `seconds` back begins: the newest IDR at or before that time,
    /// or the oldest held if the ring does not reach so far (earlier is never possible, later never chosen).
    func startIndex(secondsBack seconds: Double) -> Int? {
        guard let newest = chunks.last(where: { $0.kind == .video })?.presentationTimeNanoseconds else { return nil }
        let back = UInt64((seconds.isFinite ? min(max(0, seconds), 86_400) : 0) * 1e9)
        return startIndex(atOrBefore: newest >= back ? newest - back : 0)
    }

    /// The newest IDR presented at or before `target`, or the oldest held if none is that early.
    func startIndex(atOrBefore target: UInt64) -> Int? {
        var start: Int?
        for (index, chunk) in chunks.enumerated() where chunk.isIDR {
            if start == nil || chunk.presentationTimeNanoseconds <= target { start = index }
            if chunk.presentationTimeNanoseconds > target { break }
        }
        return start
    }

    /// The index of the newest IDR held.
    var newestIDRIndex: Int? { chunks.lastIndex(where: \.isIDR) }

    mutating func clear() {
        for chunk in chunks { chunk.release() }
        chunks.removeAll(keepingCapacity: true)
        bytes = 0
        frames = 0
    }
}
