import Audio
import Containers
import Hub
import Synchronization

/// One browser watching live: its own hub subscription (`.skipToIDR`, so a stuck browser costs a
/// bounded queue of shared access units and never stalls the recording) and its own fragmented-MP4
/// muxer, run on the browser's task rather than the encoder thread.
final class LiveViewer: Sendable {
    enum Piece: Sendable {
        /// JSON the page reads first: `{"codecs": "avc1.…"}`.
        case description(String)
        case initSegment([UInt8])
        case fragment([UInt8])
    }

    let subscription: Subscription
    /// The muxer, and whether the description and init segment went out: used by the task that sends
    /// to this browser, one access unit at a time.
    private let muxing: Mutex<(fragmenter: LiveMP4Fragmenter, started: Bool)>
    private let sentCounts = Mutex((frames: 0, bytes: 0))

    init(subscription: Subscription, framesPerSecond: Double, audio: AudioTrackFormat? = nil) throws {
        self.subscription = subscription
        muxing = Mutex((try LiveMP4Fragmenter(framesPerSecond: framesPerSecond, audio: audio), false))
        hasSound = audio != nil
    }
    private let hasSound: Bool

    /// What to send next: the description and init segment before the first fragment. Nil when
    /// the stream has ended (the recording, or this viewer's subscription). Throws when the muxer fails.
    func nextPieces() async throws -> [Piece]? {
        guard let chunk = await subscription.nextAsync() else { return nil }
        defer { chunk.release() }
        let hasSound = self.hasSound
        return try muxing.withLock { m -> [Piece] in
            guard let fragment = try m.fragmenter.fragment(of: chunk) else { return [] }
            var pieces: [Piece] = []
            if !m.started, let initSegment = m.fragmenter.initSegment, let codecs = m.fragmenter.codecs {
                m.started = true
                pieces = [.description("{\"codecs\":\"\(codecs)\",\"sound\":\(hasSound)}"), .initSegment(initSegment)]
            }
            pieces.append(.fragment(fragment))
            return pieces
        }
    }

    /// One fragment of `bytes` reached the browser's connection.
    func sent(bytes: Int) {
        sentCounts.withLock {
            $0.frames += 1
            $0.bytes += bytes
        }
    }

    /// Access units it skipped to catch up at an IDR, or that were not sent after it left.
    var skippedFrames: Int { subscription.snapshot.skipped }
    /// Fragments sent to this browser, and their bytes.
    var sent: (frames: Int, bytes: Int) { sentCounts.withLock { ($0.frames, $0.bytes) } }

    func end() { subscription.cancel() }
}
