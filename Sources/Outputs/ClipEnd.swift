import Synchronization

/// When an event clip ends: after the access unit presented at a time that a later trigger may move on,
/// or at once (the clip cannot be written, the camera went away). Once ended it stays ended: a trigger
/// after that starts a new clip.
final class ClipEnd: Sendable {
    private let state: Mutex<(after: UInt64, ended: Bool)>

    init(after time: UInt64) {
        state = Mutex((time, false))
    }

    /// Moves the end to after `time` (never earlier); false when the clip has already ended.
    func extend(after time: UInt64) -> Bool {
        state.withLock { s in
            guard !s.ended else { return false }
            s.after = max(s.after, time)
            return true
        }
    }

    func endNow() {
        state.withLock { $0.ended = true }
    }

    /// Whether the clip is over at an access unit presented at `time` (which ends it when past the end).
    func isOver(at time: UInt64) -> Bool {
        state.withLock { s in
            if time > s.after { s.ended = true }
            return s.ended
        }
    }
}
