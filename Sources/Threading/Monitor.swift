/// State shared between threads together with the condition they wait on (a monitor): what `Mutex`
/// is, plus waiting until the state says so, with or without a deadline. Threads that block on a change
/// (the first frame's time, an end) use it; everything else takes `Mutex`.
///
/// Sendable by its one invariant: `state` is read and written only inside `withLock`/`wait`, that is
/// with the pthread mutex held (ThreadPrimitiveTests run it from many threads, under ThreadSanitizer too).
public final class Monitor<State>: @unchecked Sendable {
    private let lock = QueueLock()
    private var state: State

    public init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the lock held.
    public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// Runs `body` with the lock held, then wakes every waiter to look again.
    public func change<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer {
            lock.broadcast()
            lock.unlock()
        }
        return try body(&state)
    }

    /// Waits until `ready` holds (looked at under the lock after every `change`), then runs `body`
    /// with the lock still held.
    public func wait<Result>(until ready: (State) -> Bool, then body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        while !ready(state) { lock.waitNotEmpty() }
        return try body(&state)
    }

    /// Like `wait(until:then:)`, but waits `nanoseconds` at most; `body` learns whether `ready` held.
    public func wait<Result>(until ready: (State) -> Bool, nanoseconds: UInt64,
                             then body: (inout State, _ ready: Bool) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        if !ready(state) {
            var deadline = QueueLock.deadline(afterNanoseconds: nanoseconds)
            while !ready(state) {
                if !lock.waitNotEmpty(until: &deadline) { break }
            }
        }
        return try body(&state, ready(state))
    }
}
