/// One RTSP response: the status line, CSeq first, the headers in order, and the body.
public struct RTSPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)] = []
    public var body: [UInt8] = []

    public init(status: Int, cseq: String?, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        if let cseq { self.headers.append(("CSeq", cseq)) }
        self.headers += headers
        self.body = body
    }

    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 454: "Session Not Found"
        case 455: "Method Not Valid in This State"
        case 459: "Aggregate Operation Not Allowed"
        case 461: "Unsupported Transport"
        case 453: "Not Enough Bandwidth"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "RTSP Version Not Supported"
        default: "Status \(status)"
        }
    }

    public var bytes: [UInt8] {
        var text = "RTSP/1.0 \(status) \(Self.reason(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}

/// What a client asks for in SETUP's Transport header (RFC 2326 §12.39), the first offer camrec can serve.
public enum RTSPTransport: Sendable, Equatable {
    /// RTP and RTCP on the RTSP connection, on these two channels.
    case interleaved(rtp: UInt8, rtcp: UInt8)
    /// RTP over UDP to the client's two ports (RTP, RTCP).
    case udp(clientRTP: UInt16, clientRTCP: UInt16)
    /// RTP over UDP to the server's multicast group (`--rtsp-multicast`): the server names the group,
    /// its ports and TTL; a client's own `destination` or `port` is not taken.
    case multicast

    /// The first offer in `header` (offers are separated by commas) camrec can serve; nil when none
    /// (multicast when `multicast` is false, another profile, no ports).
    public static func choose(from header: String, nextInterleavedChannel: UInt8 = 0, multicast: Bool = false) -> RTSPTransport? {
        for offer in header.split(separator: ",") {
            let fields = offer.split(separator: ";").map { $0.trimmingSpaces }
            guard let spec = fields.first?.uppercased() else { continue }
            let parameters = fields.dropFirst()
            if parameters.contains(where: { $0.lowercased() == "multicast" }) {
                if multicast && (spec == "RTP/AVP" || spec == "RTP/AVP/UDP") { return .multicast }
                continue
            }
            func value(_ name: String) -> String? {
                parameters.first { $0.lowercased().hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
            }
            if spec == "RTP/AVP/TCP" {
                if let pair = value("interleaved").flatMap(pairOf), pair.0 <= 255, pair.1 <= 255 {
                    return .interleaved(rtp: UInt8(pair.0), rtcp: UInt8(pair.1))
                }
                let first = min(nextInterleavedChannel, 254)
                return .interleaved(rtp: first, rtcp: first + 1)
            }
            if spec == "RTP/AVP" || spec == "RTP/AVP/UDP" {
                guard let pair = value("client_port").flatMap(pairOf), pair.0 > 0, pair.0 <= 65535, pair.1 > 0, pair.1 <= 65535 else { continue }
                return .udp(clientRTP: UInt16(pair.0), clientRTCP: UInt16(pair.1))
            }
        }
        return nil
    }

    /// `a-b`, or `a` alone meaning `a-(a+1)`.
    private static func pairOf(_ text: String) -> (Int, Int)? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first.flatMap({ Int($0) }), first >= 0 else { return nil }
        if parts.count == 1 { return (first, first + 1) }
        guard parts.count == 2, let second = Int(parts[1]), second >= 0 else { return nil }
        return (first, second)
    }
}

/// The path of a request URI, with its track when it names one: `rtsp://h:p/h264/trackID=0` →
/// (`/h264`, 0); `rtsp://h:p/` → (`/`, nil); `*` → nil.
public func rtspPath(of uri: String) -> (path: String, track: Int?)? {
    var rest = Substring(uri)
    if let scheme = rest.firstRange(of: "://") {
        rest = rest[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return ("/", nil) }
        rest = rest[slash...]
    } else if !rest.hasPrefix("/") {
        return nil
    }
    if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
    var components = rest.split(separator: "/")
    var track: Int?
    if let last = components.last, last.lowercased().hasPrefix("trackid="), let n = Int(last.dropFirst("trackID=".count)) {
        track = n
        components.removeLast()
    }
    return ("/" + components.joined(separator: "/"), track)
}
