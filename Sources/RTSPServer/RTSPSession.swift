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

/// One client's session: one video track, sent from its hub subscription (`.skipToIDR`) as RTP, over the
/// RTSP connection (interleaved) or UDP to the connection's own peer address (never to an address a
/// client names: camrec sends nothing to a third party). A sender report goes with the first frame and
/// then every second, pairing the frame's capture time (NTP) with its RTP timestamp.
final class RTSPSession: @unchecked Sendable {
    let id: String
    let mount: RTSPMount
    let transport: RTSPTransport
    let connection: RTSPConnection
    let ssrc = UInt32.random(in: 1...UInt32.max)
    private let firstSequence = UInt16.random(in: 0...UInt16.max)
    private let packetizer: RTPPacketizer
    /// UDP: the RTP and RTCP sockets, and where they send.
    private let rtpChannel: Channel?
    private let rtcpChannel: Channel?
    private let clientRTP: SocketAddress?
    private let clientRTCP: SocketAddress?
    private let state = Mutex(State())
    /// How long one access unit may take a TCP client before it is cut (it reads nothing, or far too slowly).
    static let stallTimeoutMilliseconds: Int64 = 10_000

    private struct State {
        var subscription: Subscription?
        var sender: Task<Void, Never>?
        var ended = false
        var frames = 0
        var receiverReports = 0
        var lastReport: RTCP.ReceptionReport?
    }

    private init(connection: RTSPConnection, mount: RTSPMount, transport: RTSPTransport, rtp: Channel?, rtcp: Channel?,
                 clientRTP: SocketAddress?, clientRTCP: SocketAddress?) {
        var bytes = [UInt8](repeating: 0, count: 8)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        id = bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined()
        self.connection = connection
        self.mount = mount
        self.transport = transport
        rtpChannel = rtp
        rtcpChannel = rtcp
        self.clientRTP = clientRTP
        self.clientRTCP = clientRTCP
        packetizer = RTPPacketizer(codec: mount.codec, maximumPacketBytes: connection.server.configuration.maximumPacketBytes)
    }

    /// A session for SETUP: for UDP, two sockets on an even and the next odd port (RFC 3550 §11).
    static func make(connection: RTSPConnection, mount: RTSPMount, transport: RTSPTransport) async throws -> RTSPSession {
        guard case .udp(let rtpPort, let rtcpPort) = transport else {
            return RTSPSession(connection: connection, mount: mount, transport: transport, rtp: nil, rtcp: nil, clientRTP: nil, clientRTCP: nil)
        }
        guard let peer = connection.channel.remoteAddress?.ipAddress, let local = connection.channel.localAddress?.ipAddress else {
            throw SocketError("getpeername", .socketNotConnected, address: connection.peer)
        }
        let clientRTP = try SocketAddress(ipAddress: peer, port: Int(rtpPort))
        let clientRTCP = try SocketAddress(ipAddress: peer, port: Int(rtcpPort))
        let holder = SessionHolder()
        for _ in 0..<16 {
            let rtp = try await DatagramBootstrap(group: connection.channel.eventLoop)
                .channelOption(.socketOption(.so_sndbuf), value: 1 << 20)
                .bind(host: local, port: 0).get()
            guard let port = rtp.localAddress?.port, port % 2 == 0, port < 65535 else {
                try? await rtp.close()
                continue
            }
            let rtcp: Channel
            do {
                rtcp = try await DatagramBootstrap(group: connection.channel.eventLoop)
                    .channelInitializer { channel in channel.pipeline.addHandler(RTCPInbound(holder: holder)) }
                    .bind(host: local, port: port + 1).get()
            } catch {
                try? await rtp.close()
                continue
            }
            let session = RTSPSession(connection: connection, mount: mount, transport: transport, rtp: rtp, rtcp: rtcp,
                                      clientRTP: clientRTP, clientRTCP: clientRTCP)
            holder.session.withLock { $0 = session }
            return session
        }
        throw SocketError("bind", .addressInUse, address: "\(local): no free even/odd UDP port pair")
    }

    var transportDescription: String {
        switch transport {
        case .interleaved(let rtp, let rtcp):
            return "RTP/AVP/TCP;unicast;interleaved=\(rtp)-\(rtcp);ssrc=\(hex(ssrc))"
        case .udp(let clientRTP, let clientRTCP):
            let serverRTP = rtpChannel?.localAddress?.port ?? 0
            return "RTP/AVP;unicast;client_port=\(clientRTP)-\(clientRTCP);server_port=\(serverRTP)-\(serverRTP + 1);ssrc=\(hex(ssrc))"
        }
    }

    private func hex(_ v: UInt32) -> String {
        let text = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - text.count) + text
    }

    /// PLAY: subscribes at the next IDR and asks the gate for one; the RTP-Info value (nil once ended).
    func play(url: String) -> String? {
        guard let hub = mount.hub else { return nil }
        let how = transport.isTCP ? "TCP" : "UDP"
        let started = state.withLock { s -> Bool? in
            guard !s.ended else { return nil }
            return s.subscription != nil
        }
        guard let started else { return nil }
        if !started {
            guard let subscription = hub.subscribe("rtsp \(connection.peer)", from: .nextIDR, policy: .skipToIDR(depth: 60)) else { return nil }
            let log = connection.server.log
            let name = "rtsp: \(connection.peer)"
            subscription.onCatchUp = { dropped, resumed, catchUps in
                log("\(name): too slow, skipped \(dropped) frames, resuming at \(resumed ? "this" : "the next") IDR (skip #\(catchUps))")
            }
            let start: String
            switch hub.requestIDR() {
            case .requested: start = "IDR requested"
            case .onItsWay: start = "an IDR is already on its way"
            case .atTheNextOne: start = "starts at the next IDR"
            }
            mount.totals.withLock { $0.playing += 1 }
            connection.server.log("rtsp: \(connection.peer) plays \(mount.paths.last ?? "/") over \(how) (session \(id), "
                + "\(connection.server.sessionCount) in all); \(start)")
            let task = Task(executorPreference: EventLoopExecutor(connection.channel.eventLoop)) { [self] in
                await send(subscription)
            }
            state.withLock { s in
                s.subscription = subscription
                s.sender = task
            }
        }
        let rtptime = mount.rtpTimestamp(presentationNanoseconds: hub.newest?.presentationTimeNanoseconds ?? 0)
        return "url=\(url);seq=\(firstSequence);rtptime=\(rtptime)"
    }

    private func send(_ subscription: Subscription) async {
        var fragments: [RTPFragment] = []
        var sequence = firstSequence
        var packets: UInt32 = 0
        var octets: UInt32 = 0
        var lastReport: UInt64 = 0
        let server = connection.server
        let channel = connection.channel
        while let chunk = await subscription.nextAsync() {
            defer { chunk.release() }
            guard chunk.kind == .video else { continue }
            fragments.removeAll(keepingCapacity: true)
            chunk.bytes.withUnsafeBytes { packetizer.fragments(of: $0, into: &fragments) }
            let timestamp = mount.rtpTimestamp(presentationNanoseconds: chunk.presentationTimeNanoseconds)
            let now = MonotonicClock.now()
            var report: [UInt8]?
            if lastReport == 0 || now &- lastReport >= 1_000_000_000 {
                lastReport = now
                let capture = chunk.captureTimeNanoseconds > 0 ? chunk.captureTimeNanoseconds : now
                let unix = UInt64(max(0, Int64(capture) + server.realtimeOffsetNanoseconds))
                report = RTCP.senderReport(ssrc: ssrc, ntp: RTCP.ntp(unixNanoseconds: unix), rtpTimestamp: timestamp,
                                           packets: packets, octets: octets)
            }
            let payloadBytes = fragments.reduce(0) { $0 + $1.payloadBytes }
            var bytes = chunk.bytes.count
            do {
                switch transport {
                case .interleaved(let rtpChannel, let rtcpChannel):
                    var buffer = channel.allocator.buffer(capacity: payloadBytes + fragments.count * 16 + 32)
                    if let report {
                        buffer.writeInteger(UInt8(ascii: "$"))
                        buffer.writeInteger(rtcpChannel)
                        buffer.writeInteger(UInt16(report.count))
                        buffer.writeBytes(report)
                    }
                    chunk.bytes.withUnsafeBytes { au in
                        for fragment in fragments {
                            buffer.writeInteger(UInt8(ascii: "$"))
                            buffer.writeInteger(rtpChannel)
                            buffer.writeInteger(UInt16(RTPPacketizer.headerBytes + fragment.payloadBytes))
                            writeRTP(fragment, sequence: sequence, timestamp: timestamp, accessUnit: au, into: &buffer)
                            sequence &+= 1
                        }
                    }
                    try await sendWithStallTimeout(buffer, on: channel)
                case .udp:
                    guard let rtp = rtpChannel, let rtcp = rtcpChannel, let clientRTP, let clientRTCP else { return }
                    if let report {
                        var buffer = rtcp.allocator.buffer(capacity: report.count)
                        buffer.writeBytes(report)
                        rtcp.writeAndFlush(AddressedEnvelope(remoteAddress: clientRTCP, data: buffer), promise: nil)
                    }
                    var buffer = rtp.allocator.buffer(capacity: payloadBytes + fragments.count * RTPPacketizer.headerBytes)
                    var last: EventLoopFuture<Void>?
                    chunk.bytes.withUnsafeBytes { au in
                        for fragment in fragments {
                            let start = buffer.writerIndex
                            writeRTP(fragment, sequence: sequence, timestamp: timestamp, accessUnit: au, into: &buffer)
                            sequence &+= 1
                            let packet = buffer.getSlice(at: start, length: buffer.writerIndex - start)!
                            last = rtp.write(AddressedEnvelope(remoteAddress: clientRTP, data: packet))
                        }
                    }
                    rtp.flush()
                    // The kernel takes a datagram or drops it: this waits for nothing but the loop.
                    try await last?.get()
                }
            } catch {
                bytes = 0
                if !state.withLock({ $0.ended }) {
                    // A UDP send that the kernel refused (ECONNREFUSED from the client's ICMP) costs one frame.
                    if transport.isTCP { break }
                    continue
                }
                break
            }
            packets &+= UInt32(truncatingIfNeeded: fragments.count)
            octets &+= UInt32(truncatingIfNeeded: payloadBytes)
            state.withLock { $0.frames += 1 }
            mount.totals.withLock { t in
                t.frames += 1
                t.bytes += bytes
            }
        }
        subscription.stopTaking()
        if !state.withLock({ $0.ended }) {
            // The stream ended (or a TCP client could not take it): the connection ends with it.
            channel.close(promise: nil)
        }
    }

    private func writeRTP(_ fragment: RTPFragment, sequence: UInt16, timestamp: UInt32, accessUnit: UnsafeRawBufferPointer,
                          into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(0x80))
        buffer.writeInteger((fragment.marker ? 0x80 : 0) | SessionDescription.payloadType)
        buffer.writeInteger(sequence)
        buffer.writeInteger(timestamp)
        buffer.writeInteger(ssrc)
        if fragment.prefixCount > 0 { buffer.writeInteger(fragment.prefix0) }
        if fragment.prefixCount > 1 { buffer.writeInteger(fragment.prefix1) }
        if fragment.prefixCount > 2 { buffer.writeInteger(fragment.prefix2) }
        buffer.writeBytes(UnsafeRawBufferPointer(rebasing: accessUnit[fragment.payload]))
    }

    /// One access unit, until the kernel has it; a client that takes longer than the stall timeout is
    /// cut with a reset (it may hold half an interleaved frame).
    private func sendWithStallTimeout(_ buffer: ByteBuffer, on channel: Channel) async throws {
        let peer = connection.peer
        let log = connection.server.log
        let timer = channel.eventLoop.scheduleTask(in: .milliseconds(Self.stallTimeoutMilliseconds)) {
            log("rtsp: \(peer): fell behind: one access unit took it over \(Self.stallTimeoutMilliseconds / 1000) s; disconnected")
            if let options = channel as? SocketOptionProvider {
                options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        }
        defer { timer.cancel() }
        try await channel.writeAndFlush(buffer).get()
    }

    /// RTCP from the client: receiver reports are a sign of life (read within bounds, nothing kept but the newest).
    func noteRTCP(_ bytes: some Collection<UInt8>) {
        guard bytes.count <= 65_536, let reports = RTCP.receptionReports(in: bytes) else { return }
        connection.touch()
        state.withLock { s in
            s.receiverReports += 1
            if let report = reports.first(where: { $0.ssrc == ssrc }) { s.lastReport = report }
        }
    }

    /// Ends the session: leaves the hub, closes its UDP sockets, frees its slot.
    func end(reason: String) async {
        let (first, subscription, sender, frames, reports) = state.withLock { s in
            defer { s.ended = true }
            return (!s.ended, s.subscription, s.sender, s.frames, s.receiverReports)
        }
        guard first else { return }
        subscription?.cancel()
        sender?.cancel()
        await sender?.value
        try? await rtpChannel?.close()
        try? await rtcpChannel?.close()
        connection.server.releaseSession()
        if let subscription {
            mount.totals.withLock { t in
                t.playing -= 1
                t.skipped += subscription.snapshot.skipped
            }
            connection.server.log("rtsp: \(connection.peer) \(reason) after \(frames) frames (session \(id)"
                + (reports > 0 ? ", \(reports) receiver reports" : "") + ")")
        }
    }
}

extension RTSPTransport {
    var isTCP: Bool {
        if case .interleaved = self { return true }
        return false
    }
}

/// Holds the session for the RTCP socket's handler, which exists before it.
final class SessionHolder: Sendable {
    let session = Mutex<RTSPSession?>(nil)
}

/// The RTCP socket's reader: a receiver report is a sign of life.
final class RTCPInbound: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let holder: SessionHolder

    init(holder: SessionHolder) {
        self.holder = holder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let session = holder.session.withLock({ $0 }) else { return }
        // Only from the client's own address.
        guard envelope.remoteAddress.ipAddress == session.connection.channel.remoteAddress?.ipAddress else { return }
        session.noteRTCP(envelope.data.readableBytesView)
    }
}
