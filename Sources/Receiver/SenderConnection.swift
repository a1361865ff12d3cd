import NIOCore
import NIOPosix
import NetStream
import Synchronization
import SystemPackage
import SystemSupport

/// One sender's connection for `camrec receive`, on SwiftNIO: its bytes come as the inbound stream of
/// an `NIOAsyncChannel`, whose back-pressure stops reading while the receiver has a few reads it has not
/// taken (TCP's window then holds the sender back), and reads on once it has.
final class SenderConnection: Sendable {
    /// The other end, `1.2.3.4:5678`.
    let peerAddress: String
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
    private let idleCut: IdleCut

    /// Reads the receiver may be behind before the channel stops reading: 16 reads of at most 64 KiB.
    static let backPressure = NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark(lowWatermark: 4, highWatermark: 16)

    /// Wraps `channel`; on its event loop, in its initializer. Silence for `idleTimeoutSeconds` closes it.
    init(wrapping channel: Channel, idleTimeoutSeconds: Double) throws {
        let idleCut = IdleCut()
        let idle = TimeAmount.milliseconds(Int64(max(0.001, idleTimeoutSeconds) * 1000))
        try channel.pipeline.syncOperations.addHandlers([IdleStateHandler(readTimeout: idle), idleCut])
        self.channel = try NIOAsyncChannel(wrappingChannelSynchronously: channel,
                                           configuration: .init(backPressureStrategy: Self.backPressure))
        self.idleCut = idleCut
        peerAddress = channel.remoteAddress.map(ServerSockets.text) ?? "?"
    }

    /// Whether the connection was closed for its silence (`idleTimeoutSeconds` without a byte).
    var wentIdle: Bool { idleCut.fired.load(ordering: .acquiring) }

    /// Connects to the first address of `host` that answers within `timeoutMilliseconds`.
    static func connect(host: String, port: UInt16, timeoutMilliseconds: Int64, idleTimeoutSeconds: Double) async throws -> SenderConnection {
        let shown = hostAndPort(host, port)
        do {
            return try await ClientBootstrap(group: EventLoops.shared)
                .connectTimeout(.milliseconds(timeoutMilliseconds))
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelOption(.socketOption(.so_keepalive), value: 1)
                .connect(host: host, port: Int(port)) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try SenderConnection(wrapping: channel, idleTimeoutSeconds: idleTimeoutSeconds)
                    }
                }
        } catch let error as IOError {
            throw SocketError("connect", Errno(rawValue: error.errnoCode), address: shown)
        } catch let error as ChannelError {
            if case .connectTimeout = error { throw SocketError("connect", .timedOut, address: shown) }
            throw SocketError("connect", .connectionRefused, address: "\(shown) (\(error))")
        } catch let error as NIOConnectionError {
            let first = error.connectionErrors.first?.error
            if let io = first as? IOError { throw SocketError("connect", Errno(rawValue: io.errnoCode), address: shown) }
            if error.dnsAAAAError != nil || error.dnsAError != nil, error.connectionErrors.isEmpty {
                throw ResolveError(host: host, reason: "\(error.dnsAError ?? error.dnsAAAAError!)")
            }
            throw SocketError("connect", .connectionRefused, address: "\(shown) (\(first.map { "\($0)" } ?? "\(error)"))")
        }
    }

    /// Ends the connection from any thread; its inbound stream then ends.
    func close() {
        channel.channel.close(promise: nil)
    }
}

/// Closes its channel when `IdleStateHandler` says nothing was read for its timeout, and remembers it.
private final class IdleCut: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let fired = Atomic<Bool>(false)

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            fired.store(true, ordering: .releasing)
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
