import Audio
import Containers
import Frames
import Hub
import Outputs
import Synchronization

/// The live view for browsers: each viewer that joins gets a subscription to the hub from the next
/// IDR (one is asked for through the hub's gate) and its own fragmented-MP4 muxer, so no muxing runs
/// on the encoder thread and a slow browser skips to a later IDR and costs nothing else. The hub's
/// ring holds the newest picture group for `/snapshot.jpg`.
public final class LiveViewOutput: StreamOutput, Sendable {
    public var kind: OutputKind { .browser }
    public let label: String
    public var failure: OutputError? { nil }

    private struct State {
        var hub: StreamHub?
        var viewers: [LiveViewer] = []
        /// Places promised by `reservePlace` to upgrades not yet joined: each one's monotonic deadline.
        var promised: [UInt64] = []
        var servedViewers = 0
        /// Fragments sent to browsers that have left, and access units they skipped.
        var sentToViewers = (frames: 0, bytes: 0)
        var skippedByViewers = 0
        var ended = false
        /// Waiting for the recording to start (`started`), by number; nil once they are resumed.
        var startWaiters: [Int: CheckedContinuation<Void, Never>]? = [:]
        var nextStartWaiter = 0
    }
    private let state = Mutex(State())
    private let queueLimit: Int
    let framesPerSecond: Double
    /// Most browsers watching at once: each may hold `queueLimit` access units.
    public let maximumViewers: Int

    private let log: @Sendable (String) -> Void
    private let audio: AudioTrackFormat?

    /// - Parameter queueLimit: access units a viewer may be behind before it skips to the next IDR.
    /// - Parameter log: one line when a viewer's muxer fails (the recording goes on).
    /// - Parameter audio: the recording's sound, sent to every browser with the picture.
    public init(label: String, framesPerSecond: Double, queueLimit: Int = 60, maximumViewers: Int = 32,
                audio: AudioTrackFormat? = nil, log: @escaping @Sendable (String) -> Void) throws {
        self.audio = audio
        self.label = label
        self.log = log
        self.queueLimit = max(2, queueLimit)
        self.maximumViewers = maximumViewers
        self.framesPerSecond = framesPerSecond
        // Fail now, not at the first viewer, if libavformat cannot make fragmented MP4 here.
        _ = try LiveMP4Fragmenter(framesPerSecond: framesPerSecond, audio: audio)
    }

    /// A viewer's failure is its own (`viewerFailed`): the live view never fails the recording.
    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        let waiters = state.withLock { s in
            s.hub = hub
            return s.startWaiters.take()
        }
        waiters?.values.forEach { $0.resume() }
    }

    /// Returns once the recording has started (`open`), or ended, or the task is cancelled.
    func started() async {
        let id = state.withLock { s in
            s.nextStartWaiter += 1
            return s.nextStartWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { s -> Bool in
                    guard s.startWaiters != nil, !Task.isCancelled else { return true }
                    s.startWaiters?[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.startWaiters?.removeValue(forKey: id) }?.resume()
        }
    }

    /// A browser joins: it gets the stream's description and init segment with its first IDR, then
    /// a fragment per access unit. Nil when `maximumViewers` are watching or the recording is over.
    func join() -> LiveViewer? {
        let joined: LiveViewer?? = state.withLock { s in
            if !s.promised.isEmpty { s.promised.removeFirst() }
            guard !s.ended, let hub = s.hub, s.viewers.count < maximumViewers else { return .some(nil) }
            guard let subscription = hub.subscribe("viewer", from: .nextIDR, policy: .skipToIDR(depth: queueLimit),
                                                   withAudio: audio != nil) else {
                return .some(nil)
            }
            do {
                let viewer = try LiveViewer(subscription: subscription, framesPerSecond: framesPerSecond, audio: audio)
                s.viewers.append(viewer)
                s.servedViewers += 1
                return viewer
            } catch {
                subscription.cancel()
                return nil
            }
        }
        guard let viewer = joined ?? nil else {
            if joined == nil { log("\(label): a viewer could not join: its MP4 writer failed to start") }
            return nil
        }
        requestKeyframe()
        return viewer
    }

    /// The HLS packager's feed (`LiveHLS`): a subscription from the newest IDR the hub holds (so the first
    /// segment is done at the next IDR, and no extra IDR is asked for) that skips
    /// to an IDR if it ever falls `queueLimit` behind, and the live page's own fragmenter. Nil before the
    /// recording has started or once it is over.
    func packagerFeed() -> (Subscription, LiveMP4Fragmenter)? {
        guard let hub = state.withLock({ $0.ended ? nil : $0.hub }),
              let subscription = hub.subscribe("hls", from: .newestIDR, policy: .skipToIDR(depth: queueLimit),
                                               withAudio: audio != nil) else { return nil }
        guard let fragmenter = try? LiveMP4Fragmenter(framesPerSecond: framesPerSecond, audio: audio) else {
            subscription.cancel()
            return nil
        }
        return (subscription, fragmenter)
    }

    /// Asks for an IDR through the hub's gate (rate-limited): a viewer or a snapshot starts there.
    func requestKeyframe() {
        state.withLock { $0.hub }?.requestIDR()
    }

    /// A browser left (or the recording ended).
    func leave(_ viewer: LiveViewer) {
        viewer.end()
        let skipped = viewer.skippedFrames
        state.withLock { s in
            guard let index = s.viewers.firstIndex(where: { $0 === viewer }) else { return }
            s.viewers.remove(at: index)
            s.skippedByViewers += skipped
            s.sentToViewers.frames += viewer.sent.frames
            s.sentToViewers.bytes += viewer.sent.bytes
        }
    }

    /// The live view stopped for one viewer (its muxer failed); the recording goes on.
    func viewerFailed(_ error: Error) {
        log("\(label) stopped for a viewer: \(error); the recording goes on")
    }

    public var viewerCount: Int { state.withLock { $0.viewers.count } }

    /// Promises an upgrade a place before it is answered 101, so that many upgrades at once cannot all pass
    /// a count that only `join` raises. A promise not taken by `join` (the upgrade never completed) lapses
    /// after 10 s.
    func reservePlace() -> Bool {
        let now = MonotonicClock.now()
        return state.withLock { s in
            s.promised.removeAll { $0 <= now }
            guard !s.ended, s.viewers.count + s.promised.count < maximumViewers else { return false }
            s.promised.append(now + 10_000_000_000)
            return true
        }
    }

    /// The recording's sound goes to browsers with the picture.
    var hasSound: Bool { audio != nil }
    var sound: AudioTrackFormat? { audio }

    /// The hub this view subscribes to (for snapshots).
    var hub: StreamHub? { state.withLock { $0.hub } }

    /// The access units from the newest IDR to the newest frame (for `/snapshot.jpg`).
    var newestPictureGroup: (accessUnits: [[UInt8]], sequence: UInt64)? { hub?.newestPictureGroup() }

    public var counters: OutputCounters {
        let (viewers, left, skipped) = state.withLock { ($0.viewers, $0.sentToViewers, $0.skippedByViewers) }
        var counters = OutputCounters()
        // What reached browsers, as for the other network outputs.
        counters.frames = left.frames + viewers.reduce(0) { $0 + $1.sent.frames }
        counters.bytes = left.bytes + viewers.reduce(0) { $0 + $1.sent.bytes }
        counters.skippedFrames = skipped + viewers.reduce(0) { $0 + $1.skippedFrames }
        counters.peers = viewers.count
        return counters
    }

    public func finish() -> OutputReport {
        let (viewers, waiters) = state.withLock { s in
            s.ended = true
            return (s.viewers, s.startWaiters.take())
        }
        waiters?.values.forEach { $0.resume() }
        for viewer in viewers { leave(viewer) }
        let (served, sent, skipped) = state.withLock { ($0.servedViewers, $0.sentToViewers, $0.skippedByViewers) }
        var report = OutputReport(kind: kind, label: label)
        report.frames = sent.frames
        report.bytes = sent.bytes
        report.skippedFrames = skipped
        if served > 0 {
            log("\(label): served \(served) viewer\(served == 1 ? "" : "s")"
                + (skipped > 0 ? ", \(skipped) frames skipped for slow ones" : ""))
        }
        return report
    }
}
