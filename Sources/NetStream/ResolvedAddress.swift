import Glibc
import SystemPackage
import SystemSupport

/// One address getaddrinfo gave for a host name: what `TCPEndpoint.listenAddresses` binds to.
struct ResolvedAddress {
    var storage = sockaddr_storage()
    var length: socklen_t = 0

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// The address and port as digits (`::1`, `80`), or nil when getnameinfo cannot say.
    var numeric: (host: String, service: String)? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let rc = withSockaddr { sa, len in
            getnameinfo(sa, len, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard rc == 0 else { return nil }
        return (String(cBuffer: host), String(cBuffer: service))
    }

    static func resolve(host: String?, port: UInt16, passive: Bool) throws(ResolveError) -> [ResolvedAddress] {
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
        var result: [ResolvedAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let n = node {
            if let addr = n.pointee.ai_addr, Int(n.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size {
                var a = ResolvedAddress()
                withUnsafeMutableBytes(of: &a.storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: addr, count: Int(n.pointee.ai_addrlen)))
                }
                a.length = n.pointee.ai_addrlen
                if let n = a.numeric, !result.contains(where: { $0.numeric! == n }) { result.append(a) }
            }
            node = n.pointee.ai_next
        }
        return result
    }
}
