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
        /// The newest frame the recorder has made an IDR (handed to the encoders, maybe not yet published).
        var newestForced: UInt64?
        var granted = 0
        var refused = 0
        var alreadyComing = 0
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

    /// The recorder has made frame `sequence` an IDR (regular, requested or after a source gap).
    public func noteForced(sequence: UInt64) {
        state.withLock { s in
            if s.newestForced.map({ sequence > $0 }) ?? true { s.newestForced = sequence }
        }
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

    /// What a subscriber waiting for its first IDR will get.
    public enum FirstIDR: Sendable, Equatable {
        /// The recorder has already made a frame not yet published an IDR (or nothing is published yet).
        case onItsWay
        /// One was asked for: the recorder makes its next frame an IDR.
        case requested
        /// The rate limit refused the request: the stream's next IDR is at most the interval away.
        case atTheNextOne
    }

    /// For a subscriber that waits for its first IDR and joined when its hub's newest published frame
    /// was `newestPublished` (nil: none yet, and the first is always an IDR). An IDR the recorder has
    /// already put on a later frame is on its way to it, so nothing is asked: a receiver that joins
    /// while the first frame is being encoded adds no second IDR. Otherwise `request()`.
    @discardableResult
    public func requestFirstIDR(joinedAfter newestPublished: UInt64?) -> FirstIDR {
        let coming = state.withLock { s -> Bool in
            // Nothing published yet: the first access unit of a stream is always an IDR.
            if let published = newestPublished {
                guard let forced = s.newestForced, forced > published else { return false }
            }
            s.alreadyComing += 1
            return true
        }
        if coming { return .onItsWay }
        return request() ? .requested : .atTheNextOne
    }

    /// IDRs requested, requests refused by the rate limit, and first-IDR requests an IDR already on its way met.
    public var counts: (granted: Int, refused: Int, alreadyComing: Int) {
        state.withLock { ($0.granted, $0.refused, $0.alreadyComing) }
    }
}
