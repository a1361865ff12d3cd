import Bitstream

/// One RTP packet's payload, as a piece of an access unit: a prefix of 0 to 4 bytes (the FU-A indicator
/// and header of RFC 6184 §5.8, the FU payload header and FU header of RFC 7798 §4.4.3, or RFC 3640's AU
/// header section for AAC) and a range of the access unit's bytes. The packet's bytes are never copied
/// here: the sender writes the RTP header, the prefix and the range straight into its buffer.
public struct RTPFragment: Sendable, Equatable {
    public var prefix: [UInt8] { Array([prefix0, prefix1, prefix2, prefix3].prefix(prefixCount)) }
    public var prefix0: UInt8 = 0
    public var prefix1: UInt8 = 0
    public var prefix2: UInt8 = 0
    public var prefix3: UInt8 = 0
    public var prefixCount = 0
    public var payload: Range<Int>
    /// The last packet of the access unit (RTP's marker bit, RFC 6184 §5.1).
    public var marker = false

    public var payloadBytes: Int { prefixCount + payload.count }
}

/// Splits access units (Annex B) into RTP payloads of at most `maximumPacketBytes` with the RTP header:
/// a NAL unit that fits is one packet (single NAL unit mode), a larger one is cut into FU-A (H.264,
/// packetization-mode=1) or FU (H.265) fragments. Start codes are never sent.
public struct RTPPacketizer: Sendable {
    public static let headerBytes = 12
    public let codec: VideoCodec
    /// The whole RTP packet (header included) at most: the MTU option.
    public let maximumPacketBytes: Int

    public init(codec: VideoCodec, maximumPacketBytes: Int = 1400) {
        self.codec = codec
        self.maximumPacketBytes = max(maximumPacketBytes, Self.headerBytes + 3 + 1)
    }

    /// The fragments of `accessUnit`, appended to `fragments` (which the caller clears and reuses, so
    /// nothing is allocated per frame once it has grown).
    public func fragments(of accessUnit: UnsafeRawBufferPointer, into fragments: inout [RTPFragment]) {
        let start = fragments.count
        let room = maximumPacketBytes - Self.headerBytes
        let headerLength = codec.nalHeaderLength
        AnnexBScanner.forEachUnit(in: accessUnit) { range, _ in
            guard range.count > headerLength else {
                if range.count > 0 { fragments.append(RTPFragment(payload: range)) }
                return
            }
            if range.count <= room {
                fragments.append(RTPFragment(payload: range))
                return
            }
            var fragment = RTPFragment(payload: range)
            let first = accessUnit[range.lowerBound]
            let type: UInt8
            switch codec {
            case .h264:
                type = first & 0x1F
                fragment.prefix0 = (first & 0xE0) | 28
                fragment.prefixCount = 2
            case .hevc:
                let second = accessUnit[range.lowerBound + 1]
                type = (first >> 1) & 0x3F
                fragment.prefix0 = (first & 0x81) | (49 << 1)
                fragment.prefix1 = second
                fragment.prefixCount = 3
            }
            let chunk = room - fragment.prefixCount
            var offset = range.lowerBound + headerLength
            while offset < range.upperBound {
                let end = min(offset + chunk, range.upperBound)
                let header = (offset == range.lowerBound + headerLength ? 0x80 : 0) | (end == range.upperBound ? 0x40 : 0) | type
                var piece = fragment
                piece.payload = offset..<end
                if codec == .h264 { piece.prefix1 = header } else { piece.prefix2 = header }
                fragments.append(piece)
                offset = end
            }
        }
        if fragments.count > start { fragments[fragments.count - 1].marker = true }
    }

    /// The 12-byte RTP header (RFC 3550 §5.1): version 2, no padding, extension or CSRC.
    public static func header(marker: Bool, payloadType: UInt8, sequence: UInt16, timestamp: UInt32, ssrc: UInt32) -> [UInt8] {
        [0x80, (marker ? 0x80 : 0) | (payloadType & 0x7F), UInt8(sequence >> 8), UInt8(sequence & 0xFF),
         UInt8(timestamp >> 24), UInt8((timestamp >> 16) & 0xFF), UInt8((timestamp >> 8) & 0xFF), UInt8(timestamp & 0xFF),
         UInt8(ssrc >> 24), UInt8((ssrc >> 16) & 0xFF), UInt8((ssrc >> 8) & 0xFF), UInt8(ssrc & 0xFF)]
    }
}

/// RTCP (RFC 3550 §6): the sender reports camrec sends, and the receiver reports it reads.
public enum RTCP {
    /// A sender report with no report blocks (28 bytes).
    public static func senderReport(ssrc: UInt32, ntp: UInt64, rtpTimestamp: UInt32, packets: UInt32, octets: UInt32) -> [UInt8] {
        var bytes: [UInt8] = [0x80, 200, 0, 6]
        func put32(_ v: UInt32) { bytes += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        put32(ssrc)
        put32(UInt32(ntp >> 32))
        put32(UInt32(ntp & 0xFFFF_FFFF))
        put32(rtpTimestamp)
        put32(packets)
        put32(octets)
        return bytes
    }

    /// NTP time (RFC 5905: seconds since 1900 in the high 32 bits, the fraction in the low) of a time in
    /// nanoseconds since 1970.
    public static func ntp(unixNanoseconds: UInt64) -> UInt64 {
        let seconds = unixNanoseconds / 1_000_000_000 + 2_208_988_800
        let fraction = (unixNanoseconds % 1_000_000_000) << 32 / 1_000_000_000
        return seconds << 32 | fraction
    }

    /// What one receiver report block says about the stream it reports on.
    public struct ReceptionReport: Sendable, Equatable {
        public var ssrc: UInt32
        public var fractionLost: UInt8
        public var cumulativeLost: Int32
        public var jitter: UInt32
    }

    /// The receiver reports in a compound RTCP packet: its report blocks; nil when the packet is not RTCP
    /// (a wrong version, a length past the end). At most `maximumPackets` packets are read: the compound
    /// packet of one datagram or interleaved frame is at most 64 KiB, read once, nothing kept.
    public static func receptionReports(in bytes: some Collection<UInt8>, maximumPackets: Int = 32) -> [ReceptionReport]? {
        let data = Array(bytes)
        var offset = 0
        var reports: [ReceptionReport] = []
        var packets = 0
        func u32(_ at: Int) -> UInt32 {
            UInt32(data[at]) << 24 | UInt32(data[at + 1]) << 16 | UInt32(data[at + 2]) << 8 | UInt32(data[at + 3])
        }
        while offset + 4 <= data.count && packets < maximumPackets {
            guard data[offset] >> 6 == 2 else { return nil }
            let count = Int(data[offset] & 0x1F)
            let type = data[offset + 1]
            let length = ((Int(data[offset + 2]) << 8 | Int(data[offset + 3])) + 1) * 4
            guard offset + length <= data.count else { return nil }
            if type == 201 || type == 200 {
                // RR: 8 bytes before the blocks; SR: 28.
                let blocks = offset + (type == 201 ? 8 : 28)
                for i in 0..<count where blocks + (i + 1) * 24 <= offset + length {
                    let b = blocks + i * 24
                    let lost = Int32(bitPattern: (u32(b + 4) & 0x00FF_FFFF) << 8) >> 8
                    reports.append(ReceptionReport(ssrc: u32(b), fractionLost: data[b + 4], cumulativeLost: lost, jitter: u32(b + 12)))
                }
            }
            offset += length
            packets += 1
        }
        return packets > 0 ? reports : nil
    }
}
