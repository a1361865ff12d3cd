import Glibc
import Synchronization

/// Wakes one waiting thread when something it watches has changed (a peer's first send, its end,
/// a stop). A wake that comes while nobody waits is kept for the next wait, so none is lost; the
/// waiter looks at what it watches after each return, as with any condition variable.
public final class WakeSignal: Sendable {
    private let pending = Atomic<Bool>(false)
    private let lock = QueueLock()

    public init() {}

    public func wake() {
        lock.lock()
        pending.store(true, ordering: .releasing)
        lock.signalNotEmpty()
        lock.unlock()
    }

    /// Waits for a wake (one kept from before counts) and takes it.
    public func wait() {
        lock.lock()
        defer { lock.unlock() }
        while !pending.load(ordering: .acquiring) { lock.waitNotEmpty() }
        pending.store(false, ordering: .relaxed)
    }

    /// Waits for a wake at most `nanoseconds`; true if one came (and is taken).
    @discardableResult
    public func wait(nanoseconds: UInt64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if !pending.load(ordering: .acquiring) {
            var deadline = QueueLock.deadline(afterNanoseconds: nanoseconds)
            while !pending.load(ordering: .acquiring) {
                if !lock.waitNotEmpty(until: &deadline) { break }
            }
        }
        return pending.exchange(false, ordering: .acquiringAndReleasing)
    }
}
