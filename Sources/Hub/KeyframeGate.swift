import Frames
import Synchronization

/// The one way to ask the encoders for an IDR: a late TCP receiver, a reconnecting media-server
/// session, a browser joining, a snapshot, a file rotation and `POST /api/keyframe` all come
/// here, and at most one request per `minimumInterval` reaches the recorder, so joins and
/// reconnects can't turn the stream into all-IDR. The action is connected once the recorder exists.
public final class KeyframeGate: Sendable {
    private struct State {
        var action: (@Sendable () -> Void)?
        var lastRequest: UInt64?
        var granted = 0
        var refused = 0
    }
    private let state = Mutex(State())
    private let minimumIntervalNanoseconds: UInt64

    public init(minimumIntervalSeconds: Double = 1.0) {
        let seconds = minimumIntervalSeconds.isFinite ? min(max(0, minimumIntervalSeconds), 3600) : 1
        minimumIntervalNanoseconds = UInt64(seconds * 1e9)
    }

    /// What a granted request does (the recorder forces an IDR at its next frame).
    public func connect(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.action = action }
    }

    /// Requests an IDR unless one was granted less than the interval ago. Returns whether it did;
    /// when it did not, the stream's next IDR (requested or regular) is at most an interval away.
    @discardableResult
    public func request() -> Bool {
        let now = MonotonicClock.now()
        let action: (@Sendable () -> Void)? = state.withLock { s in
            guard let action = s.action else {
                s.refused += 1
                return nil
            }
            if let last = s.lastRequest, now &- last < minimumIntervalNanoseconds {
                s.refused += 1
                return nil
            }
            s.lastRequest = now
            s.granted += 1
            return action
        }
        action?()
        return action != nil
    }

    /// IDRs requested, and requests refused by the rate limit.
    public var counts: (granted: Int, refused: Int) { state.withLock { ($0.granted, $0.refused) } }
}
