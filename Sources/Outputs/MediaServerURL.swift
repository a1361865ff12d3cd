import NetStream

/// A media server to publish to: `rtsp://HOST[:PORT]/PATH` (ANNOUNCE/RECORD), `rtmp://HOST[:PORT]/APP/STREAM`
/// (or `/PATH`, as MediaMTX takes it),
/// `srt://HOST:PORT[?streamid=…]` (MPEG-TS over SRT).
///
/// The URL is kept whole for libavformat, but only `redacted` is ever shown: user and password
/// become `***`, and so does every query value (an SRT passphrase or a stream id can be a secret).
public struct MediaServerURL: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case rtsp, rtmp, srt

        /// libavformat's muxer for what this protocol carries.
        public var muxer: String {
            switch self {
            case .rtsp: "rtsp"
            case .rtmp: "flv"
            case .srt: "mpegts"
            }
        }
    }

    public let kind: Kind
    /// The URL as given, credentials and all: for libavformat only.
    public let url: String
    public let host: String
    public let port: UInt16?
    /// The URL with its secrets replaced by `***`: for logs and the summary.
    public let redacted: String
    public var description: String { redacted }

    /// The server's TCP port (RTMP's 1935 and RTSP's 554 unless given); nil for SRT, which is UDP.
    public var tcpPort: UInt16? {
        switch kind {
        case .rtmp: port ?? 1935
        case .rtsp: port ?? 554
        case .srt: nil
        }
    }

    /// True for arguments that name a media server rather than a file.
    public static func looksLikeURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        return ["rtsp://", "rtmp://", "srt://"].contains { lower.hasPrefix($0) }
    }

    /// Parses the URL; the error says what is wrong and what a good one looks like.
    public init(_ text: String) throws(TCPEndpointError) {
        guard let schemeEnd = Self.schemeSeparator(text), let kind = Kind(rawValue: text[..<schemeEnd.lowerBound].lowercased()) else {
            throw TCPEndpointError("\(Self.redact(text)): a media server URL starts with rtsp://, rtmp:// or srt://")
        }
        let example = switch kind {
        case .rtsp: "rtsp://192.168.1.20:8554/cam"
        case .rtmp: "rtmp://192.168.1.20/live/cam"
        case .srt: "srt://192.168.1.20:9000"
        }
        guard !text.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false }) else {
            throw TCPEndpointError("\(Self.redact(text)): a URL has no spaces or control characters; e.g. \(example)")
        }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var hostPart = authority
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw TCPEndpointError("\(Self.redact(text)): an IPv6 address needs its closing ]; e.g. \(example)")
            }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw TCPEndpointError("\(Self.redact(text)): unexpected \(after) after the address; e.g. \(example)")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw TCPEndpointError("\(Self.redact(text)): give the server's host, e.g. \(example)") }
        var port: UInt16?
        if let portText {
            guard let value = UInt16(portText), value > 0 else {
                throw TCPEndpointError("\(Self.redact(text)): the port must be 1 to 65535, got '\(portText)'")
            }
            port = value
        }
        let path = rest[authorityEnd...].split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        switch kind {
        case .srt:
            guard port != nil else { throw TCPEndpointError("\(Self.redact(text)): SRT needs a port, e.g. \(example)") }
        case .rtmp:
            // APP/STREAM for nginx-rtmp and most ingests; MediaMTX also takes a bare path (rtmp://host/cam).
            guard path.split(separator: "/").count >= 1 else {
                throw TCPEndpointError("\(Self.redact(text)): RTMP needs a path (an application and a stream name), e.g. \(example)")
            }
        case .rtsp:
            guard path.split(separator: "/").count >= 1 else {
                throw TCPEndpointError("\(Self.redact(text)): RTSP needs a path to publish to, e.g. \(example)")
            }
        }
        self.kind = kind
        self.url = text
        self.host = String(hostPart)
        self.port = port
        self.redacted = Self.redact(text)
    }

    /// Where "://" is in `text` (no Foundation here).
    public static func schemeSeparator(_ text: String) -> Range<String.Index>? {
        var index = text.startIndex
        while index < text.endIndex {
            let rest = text[index...]
            if rest.hasPrefix("://") { return index..<text.index(index, offsetBy: 3) }
            if rest.first == "/" || rest.first == "?" { return nil }
            index = text.index(after: index)
        }
        return nil
    }

    /// `user:password@` and every query value become `***`.
    public static func redact(_ text: String) -> String {
        var out = text
        if let schemeEnd = Self.schemeSeparator(out) {
            let rest = out[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            if let at = rest[..<authorityEnd].lastIndex(of: "@") {
                out.replaceSubrange(schemeEnd.upperBound..<at, with: "***")
            }
        }
        if let q = out.firstIndex(of: "?") {
            let pairs = out[out.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
                guard let eq = pair.firstIndex(of: "=") else { return String(pair) }
                return pair[..<eq] + "=***"
            }
            out = out[...q] + pairs.joined(separator: "&")
        }
        return out
    }
}
