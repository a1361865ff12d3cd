import Glibc

/// A pthread mutex with the two `Condition`s a bounded queue between threads waits on ("not
/// empty" for takers, "not full" for givers). Shared by `BlockingQueue`, `Monitor`, the hub's
/// subscriptions and the frame pool, so the pthread calls and their setup are written once.
/// Sendable by its invariant: the mutex is made once, never moves, and is used only through pthread calls (ThreadPrimitiveTests).
public final class QueueLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let notEmpty = Condition()
    private let notFull = Condition()

    public init() {
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// With the lock held: waits for `signalNotEmpty`/`broadcast` (or a spurious wakeup; callers loop).
    public func waitNotEmpty() { notEmpty.wait(mutex) }
    public func waitNotFull() { notFull.wait(mutex) }

    /// With the lock held: waits until `deadline` at most; false once it has passed.
    public func waitNotEmpty(until deadline: inout timespec) -> Bool {
        notEmpty.wait(mutex, until: &deadline)
    }

    public func signalNotEmpty() { notEmpty.signal() }
    public func signalNotFull() { notFull.signal() }
    /// Wakes every waiter of both kinds (a close, an end, a cancel).
    public func broadcast() {
        notEmpty.broadcast()
        notFull.broadcast()
    }

    /// The CLOCK_MONOTONIC time `nanoseconds` from now (the clock the conditions wait on), at most a day ahead.
    public static func deadline(afterNanoseconds nanoseconds: UInt64) -> timespec {
        Condition.deadline(afterNanoseconds: nanoseconds)
    }
}
