import NIOCore
import NIOPosix
import NetStream
import Pipeline

/// `camrec receive --listen`: the listening sockets (`ServerSockets`, on SwiftNIO) and the senders that
/// connected, handed to the receiver's thread one at a time by `accept`.
final class SenderListener: @unchecked Sendable {
    /// What it listens on, `127.0.0.1:9982`, `[::]:9982`.
    let addresses: [String]
    private let servers: [Channel]
    private let arrivals: BlockingQueue<SenderConnection>

    /// Connections waiting to be taken; more are closed at once (a flood of connects costs nothing).
    static let pendingLimit = 64

    init(endpoint: TCPEndpoint) throws {
        let arrivals = BlockingQueue<SenderConnection>(capacity: Self.pendingLimit)
        servers = try ServerSockets.bind(endpoint) { bootstrap in
            bootstrap
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.socketOption(.so_keepalive), value: 1)
                .childChannelOption(.autoRead, value: false)
                .childChannelInitializer { channel in
                    SenderConnection.attach(to: channel).map { connection in
                        if !arrivals.tryPush(connection) { connection.close() }
                    }
                }
        }
        self.arrivals = arrivals
        addresses = servers.compactMap { $0.localAddress.map(ServerSockets.text) }
    }

    deinit { close() }

    /// The next sender that connected, waiting up to `timeoutMilliseconds`; nil when none came.
    func accept(timeoutMilliseconds: Int32) -> SenderConnection? {
        arrivals.pop(timeoutNanoseconds: UInt64(max(0, timeoutMilliseconds)) * 1_000_000)
    }

    func close() {
        for server in servers { server.close(promise: nil) }
        arrivals.close()
        arrivals.drain { $0.close() }
    }
}
