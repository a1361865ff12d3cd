import Containers
import Outputs
import Synchronization

/// The output that feeds browsers watching live: each access unit becomes one fragmented-MP4
/// fragment, offered to every viewer's bounded queue. Viewers join at the next IDR (one is asked
/// for on join, as for TCP receivers); a slow one skips to a later IDR and costs nothing else.
public final class LiveViewOutput: StreamOutput, @unchecked Sendable {
    public let label: String
    public var failure: OutputError? { nil }
    public var onFailure: (@Sendable (OutputError) -> Void)?
    /// Asked on every join: a viewer can start only at an IDR.
    public var onKeyframeWanted: (@Sendable () -> Void)?

    private struct State {
        var fragmenter: LiveMP4Fragmenter?
        var viewers: [LiveViewer] = []
        var codecs: String?
        var initSegment: [UInt8]?
        /// Frames, IDRs and bytes made; frames viewers skipped (added as each leaves).
        var totals: OutputReport
        var servedViewers = 0
        var pictureGroup: PictureGroup
        /// Fragments sent to browsers that have left (for `/metrics`).
        var sentToViewers = (frames: 0, bytes: 0)
    }
    private let state: Mutex<State>
    private let queueLimit: Int
    /// Most browsers watching at once: each may hold `queueLimit` fragments.
    public let maximumViewers: Int

    private let log: @Sendable (String) -> Void

    /// - Parameter queueLimit: fragments a viewer may be behind before it skips to the next IDR.
    /// - Parameter log: one line when the live view stops on its own (the recording goes on).
    public init(label: String, framesPerSecond: Double, queueLimit: Int = 60, maximumViewers: Int = 32,
                log: @escaping @Sendable (String) -> Void) throws {
        self.label = label
        self.log = log
        self.queueLimit = queueLimit
        self.maximumViewers = maximumViewers
        state = Mutex(State(fragmenter: try LiveMP4Fragmenter(framesPerSecond: framesPerSecond), totals: OutputReport(label: label),
                            pictureGroup: PictureGroup(maximumFrames: 1200, maximumBytes: 64 << 20)))
    }

    public func open() throws {}

    public func submit(_ chunk: StreamChunk) {
        defer { chunk.release() }
        state.withLock { s in
            s.pictureGroup.add(chunk)
            guard let fragmenter = s.fragmenter else { return }
            let fragment: [UInt8]?
            do {
                fragment = try fragmenter.fragment(of: chunk)
            } catch {
                // The live view is a convenience: it stops, the recording goes on.
                log("\(label) stopped: \(error); the recording goes on")
                s.fragmenter = nil
                for viewer in s.viewers { viewer.end() }
                return
            }
            guard let fragment else { return }
            if s.initSegment == nil, let initSegment = fragmenter.initSegment, let codecs = fragmenter.codecs {
                s.initSegment = initSegment
                s.codecs = codecs
                for viewer in s.viewers { viewer.start(codecs: codecs, initSegment: initSegment) }
            }
            s.totals.frames += 1
            s.totals.bytes += fragment.count
            if chunk.isIDR { s.totals.idrFrames += 1 }
            for viewer in s.viewers { viewer.offer(fragment, isIDR: chunk.isIDR) }
        }
    }

    /// A browser joins: it gets the stream's description and init segment (now, or with the first
    /// IDR), then fragments from the next IDR. Nil when `maximumViewers` are watching.
    func join() -> LiveViewer? {
        let viewer = LiveViewer(queueLimit: queueLimit)
        let joined = state.withLock { s -> Bool in
            guard s.viewers.count < maximumViewers else { return false }
            if let codecs = s.codecs, let initSegment = s.initSegment { viewer.start(codecs: codecs, initSegment: initSegment) }
            if s.fragmenter == nil { viewer.end() } else { s.viewers.append(viewer) }
            s.servedViewers += 1
            return true
        }
        guard joined else { return nil }
        onKeyframeWanted?()
        return viewer
    }

    /// A browser left (or the recording ended).
    func leave(_ viewer: LiveViewer) {
        viewer.end()
        let skipped = viewer.skippedFrames
        state.withLock { s in
            guard let index = s.viewers.firstIndex(where: { $0 === viewer }) else { return }
            s.viewers.remove(at: index)
            s.totals.skippedFrames += skipped
            s.sentToViewers.frames += viewer.sent.frames
            s.sentToViewers.bytes += viewer.sent.bytes
        }
    }

    public var viewerCount: Int { state.withLock { $0.viewers.count } }

    /// The access units from the newest IDR to the newest frame (for `/snapshot.jpg`).
    var newestPictureGroup: (accessUnits: [[UInt8]], sequence: UInt64)? { state.withLock { $0.pictureGroup.newest } }

    public var counters: OutputCounters {
        let (totals, viewers, left) = state.withLock { ($0.totals, $0.viewers, $0.sentToViewers) }
        var counters = OutputCounters()
        // What reached browsers, as for the other network outputs (not the fragments made).
        counters.frames = left.frames + viewers.reduce(0) { $0 + $1.sent.frames }
        counters.bytes = left.bytes + viewers.reduce(0) { $0 + $1.sent.bytes }
        counters.skippedFrames = totals.skippedFrames + viewers.reduce(0) { $0 + $1.skippedFrames }
        counters.peers = viewers.count
        return counters
    }

    public func finish() -> OutputReport {
        let viewers = state.withLock { s -> [LiveViewer] in
            s.fragmenter = nil
            s.pictureGroup.clear()
            return s.viewers
        }
        for viewer in viewers { leave(viewer) }
        let (report, served) = state.withLock { ($0.totals, $0.servedViewers) }
        if served > 0 {
            log("\(label): served \(served) viewer\(served == 1 ? "" : "s")"
                + (report.skippedFrames > 0 ? ", \(report.skippedFrames) frames skipped for slow ones" : ""))
        }
        return report
    }
}
