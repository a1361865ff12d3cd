import Glibc

/// A pthread mutex with the two condition variables a bounded queue between threads waits on ("not
/// empty" for takers, "not full" for givers). Shared by `BlockingQueue` and the hub's subscriptions,
/// so the pthread calls, their setup and the deadline arithmetic are written once.
/// Sendable by its invariant: the pthread objects are made once, never move, and are used only through pthread calls.
public final class QueueLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let notEmpty = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let notFull = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        // Deadlines are on the monotonic clock, so a wall clock stepped by NTP or by hand neither
        // cuts a wait short nor stretches it.
        var monotonic = pthread_condattr_t()
        pthread_condattr_init(&monotonic)
        pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC)
        pthread_cond_init(notEmpty, &monotonic)
        pthread_cond_init(notFull, &monotonic)
        pthread_condattr_destroy(&monotonic)
    }

    deinit {
        pthread_cond_destroy(notFull)
        pthread_cond_destroy(notEmpty)
        pthread_mutex_destroy(mutex)
        notFull.deallocate()
        notEmpty.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// With the lock held: waits for `signalNotEmpty`/`broadcast` (or a spurious wakeup; callers loop).
    public func waitNotEmpty() { pthread_cond_wait(notEmpty, mutex) }
    public func waitNotFull() { pthread_cond_wait(notFull, mutex) }

    /// With the lock held: waits until `deadline` at most; false once it has passed.
    public func waitNotEmpty(until deadline: inout timespec) -> Bool {
        pthread_cond_timedwait(notEmpty, mutex, &deadline) != ETIMEDOUT
    }

    public func signalNotEmpty() { pthread_cond_signal(notEmpty) }
    public func signalNotFull() { pthread_cond_signal(notFull) }
    /// Wakes every waiter of both kinds (a close, an end, a cancel).
    public func broadcast() {
        pthread_cond_broadcast(notEmpty)
        pthread_cond_broadcast(notFull)
    }

    /// The CLOCK_MONOTONIC time `nanoseconds` from now (the clock the conditions wait on), at most a day ahead.
    public static func deadline(afterNanoseconds nanoseconds: UInt64) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let total = UInt64(now.tv_nsec) + min(nanoseconds, 86_400_000_000_000)
        return timespec(tv_sec: now.tv_sec + Int(total / 1_000_000_000), tv_nsec: Int(total % 1_000_000_000))
    }
}
