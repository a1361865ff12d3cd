import Outputs

/// The access units from the newest IDR on, held for `/snapshot.jpg`: the newest picture can be
/// decoded from them. The chunks are retained, not copied, so holding them allocates nothing per
/// frame once the chunk pool has grown to one picture group. Bounded: a group longer than
/// `maximumFrames` or `maximumBytes` is let go until the next IDR. Its owner calls `clear()` at the end.
struct PictureGroup {
    let maximumFrames: Int
    let maximumBytes: Int
    private var chunks: [StreamChunk] = []
    private var bytes = 0
    /// False from start-up or an overflow until the next IDR.
    private var usable = false

    init(maximumFrames: Int, maximumBytes: Int) {
        self.maximumFrames = maximumFrames
        self.maximumBytes = maximumBytes
        chunks.reserveCapacity(min(maximumFrames, 1024))
    }

    mutating func add(_ chunk: StreamChunk) {
        if chunk.isIDR {
            clear()
            usable = true
        }
        guard usable else { return }
        guard chunks.count < maximumFrames, bytes + chunk.bytes.count <= maximumBytes else {
            clear()
            return
        }
        chunk.retain()
        chunks.append(chunk)
        bytes += chunk.bytes.count
    }

    /// Copies of the held access units and the newest one's frame number; nil until an IDR.
    var newest: (accessUnits: [[UInt8]], sequence: UInt64)? {
        guard usable, let last = chunks.last else { return nil }
        return (chunks.map(\.bytes), last.sequence)
    }

    mutating func clear() {
        for chunk in chunks { chunk.release() }
        chunks.removeAll(keepingCapacity: true)
        bytes = 0
        usable = false
    }
}
