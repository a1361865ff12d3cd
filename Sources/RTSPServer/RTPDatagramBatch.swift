import Glibc
import NIOCore

/// The pictures for UDP clients queued in one pass of a sending loop over its sessions (`RTSPSendLoop`),
/// sent at the pass's end with one `sendmmsg` a socket: one message a run of full-size packets (cut into
/// datagrams by the kernel, `UDP_SEGMENT`) or a packet, to one client, gathered from each packet's 12-byte
/// header stamped with that client's sequence number and SSRC and the packet's payload in the loop's one
/// copy of the picture. One system call a pass for all of a loop's UDP clients, where each client had one a
/// run of packets; and no client's copy of the picture, where each was stamped into the loop's copy in turn
/// (the kernel copies each datagram from the shared bytes, as it copied it from the stamped copy). The
/// datagrams are the same. Nothing here allocates once its arrays have grown to a pass's size.
final class RTPDatagramBatch {
    /// The pictures' images (each once) and every message's packet headers, back to back.
    private var bytes: [UInt8] = []
    /// Where each picture's image starts in `bytes`, by `RTPVideoPackets.serial`.
    private var pictures: [(serial: UInt64, start: Int)] = []
    /// Each message's pieces in `bytes` (a header, a payload, a header, ...), in order.
    private var pieces: [(start: Int, length: Int)] = []
    private var addresses: [sockaddr_storage] = []
    private var messages: [Message] = []
    private var deliveries: [Delivery] = []
    /// Made at the flush from `pieces` and `messages` (pointers into `bytes` are only stable then).
    private var vectors: [iovec] = []
    private var headers = MessageHeaders()

    private struct Message {
        let ports: RTSPServerPorts
        let address: Int
        let addressLength: socklen_t
        let pieces: Range<Int>
        let delivery: Int
    }

    /// What a session learns after the flush: whether the kernel took all of one picture's messages.
    private struct Delivery {
        let session: RTSPSession
        let credit: RTSPSession.Credit
        var taken = true
    }

    /// One `sendmmsg` call's most messages.
    static let mostMessages = 1024
    static let mostBytes = 1 << 20

    /// Queues `packets` for `client` (through `ports`) with its sequence numbers from `firstSequence` and
    /// its SSRC: a message a run of full-size packets when `runs`, else a packet. After the flush, `session`
    /// is credited with `credit` if the kernel took every message.
    func queue(_ packets: RTPVideoPackets, firstSequence: UInt16, ssrc: UInt32, to client: SocketAddress,
                        through ports: RTSPServerPorts, runs: Bool, session: RTSPSession, credit: RTSPSession.Credit) {
        guard packets.count > 0 else { return }
        // A pass after a stall can find many pictures queued for each session: sent in parts, so a batch
        // holds at most about a megabyte (and one call's messages) whatever the sessions' backlog.
        if messages.count + packets.count > Self.mostMessages || bytes.count + packets.image.readableBytes > Self.mostBytes { flush() }
        let picture = start(of: packets)
        let headerStart = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: packets.count * RTPPacketHeader.bytes))
        bytes.withUnsafeMutableBytes { b in
            var sequence = firstSequence
            for index in 0..<packets.count {
                let header = headerStart + index * RTPPacketHeader.bytes
                // The picture's header (marker bit, payload type, timestamp), with this client's sequence number and SSRC.
                (b.baseAddress! + header).copyMemory(from: b.baseAddress! + picture + packets.offsets[index], byteCount: RTPPacketHeader.bytes)
                b.storeBytes(of: sequence.bigEndian, toByteOffset: header + 2, as: UInt16.self)
                b.storeBytes(of: ssrc.bigEndian, toByteOffset: header + 8, as: UInt32.self)
                sequence &+= 1
            }
        }
        let address = addresses.count
        addresses.append(sockaddr_storage())
        let addressLength = client.withSockAddr { source, length in
            addresses.withUnsafeMutableBufferPointer { all in
                UnsafeMutableRawPointer(all.baseAddress! + address).copyMemory(from: source, byteCount: length)
            }
            return socklen_t(length)
        }
        let delivery = deliveries.count
        deliveries.append(Delivery(session: session, credit: credit))
        func add(_ run: Range<Int>) {
            let first = pieces.count
            for index in run {
                pieces.append((headerStart + index * RTPPacketHeader.bytes, RTPPacketHeader.bytes))
                pieces.append((picture + packets.offsets[index] + RTPPacketHeader.bytes, packets.lengths[index] - RTPPacketHeader.bytes))
            }
            messages.append(Message(ports: ports, address: address, addressLength: addressLength, pieces: first..<pieces.count, delivery: delivery))
        }
        if runs {
            for run in packets.runs { add(run) }
        } else {
            for index in 0..<packets.count { add(index..<(index + 1)) }
        }
    }

    /// Where `packets`' image is in `bytes`, copied there the first time in a pass.
    private func start(of packets: RTPVideoPackets) -> Int {
        if let known = pictures.last(where: { $0.serial == packets.serial }) { return known.start }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: packets.image.readableBytes))
        bytes.withUnsafeMutableBytes { b in
            packets.image.withUnsafeReadableBytes { (b.baseAddress! + start).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        pictures.append((packets.serial, start))
        return start
    }

    /// Sends what is queued (one `sendmmsg` a socket, up to 1024 messages a call) and credits each
    /// session whose picture the kernel took whole; empties the batch.
    func flush() {
        guard !messages.isEmpty else { return }
        if vectors.count < pieces.count { vectors.append(contentsOf: repeatElement(iovec(), count: pieces.count - vectors.count)) }
        headers.reserve(messages.count)
        var failed: [Int] = []
        bytes.withUnsafeMutableBytes { arena in
            vectors.withUnsafeMutableBufferPointer { vectors in
                addresses.withUnsafeMutableBufferPointer { addresses in
                    for (index, piece) in pieces.enumerated() {
                        vectors[index] = iovec(iov_base: arena.baseAddress! + piece.start, iov_len: piece.length)
                    }
                    for (index, message) in messages.enumerated() {
                        var header = msghdr()
                        header.msg_name = UnsafeMutableRawPointer(addresses.baseAddress! + message.address)
                        header.msg_namelen = message.addressLength
                        header.msg_iov = vectors.baseAddress! + message.pieces.lowerBound
                        header.msg_iovlen = message.pieces.count
                        headers.set(index, header)
                    }
                    // The messages of one socket go together (a loop's sessions share a track's ports).
                    var first = 0
                    while first < messages.count {
                        var end = first + 1
                        while end < messages.count && messages[end].ports === messages[first].ports { end += 1 }
                        messages[first].ports.sendRTP(headers.at(first), count: end - first, stride: MessageHeaders.stride) {
                            failed.append(first + $0)
                        }
                        first = end
                    }
                }
            }
        }
        for index in failed { deliveries[messages[index].delivery].taken = false }
        for delivery in deliveries { delivery.session.delivered(delivery.credit, taken: delivery.taken) }
        bytes.removeAll(keepingCapacity: true)
        pictures.removeAll(keepingCapacity: true)
        pieces.removeAll(keepingCapacity: true)
        addresses.removeAll(keepingCapacity: true)
        messages.removeAll(keepingCapacity: true)
        deliveries.removeAll(keepingCapacity: true)
    }
}

/// The fixed part of an RTP header (RFC 3550 §5.1): sequence number at byte 2, SSRC at byte 8.
enum RTPPacketHeader {
    static let bytes = 12
}

/// `struct mmsghdr` (a `msghdr` and the length the kernel sent), which Glibc's Swift overlay does not
/// import (it is a GNU extension): laid out by hand, grown as needed and never shrunk.
final class MessageHeaders {
    /// `msghdr`, then an `unsigned int`, padded to `msghdr`'s alignment.
    static let stride = (MemoryLayout<msghdr>.size + MemoryLayout<CUnsignedInt>.size + MemoryLayout<msghdr>.alignment - 1)
        / MemoryLayout<msghdr>.alignment * MemoryLayout<msghdr>.alignment
    private var memory: UnsafeMutableRawPointer?
    private var capacity = 0

    func reserve(_ count: Int) {
        guard count > capacity else { return }
        memory?.deallocate()
        capacity = max(count, capacity * 2)
        memory = UnsafeMutableRawPointer.allocate(byteCount: capacity * Self.stride, alignment: MemoryLayout<msghdr>.alignment)
    }

    func set(_ index: Int, _ header: msghdr) {
        let at = memory! + index * Self.stride
        at.initializeMemory(as: UInt8.self, repeating: 0, count: Self.stride)
        at.storeBytes(of: header, as: msghdr.self)
    }

    func at(_ index: Int) -> UnsafeMutableRawPointer { memory! + index * Self.stride }

    deinit { memory?.deallocate() }
}

/// glibc's `sendmmsg(2)` (a GNU extension Glibc's Swift overlay does not import), found once by name.
let sendMultipleMessages: (@convention(c) (CInt, UnsafeMutableRawPointer?, CUnsignedInt, CInt) -> CInt)? = {
    guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "sendmmsg") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (CInt, UnsafeMutableRawPointer?, CUnsignedInt, CInt) -> CInt).self)
}()
