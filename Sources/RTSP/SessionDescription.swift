import Bitstream
import ExtrasBase64

/// The SDP (RFC 4566) a DESCRIBE answers: one live video track, RTP payload type 96 at 90 kHz, with its
/// parameter sets (RFC 6184 for H.264, RFC 7798 for H.265), and the sound as a second track when there is
/// one (`RTPAudioTrack`). The parameter sets also travel in-band before every IDR: a client that ignores
/// the SDP's still decodes.
public enum SessionDescription {
    public static let payloadType: UInt8 = 96

    /// - Parameter parameterSets: the NAL units (no start codes) in `codec.parameterSetOrder`
    ///   (SPS, PPS; or VPS, SPS, PPS); empty before the first IDR (then the SDP names none).
    public static func make(codec: VideoCodec, parameterSets: [[UInt8]], sessionID: UInt64,
                            serverAddress: String, framesPerSecond: Double?, audio: RTPAudioTrack? = nil) -> String {
        let family = serverAddress.contains(":") ? "IP6" : "IP4"
        var lines = [
            "v=0",
            "o=- \(sessionID) 1 IN \(family) \(serverAddress)",
            "s=camrec",
            "c=IN \(family) \(family == "IP6" ? "::" : "0.0.0.0")",
            "t=0 0",
            "a=tool:camrec",
            "a=range:npt=now-",
            "a=control:*",
            "m=video 0 RTP/AVP \(payloadType)",
        ]
        switch codec {
        case .h264:
            lines.append("a=rtpmap:\(payloadType) H264/90000")
            var fmtp = "a=fmtp:\(payloadType) packetization-mode=1"
            if parameterSets.count == 2, parameterSets[0].count >= 4 {
                let sps = parameterSets[0]
                fmtp += ";profile-level-id=" + sps[1...3].map(hex).joined()
                fmtp += ";sprop-parameter-sets=" + parameterSets.map { Base64.encodeToString(bytes: $0) }.joined(separator: ",")
            }
            lines.append(fmtp)
        case .hevc:
            lines.append("a=rtpmap:\(payloadType) H265/90000")
            if parameterSets.count == 3 {
                lines.append("a=fmtp:\(payloadType) sprop-vps=\(Base64.encodeToString(bytes: parameterSets[0]));"
                    + "sprop-sps=\(Base64.encodeToString(bytes: parameterSets[1]));sprop-pps=\(Base64.encodeToString(bytes: parameterSets[2]))")
            }
        }
        if let framesPerSecond, framesPerSecond > 0 {
            let shown = framesPerSecond == framesPerSecond.rounded() ? String(Int(framesPerSecond)) : String(framesPerSecond)
            lines.append("a=framerate:\(shown)")
        }
        lines.append("a=control:trackID=0")
        if let audio { lines += audio.sessionDescriptionLines }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The parameter sets at the head of an IDR access unit (Annex B), in `codec.parameterSetOrder`;
    /// nil when one is missing.
    public static func parameterSets(inIDR accessUnit: some Collection<UInt8>, codec: VideoCodec) -> [[UInt8]]? {
        var found: [ParameterSetKind: [UInt8]] = [:]
        for unit in AnnexBScanner.units(in: accessUnit) {
            if case .parameterSet(let kind) = codec.role(ofType: codec.typeValue(of: unit.bytes)), found[kind] == nil {
                found[kind] = unit.bytes
            }
            if found.count == codec.parameterSetOrder.count { break }
        }
        let sets = codec.parameterSetOrder.compactMap { found[$0] }
        return sets.count == codec.parameterSetOrder.count ? sets : nil
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
}
