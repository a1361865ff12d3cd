import Glibc

/// A bounded FIFO between two threads, on a `QueueLock` (a pthread mutex and two condition variables).
///
/// Storage is a ring allocated once, so pushing and popping allocate nothing.
/// Sendable by its invariant: the ring and `closed` are touched only with `lock` held (ThreadPrimitiveTests).
public final class BlockingQueue<Element>: @unchecked Sendable {
    public let capacity: Int
    private var ring: [Element?]
    private var head = 0
    private var count = 0
    private var closed = false
    private let lock = QueueLock()

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        ring = Array(repeating: nil, count: capacity)
    }

    /// Appends, waiting while the queue is full. Returns false if the queue was closed.
    @discardableResult
    public func push(_ element: Element) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        while count == capacity && !closed { lock.waitNotFull() }
        guard !closed else { return false }
        append(element)
        return true
    }

    /// Appends without waiting; false when full or closed.
    public func tryPush(_ element: Element) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !closed, count < capacity else { return false }
        append(element)
        return true
    }

    private func append(_ element: Element) {
        ring[(head + count) % capacity] = element
        count += 1
        lock.signalNotEmpty()
    }

    /// Removes the oldest element, waiting while empty. Nil once closed and drained.
    public func pop() -> Element? {
        lock.lock()
        defer { lock.unlock() }
        while count == 0 && !closed { lock.waitNotEmpty() }
        return removeFirst()
    }

    /// Like `pop()`, but gives up after `nanoseconds`; nil on timeout too.
    public func pop(timeoutNanoseconds: UInt64) -> Element? {
        lock.lock()
        defer { lock.unlock() }
        if count == 0 && !closed {
            var deadline = QueueLock.deadline(afterNanoseconds: timeoutNanoseconds)
            while count == 0 && !closed {
                if !lock.waitNotEmpty(until: &deadline) { break }
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
        lock.signalNotFull()
        return element
    }

    /// Removes everything queued without waiting, oldest first.
    public func drain(_ body: (Element) -> Void) {
        lock.lock()
        var items: [Element] = []
        while let e = removeFirst() { items.append(e) }
        lock.unlock()
        items.forEach(body)
    }

    /// Pushers get false from now on; poppers drain what is left, then get nil.
    public func close() {
        lock.lock()
        closed = true
        lock.broadcast()
        lock.unlock()
    }

    public var isEmpty: Bool {
        lock.lock()
        defer { lock.unlock() }
        return count == 0
    }

    public var currentCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}
