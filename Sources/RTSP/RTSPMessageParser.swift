/// One RTSP request (RFC 2326 §6): its request line, its header lines as sent, and its body.
public struct RTSPRequest: Sendable, Equatable {
    public var method: String
    /// The Request-URI as sent (`rtsp://host:port/h264/trackID=0`, or `*` for OPTIONS).
    public var uri: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, uri: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }

    /// The first header of that name (names compare without case).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var cseq: String? { header("CSeq") }

    public static func == (a: RTSPRequest, b: RTSPRequest) -> Bool {
        a.method == b.method && a.uri == b.uri && a.body == b.body && a.headers.count == b.headers.count
            && zip(a.headers, b.headers).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

/// What comes from a client's TCP connection: requests, and RTP/RTCP frames interleaved with them
/// (`$`, channel, 16-bit length, data; RFC 2326 §10.12).
public enum RTSPInbound: Sendable, Equatable {
    case request(RTSPRequest)
    case interleaved(channel: UInt8, payload: [UInt8])
}

public enum RTSPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No blank line within `maximumHeadBytes`.
    case headTooLarge
    case tooManyHeaderLines
    /// Content-Length over `maximumBodyBytes`, or not a number.
    case badContentLength
    /// Not `METHOD URI RTSP/1.x`, or a header line without a colon.
    case malformed(String)

    public var description: String {
        switch self {
        case .headTooLarge: "request head over \(RTSPMessageParser.Limits.standard.maximumHeadBytes) bytes"
        case .tooManyHeaderLines: "more than \(RTSPMessageParser.Limits.standard.maximumHeaderLines) header lines"
        case .badContentLength: "Content-Length missing a number or over \(RTSPMessageParser.Limits.standard.maximumBodyBytes) bytes"
        case .malformed(let why): why
        }
    }
}

/// The bytes of one RTSP connection, parsed as they come (one byte at a time or all at once, the same
/// result): what is held is bounded by the limits (a head, a body, or one interleaved frame of at most
/// 64 KiB), and after an error the parser takes nothing more (the connection is answered 400 and closed).
public struct RTSPMessageParser: Sendable {
    public struct Limits: Sendable {
        public var maximumHeadBytes = 8192
        public var maximumHeaderLines = 64
        public var maximumBodyBytes = 16384
        public static let standard = Limits()
        public init() {}
    }

    public let limits: Limits
    private var pending: [UInt8] = []
    /// Where the search for the head's end resumes (bytes before it were searched).
    private var searchedTo = 0
    private var waitingBody: (request: RTSPRequest, length: Int)?
    public private(set) var failure: RTSPParseError?

    public init(limits: Limits = .standard) {
        self.limits = limits
    }

    /// Bytes held waiting for the rest of a message.
    public var heldBytes: Int { pending.count }

    /// Takes `bytes` and returns every whole message they complete, in order; an error ends the parse
    /// (the messages before it are still returned through `body` first).
    public mutating func feed(_ bytes: some Collection<UInt8>, _ body: (RTSPInbound) throws -> Void) throws {
        if let failure { throw failure }
        pending.append(contentsOf: bytes)
        var consumed = 0
        defer {
            if consumed > 0 && failure == nil {
                pending.removeFirst(consumed)
                searchedTo = max(0, searchedTo - consumed)
            }
        }
        while consumed < pending.count {
            if let waiting = waitingBody {
                guard pending.count - consumed >= waiting.length else { return }
                var request = waiting.request
                request.body = Array(pending[consumed..<consumed + waiting.length])
                consumed += waiting.length
                waitingBody = nil
                try body(.request(request))
                continue
            }
            if pending[consumed] == UInt8(ascii: "$") {
                guard pending.count - consumed >= 4 else { return }
                let length = Int(pending[consumed + 2]) << 8 | Int(pending[consumed + 3])
                guard pending.count - consumed >= 4 + length else { return }
                let channel = pending[consumed + 1]
                let payload = Array(pending[consumed + 4..<consumed + 4 + length])
                consumed += 4 + length
                try body(.interleaved(channel: channel, payload: payload))
                continue
            }
            // Blank lines between messages are allowed (RFC 2326 §4, as in HTTP).
            if pending[consumed] == 0x0D || pending[consumed] == 0x0A {
                consumed += 1
                continue
            }
            guard let end = headEnd(from: consumed) else {
                if pending.count - consumed > limits.maximumHeadBytes { try fail(.headTooLarge) }
                return
            }
            if end.headLength > limits.maximumHeadBytes { try fail(.headTooLarge) }
            let request: RTSPRequest
            do {
                request = try parseHead(pending[consumed..<consumed + end.headLength])
            } catch let error as RTSPParseError {
                try fail(error)
            }
            consumed += end.total
            let lengthText = request.header("Content-Length")?.trimmingSpaces
            let length = lengthText.map { Int($0) } ?? 0
            guard let length, length >= 0, length <= limits.maximumBodyBytes else { try fail(.badContentLength) }
            if length > 0 {
                waitingBody = (request, length)
            } else {
                try body(.request(request))
            }
        }
    }

    private mutating func fail(_ error: RTSPParseError) throws -> Never {
        failure = error
        pending = []
        searchedTo = 0
        throw error
    }

    /// The end of the head that starts at `start`: its length without the blank line, and with it.
    private mutating func headEnd(from start: Int) -> (headLength: Int, total: Int)? {
        var index = max(start, searchedTo)
        let limit = min(pending.count, start + limits.maximumHeadBytes + 4)
        while index < limit {
            if pending[index] == 0x0A {
                // "\n\n" or "\n\r\n".
                if index + 1 < pending.count && pending[index + 1] == 0x0A { return (index + 1 - start, index + 2 - start) }
                if index + 2 < pending.count && pending[index + 1] == 0x0D && pending[index + 2] == 0x0A {
                    return (index + 1 - start, index + 3 - start)
                }
                if index + 2 >= pending.count {
                    // Not yet known: look here again when more comes.
                    searchedTo = index
                    return nil
                }
            }
            index += 1
        }
        searchedTo = index
        return nil
    }

    private func parseHead(_ head: ArraySlice<UInt8>) throws -> RTSPRequest {
        var lines: [Substring] = []
        // Split as bytes: in a Swift string "\r\n" is one character, and a lone "\n" ends a line too.
        for bytes in head.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let line = Substring(String(decoding: bytes.last == 0x0D ? bytes.dropLast() : bytes, as: UTF8.self))
            if line.isEmpty { continue }
            lines.append(line)
            if lines.count > limits.maximumHeaderLines + 1 { throw RTSPParseError.tooManyHeaderLines }
        }
        guard let requestLine = lines.first else { throw RTSPParseError.malformed("an empty request") }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 3, parts[2].hasPrefix("RTSP/1."), parts[0].allSatisfy({ $0.isASCII && ($0.isUppercase || $0 == "_") }) else {
            throw RTSPParseError.malformed("not a request line (METHOD URI RTSP/1.0)")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            if line.first == " " || line.first == "\t" {
                // A folded line continues the header before it.
                guard !headers.isEmpty else { throw RTSPParseError.malformed("a continuation line before any header") }
                headers[headers.count - 1].value += " " + line.trimmingSpaces
                continue
            }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                throw RTSPParseError.malformed("a header line without a name and a colon")
            }
            headers.append((String(line[..<colon]).trimmingSpaces, String(line[line.index(after: colon)...]).trimmingSpaces))
        }
        return RTSPRequest(method: String(parts[0]), uri: String(parts[1]), headers: headers)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
