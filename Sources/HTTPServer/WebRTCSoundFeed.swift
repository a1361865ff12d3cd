import Audio
import Synchronization

/// The WebRTC viewers' sound when the recording's is AAC: the captured samples encoded once more as Opus
/// on the audio thread (`AudioCapture`'s side encoder, only while a viewer with sound watches), each packet
/// handed to every such viewer's session as it is. One encode for all viewers, where each used to decode
/// the AAC and encode Opus again in its own pipeline; and no AAC encode and decode on the way, which the
/// sound spent ~65 ms in (docs/HTTP.md).
///
/// A feed of its own, not the hub's: file outputs never see these packets. Its bound is each session's
/// appsrc (1 MB, dropping what comes when full), so a slow viewer never holds up the audio thread.
public final class WebRTCSoundFeed: SoundSideFeed {
    /// What the packets are (Opus, the recording's rate and channels).
    public let track: AudioTrackFormat
    /// Read as a copy-on-write array on the audio thread: nothing allocated per packet.
    private let sessions = Mutex<[WebRTCSession]>([])

    public init(track: AudioTrackFormat) {
        precondition(track.codec == .opus && track.format.channels <= 2, "WebRTC takes mono or stereo Opus")
        self.track = track
    }

    public var isWanted: Bool { sessions.withLock { !$0.isEmpty } }
    /// Sessions taking the feed.
    public var count: Int { sessions.withLock { $0.count } }

    public func deliver(_ packet: UnsafeRawBufferPointer, captureNanoseconds: UInt64, durationNanoseconds: UInt64) {
        let sessions = self.sessions.withLock { $0 }
        for session in sessions { session.pushSharedSound(packet, capture: captureNanoseconds, duration: durationNanoseconds) }
    }

    func add(_ session: WebRTCSession) {
        sessions.withLock { $0.append(session) }
    }

    func remove(_ session: WebRTCSession) {
        sessions.withLock { $0.removeAll { $0 === session } }
    }
}
