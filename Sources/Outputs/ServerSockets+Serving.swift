import NIOCore
import NetStream

extension ServerSockets {
    /// The listening sockets of a server that sends the stream to its peers (`--listen`, `--rtsp`): the
    /// kernel's send buffer bounds what a peer holds there (doubled by the kernel), no Nagle delay, and
    /// `admit` takes each connection. A bind that fails is one `OutputError`, "cannot `action`: why; what
    /// to do" (`action`: "listen on --listen :9000").
    public static func bindServing(_ endpoint: TCPEndpoint, action: String,
                                   admit: @escaping @Sendable (Channel) -> EventLoopFuture<Void>) throws -> [Channel] {
        do {
            return try bind(endpoint) { bootstrap in
                bootstrap
                    .childChannelOption(.socketOption(.so_sndbuf), value: 256 * 1024)
                    .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                    .childChannelInitializer(admit)
            }
        } catch let error as SocketError {
            let hint = error.errno == .addressInUse ? "; another program (or camrec) listens there: choose another port"
                : error.errno == .permissionDenied ? "; ports below 1024 need root: choose a higher one" : ""
            throw OutputError(.unwritable, "cannot \(action): \(error)\(hint)")
        } catch {
            throw OutputError(.unwritable, "cannot \(action): \(error)")
        }
    }
}
