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
    private let packetizer: RTPPacketizer
    private let holder = SessionHolder()
    private let state = Mutex(State())
    /// The loop that sends for the sessions of this connection's event loop.
    private let sendLoop: RTSPSendLoop
    /// How long a TCP client may take nothing before it is cut (it reads nothing, or far too slowly).
    static let stallTimeoutNanoseconds: UInt64 = 10_000_000_000

    private struct State {
        var legs: [RTPLeg] = []
        var subscription: Subscription?
        var ended = false
        var multicastJoined = false
    }

    /// What is being sent, the connection's event loop's alone (from PLAY to the end): NIO checks that
    /// each pass is on it.
    private let onLoop: NIOLoopBoundBox<Sender>
    private final class Sender {
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
    private struct Sent {
        var sequence: UInt16
        var packets: UInt32 = 0
        var octets: UInt32 = 0
        var lastReport: UInt64 = 0
    }

    /// On the event loop, after PLAY: the session joins its loop's sending (unless it has already ended).
    private func startSending(_ subscription: Subscription, legs: [RTPLeg]) {
        guard !state.withLock({ $0.ended }) else { return }
        let here = onLoop.value
        here.video = legs.first { $0.track == 0 }
        here.audio = legs.first { $0.track == RTPAudioTrack.trackID }
        here.sent = [Sent(sequence: here.video?.firstSequence ?? 0), Sent(sequence: here.audio?.firstSequence ?? 0)]
        here.sending = subscription
        sendLoop.add(self)
        pump()
    }

    /// Sends what the subscription holds, on the connection's event loop: until nothing is left, or a TCP
    /// connection can take no more (it calls again when it can; meanwhile the hub queues, then skips it
    /// to the next IDR); at the end of the stream, or once a TCP connection has gone, the connection closes.
    func pump() {
        let here = onLoop.value
        guard let subscription = here.sending, !here.pumping, !here.stoppedSending else { return }
        here.pumping = true
        defer {
            here.pumping = false
            sendLoop.pumped()
        }
        let channel = connection.channel
        let tcp = here.video?.transport.isTCP ?? here.audio?.transport.isTCP ?? false
        while true {
            if tcp {
                guard channel.isActive else { return stopSending(subscription, here) }
                guard channel.isWritable else { return }
            }
            switch subscription.poll() {
            case .chunk(let chunk):
                send(chunk, here)
                chunk.release()
            case .timedOut:
                return
            case .ended:
                return stopSending(subscription, here)
            }
        }
    }

    /// The stream ended (or a TCP client could not take it): the connection ends with it, once what was
    /// written has gone.
    private func stopSending(_ subscription: Subscription, _ here: Sender) {
        here.stoppedSending = true
        subscription.stopTaking()
        sendLoop.remove(self)
        guard !state.withLock({ $0.ended }) else { return }
        let channel = connection.channel
        channel.writeAndFlush(channel.allocator.buffer(capacity: 0)).whenComplete { _ in channel.close(promise: nil) }
    }

    private func send(_ chunk: StreamChunk, _ here: Sender) {
        let server = connection.server
        let mtu = server.configuration.maximumPacketBytes
        let leg: RTPLeg
        let timestamp: UInt32
        let instant: UInt32
        let payloadType: UInt8
        var packets: RTPVideoPackets?
        here.fragments.removeAll(keepingCapacity: true)
        if chunk.kind == .video {
            if here.firstPicture == nil { here.firstPicture = chunk.presentationTimeNanoseconds }
            guard let video = here.video else { return }
            leg = video
            timestamp = mount.rtpTimestamp(presentationNanoseconds: chunk.presentationTimeNanoseconds)
            instant = timestamp
            payloadType = SessionDescription.payloadType
            // Packetized once for every session of the stream; this one stamps its copy.
            packets = sendLoop.packets(of: chunk, packetizer: packetizer, payloadType: payloadType, timestamp: timestamp)
        } else {
            guard let audio = here.audio, let sound = mount.sound, let firstPicture = here.firstPicture, chunk.presentationTimeNanoseconds >= firstPicture else { return }
            leg = audio
            guard sound.track.fragments(ofPacketBytes: chunk.bytes.count, maximumPacketBytes: mtu, into: &here.fragments) else {
                here.refusedSound += 1
                if here.refusedSound == 1 {
                    server.log("rtsp: \(connection.peer): a sound packet of \(chunk.bytes.count) bytes does not fit "
                        + "\(mtu)-byte RTP packets (--rtsp-mtu) and is not sent; so are the others like it")
                }
                return
            }
            timestamp = sound.rtpTimestamp(ofPacketAt: chunk.presentationTimeNanoseconds)
            instant = sound.rtpTimestamp(ofInstant: chunk.presentationTimeNanoseconds)
            payloadType = RTPAudioTrack.payloadType
        }
        let index = leg.track == 0 ? 0 : 1
        let now = MonotonicClock.now()
        var report: [UInt8]?
        if here.sent[index].lastReport == 0 || now &- here.sent[index].lastReport >= 1_000_000_000 {
            here.sent[index].lastReport = now
            // The instant's NTP time on the capture clock, through the recording's timeline (as the sound is stamped).
            let ntp = server.ntp(ofPresentation: chunk.presentationTimeNanoseconds, capturedAt: chunk.captureTimeNanoseconds)
            report = RTCP.senderReport(ssrc: leg.ssrc, ntp: ntp, rtpTimestamp: instant,
                                       packets: here.sent[index].packets, octets: here.sent[index].octets)
        }
        let payloadBytes = packets?.payloadBytes ?? here.fragments.reduce(0) { $0 + $1.payloadBytes }
        let credit = Credit(track: index, packets: packets?.count ?? here.fragments.count, payloadBytes: payloadBytes,
                            accessUnitBytes: chunk.bytes.count, video: chunk.kind == .video)
        var sequence = here.sent[index].sequence
        let taken: Bool?
        if let packets {
            taken = transmit(packets, on: leg, sequence: &sequence, report: report, credit: credit)
        } else {
            taken = transmit(here.fragments, of: chunk, on: leg, payloadType: payloadType, timestamp: timestamp,
                             sequence: &sequence, report: report, payloadBytes: payloadBytes)
        }
        // A UDP send that the kernel refused costs its packets (the client sees them lost).
        here.sent[index].sequence = sequence
        if let taken { account(credit, here, taken: taken) }
    }

    /// What one access unit sent counts, once the kernel has taken it: for the sender reports, the log and `/metrics`.
    struct Credit {
        let track: Int
        let packets: Int
        let payloadBytes: Int
        let accessUnitBytes: Int
        let video: Bool
    }

    /// On the loop, after its sending loop's UDP flush: whether the kernel took a picture queued there.
    func delivered(_ credit: Credit, taken: Bool) {
        account(credit, onLoop.value, taken: taken)
    }

    private func account(_ credit: Credit, _ here: Sender, taken: Bool) {
        guard taken else { return }
        here.sent[credit.track].packets &+= UInt32(truncatingIfNeeded: credit.packets)
        here.sent[credit.track].octets &+= UInt32(truncatingIfNeeded: credit.payloadBytes)
        if credit.video { here.frames += 1 } else { here.soundPackets += 1 }
        mount.totals.withLock { t in
            if credit.video { t.frames += 1 }
            t.bytes += credit.accessUnitBytes
        }
    }

    /// An interleaved sender report, written ahead of what follows it.
    private func writeInterleaved(_ report: [UInt8], channel rtcpChannel: UInt8) {
        let channel = connection.channel
        var buffer = channel.allocator.buffer(capacity: report.count + 4)
        buffer.writeInteger(UInt8(ascii: "$"))
        buffer.writeInteger(rtcpChannel)
        buffer.writeInteger(UInt16(report.count))
        buffer.writeBytes(report)
        channel.write(buffer, promise: nil)
    }

    /// One chunk's packets on `leg`, its sender report (if due) ahead of them; false when the kernel
    /// refused them (UDP).
    private func transmit(_ fragments: [RTPFragment], of chunk: StreamChunk, on leg: RTPLeg, payloadType: UInt8, timestamp: UInt32,
                          sequence: inout UInt16, report: [UInt8]?, payloadBytes: Int) -> Bool {
        let channel = connection.channel
        switch leg.transport {
        case .interleaved(let rtpChannel, let rtcpChannel):
            if let report { writeInterleaved(report, channel: rtcpChannel) }
            var buffer = channel.allocator.buffer(capacity: payloadBytes + fragments.count * 20)
            var next = sequence
            chunk.bytes.withUnsafeBytes { au in
                for fragment in fragments {
                    buffer.writeInteger(UInt8(ascii: "$"))
                    buffer.writeInteger(rtpChannel)
                    buffer.writeInteger(UInt16(RTPPacketizer.headerBytes + fragment.payloadBytes))
                    writeRTP(fragment, payloadType: payloadType, sequence: next, timestamp: timestamp, ssrc: leg.ssrc, accessUnit: au, into: &buffer)
                    next &+= 1
                }
            }
            sequence = next
            channel.writeAndFlush(buffer, promise: nil)
            return true
        case .multicast:
            return true
        case .udp:
            guard let ports = leg.ports, let clientRTP = leg.clientRTP, let clientRTCP = leg.clientRTCP else { return true }
            if let report { _ = report.withUnsafeBytes { ports.sendRTCP($0, to: clientRTCP) } }
            var buffer = channel.allocator.buffer(capacity: payloadBytes + fragments.count * RTPPacketizer.headerBytes)
            var taken = true
            var next = sequence
            chunk.bytes.withUnsafeBytes { au in
                for fragment in fragments {
                    buffer.clear()
                    writeRTP(fragment, payloadType: payloadType, sequence: next, timestamp: timestamp, ssrc: leg.ssrc, accessUnit: au, into: &buffer)
                    next &+= 1
                    taken = buffer.withUnsafeReadableBytes { ports.sendRTP($0, to: clientRTP) } && taken
                }
            }
            sequence = next
            return taken
        }
    }

    /// A picture's packets on `leg` (made once for all sessions), its sender report (if due) ahead of them:
    /// over TCP one write of a copy stamped with the session's channel, sequence numbers and SSRC; over
    /// UDP queued in the sending loop's batch, sent with the other UDP sessions' at the end of its pass, a
    /// message a run of full-size packets (cut into datagrams by the kernel when the ports have a segment
    /// size, else one a packet). Nil when queued (the batch credits the session after its send).
    private func transmit(_ packets: RTPVideoPackets, on leg: RTPLeg, sequence: inout UInt16, report: [UInt8]?, credit: Credit) -> Bool? {
        let first = sequence
        sequence &+= UInt16(truncatingIfNeeded: packets.count)
        switch leg.transport {
        case .interleaved(let rtpChannel, let rtcpChannel):
            if let report { writeInterleaved(report, channel: rtcpChannel) }
            connection.channel.writeAndFlush(sendLoop.interleaved(packets, channel: rtpChannel, firstSequence: first, ssrc: leg.ssrc),
                                             promise: nil)
            return true
        case .multicast:
            return true
        case .udp:
            guard let ports = leg.ports, let clientRTP = leg.clientRTP, let clientRTCP = leg.clientRTCP else { return true }
            if let report { _ = report.withUnsafeBytes { ports.sendRTCP($0, to: clientRTCP) } }
            guard packets.count > 0 else { return true }
            let runs = ports.segmentBytes == connection.server.configuration.maximumPacketBytes
            sendLoop.datagrams.queue(packets, firstSequence: first, ssrc: leg.ssrc, to: clientRTP, through: ports, runs: runs,
                                     session: self, credit: credit)
            return nil
        }
    }

    private func writeRTP(_ fragment: RTPFragment, payloadType: UInt8, sequence: UInt16, timestamp: UInt32, ssrc: UInt32,
                          accessUnit: UnsafeRawBufferPointer, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(0x80))
        buffer.writeInteger((fragment.marker ? 0x80 : 0) | payloadType)
        buffer.writeInteger(sequence)
        buffer.writeInteger(timestamp)
        buffer.writeInteger(ssrc)
        if fragment.prefixCount > 0 { buffer.writeInteger(fragment.prefix0) }
        if fragment.prefixCount > 1 { buffer.writeInteger(fragment.prefix1) }
        if fragment.prefixCount > 2 { buffer.writeInteger(fragment.prefix2) }
        if fragment.prefixCount > 3 { buffer.writeInteger(fragment.prefix3) }
        buffer.writeBytes(UnsafeRawBufferPointer(rebasing: accessUnit[fragment.payload]))
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
