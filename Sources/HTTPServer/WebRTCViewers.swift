import Audio
import Bitstream
import CGStreamer
import Glibc
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

/// One WebRTC viewer: its webrtcbin session, its hub subscription, the task that feeds one to the other,
/// and the one that waits for the viewer to go.
final class WebRTCSession: Sendable {
    let id: String
    let answer: String
    private let session: Handle
    private let subscription: Subscription
    private let hub: StreamHub
    private let sound: WebRTCSound?
    private let soundFeed: WebRTCSoundFeed?
    /// Set once the first picture went to the session: its sound starts there.
    private let pictured = Atomic<Bool>(false)
    private let failed = Atomic<Bool>(false)
    private let feeder = Mutex<Task<Void, Never>?>(nil)
    private let watchdog = Mutex<Task<Void, Never>?>(nil)

    /// The C session: fed by the feeding task, asked by the watchdog, then destroyed (and nil) once both end.
    final class Handle: Sendable {
        private let pointer: Mutex<OpaquePointer?>

        init(_ pointer: sending OpaquePointer) {
            self.pointer = Mutex(pointer)
        }

        func push(_ chunk: StreamChunk, sound: WebRTCSound?) {
            pointer.withLock { pointer in
                guard let pointer else { return }
                _ = chunk.bytes.withUnsafeBufferPointer { bytes in
                    if let sound {
                        camrec_webrtc_session_push_sound(pointer, bytes.baseAddress, bytes.count,
                                                         chunk.captureTimeNanoseconds &- sound.primingNanoseconds, chunk.durationNanoseconds)
                    } else {
                        camrec_webrtc_session_push(pointer, bytes.baseAddress, bytes.count, chunk.captureTimeNanoseconds)
                    }
                }
            }
        }

        /// One packet of the shared Opus feed, stamped there; on the audio thread (the lock is only ever
        /// held for a push: `destroy` takes the session out of it first).
        func pushSound(_ packet: UnsafeRawBufferPointer, capture: UInt64, duration: UInt64) {
            // The packet as an address (a plain value): the lock's region takes no pointer in.
            let (address, count) = (UInt(bitPattern: packet.baseAddress), packet.count)
            pointer.withLock { pointer in
                guard let pointer else { return }
                _ = camrec_webrtc_session_push_sound(pointer, UnsafePointer(bitPattern: address), count, capture, duration)
            }
        }

        /// Seconds since the viewer's newest RTCP; 0 once destroyed.
        var silentSeconds: Double { pointer.withLock { $0.map { camrec_webrtc_session_silent_seconds($0) } ?? 0 } }

        /// Takes the session out first, so that a push (the audio thread's among them) never waits for
        /// GStreamer to stop the pipeline.
        func destroy() {
            // Out of the lock as an address (a plain value), as `pushSound` takes a packet in.
            let taken = pointer.withLock { pointer in
                defer { pointer = nil }
                return UInt(bitPattern: pointer)
            }
            camrec_webrtc_session_destroy(OpaquePointer(bitPattern: taken))
        }
    }

    private init(id: String, answer: String, session: Handle, subscription: Subscription, hub: StreamHub, sound: WebRTCSound?,
                 soundFeed: WebRTCSoundFeed?) {
        self.id = id
        self.answer = answer
        self.session = session
        self.subscription = subscription
        self.hub = hub
        self.sound = sound
        self.soundFeed = soundFeed
    }

    /// Sets a session up and waits (up to 3 s) for its ICE candidates: blocking, on the WebRTC thread.
    static func make(offer: WHEPOffer, sound: WebRTCSound?, soundFeed: WebRTCSoundFeed?, hub: StreamHub,
                     configuration: WebRTCViewers.Configuration) -> Result<WebRTCSession, WebRTCViewers.Refusal> {
        // The events come before the session object exists: a box they reach it through.
        let events = EventBox()
        let context = Unmanaged.passRetained(events).toOpaque()
        var made: OpaquePointer?
        let failure = LazyLibrary.loadFailure { buffer, size in
            let hex: String = (sound?.configuration ?? []).map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
            made = offer.sdp.withCString { sdp in
                configuration.stun.withOptionalCString { stun in
                    configuration.turn.withOptionalCString { turn in
                        hex.withCString { hex in
                            let description = sound.map {
                                camrec_webrtc_sound(payload_type: Int32($0.payloadType),
                                                    codec: Int32($0.codec == .aac ? CAMREC_WEBRTC_SOUND_AAC : CAMREC_WEBRTC_SOUND_OPUS),
                                                    rate: Int32($0.rate), channels: Int32($0.channels), aac_configuration: hex)
                            }
                            return description.withOptionalPointer { description in
                                camrec_webrtc_session_create(sdp, Int32(offer.payloadType), description, stun, turn, { context, event in
                                    Unmanaged<EventBox>.fromOpaque(context!).takeUnretainedValue().tell(event)
                                }, context, buffer, size)
                            }
                        }
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
              let subscription = hub.subscribe("webrtc viewer", from: .nextIDR, policy: .skipToIDR(depth: 60), askForIDR: true,
                                               withAudio: sound.map { !$0.isShared } ?? false) else {
            camrec_webrtc_session_destroy(made)
            Unmanaged<EventBox>.fromOpaque(context).release()
            return .failure(WebRTCViewers.Refusal(status: 503, message: answerText == nil ? "webrtcbin made no answer" : "the recording has ended"))
        }
        // Only the handle uses the C session from here on.
        nonisolated(unsafe) let pointer = made
        let session = WebRTCSession(id: randomID(), answer: offer.answer(answerText), session: Handle(pointer),
                                    subscription: subscription, hub: hub, sound: sound, soundFeed: sound?.isShared == true ? soundFeed : nil)
        events.attach(session, context: context)
        return .success(session)
    }

    /// The task that hands each access unit and sound packet to the session's appsrcs (a copy), the sound
    /// from the first picture on; the shared Opus feed's packets come on the audio thread instead.
    func startFeeding() {
        let (subscription, session, sound) = (self.subscription, self.session, self.sound)
        soundFeed?.add(self)
        feeder.withLock {
            $0 = Task { [self] in
                while let chunk = await subscription.nextAsync() {
                    if chunk.kind == .video {
                        session.push(chunk, sound: nil)
                        self.pictured.store(true, ordering: .releasing)
                    } else if self.pictured.load(ordering: .acquiring), let sound {
                        session.push(chunk, sound: sound)
                    }
                    chunk.release()
                }
            }
        }
    }

    /// Ends the session through `gone` when its viewer has gone: at once when ICE or the connection fails
    /// (`connectionFailed` cancels the wait), or once it has sent no RTCP for `silenceSeconds`: the wait is
    /// to that deadline, moved on by each report that came meanwhile.
    func watch(silenceSeconds: Double, gone: @escaping @Sendable () async -> Void) {
        let task = Task { [self] in
            while !hasFailed {
                let left = silenceSeconds - session.silentSeconds
                if left <= 0 { break }
                do { try await Task.sleep(for: .seconds(left)) } catch { if !hasFailed { return } }
            }
            await gone()
        }
        watchdog.withLock { $0 = task }
    }

    /// The session is being closed: its watchdog stops waiting.
    func stopWatching() {
        watchdog.withLock { $0 }?.cancel()
    }

    /// A packet of the shared Opus feed (on the audio thread), once the picture has started.
    func pushSharedSound(_ packet: UnsafeRawBufferPointer, capture: UInt64, duration: UInt64) {
        guard pictured.load(ordering: .acquiring) else { return }
        session.pushSound(packet, capture: capture, duration: duration)
    }

    func stopFeeding() async {
        soundFeed?.remove(self)
        subscription.cancel()
        await feeder.withLock { $0 }?.value
    }

    /// Stops the pipeline (blocking: GStreamer joins its threads); on the WebRTC thread, after `stopFeeding`.
    func destroy() {
        session.destroy()
        events?.detach()
    }

    private var hasFailed: Bool { failed.load(ordering: .relaxed) }

    fileprivate func keyframeWanted() { hub.requestIDR() }
    fileprivate func connectionFailed() {
        failed.store(true, ordering: .relaxed)
        stopWatching()
    }

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

private extension Optional {
    func withOptionalPointer<R>(_ body: (UnsafePointer<Wrapped>?) -> R) -> R {
        switch self {
        case .some(let value): return withUnsafePointer(to: value) { body($0) }
        case .none: return body(nil)
        }
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
