import NIOCore
import NIOPosix
import SystemPackage
import SystemSupport

/// The listening sockets of one endpoint, on SwiftNIO, for every server camrec runs (`--listen`,
/// `camrec receive --listen`): every address its host name resolves to, or without a host one
/// dual-stack IPv6 socket (IPv4 too), replaced by IPv4 only where the kernel has no IPv6. Backlog 512:
/// room for a burst of joins and junk connections without SYNs being dropped, which would cost a real
/// peer a 1 s retransmit.
public enum ServerSockets {
    /// Binds them all on one port (the first one's, when `endpoint.port` is 0). `configure` adds child
    /// options and the child initializer. Throws `SocketError` (the first bind that failed) or `ResolveError`.
    public static func bind(_ endpoint: TCPEndpoint,
                            configure: (ServerBootstrap) -> ServerBootstrap) throws -> [Channel] {
        let addresses = try endpoint.listenAddresses()
        var port = endpoint.port
        var servers: [Channel] = []
        var firstError: SocketError?
        for address in addresses {
            do {
                let server = try bind(address, port: port, configure: configure)
                servers.append(server)
                port = UInt16(clamping: server.localAddress?.port ?? Int(port))
            } catch let error as SocketError where address.dualStack && error.errno == .addressFamilyNotSupported {
                // No IPv6 in this kernel: IPv4 only.
                if let server = try? bind(TCPEndpoint.fallbackAddress, port: port, configure: configure) {
                    servers.append(server)
                    port = UInt16(clamping: server.localAddress?.port ?? Int(port))
                }
                firstError = firstError ?? error
            } catch let error as SocketError {
                firstError = firstError ?? error
            }
        }
        guard !servers.isEmpty else {
            throw firstError ?? SocketError("bind", .addressNotAvailable, address: "\(endpoint)")
        }
        return servers
    }

    private static func bind(_ address: ListenAddress, port: UInt16,
                             configure: (ServerBootstrap) -> ServerBootstrap) throws -> Channel {
        let shown = hostAndPort(address.host, port)
        do {
            let socketAddress = try NIOCore.SocketAddress(ipAddress: address.host, port: Int(port))
            var bootstrap = ServerBootstrap(group: EventLoops.shared)
                .serverChannelOption(.backlog, value: 512)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            if socketAddress.protocol == .inet6 {
                // `.socketOption(.ipv6_v6only)` would set it at the socket level (EINVAL): it is an IPPROTO_IPV6 option.
                bootstrap = bootstrap.serverChannelOption(ChannelOptions.Types.SocketOption(level: .ipv6, name: .ipv6_v6only),
                                                           value: address.dualStack ? 0 : 1)
            }
            return try configure(bootstrap).bind(to: socketAddress).wait()
        } catch let error as IOError {
            throw SocketError("bind", Errno(rawValue: error.errnoCode), address: shown)
        } catch let error as SocketAddressError {
            throw SocketError("bind", .invalidArgument, address: "\(shown) (\(error))")
        }
    }

    /// `127.0.0.1:9982`, `[::1]:9982`, as the log and the tests name peers.
    public static func text(_ address: NIOCore.SocketAddress) -> String {
        hostAndPort(address.ipAddress ?? "?", address.port ?? 0)
    }
}
