import Hub
import NIOCore
import RTSP
import Synchronization

/// The RTP packets of one access unit, made once for every session that sends it, back to back in one
/// image, each behind the 4 bytes of an interleaved frame (`$`, channel, length; RFC 2326 §10.12) and
/// with its 12-byte header holding the mount's RTP timestamp, the marker bit and the payload type. A TCP
/// session writes a copy of the image with its channel, sequence numbers and SSRC written in (`stamp`, in
/// its sending loop's buffer): one copy and three small stores a packet, where each session scanned the
/// access unit for NAL units and wrote every packet field by field (200 clients scanned every picture 200
/// times). A UDP session's datagrams are gathered by the kernel from headers of its own and the packets'
/// payloads in the image, the frame headers left out (`RTPDatagramBatch`): so one image serves both, and
/// a picture is scanned once for all clients.
///
/// Over UDP the packets go in `runs`: packets that follow each other and are all `maximumPacketBytes`
/// long but the last (a NAL unit's FU-A or FU fragments are), written at once for the kernel to cut into
/// datagrams of that size (UDP segmentation offload, `UDP_SEGMENT`): one message and one trip through the
/// network stack for a run, not one a packet. The datagrams are the same.
struct RTPVideoPackets: Sendable {
    /// Ahead of each packet: its interleaved frame's header.
    static let frameHeaderBytes = 4
    let image: ByteBuffer
    /// Where each RTP packet starts in `image` (its interleaved frame `frameHeaderBytes` before).
    let offsets: [Int]
    /// Each packet's length, its RTP header included.
    let lengths: [Int]
    /// Over UDP: the packets to send as one message (indices into `offsets`); at most `maximumRun` each.
    let runs: [Range<Int>]
    let payloadBytes: Int
    /// Which packets these are (unique in the process): a sending loop's copy of the image is known by it.
    let serial: UInt64
    var count: Int { offsets.count }
    /// The kernel takes at most 64 segments and 64 KiB a send.
    static let maximumRun = 40

    init(accessUnit: UnsafeRawBufferPointer, packetizer: RTPPacketizer, payloadType: UInt8, timestamp: UInt32) {
        var fragments: [RTPFragment] = []
        packetizer.fragments(of: accessUnit, into: &fragments)
        let payload = fragments.reduce(0) { $0 + $1.payloadBytes }
        var image = ByteBufferAllocator().buffer(capacity: payload + fragments.count * (Self.frameHeaderBytes + RTPPacketizer.headerBytes))
        var offsets: [Int] = []
        var lengths: [Int] = []
        var runs: [Range<Int>] = []
        offsets.reserveCapacity(fragments.count)
        lengths.reserveCapacity(fragments.count)
        for (index, fragment) in fragments.enumerated() {
            let length = RTPPacketizer.headerBytes + fragment.payloadBytes
            lengths.append(length)
            // A run goes on while its packets so far are all full size.
            if let run = runs.last, run.count < Self.maximumRun, lengths[run.upperBound - 1] == packetizer.maximumPacketBytes,
               length <= packetizer.maximumPacketBytes {
                runs[runs.count - 1] = run.lowerBound..<(index + 1)
            } else {
                runs.append(index..<(index + 1))
            }
            image.writeInteger(UInt8(ascii: "$"))
            image.writeInteger(UInt8(0))            // the session's channel
            image.writeInteger(UInt16(length))
            offsets.append(image.writerIndex)
            image.writeInteger(UInt8(0x80))
            image.writeInteger((fragment.marker ? 0x80 : 0) | payloadType)
            image.writeInteger(UInt16(0))           // the session's sequence number
            image.writeInteger(timestamp)
            image.writeInteger(UInt32(0))           // the session's SSRC
            for byte in fragment.prefix { image.writeInteger(byte) }
            image.writeBytes(UnsafeRawBufferPointer(rebasing: accessUnit[fragment.payload]))
        }
        self.image = image
        self.offsets = offsets
        self.lengths = lengths
        self.runs = runs
        payloadBytes = payload
        serial = Self.made.add(1, ordering: .relaxed).newValue
    }

    private static let made = Atomic<UInt64>(0)

    /// Writes a session's interleaved channel, sequence numbers from `firstSequence` and SSRC into `bytes`, a copy of `image`.
    func stamp(_ bytes: UnsafeMutableRawBufferPointer, channel: UInt8, firstSequence: UInt16, ssrc: UInt32) {
        var sequence = firstSequence
        for offset in offsets {
            bytes[offset - Self.frameHeaderBytes + 1] = channel
            bytes.storeBytes(of: sequence.bigEndian, toByteOffset: offset + 2, as: UInt16.self)
            bytes.storeBytes(of: ssrc.bigEndian, toByteOffset: offset + 8, as: UInt32.self)
            sequence &+= 1
        }
    }

    /// The packets of `chunk`, from the few made last (every session of a stream asks for the same access
    /// units within moments of each other), or made now: under the lock, so that a session on another loop
    /// asking meanwhile waits for them rather than making them again.
    static func of(_ chunk: StreamChunk, packetizer: RTPPacketizer, payloadType: UInt8, timestamp: UInt32) -> RTPVideoPackets {
        of(key(of: chunk, packetizer: packetizer, payloadType: payloadType, timestamp: timestamp), chunk, packetizer: packetizer,
           payloadType: payloadType, timestamp: timestamp)
    }

    static func key(of chunk: StreamChunk, packetizer: RTPPacketizer, payloadType: UInt8, timestamp: UInt32) -> Key {
        Key(chunk: ObjectIdentifier(chunk), sequence: chunk.sequence, bytes: chunk.bytes.count, timestamp: timestamp,
            maximumPacketBytes: packetizer.maximumPacketBytes, payloadType: payloadType)
    }

    static func of(_ key: Key, _ chunk: StreamChunk, packetizer: RTPPacketizer, payloadType: UInt8, timestamp: UInt32) -> RTPVideoPackets {
        recent.withLock { entries in
            if let made = entries.last(where: { $0.key == key })?.packets { return made }
            let packets = chunk.bytes.withUnsafeBytes {
                RTPVideoPackets(accessUnit: $0, packetizer: packetizer, payloadType: payloadType, timestamp: timestamp)
            }
            if entries.count >= recentCapacity { entries.removeFirst() }
            entries.append((key, packets))
            return packets
        }
    }

    /// A chunk is pooled and reused, so it is known by its hub sequence, size and time as well as its identity.
    struct Key: Equatable {
        var chunk: ObjectIdentifier
        var sequence: UInt64
        var bytes: Int
        var timestamp: UInt32
        var maximumPacketBytes: Int
        var payloadType: UInt8
    }

    /// Enough for sessions a few frames apart, and two streams (H.264 and H.265) at once.
    private static let recentCapacity = 32
    private static let recent = Mutex<[(key: Key, packets: RTPVideoPackets)]>([])
}
