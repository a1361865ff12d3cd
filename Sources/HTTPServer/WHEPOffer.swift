/// A WHEP viewer's SDP offer as camrec reads it: the H.264 format it will send on (packetization-mode=1,
/// the payload type the browser chose for it), and the two edits that make the SDP state the profile the
/// stream really has (Safari shows black when the answer's profile differs from the stream's). Browsers
/// offer a fixed list (Chromium here: 42001f, 42e01f, 4d001f, f4001f, no High): the offer's format
/// closest to the stream is taken, its profile-level-id replaced by the stream's before webrtcbin reads
/// it, and the answer's fmtp for it says the stream's (webrtcbin 1.22 leaves profile-level-id out).
/// Chromium plays a High stream answered this way. An audio m-line after the video one that takes Opus
/// (`opus/48000/2`, as every browser offers it) is where the recording's sound goes.
struct WHEPOffer: Sendable, Equatable {
    /// Why an offer is refused: one line for a 400.
    struct Refusal: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    /// The payload type the H.264 stream goes on.
    let payloadType: Int
    /// The offer with that format's profile-level-id made the stream's, for webrtcbin.
    let sdp: String
    /// The stream's profile-level-id (six hex digits, from its SPS).
    let profileLevelID: String
    /// The payload type the offer's Opus is on (its audio m-line after the video one), or nil when it
    /// takes no sound.
    let opusPayloadType: Int?

    /// - Parameter profileLevelID: the stream's, as `profileLevelID(sps:)` gives it.
    init(sdp text: String, profileLevelID: String) throws(Refusal) {
        let lines = Self.openingBundleOnly(Self.lines(text))
        guard lines.first == "v=0" else { throw Refusal(description: "the offer is not SDP (it does not begin with v=0)") }
        guard let video = lines.firstIndex(where: { $0.hasPrefix("m=video ") && !$0.hasPrefix("m=video 0 ") }) else {
            throw Refusal(description: "the offer has no video to receive")
        }
        let end = lines[(video + 1)...].firstIndex { $0.hasPrefix("m=") } ?? lines.endIndex
        // The payload types in the browser's order of preference, and each H.264 one's fmtp.
        let order = lines[video].split(separator: " ").dropFirst(3).compactMap { Int($0) }
        var h264: Set<Int> = []
        var parameters: [Int: (line: Int, text: Substring)] = [:]
        for index in (video + 1)..<end {
            let line = lines[index]
            if let (type, rest) = Self.attribute("a=rtpmap:", line), rest.lowercased().hasPrefix("h264/90000") {
                h264.insert(type)
            } else if let (type, rest) = Self.attribute("a=fmtp:", line) {
                parameters[type] = (index, rest)
            }
        }
        let candidates = order.filter { h264.contains($0) && parameters[$0].map { Self.value("packetization-mode", in: $0.text) == "1" } == true }
        func offered(_ type: Int) -> String { parameters[type].flatMap { Self.value("profile-level-id", in: $0.text) }?.lowercased() ?? "" }
        let ours = profileLevelID.lowercased()
        // The same profile and constraints, else the same profile_idc, else Constrained Baseline (which
        // every browser decodes), else the first H.264 format it offers.
        guard let chosen = candidates.first(where: { offered($0).prefix(4) == ours.prefix(4) })
                ?? candidates.first(where: { offered($0).prefix(2) == ours.prefix(2) })
                ?? candidates.first(where: { offered($0).hasPrefix("42e0") })
                ?? candidates.first else {
            throw Refusal(description: "the offer has no H.264 with packetization-mode=1 (camrec sends H.264 as it is encoded)")
        }
        // Sound: the first audio m-line after the video, not rejected, and its Opus at 48 kHz.
        opusPayloadType = lines[end...].firstIndex { $0.hasPrefix("m=audio ") && !$0.hasPrefix("m=audio 0 ") }.flatMap { audio in
            let audioEnd = lines[(audio + 1)...].firstIndex { $0.hasPrefix("m=") } ?? lines.endIndex
            let offered = Set(lines[audio].split(separator: " ").dropFirst(3).compactMap { Int($0) })
            return lines[(audio + 1)..<audioEnd].lazy.compactMap { Self.attribute("a=rtpmap:", $0) }
                .first { offered.contains($0.type) && $0.rest.lowercased().hasPrefix("opus/48000") }?.type
        }
        var edited = lines
        let fmtp = parameters[chosen]!
        edited[fmtp.line] = "a=fmtp:\(chosen) " + Self.settingProfile(ours, in: fmtp.text)
        payloadType = chosen
        sdp = edited.joined(separator: "\r\n") + "\r\n"
        self.profileLevelID = ours
    }

    /// webrtcbin's answer with the stream's profile-level-id in the fmtp of the payload type sent, and
    /// each section's track in one media stream (`a=msid`, which webrtcbin 1.22 leaves out): browsers
    /// play in step only the tracks of one stream.
    func answer(_ text: String) -> String {
        var lines = Self.lines(text)
        for index in lines.indices.reversed() where lines[index].hasPrefix("a=mid:") {
            let section = lines[..<index].last { $0.hasPrefix("m=") } ?? ""
            let kind = section.dropFirst(2).prefix { $0 != " " }
            lines.insert("a=msid:camrec camrec-\(kind)", at: index + 1)
        }
        if let index = lines.firstIndex(where: { Self.attribute("a=fmtp:", $0)?.type == payloadType }) {
            lines[index] = "a=fmtp:\(payloadType) " + Self.settingProfile(profileLevelID, in: Self.attribute("a=fmtp:", lines[index])!.rest)
        } else if let index = lines.firstIndex(where: { Self.attribute("a=rtpmap:", $0)?.type == payloadType }) {
            lines.insert("a=fmtp:\(payloadType) packetization-mode=1;profile-level-id=\(profileLevelID)", at: index + 1)
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// profile_idc, the constraint flags and level_idc of an H.264 SPS NAL unit (its header byte first),
    /// as six hex digits; nil if it is no H.264 SPS.
    static func profileLevelID(sps: [UInt8]) -> String? {
        guard sps.count >= 4, sps[0] & 0x9F == 0x07 else { return nil }
        return sps[1...3].map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }

    /// A section offered bundle-only (RFC 8843: port 0 and `a=bundle-only`, inside the BUNDLE group) is
    /// offered, not rejected: GStreamer's webrtcbin offers every section but the first so under
    /// max-bundle (as its whepsrc does), and webrtcbin 1.22 answering one such section marks it inactive.
    /// So it is read, and given to webrtcbin, as Chromium offers a bundled section: port 9, no
    /// `a=bundle-only`. A port 0 without it is still a section the viewer rejected.
    static func openingBundleOnly(_ lines: [String]) -> [String] {
        let bundled = lines.first { $0.hasPrefix("a=group:BUNDLE ") }.map { Set($0.split(separator: " ").dropFirst().map(String.init)) } ?? []
        var out: [String] = []
        out.reserveCapacity(lines.count)
        var index = lines.startIndex
        while index < lines.endIndex {
            guard lines[index].hasPrefix("m="), case let fields = lines[index].split(separator: " ", omittingEmptySubsequences: false),
                  fields.count > 1, fields[1] == "0" else {
                out.append(lines[index])
                index += 1
                continue
            }
            let end = lines[(index + 1)...].firstIndex { $0.hasPrefix("m=") } ?? lines.endIndex
            let section = lines[(index + 1)..<end]
            let mid = section.first { $0.hasPrefix("a=mid:") }.map { String($0.dropFirst("a=mid:".count)) }
            if section.contains("a=bundle-only"), let mid, bundled.contains(mid) {
                out.append(([fields[0], "9"] + fields.dropFirst(2)).joined(separator: " "))
                out.append(contentsOf: section.filter { $0 != "a=bundle-only" })
            } else {
                out.append(contentsOf: lines[index..<end])
            }
            index = end
        }
        return out
    }

    private static func lines(_ text: String) -> [String] {
        text.split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }.map(String.init)
    }

    /// `a=rtpmap:96 H264/90000` → (96, "H264/90000").
    private static func attribute(_ prefix: String, _ line: String) -> (type: Int, rest: Substring)? {
        guard line.hasPrefix(prefix) else { return nil }
        let body = line.dropFirst(prefix.count)
        guard let space = body.firstIndex(of: " "), let type = Int(body[..<space]) else { return nil }
        return (type, body[body.index(after: space)...])
    }

    private static func value(_ name: String, in parameters: Substring) -> String? {
        for pair in parameters.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingSpaces().lowercased() == name { return String(parts[1].trimmingSpaces()) }
        }
        return nil
    }

    private static func settingProfile(_ profile: String, in parameters: Substring) -> String {
        var pairs = parameters.split(separator: ";").map { String($0.trimmingSpaces()) }
        pairs.removeAll { $0.lowercased().hasPrefix("profile-level-id=") }
        pairs.append("profile-level-id=\(profile)")
        return pairs.joined(separator: ";")
    }
}

private extension Substring {
    func trimmingSpaces() -> Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
