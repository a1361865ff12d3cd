import Glibc

/// State shared between threads together with the condition they wait on (a monitor): what `Mutex`
/// is, plus waiting until the state says so, with or without a deadline. Threads that block on a change
/// (the first frame's time, an end) use it; everything else takes `Mutex`.
///
/// Sendable by its one invariant: `state` is read and written only inside `withLock`/`wait`, that is
/// with the pthread mutex held (ThreadPrimitiveTests run it from many threads, under ThreadSanitizer too).
public final class Monitor<State>: @unchecked Sendable {
    // Inlinable, so the hub's subscriptions (a lock per access unit) get it specialised, not through generics.
    @usableFromInline let lock = QueueLock()
    @usableFromInline var state: State

    public init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the lock held.
    @inlinable
    public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// Runs `body` with the lock held, then wakes every waiter to look again.
    @inlinable
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
    @inlinable
    public func wait<Result>(until ready: (State) -> Bool, then body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        while !ready(state) { lock.waitNotEmpty() }
        return try body(&state)
    }

    /// Who waits on a bounded queue kept in a monitor: its takers (for an element, the monitor's
    /// ordinary condition) or its givers (for room).
    public enum Waiters: Sendable {
        case takers, givers
    }

    /// Inside a `withLock` body (the lock held): wakes one waiter of that kind. A queue signals its
    /// takers after each element it adds and its givers after each it removes, so no change wakes all.
    @inlinable
    public func signal(_ waiters: Waiters) {
        switch waiters {
        case .takers: lock.signalNotEmpty()
        case .givers: lock.signalNotFull()
        }
    }

    /// Inside a `withLock` body (the lock held): wakes every waiter of both kinds (a close, an end).
    @inlinable
    public func broadcast() { lock.broadcast() }

    /// Like `wait(until:then:)`, for one kind of waiter: `.givers` wait for a `signal(.givers)`.
    @inlinable
    public func wait<Result>(as waiters: Waiters, until ready: (State) -> Bool,
                             then body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        while !ready(state) {
            switch waiters {
            case .takers: lock.waitNotEmpty()
            case .givers: lock.waitNotFull()
            }
        }
        return try body(&state)
    }

    /// Like `wait(until:then:)`, but waits `nanoseconds` at most; `body` learns whether `ready` held.
    @inlinable
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
