import Bitstream
import Frames
import Hub
import NIOCore
import NIOPosix
import NetStream
import Outputs
import RTSP
import Synchronization
import SystemSupport

/// `--rtsp-multicast GROUP[:PORT]`: one encoding's RTP to a multicast group, one send per packet for
/// every multicast client of it (RFC 2326 §12.39: the server names `destination`, `port` and `ttl`).
/// Its socket is opened with the mount (before capture starts, so a bad group fails first); it takes
/// the hub's stream from the first multicast PLAY (at the next IDR, asking the gate for one, as a
/// unicast client does) to the last one's end, and sends a sender report each second to the group's
/// RTCP port. Clients' RTCP to the group is not read: their RTSP keep-alives keep them.
final class RTSPMulticast: Sendable {
    let group: String
    /// The RTP port (even); RTCP is the next one.
    let port: Int
    let ttl: Int
    let ssrc = UInt32.random(in: 1...UInt32.max)
    private let packetizer: RTPPacketizer
    private let state = Mutex(State())

    private struct State {
        var members = 0
        var channel: Channel?
        var hub: StreamHub?
        var subscription: Subscription?
        var sender: Task<Void, Never>?
        /// The sequence number of the next packet (RTP-Info's seq for a client that joins now).
        var nextSequence = UInt16.random(in: 0...UInt16.max)
    }

    init(group: String, port: Int, ttl: Int, codec: VideoCodec, maximumPacketBytes: Int) {
        self.group = group
        self.port = port
        self.ttl = ttl
        packetizer = RTPPacketizer(codec: codec, maximumPacketBytes: maximumPacketBytes)
    }

    var transportDescription: String {
        "RTP/AVP;multicast;destination=\(group);port=\(port)-\(port + 1);ttl=\(ttl);ssrc=\(RTPLeg.hex(ssrc))"
    }

    /// The sending socket, with the mount's hub (before capture starts).
    func open(hub: StreamHub) throws {
        let channel = try DatagramBootstrap(group: EventLoops.shared)
            .channelOption(.socketOption(.so_sndbuf), value: 1 << 20)
            .channelOption(ChannelOptions.Types.SocketOption(level: .ip, name: .ip_multicast_ttl), value: ttl)
            .bind(host: "0.0.0.0", port: 0).wait()
        state.withLock { s in
            s.channel = channel
            s.hub = hub
        }
    }

    /// The sequence number of the next packet sent (RTP-Info's seq).
    var nextSequence: UInt16 { state.withLock { $0.nextSequence } }

    /// One more client; the first starts the stream. False when the stream has ended.
    func join(mount: RTSPMount) -> Bool {
        state.withLock { s -> Bool in
            guard let hub = s.hub, let channel = s.channel else { return false }
            if s.subscription == nil {
                guard let subscription = hub.subscribe("rtsp multicast " + hostAndPort(group, port), from: .nextIDR, policy: .skipToIDR(depth: 60)),
                      let rtp = try? SocketAddress(ipAddress: group, port: port),
                      let rtcp = try? SocketAddress(ipAddress: group, port: port + 1) else { return false }
                s.subscription = subscription
                s.sender = Task(executorPreference: EventLoopExecutor(channel.eventLoop)) { [self] in
                    await send(subscription, mount: mount, channel: channel, rtp: rtp, rtcp: rtcp)
                }
            }
            _ = hub.requestIDR()
            s.members += 1
            return true
        }
    }

    /// One client fewer; the last one stops the stream (a later join starts it again at an IDR).
    func leave() async {
        let stopping = state.withLock { s -> (Subscription, Task<Void, Never>?)? in
            s.members -= 1
            guard s.members == 0, let subscription = s.subscription else { return nil }
            defer { s.subscription = nil; s.sender = nil }
            return (subscription, s.sender)
        }
        guard let (subscription, sender) = stopping else { return }
        subscription.cancel()
        sender?.cancel()
        await sender?.value
    }

    /// The stream has ended and its sessions with it: the socket closes.
    func close() {
        let channel = state.withLock { s in
            defer { s.hub = nil; s.channel = nil }
            return s.channel
        }
        channel?.close(promise: nil)
    }

    private func send(_ subscription: Subscription, mount: RTSPMount, channel: Channel, rtp: SocketAddress, rtcp: SocketAddress) async {
        var fragments: [RTPFragment] = []
        var sequence = state.withLock { $0.nextSequence }
        var packets: UInt32 = 0
        var octets: UInt32 = 0
        var lastReport: UInt64 = 0
        let server = mount.server
        while let chunk = await subscription.nextAsync() {
            defer { chunk.release() }
            guard chunk.kind == .video else { continue }
            fragments.removeAll(keepingCapacity: true)
            chunk.bytes.withUnsafeBytes { packetizer.fragments(of: $0, into: &fragments) }
            let timestamp = mount.rtpTimestamp(presentationNanoseconds: chunk.presentationTimeNanoseconds)
            let now = MonotonicClock.now()
            if lastReport == 0 || now &- lastReport >= 1_000_000_000 {
                lastReport = now
                let ntp = server.ntp(ofPresentation: chunk.presentationTimeNanoseconds, capturedAt: chunk.captureTimeNanoseconds)
                let report = RTCP.senderReport(ssrc: ssrc, ntp: ntp, rtpTimestamp: timestamp,
                                               packets: packets, octets: octets)
                var buffer = channel.allocator.buffer(capacity: report.count)
                buffer.writeBytes(report)
                channel.writeAndFlush(AddressedEnvelope(remoteAddress: rtcp, data: buffer), promise: nil)
            }
            let payloadBytes = fragments.reduce(0) { $0 + $1.payloadBytes }
            var buffer = channel.allocator.buffer(capacity: payloadBytes + fragments.count * RTPPacketizer.headerBytes)
            var last: EventLoopFuture<Void>?
            chunk.bytes.withUnsafeBytes { au in
                for fragment in fragments {
                    let start = buffer.writerIndex
                    buffer.writeBytes(RTPPacketizer.header(marker: fragment.marker, payloadType: SessionDescription.payloadType,
                                                           sequence: sequence, timestamp: timestamp, ssrc: ssrc))
                    buffer.writeBytes(fragment.prefix)
                    buffer.writeBytes(UnsafeRawBufferPointer(rebasing: au[fragment.payload]))
                    sequence &+= 1
                    let packet = buffer.getSlice(at: start, length: buffer.writerIndex - start)!
                    last = channel.write(AddressedEnvelope(remoteAddress: rtp, data: packet))
                }
            }
            channel.flush()
            state.withLock { $0.nextSequence = sequence }
            // The kernel takes a datagram or drops it: this waits for nothing but the loop.
            do { try await last?.get() } catch { continue }
            packets &+= UInt32(truncatingIfNeeded: fragments.count)
            octets &+= UInt32(truncatingIfNeeded: payloadBytes)
            mount.totals.withLock { t in
                t.frames += 1
                t.bytes += chunk.bytes.count
            }
        }
        subscription.stopTaking()
    }
}
