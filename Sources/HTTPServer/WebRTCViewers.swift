import Bitstream
import CGStreamer
import Glibc
import Hub
import Libav
import Threading
import Synchronization

/// `POST /whep` (WHEP): browsers watching over WebRTC, each a GStreamer webrtcbin session
/// (Sources/CGStreamer) fed the live view's H.264 access units as they are, never re-encoded. A viewer's
/// subscription starts at an IDR asked of the hub's gate and skips to the next IDR when it falls behind
/// (the hub's `.skipToIDR`), so a slow viewer never stalls capture; its PLI or FIR asks the gate for an
/// IDR (rate-limited there). The threads are GStreamer's own (its streaming, ICE and RTCP threads);
/// camrec adds a task per viewer that hands it access units, one thread that runs the blocking
/// GStreamer calls (setting a session up or down, made at the first viewer) and one task that ends
/// sessions whose viewer went silent.
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
    private let configuration: Configuration
    private let log: @Sendable (String) -> Void
    private struct State {
        var sessions: [String: WebRTCSession] = [:]
        /// Sessions being set up: counted against the maximum.
        var opening = 0
        var executor: ThreadExecutor?
        var sweeper: Task<Void, Never>?
        var ended = false
        var served = 0
    }
    private let state = Mutex(State())

    public init(live: LiveViewOutput, configuration: Configuration, log: @escaping @Sendable (String) -> Void) {
        self.live = live
        self.configuration = configuration
        self.log = log
    }

    public var count: Int { state.withLock { $0.sessions.count } }

    /// Answers `offer`: the session's id (its resource is `/whep/ID`) and the SDP answer, with every ICE
    /// candidate gathered (no trickle), or a refusal.
    func open(offer text: String) async throws(Refusal) -> (id: String, answer: String) {
        guard let hub = live.hub, !hub.isClosed else { throw Refusal(status: 503, message: "the recording has ended") }
        // Without Opus here, WebRTC would play the picture without its sound: MSE carries both.
        guard !live.hasSound else {
            throw Refusal(status: 409, message: "this recording has sound, which camrec's WebRTC does not send yet (no Opus): the page plays MSE, which carries it")
        }
        guard let group = live.newestPictureGroup, let idr = group.accessUnits.first else {
            throw Refusal(status: 503, message: "no picture yet: the recording has not reached its first IDR", retryAfter: true)
        }
        guard let profile = AnnexBScanner.units(in: idr).lazy.compactMap({ WHEPOffer.profileLevelID(sps: $0.bytes) }).first else {
            throw Refusal(status: 409, message: "WebRTC sends H.264 only, and this recording's live view is not H.264")
        }
        let offer: WHEPOffer
        do { offer = try WHEPOffer(sdp: text, profileLevelID: profile) } catch { throw Refusal(status: 400, message: error.description) }
        let configuration = self.configuration
        let executor: ThreadExecutor? = state.withLock { s in
            guard !s.ended, s.sessions.count + s.opening < configuration.maximumSessions else { return nil }
            s.opening += 1
            if s.executor == nil { s.executor = ThreadExecutor(name: "webrtc") }
            if s.sweeper == nil { s.sweeper = Task { [weak self] in await self?.sweep() } }
            return s.executor
        }
        guard let executor else {
            throw Refusal(status: 503, message: "\(configuration.maximumSessions) WebRTC viewers are watching already", retryAfter: true)
        }
        // The blocking part (gst_init at the first viewer, the pipeline, the offer and answer, ICE
        // gathering) on the WebRTC thread, never on the cooperative pool.
        let made: Result<WebRTCSession, Refusal> = await withTaskExecutorPreference(executor) {
            WebRTCSession.make(offer: offer, hub: hub, configuration: configuration)
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
        await session.stopFeeding()
        await withTaskExecutorPreference(executor) { session.destroy() }
    }

    /// Every second: ends the sessions whose ICE failed or whose viewer has been silent too long.
    private func sweep() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            let silence = configuration.silenceSeconds
            let gone = state.withLock { s in s.sessions.values.filter { $0.hasFailed || $0.silentSeconds > silence }.map(\.id) }
            for id in gone {
                if await close(id: id) { log("http live view: a WebRTC viewer went away without closing; its session ended") }
            }
        }
    }

    /// The recording is over: every session ends, then the WebRTC thread.
    public func finish() async {
        let (sessions, executor, sweeper, served) = state.withLock { s in
            s.ended = true
            defer { s.sessions = [:] }
            return (Array(s.sessions.values), s.executor, s.sweeper, s.served)
        }
        sweeper?.cancel()
        if let executor {
            for session in sessions { await close(session, executor: executor) }
            executor.shutdown()
        }
        if served > 0 { log("http live view: served \(served) WebRTC viewer\(served == 1 ? "" : "s")") }
    }
}

/// One WebRTC viewer: its webrtcbin session, its hub subscription and the task that feeds one to the other.
final class WebRTCSession: Sendable {
    let id: String
    let answer: String
    private let session: Handle
    private let subscription: Subscription
    private let hub: StreamHub
    private let failed = Atomic<Bool>(false)
    private let feeder = Mutex<Task<Void, Never>?>(nil)

    /// The C session, used by the feeding task, then destroyed once it has ended.
    struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private init(id: String, answer: String, session: Handle, subscription: Subscription, hub: StreamHub) {
        self.id = id
        self.answer = answer
        self.session = session
        self.subscription = subscription
        self.hub = hub
    }

    /// Sets a session up and waits (up to 3 s) for its ICE candidates: blocking, on the WebRTC thread.
    static func make(offer: WHEPOffer, hub: StreamHub, configuration: WebRTCViewers.Configuration) -> Result<WebRTCSession, WebRTCViewers.Refusal> {
        // The events come before the session object exists: a box they reach it through.
        let events = EventBox()
        let context = Unmanaged.passRetained(events).toOpaque()
        var made: OpaquePointer?
        let failure = LazyLibrary.loadFailure { buffer, size in
            made = offer.sdp.withCString { sdp in
                configuration.stun.withOptionalCString { stun in
                    configuration.turn.withOptionalCString { turn in
                        camrec_webrtc_session_create(sdp, Int32(offer.payloadType), stun, turn, { context, event in
                            Unmanaged<EventBox>.fromOpaque(context!).takeUnretainedValue().tell(event)
                        }, context, buffer, size)
                    }
                }
            }
            return made != nil
        }
        guard let made else {
            Unmanaged<EventBox>.fromOpaque(context).release()
            let line = failure ?? "webrtcbin failed"
            return .failure(WebRTCViewers.Refusal(status: line.contains("install Debian's") ? 503 : 400, message: line))
        }
        _ = events.gathered.wait(nanoseconds: 3_000_000_000)
        let answerText = camrec_webrtc_session_answer(made).map { text in
            defer { free(text) }
            return String(cString: text)
        }
        // Starts at an IDR asked of the gate now (rate-limited), so the picture shows within about a frame.
        guard let answerText,
              let subscription = hub.subscribe("webrtc viewer", from: .nextIDR, policy: .skipToIDR(depth: 60), askForIDR: true) else {
            camrec_webrtc_session_destroy(made)
            Unmanaged<EventBox>.fromOpaque(context).release()
            return .failure(WebRTCViewers.Refusal(status: 503, message: answerText == nil ? "webrtcbin made no answer" : "the recording has ended"))
        }
        let session = WebRTCSession(id: randomID(), answer: offer.answer(answerText), session: Handle(pointer: made),
                                    subscription: subscription, hub: hub)
        events.attach(session, context: context)
        return .success(session)
    }

    /// The task that hands each access unit to the session's appsrc (a copy; stamped there).
    func startFeeding() {
        let (subscription, session) = (self.subscription, self.session)
        feeder.withLock {
            $0 = Task {
                while let chunk = await subscription.nextAsync() {
                    _ = chunk.bytes.withUnsafeBufferPointer { camrec_webrtc_session_push(session.pointer, $0.baseAddress, $0.count) }
                    chunk.release()
                }
            }
        }
    }

    func stopFeeding() async {
        subscription.cancel()
        await feeder.withLock { $0 }?.value
    }

    /// Stops the pipeline (blocking: GStreamer joins its threads); on the WebRTC thread, after `stopFeeding`.
    func destroy() {
        camrec_webrtc_session_destroy(session.pointer)
        events?.detach()
    }

    var hasFailed: Bool { failed.load(ordering: .relaxed) }
    var silentSeconds: Double { camrec_webrtc_session_silent_seconds(session.pointer) }

    fileprivate func keyframeWanted() { hub.requestIDR() }
    fileprivate func connectionFailed() { failed.store(true, ordering: .relaxed) }

    private let eventBox = Mutex<EventBox?>(nil)
    private var events: EventBox? { eventBox.withLock { $0 } }

    /// What GStreamer's threads call (through the C handler, with the session's lock held: at once,
    /// nothing back into the session).
    final class EventBox: Sendable {
        let gathered = Latch()
        /// The session, and the C side's reference to this box (its address).
        private let owner = Mutex<(session: WebRTCSession?, context: Int)>((nil, 0))

        func tell(_ event: Int32) {
            switch Int(event) {
            case Int(CAMREC_WEBRTC_GATHERED): gathered.open()
            case Int(CAMREC_WEBRTC_KEYFRAME_WANTED): owner.withLock { $0.session }?.keyframeWanted()
            case Int(CAMREC_WEBRTC_FAILED): owner.withLock { $0.session }?.connectionFailed()
            default: break
            }
        }

        fileprivate func attach(_ session: WebRTCSession, context: UnsafeMutableRawPointer) {
            owner.withLock { $0 = (session, Int(bitPattern: context)) }
            session.eventBox.withLock { $0 = self }
        }

        /// After the C session is destroyed (no call can come): lets go of the session and of the
        /// reference the C side held.
        fileprivate func detach() {
            let context = owner.withLock { o in
                defer { o = (nil, 0) }
                return o.context
            }
            if let pointer = UnsafeMutableRawPointer(bitPattern: context) { Unmanaged<EventBox>.fromOpaque(pointer).release() }
        }
    }

    /// 128 random bits in hex: a session's resource cannot be guessed.
    private static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let digits = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }.joined()
    }
}

private extension Optional where Wrapped == String {
    func withOptionalCString<R>(_ body: (UnsafePointer<CChar>?) -> R) -> R {
        switch self {
        case .some(let text): return text.withCString { body($0) }
        case .none: return body(nil)
        }
    }
}
