import Glibc
import SystemPackage

/// A failed socket call: which call, on what, and the errno it gave.
public struct SocketError: Error, Sendable, CustomStringConvertible {
    /// The system call, e.g. "connect", "send", "bind".
    public let call: String
    public let errno: Errno
    /// The address it was about, e.g. "127.0.0.1:9982".
    public let address: String

    public init(_ call: String, _ errno: Errno, address: String) {
        self.call = call
        self.errno = errno
        self.address = address
    }

    public var description: String { "\(call)() on \(address): \(errno) (errno \(errno.rawValue))" }

    /// The peer went away or reset the connection (as opposed to a local problem).
    public var isDisconnect: Bool {
        let disconnects: [Errno] = [.brokenPipe, .connectionReset, .connectionAbort, .socketNotConnected, .timedOut,
                                    .noRouteToHost, .networkUnreachable, .networkDown]
        return disconnects.contains(self.errno)
    }
}

/// A host name that does not resolve, with getaddrinfo's own words.
public struct ResolveError: Error, Sendable, CustomStringConvertible {
    public let host: String
    public let reason: String
    public var description: String { "getaddrinfo() for \(host): \(reason)" }
    public init(host: String, reason: String) {
        self.host = host
        self.reason = reason
    }
}

/// One socket address from getaddrinfo.
struct SocketAddress: @unchecked Sendable {
    var storage = sockaddr_storage()
    var length: socklen_t = 0
    var family: Int32 { Int32(storage.ss_family) }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// `1.2.3.4:80` or `[::1]:80`.
    var text: String {
        guard let (h, s) = numeric else { return "?" }
        return h.contains(":") ? "[\(h)]:\(s)" : "\(h):\(s)"
    }

    /// The address and port as digits (`::1`, `80`), or nil when getnameinfo cannot say.
    var numeric: (host: String, service: String)? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let rc = withSockaddr { sa, len in
            getnameinfo(sa, len, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard rc == 0 else { return nil }
        let h = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let s = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (h, s)
    }

    static func resolve(host: String?, port: UInt16, passive: Bool) throws(ResolveError) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        hints.ai_flags = passive ? AI_PASSIVE : 0
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let reason = rc == EAI_SYSTEM ? "\(Errno(rawValue: Glibc.errno))" : String(cString: gai_strerror(rc))
            throw ResolveError(host: host ?? "*", reason: reason)
        }
        defer { freeaddrinfo(first) }
        var result: [SocketAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let n = node {
            if let addr = n.pointee.ai_addr, Int(n.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size {
                var a = SocketAddress()
                withUnsafeMutableBytes(of: &a.storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: addr, count: Int(n.pointee.ai_addrlen)))
                }
                a.length = n.pointee.ai_addrlen
                if !result.contains(where: { $0.text == a.text }) { result.append(a) }
            }
            node = n.pointee.ai_next
        }
        return result
    }

    /// The local or remote address of a connected socket.
    static func of(_ fd: Int32, peer: Bool) -> SocketAddress {
        var a = SocketAddress()
        a.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &a.storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                peer ? getpeername(fd, sa, &a.length) : getsockname(fd, sa, &a.length)
            }
        }
        return a
    }
}
