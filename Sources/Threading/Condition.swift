import Glibc

/// A pthread condition variable whose deadlines are on the monotonic clock, so a wall clock stepped
/// by NTP or by hand neither cuts a wait short nor stretches it. The one condition type of camrec's
/// thread primitives: `QueueLock` holds two with its mutex, and `BlockingQueue`, `Monitor`, `Latch`,
/// `WakeSignal`, the hub's subscriptions and the frame pool wait through it.
/// Sendable by its invariant: the pthread object is made once, never moves, and is used only through
/// pthread calls with its mutex held (ThreadPrimitiveTests, LatchTests).
public final class Condition: @unchecked Sendable {
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        var monotonic = pthread_condattr_t()
        pthread_condattr_init(&monotonic)
        pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &monotonic)
        pthread_condattr_destroy(&monotonic)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// With `mutex` held: waits for a `signal`/`broadcast` (or a spurious wakeup; callers loop).
    public func wait(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) { pthread_cond_wait(condition, mutex) }

    /// With `mutex` held: waits until `deadline` (from `deadline(afterNanoseconds:)`) at most; false once it has passed.
    public func wait(_ mutex: UnsafeMutablePointer<pthread_mutex_t>, until deadline: inout timespec) -> Bool {
        pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }

    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// The CLOCK_MONOTONIC time `nanoseconds` from now (the clock conditions wait on), at most a day ahead.
    public static func deadline(afterNanoseconds nanoseconds: UInt64) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let total = UInt64(now.tv_nsec) + min(nanoseconds, 86_400_000_000_000)
        return timespec(tv_sec: now.tv_sec + Int(total / 1_000_000_000), tv_nsec: Int(total % 1_000_000_000))
    }
}
