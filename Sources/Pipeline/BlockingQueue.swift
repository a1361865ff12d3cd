import Glibc

/// A bounded FIFO between two threads, on a pthread mutex and condition variables.
///
/// Storage is a ring allocated once, so pushing and popping allocate nothing.
public final class BlockingQueue<Element>: @unchecked Sendable {
    public let capacity: Int
    private var ring: [Element?]
    private var head = 0
    private var count = 0
    private var closed = false
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let notEmpty = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let notFull = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        ring = Array(repeating: nil, count: capacity)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(notEmpty, nil)
        pthread_cond_init(notFull, nil)
    }

    deinit {
        pthread_cond_destroy(notFull)
        pthread_cond_destroy(notEmpty)
        pthread_mutex_destroy(mutex)
        notFull.deallocate()
        notEmpty.deallocate()
        mutex.deallocate()
    }

    /// Appends, waiting while the queue is full. Returns false if the queue was closed.
    @discardableResult
    public func push(_ element: Element) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while count == capacity && !closed { pthread_cond_wait(notFull, mutex) }
        guard !closed else { return false }
        append(element)
        return true
    }

    /// Appends without waiting; false when full or closed.
    public func tryPush(_ element: Element) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard !closed, count < capacity else { return false }
        append(element)
        return true
    }

    private func append(_ element: Element) {
        ring[(head + count) % capacity] = element
        count += 1
        pthread_cond_signal(notEmpty)
    }

    /// Removes the oldest element, waiting while empty. Nil once closed and drained.
    public func pop() -> Element? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while count == 0 && !closed { pthread_cond_wait(notEmpty, mutex) }
        return removeFirst()
    }

    /// Like `pop()`, but gives up after `nanoseconds`; nil on timeout too.
    public func pop(timeoutNanoseconds: UInt64) -> Element? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if count == 0 && !closed {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let total = UInt64(now.tv_nsec) + timeoutNanoseconds
            var deadline = timespec(tv_sec: now.tv_sec + Int(total / 1_000_000_000), tv_nsec: Int(total % 1_000_000_000))
            while count == 0 && !closed {
                if pthread_cond_timedwait(notEmpty, mutex, &deadline) == ETIMEDOUT { break }
            }
        }
        return removeFirst()
    }

    private func removeFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = ring[head]
        ring[head] = nil
        head = (head + 1) % capacity
        count -= 1
        pthread_cond_signal(notFull)
        return element
    }

    /// Removes everything queued without waiting, oldest first.
    public func drain(_ body: (Element) -> Void) {
        pthread_mutex_lock(mutex)
        var items: [Element] = []
        while let e = removeFirst() { items.append(e) }
        pthread_mutex_unlock(mutex)
        items.forEach(body)
    }

    /// Pushers get false from now on; poppers drain what is left, then get nil.
    public func close() {
        pthread_mutex_lock(mutex)
        closed = true
        pthread_cond_broadcast(notEmpty)
        pthread_cond_broadcast(notFull)
        pthread_mutex_unlock(mutex)
    }

    public var isEmpty: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return count == 0
    }

    public var currentCount: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return count
    }
}
