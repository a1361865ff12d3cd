import Bitstream
import Hub
import NIOCore
import Outputs
import RTSP
import Synchronization

/// One encoding served at its paths: the output the recording's output set opens with its hub. It keeps
/// the newest parameter sets for DESCRIBE (from each IDR, read by a watcher subscription).
public final class RTSPMount: StreamOutput, Sendable {
    public let codec: VideoCodec
    public let paths: [String]
    /// The recording's sound, served as `trackID=1`; nil without `--audio`.
    public let sound: Sound?
    /// Held here: the output set holds the mounts, and nothing else holds the server.
    let server: RTSPServer
    public var kind: OutputKind { .rtsp }
    public var label: String { server.label + (paths.last ?? "/") }
    public var failure: OutputError? { nil }
    /// `waiters`: DESCRIBEs that came before the first IDR, woken by its parameter sets.
    private let held = Mutex<(hub: StreamHub?, parameterSets: [[UInt8]], waiters: [EventLoopPromise<Void>])>((nil, [], []))
    /// A random RTP timestamp origin for this stream (RFC 3550 §5.1).
    let timestampBase = UInt32.random(in: 0...UInt32.max)
    let totals = Mutex(Totals())
    /// With `--rtsp-multicast`: this encoding's group and port.
    let multicast: RTSPMulticast?

    struct Totals {
        var frames = 0
        var bytes = 0
        var skipped = 0
        var playing = 0
    }

    init(server: RTSPServer, codec: VideoCodec, paths: [String], sound: Sound?, multicast: RTSPMulticast?) {
        self.server = server
        self.codec = codec
        self.paths = paths
        self.sound = sound
        self.multicast = multicast
    }

    /// The sound track and its RTP clock: the same presentation times as the picture's, at the track's
    /// rate from a random origin of its own.
    public struct Sound: Sendable {
        public let track: RTPAudioTrack
        /// The encoder's priming in ticks: a packet's first decoded sample comes that much before its
        /// presentation time (its first input sample's), and the RTP timestamp is that sample's (RFC 3640, 7587).
        let primingTicks: UInt64
        let timestampBase = UInt32.random(in: 0...UInt32.max)

        /// - Parameter primingSamples: the encoder's priming, at its own sample rate.
        public init(track: RTPAudioTrack, primingSamples: Int) {
            self.track = track
            primingTicks = track.ticks(ofSamples: primingSamples)
        }

        /// The RTP time of the instant presented at `presentation` (sender reports, RTP-Info).
        func rtpTimestamp(ofInstant presentation: UInt64) -> UInt32 {
            timestampBase &+ UInt32(truncatingIfNeeded: track.ticks(nanoseconds: presentation))
        }

        /// The RTP timestamp of a packet presented at `presentation`: its first decoded sample's.
        func rtpTimestamp(ofPacketAt presentation: UInt64) -> UInt32 {
            rtpTimestamp(ofInstant: presentation) &- UInt32(truncatingIfNeeded: primingTicks)
        }
    }

    var hub: StreamHub? { held.withLock { $0.hub } }
    var parameterSets: [[UInt8]] { held.withLock { $0.parameterSets } }

    /// The newest parameter sets; before the first IDR there are none yet, so this waits for its sets,
    /// at most `timeout` (they also come in-band).
    func parameterSets(waitingAtMost timeout: TimeAmount, on loop: EventLoop) async -> [[UInt8]] {
        let arrived = loop.makePromise(of: Void.self)
        let sets = held.withLock { h -> [[UInt8]] in
            if h.parameterSets.isEmpty { h.waiters.append(arrived) }
            return h.parameterSets
        }
        guard sets.isEmpty else {
            arrived.succeed()
            return sets
        }
        let bound = loop.scheduleTask(in: timeout) { arrived.succeed() }
        try? await arrived.futureResult.get()
        bound.cancel()
        return parameterSets
    }

    /// `onFailure` is never called: a client's trouble only affects that client.
    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        held.withLock { $0.hub = hub }
        try server.opened(self)
        try multicast?.open(hub: hub)
        // DESCRIBE names the parameter sets of the newest IDR.
        guard let watcher = hub.subscribe("rtsp parameter sets \(paths.last ?? "/")", from: .nextIDR, policy: .skipToIDR(depth: 4)) else { return }
        let codec = self.codec
        Task { [weak self] in
            while let chunk = await watcher.nextAsync() {
                defer { chunk.release() }
                guard chunk.isIDR, let sets = SessionDescription.parameterSets(inIDR: chunk.bytes.prefix(4096), codec: codec) else { continue }
                guard let self else { break }
                let waiters = self.held.withLock { h -> [EventLoopPromise<Void>] in
                    if h.parameterSets != sets { h.parameterSets = sets }
                    defer { h.waiters = [] }
                    return h.waiters
                }
                for waiter in waiters { waiter.succeed() }
            }
            watcher.cancel()
        }
    }

    /// The RTP timestamp (90 kHz) of a presentation time.
    func rtpTimestamp(presentationNanoseconds t: UInt64) -> UInt32 {
        let ticks = t / 100_000 * 9 + (t % 100_000) * 9 / 100_000
        return timestampBase &+ UInt32(truncatingIfNeeded: ticks)
    }

    public var counters: OutputCounters {
        let t = totals.withLock { $0 }
        var counters = OutputCounters()
        counters.frames = t.frames
        counters.bytes = t.bytes
        counters.skippedFrames = t.skipped
        counters.peers = t.playing
        counters.receptions = server.receptions(of: self)
        return counters
    }

    public func finish() -> OutputReport {
        server.finished(self)
        multicast?.close()
        let t = totals.withLock { $0 }
        var report = OutputReport(kind: kind, label: label)
        report.frames = t.frames
        report.bytes = t.bytes
        report.skippedFrames = t.skipped
        return report
    }

    public func abandon() { server.abandon() }
}
