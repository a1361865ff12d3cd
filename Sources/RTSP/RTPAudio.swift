/// The sound track of an RTSP stream (the second track, `trackID=1`, when `--audio` is on): what DESCRIBE
/// says about it and how its packets become RTP payloads.
///
/// - AAC: `mpeg4-generic` (RFC 3640) in AAC-hbr mode: a 16-bit AU-headers-length, one AU header (13 bits
///   of AU-size, 3 of AU-Index, 0) and the AU, one AU a packet. An AU larger than a packet is fragmented
///   (§3.2.3: each fragment carries the AU header with the whole AU's size, the marker only on the last);
///   an AU over 8191 bytes cannot be described in 13 bits and is refused.
/// - Opus: `opus/48000/2` (RFC 7587): one Opus packet a packet, never fragmented, so one larger than a
///   packet is refused. Its RTP clock is 48 kHz whatever rate the encoder runs at (§4.1).
public struct RTPAudioTrack: Sendable, Equatable {
    public enum Codec: Sendable, Equatable {
        /// With its AudioSpecificConfig (ISO 14496-3 §1.6.2.1), the `config=` of the SDP.
        case aac(audioSpecificConfig: [UInt8])
        case opus
    }

    public static let payloadType: UInt8 = 97
    public static let trackID = 1
    /// AU-size is 13 bits (sizelength=13).
    public static let largestAACAccessUnit = 8191

    public let codec: Codec
    /// The encoder's sample rate and channels.
    public let sampleRate: Int
    public let channels: Int

    public init(codec: Codec, sampleRate: Int, channels: Int) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// The RTP timestamp's rate: AAC's sample rate (RFC 3640 §3.2.1), 48 kHz for Opus (RFC 7587 §4.1).
    public var clockRate: Int {
        if case .aac = codec { return sampleRate }
        return 48_000
    }

    /// Its media section of the SDP, after the picture's.
    public var sessionDescriptionLines: [String] {
        let pt = Self.payloadType
        var lines = ["m=audio 0 RTP/AVP \(pt)"]
        switch codec {
        case .aac(let config):
            lines.append("a=rtpmap:\(pt) mpeg4-generic/\(sampleRate)/\(channels)")
            lines.append("a=fmtp:\(pt) streamtype=5;profile-level-id=1;mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3;config="
                + config.map(Self.hex).joined())
        case .opus:
            // The rtpmap always says 48000/2 (RFC 7587 §7); what is sent is said in sprop- parameters.
            lines.append("a=rtpmap:\(pt) opus/48000/2")
            lines.append("a=fmtp:\(pt) sprop-stereo=\(channels == 2 ? 1 : 0)" + (sampleRate == 48_000 ? "" : ";sprop-maxcapturerate=\(sampleRate)"))
        }
        lines.append("a=control:trackID=\(Self.trackID)")
        return lines
    }

    /// The payloads of one encoded packet of `byteCount` bytes, appended to `fragments` (prefix: the AU
    /// header section for AAC, nothing for Opus; range: the packet's bytes), within `maximumPacketBytes`
    /// with the RTP header. False, and nothing appended, when the packet cannot be sent (see above).
    public func fragments(ofPacketBytes byteCount: Int, maximumPacketBytes: Int, into fragments: inout [RTPFragment]) -> Bool {
        let room = maximumPacketBytes - RTPPacketizer.headerBytes
        guard byteCount > 0 else { return false }
        switch codec {
        case .opus:
            guard byteCount <= room else { return false }
            // The marker only after a silence the encoder left out (DTX), which camrec's never does (§4.2).
            fragments.append(RTPFragment(payload: 0..<byteCount))
            return true
        case .aac:
            guard byteCount <= Self.largestAACAccessUnit, room > 4 else { return false }
            // AU-headers-length: 16 bits of AU header; the header: the AU's size << 3, AU-Index 0.
            let header = UInt16(byteCount) << 3
            var fragment = RTPFragment(payload: 0..<0)
            fragment.prefix0 = 0
            fragment.prefix1 = 16
            fragment.prefix2 = UInt8(header >> 8)
            fragment.prefix3 = UInt8(header & 0xFF)
            fragment.prefixCount = 4
            var offset = 0
            while offset < byteCount {
                let end = min(offset + room - 4, byteCount)
                var piece = fragment
                piece.payload = offset..<end
                piece.marker = end == byteCount
                fragments.append(piece)
                offset = end
            }
            return true
        }
    }

    /// The RTP timestamp's ticks for `nanoseconds` (rounded down, no overflow for years).
    public func ticks(nanoseconds: UInt64) -> UInt64 {
        let rate = UInt64(clockRate)
        return nanoseconds / 1_000_000_000 * rate + nanoseconds % 1_000_000_000 * rate / 1_000_000_000
    }

    /// The encoder's priming (`samples` at the encoder's rate) in ticks of the RTP clock.
    public func ticks(ofSamples samples: Int) -> UInt64 {
        UInt64(max(0, samples)) * UInt64(clockRate) / UInt64(max(1, sampleRate))
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
}
