import NIOCore
import NetStream
import RTSP

/// One track's RTP path in a session (the picture's, `trackID=0`, or the sound's, `trackID=1`): its
/// interleaved channels on the RTSP connection, or the server's shared UDP ports for the track (an even
/// one and the next odd one, RFC 3550 §11) sending to the connection's own peer; its own SSRC and
/// sequence numbers.
final class RTPLeg: Sendable {
    let track: Int
    let transport: RTSPTransport
    let ssrc = UInt32.random(in: 1...UInt32.max)
    let firstSequence = UInt16.random(in: 0...UInt16.max)
    /// Over UDP: the server's ports for this track at the connection's local address.
    let ports: RTSPServerPorts?
    let clientRTP: SocketAddress?
    let clientRTCP: SocketAddress?
    /// The client's RTCP address, as the ports know it.
    let rtcpKey: String

    private init(track: Int, transport: RTSPTransport, ports: RTSPServerPorts?, clientRTP: SocketAddress?, clientRTCP: SocketAddress?,
                 rtcpKey: String = "", multicast: RTSPMulticast? = nil) {
        self.multicast = multicast
        self.track = track
        self.transport = transport
        self.ports = ports
        self.clientRTP = clientRTP
        self.clientRTCP = clientRTCP
        self.rtcpKey = rtcpKey
    }

    /// With `.multicast`: the mount's group, which sends (the leg has no sockets of its own).
    let multicast: RTSPMulticast?

    /// A leg for SETUP: for UDP, the track's shared ports, whose RTCP from this client is read for `holder`'s session.
    static func open(track: Int, transport: RTSPTransport, connection: RTSPConnection, holder: SessionHolder,
                     multicast: RTSPMulticast?) async throws -> RTPLeg {
        guard case .udp(let rtpPort, let rtcpPort) = transport else {
            let group = transport == .multicast ? multicast : nil
            return RTPLeg(track: track, transport: transport, ports: nil, clientRTP: nil, clientRTCP: nil, multicast: group)
        }
        guard let peer = connection.channel.remoteAddress?.ipAddress, let local = connection.channel.localAddress?.ipAddress else {
            throw SocketError("getpeername", .socketNotConnected, address: connection.peer)
        }
        let clientRTP = try SocketAddress(ipAddress: peer, port: Int(rtpPort))
        let clientRTCP = try SocketAddress(ipAddress: peer, port: Int(rtcpPort))
        let ports = try await connection.server.ports(local: local, track: track)
        let leg = RTPLeg(track: track, transport: transport, ports: ports, clientRTP: clientRTP, clientRTCP: clientRTCP,
                         rtcpKey: RTSPServerPorts.key(ip: peer, port: Int(rtcpPort)))
        ports.register(.init(holder: holder, ip: peer, rtcpKey: leg.rtcpKey, ssrc: leg.ssrc))
        return leg
    }

    var description: String {
        switch transport {
        case .interleaved(let rtp, let rtcp):
            return "RTP/AVP/TCP;unicast;interleaved=\(rtp)-\(rtcp);ssrc=\(hex(ssrc))"
        case .udp(let clientRTP, let clientRTCP):
            let serverRTP = ports?.rtpPort ?? 0
            return "RTP/AVP;unicast;client_port=\(clientRTP)-\(clientRTCP);server_port=\(serverRTP)-\(serverRTP + 1);ssrc=\(hex(ssrc))"
        case .multicast:
            return multicast?.transportDescription ?? "RTP/AVP;multicast"
        }
    }

    private func hex(_ v: UInt32) -> String { Self.hex(v) }

    static func hex(_ v: UInt32) -> String {
        let text = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - text.count) + text
    }

    /// The client's RTCP is no longer read for `holder`'s session.
    func close(holder: SessionHolder) {
        ports?.unregister(rtcpKey: rtcpKey, ssrc: ssrc, holder: holder)
    }
}
