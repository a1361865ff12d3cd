import Audio
import CGStreamer
import Glibc
import Hub
import Libav
import Threading
import Synchronization

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
