import Bitstream
import Frames
import Glibc
import Hub
import NIOCore
import NIOPosix
import NetStream
import Outputs
import RTSP
import Synchronization

/// One client's session: the picture's track and, when the recording has sound, the sound's (each SETUP
/// adds one `RTPLeg`), sent from one hub subscription (`.skipToIDR`, with the sound when its track is set
/// up, so the sound starts with the picture's first IDR) as RTP, over the RTSP connection (interleaved) or
/// UDP to the connection's own peer address (never to an address a client names: camrec sends nothing to a
/// third party), or, for a multicast picture, from the mount's group sender (`RTSPMulticast`). The
/// subscription rings its event loop's `RTSPSendLoop`, which sends what it holds (`pump`) with every other
/// session on that loop. Each track has its sender reports: one before its first packet, then one a second,
/// pairing the NTP time of an instant on the capture clock with that instant's RTP time on the track's
/// clock, so a client lines up sound and picture.
final class RTSPSession: Sendable {
    let id: String
    let mount: RTSPMount
    let connection: RTSPConnection
    let packetizer: RTPPacketizer
    private let holder = SessionHolder()
    let state = Mutex(State())
    /// The loop that sends for the sessions of this connection's event loop.
    let sendLoop: RTSPSendLoop
    /// How long a TCP client may take nothing before it is cut (it reads nothing, or far too slowly).
    static let stallTimeoutNanoseconds: UInt64 = 10_000_000_000

    struct State {
        var legs: [RTPLeg] = []
        var subscription: Subscription?
        var ended = false
        var multicastJoined = false
    }

    /// What is being sent, the connection's event loop's alone (from PLAY to the end): NIO checks that
    /// each pass is on it.
    let onLoop: NIOLoopBoundBox<Sender>
    final class Sender {
        var sending: Subscription?
        var video: RTPLeg?
        var audio: RTPLeg?
        var sent: [Sent] = []
        var refusedSound = 0
        /// The first picture's time: sound from before it is not this client's (the hub holds back only the
        /// sound that came before that IDR, and the picture may be encoded sooner than its sound).
        var firstPicture: UInt64?
        var fragments: [RTPFragment] = []
        var pumping = false
        var stoppedSending = false
        /// A TCP client's socket, written past NIO (nil over UDP, or when it was not found: NIO writes then).
        var socket: InterleavedSocket?
        var frames = 0
        var soundPackets = 0
    }

    private init(connection: RTSPConnection, mount: RTSPMount) {
        var bytes = [UInt8](repeating: 0, count: 8)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        id = bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined()
        self.connection = connection
        self.mount = mount
        sendLoop = connection.server.sendLoop(for: connection.channel.eventLoop)
        onLoop = .makeBoxSendingValue(Sender(), eventLoop: connection.channel.eventLoop)
        packetizer = RTPPacketizer(codec: mount.codec, maximumPacketBytes: connection.server.configuration.maximumPacketBytes)
    }

    /// A session for the first SETUP, with that track's leg.
    static func make(connection: RTSPConnection, mount: RTSPMount, track: Int, transport: RTSPTransport) async throws -> RTSPSession {
        let session = RTSPSession(connection: connection, mount: mount)
        session.holder.session.withLock { $0 = session }
        do {
            _ = try await session.add(track: track, transport: transport)
        } catch {
            session.holder.session.withLock { $0 = nil }
            throw error
        }
        return session
    }

    /// A further SETUP: the leg of `track`; nil once the session plays or has ended.
    func add(track: Int, transport: RTSPTransport) async throws -> RTPLeg? {
        let leg = try await RTPLeg.open(track: track, transport: transport, connection: connection, holder: holder, multicast: mount.multicast)
        let added = state.withLock { s -> Bool in
            guard !s.ended, s.subscription == nil, !s.legs.contains(where: { $0.track == track }) else { return false }
            s.legs.append(leg)
            return true
        }
        guard added else {
            leg.close(holder: holder)
            return nil
        }
        return leg
    }

    var legs: [RTPLeg] { state.withLock { $0.legs } }
    var isPlaying: Bool { state.withLock { $0.subscription != nil } }
    var isTCP: Bool { legs.contains { $0.transport.isTCP } }
    var isMulticast: Bool { legs.contains { $0.transport == .multicast } }
    /// The picture's SSRC: the stream the client's receiver reports are read about (0 without a picture track).
    var videoSSRC: UInt32 { legs.first { $0.track == 0 }?.ssrc ?? 0 }

    /// The interleaved channel after the highest one in use (a SETUP that names none gets it and the next).
    var nextInterleavedChannel: UInt8 {
        legs.reduce(0) { next, leg in
            if case .interleaved(let rtp, let rtcp) = leg.transport { return max(next, UInt8(min(254, Int(max(rtp, rtcp)) + 1))) }
            return next
        }
    }

    /// Whether interleaved `channel` is the RTCP channel of one of the tracks.
    func isRTCP(channel: UInt8) -> Bool {
        legs.contains { leg in
            if case .interleaved(_, let rtcp) = leg.transport { return rtcp == channel }
            return false
        }
    }

    /// Whether `transport` would send on an interleaved channel a track already uses.
    func collides(_ transport: RTSPTransport) -> Bool {
        guard case .interleaved(let rtp, let rtcp) = transport else { return false }
        return legs.contains { leg in
            if case .interleaved(let a, let b) = leg.transport { return [a, b].contains(rtp) || [a, b].contains(rtcp) }
            return false
        }
    }

    /// PLAY: subscribes at the next IDR (with the sound when its track is set up) and asks the gate for an
    /// IDR; the RTP-Info value, one entry a track (nil once ended). `base` is the aggregate URL.
    func play(base: String) -> String? {
        guard let hub = mount.hub else { return nil }
        let started = state.withLock { s -> Bool? in
            guard !s.ended else { return nil }
            return s.subscription != nil
        }
        guard let started else { return nil }
        let legs = self.legs
        if let leg = legs.first, let multicast = leg.multicast {
            return playMulticast(multicast, base: base, hub: hub)
        }
        let sound = mount.sound != nil && legs.contains { $0.track == RTPAudioTrack.trackID }
        if !started {
            guard let subscription = hub.subscribe("rtsp \(connection.peer)", from: .nextIDR, policy: .skipToIDR(depth: 60),
                                                   withAudio: sound,
                                                   onCatchUp: Subscription.catchUpLog(of: "rtsp: \(connection.peer)", to: connection.server.log),
                                                   doorbell: sendLoop)
            else { return nil }
            let start: String
            switch hub.requestIDR() {
            case .requested: start = "IDR requested"
            case .onItsWay: start = "an IDR is already on its way"
            case .atTheNextOne: start = "starts at the next IDR"
            }
            mount.totals.withLock { $0.playing += 1 }
            let how = legs.map { $0.transport.isTCP ? "TCP" : "UDP" }.first ?? "TCP"
            connection.server.log("rtsp: \(connection.peer) plays \(mount.paths.last ?? "/") over \(how)\(sound ? " with its sound" : "") (session \(id), "
                + "\(connection.server.sessionCount) in all); \(start)")
            state.withLock { $0.subscription = subscription }
            connection.channel.eventLoop.execute { [self] in
                startSending(subscription, legs: legs)
            }
        }
        // Each track's RTP time of one instant: the newest frame's.
        let newest = hub.newest?.presentationTimeNanoseconds ?? 0
        return legs.map { leg in
            let rtptime = leg.track == RTPAudioTrack.trackID ? mount.sound?.rtpTimestamp(ofInstant: newest) ?? 0
                : mount.rtpTimestamp(presentationNanoseconds: newest)
            return "url=\(base)trackID=\(leg.track);seq=\(leg.firstSequence);rtptime=\(rtptime)"
        }.joined(separator: ",")
    }

    /// PLAY of a multicast session: one more member of the mount's group (its sender starts with the first).
    private func playMulticast(_ multicast: RTSPMulticast, base: String, hub: StreamHub) -> String? {
        let joined = state.withLock { s -> Bool in
            defer { s.multicastJoined = true }
            return s.multicastJoined
        }
        if !joined {
            guard multicast.join(mount: mount) else { return nil }
            mount.totals.withLock { $0.playing += 1 }
            connection.server.log("rtsp: \(connection.peer) plays \(mount.paths.last ?? "/") over UDP multicast to \(multicast.group):\(multicast.port) "
                + "(session \(id), \(connection.server.sessionCount) in all)")
        }
        let rtptime = mount.rtpTimestamp(presentationNanoseconds: hub.newest?.presentationTimeNanoseconds ?? 0)
        return "url=\(base)trackID=0;seq=\(multicast.nextSequence);rtptime=\(rtptime)"
    }

    /// What one leg has sent, for its sender reports.
    struct Sent {
        var sequence: UInt16
        var packets: UInt32 = 0
        var octets: UInt32 = 0
        var lastReport: UInt64 = 0
    }

    /// RTCP from the client (interleaved, or on a track's UDP port): the connection reads it, a sign of
    /// life, keeping the newest report block about the picture's stream.
    func noteRTCP(_ bytes: some Collection<UInt8>) {
        connection.rtcp(bytes, ssrc: videoSSRC)
    }

    /// Ends the session: leaves the hub and its loop's sending, stops reading its RTCP, frees its slot.
    func end(reason: String) async {
        let (first, subscription, multicastJoined, legs) = state.withLock { s in
            defer { s.ended = true }
            return (!s.ended, s.subscription, s.multicastJoined, s.legs)
        }
        guard first else { return }
        subscription?.cancel()
        // On the loop: after this, nothing more of this session is sent.
        let (frames, soundPackets) = (try? await connection.channel.eventLoop.submit { [self] in
            let here = onLoop.value
            here.stoppedSending = true
            sendLoop.remove(self)
            return (here.frames, here.soundPackets)
        }.get()) ?? (0, 0)
        for leg in legs { leg.close(holder: holder) }
        if multicastJoined { await mount.multicast?.leave() }
        holder.session.withLock { $0 = nil }
        connection.server.releaseSession()
        if subscription != nil || multicastJoined {
            mount.totals.withLock { t in
                t.playing -= 1
                t.skipped += subscription?.snapshot.skipped ?? 0
            }
            let sent = multicastJoined ? "over multicast" : "after \(frames) frames" + (soundPackets > 0 ? " and \(soundPackets) sound packets" : "")
            connection.server.log("rtsp: \(connection.peer) \(reason) \(sent) (session \(id)\(Self.reception(connection.life)))")
        }
    }

    /// What the client's RTCP said, for the log (`/metrics` shows it while the session lasts): without
    /// `--http`, this line is where a user reads a client's loss and jitter.
    static func reception(_ life: SessionLife) -> String {
        var text = ""
        if life.receiverReports > 0 {
            text += ", \(life.receiverReports) receiver reports"
            if let block = life.newest {
                let jitter = (Double(block.jitter) / 90).rounded() / 1000
                text += ": \(block.cumulativeLost) packets lost, \(Int(block.fractionLost) * 100 / 256) % lately, jitter \(jitter) s"
            }
        }
        if life.ignored > 0 { text += ", \(life.ignored) RTCP datagrams or frames that were not RTCP ignored" }
        return text
    }
}

extension RTSPTransport {
    var isTCP: Bool {
        if case .interleaved = self { return true }
        return false
    }
}
