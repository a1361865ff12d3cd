import Glibc
import NIOCore
import NIOPosix
import NetStream
import RTSP
import Synchronization

/// The server's UDP ports for one track at one local address, shared by every UDP session of that track
/// (as gst-rtsp-server and live555 share a stream's): RTP from an even port, RTCP from the next one.
/// RTP is sent on the sending loop with one `sendto` a run of full-size packets (cut into datagrams by
/// the kernel, `UDP_SEGMENT`) and nothing reads it; RTCP from clients is read on one loop and handed to
/// the session whose client it comes from (its address and RTCP port, else the SSRC it reports on from the
/// session's client address). Two sockets for all clients, where each client had two of its own.
final class RTSPServerPorts: Sendable {
    let rtpPort: Int
    /// The RTP socket's UDP segment size, if the kernel cuts writes into datagrams.
    let segmentBytes: Int?
    private let rtpSocket: CInt
    private let rtcpSocket: CInt
    private let rtcpChannel: Channel
    private let closed = Atomic<Bool>(false)
    private let receivers = Mutex<Receivers>(Receivers())

    private struct Receivers {
        /// By the client's RTCP address ("ip port").
        var byAddress: [String: Receiver] = [:]
        var bySSRC: [UInt32: Receiver] = [:]
    }

    struct Receiver {
        let holder: SessionHolder
        let ip: String
        let rtcpKey: String
        let ssrc: UInt32
    }

    private init(rtpPort: Int, segmentBytes: Int?, rtpSocket: CInt, rtcpSocket: CInt, rtcpChannel: Channel) {
        self.rtpPort = rtpPort
        self.segmentBytes = segmentBytes
        self.rtpSocket = rtpSocket
        self.rtcpSocket = rtcpSocket
        self.rtcpChannel = rtcpChannel
    }

    /// Binds an even and the next odd port at `local` (the RTSP connection's own address).
    static func open(local: String, maximumPacketBytes: Int, on loop: EventLoop) async throws -> RTSPServerPorts {
        let any = try SocketAddress(ipAddress: local, port: 0)
        let family = any.protocol == .inet6 ? AF_INET6 : AF_INET
        func socket() throws -> CInt {
            let fd = Glibc.socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw SocketError("socket", .init(rawValue: errno), address: local) }
            return fd
        }
        func bind(_ fd: CInt, port: Int) -> Bool {
            guard let address = try? SocketAddress(ipAddress: local, port: port) else { return false }
            return address.withSockAddr { Glibc.bind(fd, $0, socklen_t($1)) } == 0
        }
        func boundPort(_ fd: CInt) -> Int {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let ok = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            } == 0
            guard ok else { return 0 }
            return Int(UInt16(bigEndian: withUnsafeBytes(of: &storage) { $0.load(fromByteOffset: 2, as: UInt16.self) }))
        }
        for _ in 0..<16 {
            let rtp = try socket()
            guard bind(rtp, port: 0), case let port = boundPort(rtp), port % 2 == 0, port > 0, port < 65535 else {
                Glibc.close(rtp)
                continue
            }
            let rtcp = try socket()
            guard bind(rtcp, port: port + 1) else {
                Glibc.close(rtp)
                Glibc.close(rtcp)
                continue
            }
            // Every client's pictures leave through this one socket: as much send buffer as the kernel allows.
            var sendBuffer: CInt = 4 << 20
            setsockopt(rtp, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<CInt>.size))
            var segment = CInt(maximumPacketBytes)
            let segments = System.supportsUDPSegmentationOffload
                && setsockopt(rtp, Self.solUDP, Self.udpSegment, &segment, socklen_t(MemoryLayout<CInt>.size)) == 0
            let holder = PortsHolder()
            let channel: Channel
            do {
                channel = try await DatagramBootstrap(group: loop)
                    .channelInitializer { channel in channel.pipeline.addHandler(RTCPInbound(ports: holder)) }
                    .withBoundSocket(rtcp).get()
            } catch {
                Glibc.close(rtp)
                throw error
            }
            let ports = RTSPServerPorts(rtpPort: port, segmentBytes: segments ? maximumPacketBytes : nil, rtpSocket: rtp,
                                        rtcpSocket: rtcp, rtcpChannel: channel)
            holder.ports.withLock { $0 = ports }
            return ports
        }
        throw SocketError("bind", .addressInUse, address: "\(local): no free even/odd UDP port pair")
    }

    static let solUDP: CInt = 17
    static let udpSegment: CInt = 103

    /// RTCP from `rtcpKey` (or on `ssrc`, from `ip`) is `holder`'s session's.
    func register(_ receiver: Receiver) {
        receivers.withLock { r in
            r.byAddress[receiver.rtcpKey] = receiver
            r.bySSRC[receiver.ssrc] = receiver
        }
    }

    func unregister(rtcpKey: String, ssrc: UInt32, holder: SessionHolder) {
        receivers.withLock { r in
            if r.byAddress[rtcpKey]?.holder === holder { r.byAddress[rtcpKey] = nil }
            if r.bySSRC[ssrc]?.holder === holder { r.bySSRC[ssrc] = nil }
        }
    }

    static func key(ip: String, port: Int) -> String { "\(ip) \(port)" }

    /// The session a datagram from `address` is about: its client's RTCP port, else (a client that
    /// sends from another port) the stream a receiver report in it names, from that session's client.
    func receiver(from address: SocketAddress, bytes: ByteBufferView) -> SessionHolder? {
        guard let ip = address.ipAddress, let port = address.port else { return nil }
        let key = Self.key(ip: ip, port: port)
        if let exact = receivers.withLock({ $0.byAddress[key] }) { return exact.holder }
        guard let reports = RTCP.receptionReports(in: bytes) else { return nil }
        return receivers.withLock { r in
            for report in reports {
                if let receiver = r.bySSRC[report.ssrc], receiver.ip == ip { return receiver.holder }
            }
            return nil
        }
    }

    /// Sends `bytes` (one packet, or a run of full-size packets when `segmentBytes` is set) to `client`;
    /// false when the kernel did not take them. A full send buffer is waited for a little (a real network
    /// drains it in moments); the sending loop is never held longer than that.
    func sendRTP(_ bytes: UnsafeRawBufferPointer, to client: SocketAddress) -> Bool {
        send(bytes, on: rtpSocket, to: client)
    }

    /// Sends `count` messages (`struct mmsghdr`s, `stride` bytes apart) with `sendmmsg`, each a packet or a
    /// run of full-size packets to a client; `failed` hears of each the kernel did not take. A full send
    /// buffer is waited for once a call, a little, as for one packet: the loop is never held longer.
    func sendRTP(_ messages: UnsafeMutableRawPointer, count: Int, stride: Int, failed: (Int) -> Void) {
        guard !closed.load(ordering: .acquiring) else { return (0..<count).forEach(failed) }
        guard let sendMultipleMessages else {
            for index in 0..<count where sendmsg(rtpSocket, (messages + index * stride).assumingMemoryBound(to: msghdr.self), Int32(MSG_DONTWAIT)) < 0 {
                failed(index)
            }
            return
        }
        var next = 0
        var waited = false
        while next < count {
            let sent = sendMultipleMessages(rtpSocket, messages + next * stride, CUnsignedInt(min(count - next, RTPDatagramBatch.mostMessages)), Int32(MSG_DONTWAIT))
            if sent > 0 {
                next += Int(sent)
                continue
            }
            if !waited && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
                waited = true
                var waiting = pollfd(fd: rtpSocket, events: Int16(POLLOUT), revents: 0)
                _ = poll(&waiting, 1, 5)
                continue
            }
            // This message is lost to its client (its sequence numbers show it); the next are tried.
            failed(next)
            next += 1
        }
    }

    func sendRTCP(_ bytes: UnsafeRawBufferPointer, to client: SocketAddress) -> Bool {
        send(bytes, on: rtcpSocket, to: client)
    }

    private func send(_ bytes: UnsafeRawBufferPointer, on socket: CInt, to client: SocketAddress) -> Bool {
        guard !closed.load(ordering: .acquiring) else { return false }
        for attempt in 0..<2 {
            let sent = client.withSockAddr { address, length in
                sendto(socket, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), address, socklen_t(length))
            }
            if sent >= 0 { return true }
            guard attempt == 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS else { return false }
            var waiting = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
            _ = poll(&waiting, 1, 5)
        }
        return false
    }

    /// After the last session (off the event loops): no loop sends on the sockets any more once each has
    /// run a task past this. `unused`: ports no session has had, closed at once.
    func close(unused: Bool = false) {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if !unused {
            for loop in EventLoops.shared.makeIterator() where !loop.inEventLoop {
                try? loop.submit {}.wait()
            }
        }
        Glibc.close(rtpSocket)
        rtcpChannel.close(promise: nil)   // closes rtcpSocket
    }
}

/// Holds the ports for their RTCP reader, which exists before them.
final class PortsHolder: Sendable {
    let ports = Mutex<RTSPServerPorts?>(nil)
}

/// RTCP from clients, on the shared RTCP port: handed to the session whose client sent it.
final class RTCPInbound: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let ports: PortsHolder

    init(ports: PortsHolder) {
        self.ports = ports
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let ports = ports.ports.withLock({ $0 }),
              let holder = ports.receiver(from: envelope.remoteAddress, bytes: envelope.data.readableBytesView),
              let session = holder.session.withLock({ $0 }) else { return }
        // Only from the client's own address.
        guard envelope.remoteAddress.ipAddress == session.connection.channel.remoteAddress?.ipAddress else { return }
        session.noteRTCP(envelope.data.readableBytesView)
    }
}
