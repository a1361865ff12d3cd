import Audio
import Bitstream
import CGStreamer
import Hub
import Libav
import Threading
import Synchronization

/// `POST /whep` (WHEP): browsers watching over WebRTC, each a GStreamer webrtcbin session
/// (Sources/CGStreamer) fed the live view's H.264 access units as they are, never re-encoded, and the
/// recording's sound as Opus (as it is, or, when it is AAC, the one Opus encode of `WebRTCSoundFeed` that
/// every viewer shares; AAC decoded and encoded again per viewer only at rates Opus does not take), both stamped with their
/// capture time so that the browser plays them in step. A viewer's
/// subscription starts at an IDR asked of the hub's gate and skips to the next IDR when it falls behind
/// (the hub's `.skipToIDR`), so a slow viewer never stalls capture; its PLI or FIR asks the gate for an
/// IDR (rate-limited there). The threads are GStreamer's own (its streaming, ICE and RTCP threads);
/// camrec adds a task per viewer that hands it access units, one that waits for its viewer to go (ICE
/// failing, or no RTCP for `silenceSeconds`), and one thread that runs the blocking GStreamer calls
/// (setting a session up or down, made at the first viewer).
public final class WebRTCViewers: Sendable {
    public struct Configuration: Sendable {
        /// webrtcbin's stun-server (`stun://host:port`) and turn-server (`turn(s)://user:password@host:port`):
        /// for viewers beyond this network. Host candidates only without them.
        public var stun: String?
        public var turn: String?
        /// Most WebRTC viewers at once.
        public var maximumSessions: Int
        /// A viewer that has sent no RTCP for this long is gone (a browser killed or a network cut: ICE
        /// itself does not notice here, as webrtcbin 1.22 leaves libnice's consent freshness off).
        public var silenceSeconds: Double
        public init(stun: String? = nil, turn: String? = nil, maximumSessions: Int = 32, silenceSeconds: Double = 10) {
            self.stun = stun
            self.turn = turn
            self.maximumSessions = maximumSessions
            self.silenceSeconds = silenceSeconds
        }
    }

    /// Why a viewer was not taken: an HTTP status and one line.
    public struct Refusal: Error, Sendable {
        public let status: Int
        public let message: String
        public var retryAfter = false
    }

    /// The one line saying why WebRTC is off (GStreamer cannot be opened), or nil when it can be: `--http`
    /// says it at start. Opens the libraries only (no gst_init).
    public static func unavailableReason() -> String? {
        LazyLibrary.loadFailure { camrec_webrtc_load($0, $1) != 0 }
    }

    private let live: LiveViewOutput
    private let soundFeed: WebRTCSoundFeed?
    private let configuration: Configuration
    private let log: @Sendable (String) -> Void
    private struct State {
        var sessions: [String: WebRTCSession] = [:]
        /// Sessions being set up: counted against the maximum.
        var opening = 0
        var executor: ThreadExecutor?
        var ended = false
        var served = 0
    }
    private let state = Mutex(State())

    /// `soundFeed`: the shared Opus of an AAC recording (nil: the sound as the live view has it).
    public init(live: LiveViewOutput, soundFeed: WebRTCSoundFeed? = nil, configuration: Configuration,
                log: @escaping @Sendable (String) -> Void) {
        self.live = live
        self.soundFeed = soundFeed
        self.configuration = configuration
        self.log = log
    }

    public var count: Int { state.withLock { $0.sessions.count } }

    /// Answers `offer`: the session's id (its resource is `/whep/ID`) and the SDP answer, with every ICE
    /// candidate gathered (no trickle), or a refusal.
    func open(offer text: String) async throws(Refusal) -> (id: String, answer: String) {
        guard let hub = live.hub, !hub.isClosed else { throw Refusal(status: 503, message: "the recording has ended") }
        guard let group = live.newestPictureGroup, let idr = group.accessUnits.first else {
            throw Refusal(status: 503, message: "no picture yet: the recording has not reached its first IDR", retryAfter: true)
        }
        guard let profile = AnnexBScanner.units(in: idr).lazy.compactMap({ WHEPOffer.profileLevelID(sps: $0.bytes) }).first else {
            throw Refusal(status: 409, message: "WebRTC sends H.264 only, and this recording's live view is not H.264")
        }
        let offer: WHEPOffer
        do { offer = try WHEPOffer(sdp: text, profileLevelID: profile) } catch { throw Refusal(status: 400, message: error.description) }
        // The sound when the offer takes Opus (a viewer that offers no audio gets the picture only).
        let soundFeed = live.sound == nil ? nil : self.soundFeed
        let sound = offer.opusPayloadType.flatMap { type in
            soundFeed.map { WebRTCSound(shared: $0.track, payloadType: type) }
                ?? live.sound.flatMap { WebRTCSound(track: $0, payloadType: type) }
        }
        let configuration = self.configuration
        let executor: ThreadExecutor? = state.withLock { s in
            guard !s.ended, s.sessions.count + s.opening < configuration.maximumSessions else { return nil }
            s.opening += 1
            if s.executor == nil { s.executor = ThreadExecutor(name: "webrtc") }
            return s.executor
        }
        guard let executor else {
            throw Refusal(status: 503, message: "\(configuration.maximumSessions) WebRTC viewers are watching already", retryAfter: true)
        }
        // The blocking part (gst_init at the first viewer, the pipeline, the offer and answer, ICE
        // gathering) on the WebRTC thread, never on the cooperative pool.
        let made: Result<WebRTCSession, Refusal> = await withTaskExecutorPreference(executor) {
            WebRTCSession.make(offer: offer, sound: sound, soundFeed: sound == nil ? nil : soundFeed, hub: hub, configuration: configuration)
        }
        let outcome: Result<(id: String, answer: String), Refusal> = state.withLock { s in
            s.opening -= 1
            switch made {
            case .failure(let refusal): return .failure(refusal)
            case .success(let session):
                guard !s.ended else { return .failure(Refusal(status: 503, message: "the recording has ended")) }
                s.sessions[session.id] = session
                s.served += 1
                return .success((session.id, session.answer))
            }
        }
        switch (outcome, made) {
        case (.success(let answer), .success(let session)):
            session.startFeeding()
            session.watch(silenceSeconds: configuration.silenceSeconds) { [weak self, log] in
                if await self?.close(id: answer.id) == true { log("http live view: a WebRTC viewer went away without closing; its session ended") }
            }
            return answer
        case (.failure(let refusal), .success(let session)):
            await close(session, executor: executor)
            throw refusal
        case (.failure(let refusal), _), (_, .failure(let refusal)):
            throw refusal
        }
    }

    /// DELETE on a session's resource: false when there is no such session.
    func close(id: String) async -> Bool {
        guard let (session, executor) = state.withLock({ s -> (WebRTCSession, ThreadExecutor)? in
            guard let session = s.sessions.removeValue(forKey: id), let executor = s.executor else { return nil }
            return (session, executor)
        }) else { return false }
        await close(session, executor: executor)
        return true
    }

    private func close(_ session: WebRTCSession, executor: ThreadExecutor) async {
        session.stopWatching()
        await session.stopFeeding()
        await withTaskExecutorPreference(executor) { session.destroy() }
    }

    /// The recording is over: every session ends, then the WebRTC thread.
    public func finish() async {
        let (sessions, executor, served) = state.withLock { s in
            s.ended = true
            defer { s.sessions = [:] }
            return (Array(s.sessions.values), s.executor, s.served)
        }
        if let executor {
            for session in sessions { await close(session, executor: executor) }
            executor.shutdown()
        }
        if served > 0 { log("http live view: served \(served) WebRTC viewer\(served == 1 ? "" : "s")") }
    }
}

/// The recording's sound as a viewer's session sends it: Opus on the offer's payload type.
struct WebRTCSound: Sendable {
    let payloadType: Int
    let codec: SoundCodec
    let rate: Int
    let channels: Int
    /// AAC's AudioSpecificConfig, for the decoder.
    let configuration: [UInt8]
    /// How far the encoder's priming puts a packet's first sample before the capture time it is stamped with.
    let primingNanoseconds: UInt64
    /// From `WebRTCSoundFeed`, stamped there: not from the hub.
    let isShared: Bool

    /// Nil for Opus with more than two channels, which browsers do not take (the picture goes alone).
    init?(track: AudioTrackFormat, payloadType: Int) {
        guard track.codec == .aac || track.format.channels <= 2 else { return nil }
        self.payloadType = payloadType
        codec = track.codec
        rate = track.format.sampleRate
        channels = track.format.channels
        configuration = track.codecConfiguration
        primingNanoseconds = track.format.nanoseconds(ofSample: UInt64(track.primingSamples))
        isShared = false
    }

    /// The shared Opus feed's packets.
    init(shared track: AudioTrackFormat, payloadType: Int) {
        self.payloadType = payloadType
        codec = .opus
        rate = track.format.sampleRate
        channels = track.format.channels
        configuration = []
        primingNanoseconds = 0
        isShared = true
    }
}
