import Frames
import Glibc
import Hub
import Synchronization

/// Messages a network output reports while recording (joins, leaves, skips, reconnects):
/// one line each, without a prefix.
public typealias NetworkEventLog = @Sendable (String) -> Void

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

/// A network peer's stall bound in milliseconds: at least 1 ms, at most a day; a non-finite value
/// (which no option gives today) is taken as the usual 10 s rather than trapping.
func stallMilliseconds(_ seconds: Double) -> Int {
    guard seconds.isFinite else { return 10_000 }
    return Int(min(max(seconds, 0.001), 86_400) * 1000)
}

extension Subscription {
    /// Says each catch-up of the network peer `name` in the log (give it to `subscribe`).
    public static func catchUpLog(of name: String, to log: @escaping NetworkEventLog) -> CatchUpHandler {
        { dropped, resumed, catchUps in
            log("\(name): too slow, skipped \(dropped) frames, resuming at \(resumed ? "this" : "the next") IDR (skip #\(catchUps))")
        }
    }

    /// One peer's totals: what it sent (counted by its sender) with what the hub offered it.
    func peerSummary(frames: Int, bytes: Int, idrFrames: Int, lost: Int, failure: String?,
                     latency: LatencySamples) -> PeerSender.Summary {
        let offers = snapshot
        return PeerSender.Summary(frames: frames, bytes: bytes, idrFrames: idrFrames, skippedFrames: offers.skipped,
                                  framesNotSent: offers.beforeStart + offers.notTaken + lost, overflows: offers.catchUps,
                                  failure: failure, latency: latency, offered: offers.offered)
    }
}
