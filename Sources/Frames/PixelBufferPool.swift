import Glibc
import Threading

/// A fixed set of frame buffers allocated once (the role CVPixelBufferPool plays
/// on iOS). Sources take a buffer, fill it and pass it on; whoever consumes it last
/// recycles it. The pool never grows: when it is empty a live source drops the
/// frame (and counts it) and a file source waits.
///
/// A pool made with a `PixelBufferBacking` (the VA-API encoder's, whose buffers are mapped
/// GPU surfaces) lends each buffer the backing's memory when it is taken and gives it back
/// when it is recycled; the buffer count and the taking and waiting are the same.
/// Sendable by its invariant: `free`, `closed` and the counts are touched only with `lock` held (PixelBufferPoolTests).
public final class PixelBufferPool: @unchecked Sendable {
    public let format: PixelFormat
    public let width: Int
    public let height: Int
    public let capacity: Int
    /// Where buffers get their memory at each take; nil: their own, allocated once.
    public let backing: PixelBufferBacking?

    private let buffers: [PixelBuffer]
    private var free: [Int]
    private var closed = false
    /// Its "not empty" condition is a buffer being free again.
    private let lock = QueueLock()
    /// How often a taker found the pool empty; a sign the encoder can't keep up.
    public private(set) var exhaustedCount = 0

    /// An ordinary pool: each buffer has its own memory, allocated once.
    public convenience init(format: PixelFormat, width: Int, height: Int, capacity: Int) {
        self.init(format: format, width: width, height: height, capacity: capacity, backing: nil)
    }

    /// A pool whose buffers get memory from `backing` at each take (none of their own unless
    /// the backing fails); with nil, an ordinary pool.
    public init(format: PixelFormat, width: Int, height: Int, capacity: Int, backing: PixelBufferBacking?) {
        precondition(capacity > 0)
        self.format = format
        self.width = width
        self.height = height
        self.capacity = capacity
        self.backing = backing
        buffers = (0..<capacity).map {
            PixelBuffer(format: format, width: width, height: height, index: $0, allocate: backing == nil)
        }
        free = Array((0..<capacity).reversed())
        for buffer in buffers { buffer.owner = self }
        free.reserveCapacity(capacity)
    }

    /// Whether every buffer's `planes` stay the same memory for the pool's whole life (true for
    /// an ordinary pool), so a device may be given that memory once and write into it later
    /// (V4L2 USERPTR). False for a backed pool: its buffers point at other memory after each take.
    public var hasStableMemory: Bool { backing == nil }

    /// How often the backing could not lend memory and a buffer used its own instead.
    public var backingFailureCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return backingFailures
    }
    private var backingFailures = 0

    /// Takes a free buffer without waiting; nil when all are in use.
    public func tryTake() -> PixelBuffer? {
        lock.lock()
        guard let i = free.popLast() else {
            exhaustedCount += 1
            lock.unlock()
            return nil
        }
        lock.unlock()
        return lend(buffers[i])
    }

    /// Takes a free buffer, waiting until one is recycled. Returns nil once the pool is closed.
    public func take() -> PixelBuffer? {
        lock.lock()
        if free.isEmpty { exhaustedCount += 1 }
        while free.isEmpty && !closed {
            lock.waitNotEmpty()
        }
        guard !closed, let i = free.popLast() else {
            lock.unlock()
            return nil
        }
        lock.unlock()
        return lend(buffers[i])
    }

    /// Gives a just-taken buffer its memory for this frame (outside the lock: mapping a
    /// surface can take a while). If the backing fails, the buffer uses its own memory.
    private func lend(_ buffer: PixelBuffer) -> PixelBuffer {
        guard let backing else { return buffer }
        buffer.lent.removeAll(keepingCapacity: true)
        do {
            try backing.attach(bufferIndex: buffer.index, planes: &buffer.lent)
            buffer.useLentMemory()
        } catch {
            backing.detach(bufferIndex: buffer.index)
            buffer.useOwnMemory()
            lock.lock()
            backingFailures += 1
            lock.unlock()
        }
        return buffer
    }

    /// Returns a buffer to the pool. Recycling a buffer twice is a programming error.
    public func recycle(_ buffer: PixelBuffer) {
        if let backing {
            // A buffer recycled unencoded (a dropped frame) still holds the backing's memory.
            // Checked first: a second recycle must not end the loan of the buffer's next holder.
            lock.lock()
            precondition(buffers[buffer.index] === buffer && !free.contains(buffer.index), "buffer recycled twice")
            lock.unlock()
            backing.detach(bufferIndex: buffer.index)
        }
        lock.lock()
        precondition(buffers[buffer.index] === buffer && !free.contains(buffer.index), "buffer recycled twice")
        free.append(buffer.index)
        lock.signalNotEmpty()
        lock.unlock()
    }

    /// Wakes any waiting taker with nil; used when the recording stops.
    public func close() {
        lock.lock()
        closed = true
        lock.broadcast()
        lock.unlock()
    }

    public var freeCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return free.count
    }
}
