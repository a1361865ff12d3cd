import Glibc
import Synchronization

/// Messages a network output reports while recording (joins, leaves, skips, reconnects):
/// one line each, without a prefix.
public typealias NetworkEventLog = @Sendable (String) -> Void

/// Asks the encoder for an IDR on behalf of network outputs, at most once per
/// `minimumInterval`, so joins and reconnects can't turn the stream into all-IDR.
/// The action is connected after the recorder exists.
public final class KeyframeRequestGate: @unchecked Sendable {
    private struct State {
        var action: (@Sendable () -> Void)?
        var lastRequest: UInt64 = 0
        var granted = 0
        var refused = 0
    }
    private let state = Mutex(State())
    private let minimumIntervalNanoseconds: UInt64

    public init(minimumIntervalSeconds: Double = 1.0) {
        minimumIntervalNanoseconds = UInt64(minimumIntervalSeconds * 1e9)
    }

    public func connect(_ action: @escaping @Sendable () -> Void) {
        state.withLock { $0.action = action }
    }

    /// Requests an IDR unless one was requested less than the interval ago. Returns whether it did.
    @discardableResult
    public func request() -> Bool {
        let now = monotonicNanoseconds()
        let action: (@Sendable () -> Void)? = state.withLock { s in
            guard let action = s.action, s.lastRequest == 0 || now - s.lastRequest >= minimumIntervalNanoseconds else {
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

/// Latency samples in nanoseconds and their percentiles.
public struct LatencySamples: Sendable {
    public private(set) var values: [UInt64] = []
    /// Keeps at most this many (the first ones), so a day-long stream can't grow memory.
    public let limit: Int

    public init(limit: Int = 1 << 20) {
        self.limit = limit
    }

    public mutating func add(_ nanoseconds: UInt64) {
        if values.count < limit { values.append(nanoseconds) }
    }

    public var count: Int { values.count }

    /// The p-th percentile (0...100), nearest rank; nil without samples.
    public func percentile(_ p: Double) -> UInt64? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }

    /// "median 1.23 ms, p99 4.56 ms (300 frames)", or nil without samples.
    public var summary: String? {
        guard let median = percentile(50), let p99 = percentile(99) else { return nil }
        return "median \(Self.milliseconds(median)) ms, p99 \(Self.milliseconds(p99)) ms (\(count) frames)"
    }

    public static func milliseconds(_ nanoseconds: UInt64) -> String {
        let hundredths = (nanoseconds + 5_000) / 10_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Sleeps in short slices until `nanoseconds` pass or `stop()` says so.
public func sleep(nanoseconds: UInt64, unless stop: () -> Bool) {
    let deadline = monotonicNanoseconds() + nanoseconds
    while !stop() {
        let now = monotonicNanoseconds()
        if now >= deadline { return }
        usleep(useconds_t(min(deadline - now, 50_000_000) / 1000))
    }
}
