import Bitstream

/// A camrec timing note carried in the stream sent over the network: an SEI NAL unit (H.265: a
/// prefix SEI) with one `user_data_unregistered` message (payloadType 5) under camrec's own UUID.
///
/// Network outputs put one at the head of every access unit they send (ahead of SPS/PPS); it
/// holds the frame's capture time and the time the sender started sending it (both
/// CLOCK_MONOTONIC, so comparable only on one machine), the source sequence number and
/// the byte count of the access unit without this SEI, so a receiver can tell a truncated
/// last access unit from a whole one. `camrec receive` reads it and strips it again, so
/// the received copy is byte for byte the sender's stream. Other decoders ignore it.
public struct TimestampSEI: Sendable, Hashable {
    /// c4a3e1f2-6d1b-4b8e-9a57-63616d726563 (the last six bytes spell "camrec").
    public static let uuid: [UInt8] = [0xC4, 0xA3, 0xE1, 0xF2, 0x6D, 0x1B, 0x4B, 0x8E,
                                       0x9A, 0x57, 0x63, 0x61, 0x6D, 0x72, 0x65, 0x63]
    static let payloadType: UInt8 = 5
    /// UUID + version byte + 4 fields of 8 bytes.
    static let payloadSize = 16 + 1 + 32
    static let version: UInt8 = 1

    public var captureTimeNanoseconds: UInt64
    public var sendTimeNanoseconds: UInt64
    public var sequence: UInt64
    /// Bytes of the access unit (start codes included) without this SEI.
    public var accessUnitByteCount: UInt64

    public init(captureTimeNanoseconds: UInt64, sendTimeNanoseconds: UInt64, sequence: UInt64, accessUnitByteCount: UInt64) {
        self.captureTimeNanoseconds = captureTimeNanoseconds
        self.sendTimeNanoseconds = sendTimeNanoseconds
        self.sequence = sequence
        self.accessUnitByteCount = accessUnitByteCount
    }

    /// The whole NAL unit with its 4-byte start code, appended to `output` (which keeps
    /// its capacity, so a sender can reuse one buffer).
    public func appendAnnexB(to output: inout [UInt8], codec: VideoCodec = .h264) {
        var rbsp: [UInt8] = []
        rbsp.reserveCapacity(Self.payloadSize + 3)
        rbsp.append(Self.payloadType)
        rbsp.append(UInt8(Self.payloadSize))
        rbsp.append(contentsOf: Self.uuid)
        rbsp.append(Self.version)
        for value in [captureTimeNanoseconds, sendTimeNanoseconds, sequence, accessUnitByteCount] {
            for shift in stride(from: 56, through: 0, by: -8) { rbsp.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        rbsp.append(0x80)  // rbsp_trailing_bits
        output.append(contentsOf: codec == .h264 ? [0, 0, 0, 1, 0x06] : [0, 0, 0, 1, 0x4E, 0x01])
        output.append(contentsOf: RBSP.addingEmulationPrevention(rbsp))
    }

    public var annexB: [UInt8] {
        var bytes: [UInt8] = []
        appendAnnexB(to: &bytes)
        return bytes
    }

    /// Reads a camrec timing note from a NAL unit (header first, still escaped). Nil for any
    /// other unit, including SEI units from encoders.
    public init?(nalUnit bytes: [UInt8], codec: VideoCodec = .h264) {
        let header = codec.nalHeaderLength
        guard bytes.count >= header + 1 + 16, bytes[0] & 0x80 == 0,
              codec.role(ofType: codec.typeValue(of: bytes)) == .sei else { return nil }
        // Cheap rejection before un-escaping: our message is the first and only one.
        guard bytes[header] == Self.payloadType else { return nil }
        let rbsp = RBSP.removingEmulationPrevention(bytes.dropFirst(header))
        guard rbsp.count >= 2 + Self.payloadSize, rbsp[0] == Self.payloadType, Int(rbsp[1]) == Self.payloadSize,
              Array(rbsp[2..<18]) == Self.uuid, rbsp[18] == Self.version else { return nil }
        func field(_ index: Int) -> UInt64 {
            var value: UInt64 = 0
            for byte in rbsp[(19 + index * 8)..<(27 + index * 8)] { value = value << 8 | UInt64(byte) }
            return value
        }
        captureTimeNanoseconds = field(0)
        sendTimeNanoseconds = field(1)
        sequence = field(2)
        accessUnitByteCount = field(3)
    }

    /// Where a timing note goes in an access unit written by camrec's stream writer
    /// (4-byte start codes): at its head, after a leading AUD if there is one — so in an IDR
    /// access unit it stands ahead of the SPS, and SPS, PPS and the IDR slice stay together.
    public static func insertionOffset(in accessUnit: UnsafeRawBufferPointer, codec: VideoCodec = .h264) -> Int {
        // An AUD is its header plus one byte (pic type and trailing bits) after its start code.
        let audLength = 4 + codec.nalHeaderLength + 1
        guard accessUnit.count >= audLength, accessUnit[0] == 0, accessUnit[1] == 0, accessUnit[2] == 0, accessUnit[3] == 1,
              codec.role(ofType: codec.typeValue(of: UnsafeRawBufferPointer(rebasing: accessUnit[4...]))) == .accessUnitDelimiter
        else { return 0 }
        return audLength
    }
}
