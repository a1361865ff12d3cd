import NIOCore
import NIOPosix
import NetStream
import Outputs
import Synchronization

/// `camrec receive --listen`: the listening sockets (`ServerSockets`, on SwiftNIO) and the senders that
/// connect, as an async sequence. One sender at a time: one that connects while another is taken (or
/// waits to be) is told no by closing it, at once.
final class SenderListener: Sendable {
    /// What it listens on, `127.0.0.1:9982`, `[::]:9982`.
    let addresses: [String]
    /// The senders that connected, one at a time; ends when the listener is closed.
    let arrivals: AsyncStream<SenderConnection>
    private let servers: [Channel]
    private let arrived: AsyncStream<SenderConnection>.Continuation
    private let turn: Turn

    init(endpoint: TCPEndpoint, idleTimeoutSeconds: Double, log: @escaping NetworkEventLog) throws {
        let (arrivals, arrived) = AsyncStream.makeStream(of: SenderConnection.self, bufferingPolicy: .bufferingOldest(1))
        let turn = Turn()
        servers = try ServerSockets.bind(endpoint) { bootstrap in
            bootstrap
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelOption(.socketOption(.so_keepalive), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let connection = try SenderConnection(wrapping: channel, idleTimeoutSeconds: idleTimeoutSeconds)
                        if let busyWith = turn.take(for: connection.peerAddress) {
                            log("refusing sender \(connection.peerAddress): already receiving from \(busyWith)")
                            connection.close()
                        } else if case .enqueued = arrived.yield(connection) {
                        } else {
                            connection.close()
                        }
                    }
                }
        }
        self.turn = turn
        self.arrivals = arrivals
        self.arrived = arrived
        addresses = servers.compactMap { $0.localAddress.map(ServerSockets.text) }
    }

    deinit { close() }

    /// The receiver is done with the sender it took: the next one may come.
    func done() { turn.giveBack() }

    /// Stops listening; `arrivals` ends.
    func close() {
        for server in servers { server.close(promise: nil) }
        arrived.finish()
    }
}

/// Whose turn it is: the sender handed on and not yet done with, if any.
private final class Turn: Sendable {
    private let holder = Mutex<String?>(nil)

    /// Takes the turn for `peer`; nil if it got it, else the sender that has it.
    func take(for peer: String) -> String? {
        holder.withLock { taken in
            if let taken { return taken }
            taken = peer
            return nil
        }
    }

    func giveBack() { holder.withLock { $0 = nil } }
}
