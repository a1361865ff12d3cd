import Frames
import Hub
import NIOCore
import RTSP

extension RTSPSession {
    /// On the event loop, after PLAY: the session joins its loop's sending (unless it has already ended).
    func startSending(_ subscription: Subscription, legs: [RTPLeg]) {
        guard !state.withLock({ $0.ended }) else { return }
        let here = onLoop.value
        here.video = legs.first { $0.track == 0 }
        here.audio = legs.first { $0.track == RTPAudioTrack.trackID }
        here.sent = [Sent(sequence: here.video?.firstSequence ?? 0), Sent(sequence: here.audio?.firstSequence ?? 0)]
        here.sending = subscription
        if legs.contains(where: { $0.transport.isTCP }) { here.socket = InterleavedSocket.find(for: connection.channel) }
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
                // Past NIO only while NIO holds nothing of the connection's; else while NIO takes more.
                guard here.socket == nil ? channel.isWritable : connection.writability.nothingInNIO else { return }
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
            taken = transmit(packets, on: leg, sequence: &sequence, report: report, credit: credit, socket: here.socket)
        } else {
            taken = transmit(here.fragments, of: chunk, on: leg, payloadType: payloadType, timestamp: timestamp,
                             sequence: &sequence, report: report, payloadBytes: payloadBytes, socket: here.socket)
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

    /// `bytes` (interleaved frames), behind the sender report if one is due, written past NIO in one call;
    /// what the kernel does not take now is NIO's to write, and the client is behind until it has.
    private func write(_ bytes: ByteBuffer, after report: [UInt8]?, channel rtcpChannel: UInt8, to socket: InterleavedSocket) {
        var head: [UInt8] = []
        if let report {
            head.reserveCapacity(report.count + 4)
            head += [UInt8(ascii: "$"), rtcpChannel, UInt8(truncatingIfNeeded: report.count >> 8), UInt8(truncatingIfNeeded: report.count)]
            head += report
        }
        let outcome = head.withUnsafeBytes { head in bytes.withUnsafeReadableBytes { socket.send(head, $0) } }
        let channel = connection.channel
        switch outcome {
        case .sent:
            return
        case .failed:
            channel.close(promise: nil)
        case .full(let taken):
            var rest = channel.allocator.buffer(capacity: head.count + bytes.readableBytes - taken)
            if taken < head.count { rest.writeBytes(head[taken...]) }
            let skipped = max(0, taken - head.count)
            if let tail = bytes.getSlice(at: bytes.readerIndex + skipped, length: bytes.readableBytes - skipped) { rest.writeImmutableBuffer(tail) }
            connection.writability.behind()
            channel.writeAndFlush(rest, promise: nil)
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
                          sequence: inout UInt16, report: [UInt8]?, payloadBytes: Int, socket: InterleavedSocket?) -> Bool {
        let channel = connection.channel
        switch leg.transport {
        case .interleaved(let rtpChannel, let rtcpChannel):
            if socket == nil, let report { writeInterleaved(report, channel: rtcpChannel) }
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
            if let socket {
                write(buffer, after: report, channel: rtcpChannel, to: socket)
            } else {
                channel.writeAndFlush(buffer, promise: nil)
            }
            return true
        case .multicast:
            return true
        case .udp:
            guard case let (ports, clientRTP)? = udpDestination(of: leg, report: report) else { return true }
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
    private func transmit(_ packets: RTPVideoPackets, on leg: RTPLeg, sequence: inout UInt16, report: [UInt8]?, credit: Credit,
                          socket: InterleavedSocket?) -> Bool? {
        let first = sequence
        sequence &+= UInt16(truncatingIfNeeded: packets.count)
        switch leg.transport {
        case .interleaved(let rtpChannel, let rtcpChannel):
            let picture = sendLoop.interleaved(packets, channel: rtpChannel, firstSequence: first, ssrc: leg.ssrc)
            if let socket {
                write(picture, after: report, channel: rtcpChannel, to: socket)
            } else {
                if let report { writeInterleaved(report, channel: rtcpChannel) }
                connection.channel.writeAndFlush(picture, promise: nil)
            }
            return true
        case .multicast:
            return true
        case .udp:
            guard case let (ports, clientRTP)? = udpDestination(of: leg, report: report) else { return true }
            guard packets.count > 0 else { return true }
            let runs = ports.segmentBytes == connection.server.configuration.maximumPacketBytes
            sendLoop.datagrams.queue(packets, firstSequence: first, ssrc: leg.ssrc, to: clientRTP, through: ports, runs: runs,
                                     session: self, credit: credit)
            return nil
        }
    }

    /// A UDP leg's ports and its client's RTP address, once the leg's sender report (if due) has gone
    /// ahead to the client's RTCP address; nil when the leg has none of them.
    private func udpDestination(of leg: RTPLeg, report: [UInt8]?) -> (ports: RTSPServerPorts, clientRTP: SocketAddress)? {
        guard let ports = leg.ports, let clientRTP = leg.clientRTP, let clientRTCP = leg.clientRTCP else { return nil }
        if let report { _ = report.withUnsafeBytes { ports.sendRTCP($0, to: clientRTCP) } }
        return (ports, clientRTP)
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
}
