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
