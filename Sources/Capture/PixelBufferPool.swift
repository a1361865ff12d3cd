import Glibc

/// A fixed set of frame buffers allocated once (the role CVPixelBufferPool plays
/// on iOS). Sources take a buffer, fill it and pass it on; whoever consumes it last
/// recycles it. The pool never grows: when it is empty a live source drops the
/// frame (and counts it) and a file source waits.
public final class PixelBufferPool: @unchecked Sendable {
    public let format: PixelFormat
    public let width: Int
    public let height: Int
    public let capacity: Int

    private let buffers: [PixelBuffer]
    private var free: [Int]
    private var closed = false
    // Heap-allocated so their addresses never move, as pthreads requires.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let available = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// How often a taker found the pool empty; a sign the encoder can't keep up.
    public private(set) var exhaustedCount = 0

    public init(format: PixelFormat, width: Int, height: Int, capacity: Int) {
        precondition(capacity > 0)
        self.format = format
        self.width = width
        self.height = height
        self.capacity = capacity
        buffers = (0..<capacity).map { PixelBuffer(format: format, width: width, height: height, index: $0) }
        free = Array((0..<capacity).reversed())
        for buffer in buffers { buffer.owner = self }
        free.reserveCapacity(capacity)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(available, nil)
    }

    deinit {
        pthread_cond_destroy(available)
        pthread_mutex_destroy(mutex)
        available.deallocate()
        mutex.deallocate()
    }

    /// Takes a free buffer without waiting; nil when all are in use.
    public func tryTake() -> PixelBuffer? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let i = free.popLast() else {
            exhaustedCount += 1
            return nil
        }
        return buffers[i]
    }

    /// Takes a free buffer, waiting until one is recycled. Returns nil once the pool is closed.
    public func take() -> PixelBuffer? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if free.isEmpty { exhaustedCount += 1 }
        while free.isEmpty && !closed {
            pthread_cond_wait(available, mutex)
        }
        guard !closed, let i = free.popLast() else { return nil }
        return buffers[i]
    }

    /// Returns a buffer to the pool. Recycling a buffer twice is a programming error.
    public func recycle(_ buffer: PixelBuffer) {
        pthread_mutex_lock(mutex)
        precondition(buffers[buffer.index] === buffer && !free.contains(buffer.index), "buffer recycled twice")
        free.append(buffer.index)
        pthread_cond_signal(available)
        pthread_mutex_unlock(mutex)
    }

    /// Wakes any waiting taker with nil; used when the recording stops.
    public func close() {
        pthread_mutex_lock(mutex)
        closed = true
        pthread_cond_broadcast(available)
        pthread_mutex_unlock(mutex)
    }

    /// Buffers keep the same memory for the pool's whole life, so a device may write into
    /// them directly (V4L2 USERPTR).
    public var hasStableMemory: Bool { true }

    public var freeCount: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return free.count
    }
}
