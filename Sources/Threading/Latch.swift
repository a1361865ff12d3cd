import Glibc
import Synchronization

/// A flag that is set once and that threads wait for, with or without a deadline on the
/// monotonic clock: a stop request, a writer thread's end. It replaces loops that slept in
/// slices and read a flag, which woke for nothing and answered a stop up to a slice late.
public final class Latch: Sendable {
    private let flag = Atomic<Bool>(false)
    private let lock = QueueLock()

    public init() {}

    public var isSet: Bool { flag.load(ordering: .acquiring) }

    /// Sets the flag and wakes every waiter; setting it again changes nothing.
    public func open() {
        lock.lock()
        flag.store(true, ordering: .releasing)
        lock.broadcast()
        lock.unlock()
    }

    /// Waits until the flag is set.
    public func wait() {
        lock.lock()
        defer { lock.unlock() }
        while !isSet { lock.waitNotEmpty() }
    }

    /// Waits until the flag is set or `nanoseconds` have passed; true if it is set.
    @discardableResult
    public func wait(nanoseconds: UInt64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !isSet else { return true }
        var deadline = QueueLock.deadline(afterNanoseconds: nanoseconds)
        while !isSet {
            if !lock.waitNotEmpty(until: &deadline) { break }
        }
        return isSet
    }
}
