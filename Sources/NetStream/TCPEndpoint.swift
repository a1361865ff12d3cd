import SystemSupport

/// Where a TCP stream goes or comes from: `tcp://HOST:PORT` (connect),
/// `tcp://[HOST]:PORT?listen` or `--listen [HOST:]PORT` (accept). HOST is an IPv4 or IPv6
/// address (IPv6 in brackets) or a host name; a listener without HOST takes every address.
public struct TCPEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Nil: any address (listen only).
    public var host: String?
    public var port: UInt16
    public var listen: Bool

    public init(host: String?, port: UInt16, listen: Bool) {
        self.host = host
        self.port = port
        self.listen = listen
    }

    /// True for arguments that name a TCP endpoint rather than a file.
    public static func looksLikeURL(_ text: String) -> Bool { text.lowercased().hasPrefix("tcp://") }

    /// Parses `tcp://HOST:PORT` or `tcp://[HOST]:PORT?listen`; the error says what is wrong.
    public init(url text: String) throws(TCPEndpointError) {
        guard Self.looksLikeURL(text) else { throw TCPEndpointError("\(text): a TCP address starts with tcp://") }
        var rest = Substring(text.dropFirst(6))
        var listen = false
        if let q = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: q)...]
            guard query == "listen" || query == "listen=1" else {
                throw TCPEndpointError("\(text): the only option is ?listen (got ?\(query))")
            }
            listen = true
            rest = rest[..<q]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        let (host, port) = try Self.split(rest, original: text, portRequired: true)
        guard listen || host != nil else {
            throw TCPEndpointError("\(text): give the receiver's host, e.g. tcp://192.168.1.20:\(port), or add ?listen to accept receivers")
        }
        guard listen || port != 0 else { throw TCPEndpointError("\(text): port 0 can only be used with ?listen") }
        self.init(host: host, port: port, listen: listen)
    }

    /// Parses the value of `--listen`: `PORT`, `HOST:PORT` or `[IPV6]:PORT`.
    public init(listenSpec text: String) throws(TCPEndpointError) {
        if Self.looksLikeURL(text) {
            var e = try TCPEndpoint(url: text)
            e.listen = true
            self = e
            return
        }
        if let port = UInt16(text) {
            self.init(host: nil, port: port, listen: true)
            return
        }
        if !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) || (text.hasPrefix("-") && text.dropFirst().allSatisfy(\.isNumber)) {
            throw TCPEndpointError("\(text): the port must be a number from 1 to 65535")
        }
        let (host, port) = try Self.split(Substring(text), original: text, portRequired: true)
        self.init(host: host, port: port, listen: true)
    }

    private static func split(_ text: Substring, original: String, portRequired: Bool) throws(TCPEndpointError) -> (String?, UInt16) {
        var hostPart: Substring
        var portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw TCPEndpointError("\(original): missing ] after the IPv6 address") }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            guard after.hasPrefix(":") else { throw TCPEndpointError("\(original): give a port after the address, e.g. [::1]:9982") }
            portPart = after.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw TCPEndpointError("\(original): give a port, e.g. \(text):9982")
            }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") {
                throw TCPEndpointError("\(original): put an IPv6 address in brackets, e.g. tcp://[\(hostPart)]:\(portPart)")
            }
        }
        guard let port = UInt16(portPart) else {
            throw TCPEndpointError("\(original): the port must be a number from 1 to 65535, got '\(portPart)'")
        }
        if hostPart.contains("/") || hostPart.contains("@") || hostPart.contains(" ") {
            throw TCPEndpointError("\(original): '\(hostPart)' is not a host name or address")
        }
        return (hostPart.isEmpty ? nil : String(hostPart), port)
    }

    /// `tcp://HOST:PORT`, with brackets around IPv6 addresses and `?listen` for listeners.
    public var description: String {
        "tcp://" + hostAndPort(host, port) + (listen ? "?listen" : "")
    }
}

public struct TCPEndpointError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One address a listener binds: digits (`127.0.0.1`, `::`), and whether an IPv6 socket there takes
/// IPv4 too.
public struct ListenAddress: Sendable, Equatable {
    public var host: String
    public var dualStack: Bool
}

extension TCPEndpoint {
    /// What a listener for this endpoint binds: every address its host name resolves to, or, without
    /// a host, `::` dual-stack (IPv4 too), which `fallbackAddress` replaces where the kernel has no IPv6.
    public func listenAddresses() throws(ResolveError) -> [ListenAddress] {
        guard let host else { return [ListenAddress(host: "::", dualStack: true)] }
        return try ResolvedAddress.resolve(host: host, port: port, passive: true).compactMap { a in
            a.numeric.map { ListenAddress(host: $0.host, dualStack: false) }
        }
    }

    /// Any IPv4 address: where `::` cannot be opened (no IPv6 in this kernel).
    public static let fallbackAddress = ListenAddress(host: "0.0.0.0", dualStack: false)
}
