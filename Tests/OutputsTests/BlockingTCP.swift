import Glibc
import SystemPackage

@testable import NetStream

// Blocking TCP peers for the tests: plain POSIX sockets, sharing no code with the SwiftNIO sockets
// under test (camrec's own TCP was this code once; it now lives only here, as an independent peer).

@inline(__always) func lastErrno() -> Errno { Errno(rawValue: Glibc.errno) }

/// A connected, non-blocking TCP socket. Sends never raise SIGPIPE (MSG_NOSIGNAL) and
/// never wait forever: a peer that takes nothing for `stallTimeout` is given up on.
public final class TCPConnection: @unchecked Sendable {
    public let descriptor: Int32
    /// The other end, `1.2.3.4:5678`.
    public let peerAddress: String
    private var closed = false

    init(descriptor: Int32, peerAddress: String) {
        self.descriptor = descriptor
        self.peerAddress = peerAddress
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    /// Caps the kernel's send buffer so a slow peer shows up in our own queue (where it
    /// is skipped at IDRs) instead of seconds of video piling up in the kernel.
    public func limitSendBuffer(bytes: Int32) {
        var size = bytes
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Connects to the first address of `host` that answers within `timeoutMilliseconds` each.
    public static func connect(host: String, port: UInt16, timeoutMilliseconds: Int32) throws -> TCPConnection {
        let addresses = try ResolvedAddress.resolve(host: host, port: port, passive: false)
        var lastError: SocketError?
        for address in addresses {
            let text = address.text
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else {
                lastError = SocketError("socket", lastErrno(), address: text)
                continue
            }
            var rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
            if rc != 0 && (Glibc.errno == EINPROGRESS || Glibc.errno == EINTR) {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&p, 1, timeoutMilliseconds)
                if ready == 0 {
                    Glibc.close(fd)
                    lastError = SocketError("connect", .timedOut, address: text)
                    continue
                }
                var soError: Int32 = 0
                var len = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
                rc = soError == 0 ? 0 : -1
                Glibc.errno = soError
            }
            if rc != 0 {
                lastError = SocketError("connect", lastErrno(), address: text)
                Glibc.close(fd)
                continue
            }
            return TCPConnection(descriptor: fd, peerAddress: text)
        }
        throw lastError ?? SocketError("connect", .noSuchAddressOrDevice, address: host)
    }

    /// Sends every byte of every part, in order, as one gather write where possible.
    ///
    /// Waits with poll() while the kernel buffer is full, in slices of 100 ms; throws
    /// `SocketError(send, ETIMEDOUT)` after `stallTimeoutMilliseconds` without progress,
    /// and `SocketError(send, ECANCELED)` as soon as `abort()` says so.
    public func send(_ parts: [UnsafeRawBufferPointer], stallTimeoutMilliseconds: Int, abort: () -> Bool = { false }) throws(SocketError) {
        var vectors = parts.filter { $0.count > 0 }.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
        var first = 0
        var stalledFor = 0
        while first < vectors.count {
            let sent: Int = vectors.withUnsafeMutableBufferPointer { v in
                var message = msghdr()
                message.msg_iov = v.baseAddress! + first
                message.msg_iovlen = v.count - first
                return sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                let error = lastErrno()
                if error == .interrupted { continue }
                guard error == .wouldBlock || error == .resourceTemporarilyUnavailable else {
                    throw SocketError("send", error, address: peerAddress)
                }
                if abort() { throw SocketError("send", .canceled, address: peerAddress) }
                if stalledFor >= stallTimeoutMilliseconds { throw SocketError("send", .timedOut, address: peerAddress) }
                var p = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 100)
                stalledFor += 100
                continue
            }
            stalledFor = 0
            var remaining = sent
            while remaining > 0 && first < vectors.count {
                if remaining >= vectors[first].iov_len {
                    remaining -= vectors[first].iov_len
                    first += 1
                } else {
                    vectors[first].iov_base = vectors[first].iov_base.map { $0 + remaining }
                    vectors[first].iov_len -= remaining
                    remaining = 0
                }
            }
        }
    }

    public enum ReceiveResult: Equatable {
        case bytes(Int)
        case endOfStream
        case timedOut
    }

    /// Waits up to `timeoutMilliseconds` for bytes and reads what is there.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32) throws(SocketError) -> ReceiveResult {
        while true {
            let n = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .endOfStream }
            let error = lastErrno()
            if error == .interrupted { continue }
            guard error == .wouldBlock || error == .resourceTemporarilyUnavailable else {
                throw SocketError("recv", error, address: peerAddress)
            }
            var p = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, timeoutMilliseconds)
            if ready == 0 { return .timedOut }
            if ready < 0 && Glibc.errno != EINTR { throw SocketError("poll", lastErrno(), address: peerAddress) }
        }
    }

    /// Tells the peer nothing more comes (it reads end of stream after the last byte).
    public func shutdownWrite() {
        _ = Glibc.shutdown(descriptor, Int32(SHUT_WR))
    }

    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
    }

    /// Closes with a reset (RST) instead of an orderly end of stream: the peer reads an error, not
    /// end of stream, so it knows the last thing it got may be cut. What was queued is discarded.
    public func reset() {
        guard !closed else { return }
        var noLinger = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &noLinger, socklen_t(MemoryLayout<linger>.size))
        close()
    }
}

/// Listening sockets for one endpoint: every address a host name resolves to, or, without
/// a host, one dual-stack IPv6 socket (IPv4 too), falling back to IPv4 only.
public final class TCPListener: @unchecked Sendable {
    private var descriptors: [Int32] = []
    /// What it listens on, `127.0.0.1:9982`, `[::]:9982`.
    public private(set) var addresses: [String] = []
    /// The port actually bound (useful with port 0).
    public private(set) var port: UInt16 = 0

    public init(host: String?, port requestedPort: UInt16) throws {
        var candidates: [(ResolvedAddress, dualStack: Bool)] = []
        if let host {
            candidates = try ResolvedAddress.resolve(host: host, port: requestedPort, passive: true).map { ($0, false) }
        } else {
            let any6 = try ResolvedAddress.resolve(host: "::", port: requestedPort, passive: true)
            candidates = any6.map { ($0, true) }
        }
        var firstError: Error?
        var boundPort = requestedPort
        for (address, dualStack) in candidates {
            var a = address
            if boundPort != 0 { Self.setPort(&a, boundPort) }
            do {
                let fd = try Self.open(a, dualStack: dualStack)
                descriptors.append(fd)
                let local = ResolvedAddress.of(fd, peer: false)
                addresses.append(local.text)
                boundPort = Self.port(of: local)
            } catch let error where host == nil && error.call == "socket" {
                // No IPv6 in this kernel: IPv4 only.
                var v4 = try ResolvedAddress.resolve(host: "0.0.0.0", port: requestedPort, passive: true)[0]
                if boundPort != 0 { Self.setPort(&v4, boundPort) }
                let fd = try Self.open(v4, dualStack: false)
                descriptors.append(fd)
                let local = ResolvedAddress.of(fd, peer: false)
                addresses.append(local.text)
                boundPort = Self.port(of: local)
            } catch {
                firstError = firstError ?? error
            }
        }
        guard !descriptors.isEmpty else {
            throw firstError ?? SocketError("bind", .addressNotAvailable, address: host ?? "*")
        }
        port = boundPort
    }

    deinit { close() }

    private static func open(_ address: ResolvedAddress, dualStack: Bool) throws(SocketError) -> Int32 {
        let text = address.text
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket", lastErrno(), address: text) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if address.family == AF_INET6 {
            var v6only: Int32 = dualStack ? 0 : 1
            _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &v6only, socklen_t(MemoryLayout<Int32>.size))
        }
        if address.withSockaddr({ bind(fd, $0, $1) }) != 0 {
            let error = SocketError("bind", lastErrno(), address: text)
            Glibc.close(fd)
            throw error
        }
        // Room for a burst of joins (and junk connections) without SYNs being dropped,
        // which would cost a real receiver a 1 s retransmit.
        if Glibc.listen(fd, 512) != 0 {
            let error = SocketError("listen", lastErrno(), address: text)
            Glibc.close(fd)
            throw error
        }
        return fd
    }

    private static func port(of address: ResolvedAddress) -> UInt16 {
        withUnsafePointer(to: address.storage) { p in
            if address.family == AF_INET6 {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    private static func setPort(_ address: inout ResolvedAddress, _ port: UInt16) {
        let family = address.family
        withUnsafeMutablePointer(to: &address.storage) { p in
            if family == AF_INET6 {
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port = port.bigEndian }
            } else {
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port = port.bigEndian }
            }
        }
    }

    /// Waits up to `timeoutMilliseconds` for a connection on any of the sockets.
    public func accept(timeoutMilliseconds: Int32) throws(SocketError) -> TCPConnection? {
        var fds = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        if ready < 0 {
            if Glibc.errno == EINTR { return nil }
            throw SocketError("poll", lastErrno(), address: addresses.joined(separator: ","))
        }
        for p in fds where p.revents != 0 {
            let fd = Glibc.accept(p.fd, nil, nil)
            if fd < 0 {
                let error = lastErrno()
                // The client gave up between poll and accept, or a transient shortage.
                if [.wouldBlock, .resourceTemporarilyUnavailable, .interrupted, .connectionAbort, .protocolError].contains(error) { continue }
                throw SocketError("accept", error, address: addresses.joined(separator: ","))
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            return TCPConnection(descriptor: fd, peerAddress: ResolvedAddress.of(fd, peer: true).text)
        }
        return nil
    }

    public func close() {
        for fd in descriptors { Glibc.close(fd) }
        descriptors.removeAll()
    }
}

/// What the blocking test sockets need beyond camrec's own use of getaddrinfo's addresses.
extension ResolvedAddress {
    var family: Int32 { Int32(storage.ss_family) }

    /// `1.2.3.4:80` or `[::1]:80`.
    var text: String {
        guard let (h, s) = numeric else { return "?" }
        return h.contains(":") ? "[\(h)]:\(s)" : "\(h):\(s)"
    }

    /// The local or remote address of a connected socket.
    static func of(_ fd: Int32, peer: Bool) -> ResolvedAddress {
        var a = ResolvedAddress()
        a.length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &a.storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                peer ? getpeername(fd, sa, &a.length) : getsockname(fd, sa, &a.length)
            }
        }
        return a
    }
}
