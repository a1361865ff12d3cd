import NIOCore
import NIOPosix
import NetStream
import Pipeline
import SystemPackage
import SystemSupport

/// One sender's connection for `camrec receive`, on SwiftNIO: its event loop reads the socket into a
/// bounded buffer, and the receiver's own thread (which decodes and writes, blocking media work) takes
/// the bytes with a timeout. The bridge between the two: while 1 MiB waits unread, the channel stops
/// reading (TCP's window then holds the sender back), and it reads on once the receiver has taken it.
final class SenderConnection: @unchecked Sendable {
    enum ReceiveResult: Equatable {
        case bytes(Int)
        case endOfStream
        case timedOut
    }

    /// The other end, `1.2.3.4:5678`.
    let peerAddress: String
    private let channel: Channel
    private let inbox: Inbox

    /// Bytes a connection may hold that the receiver has not taken yet.
    static let bufferLimit = 1 << 20

    private init(channel: Channel, inbox: Inbox) {
        self.channel = channel
        self.inbox = inbox
        peerAddress = channel.remoteAddress.map(ServerSockets.text) ?? "?"
    }

    /// The handler that fills `inbox` from `channel`; added by whoever made the channel.
    static func attach(to channel: Channel) -> EventLoopFuture<SenderConnection> {
        let inbox = Inbox()
        return channel.pipeline.addHandler(InboxFiller(inbox: inbox)).map {
            SenderConnection(channel: channel, inbox: inbox)
        }
    }

    /// Connects to the first address of `host` that answers within `timeoutMilliseconds`.
    static func connect(host: String, port: UInt16, timeoutMilliseconds: Int64) throws -> SenderConnection {
        let shown = hostAndPort(host, port)
        do {
            let channel = try ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(timeoutMilliseconds))
                .channelOption(.autoRead, value: false)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelOption(.socketOption(.so_keepalive), value: 1)
                .connect(host: host, port: Int(port)).wait()
            return try attach(to: channel).wait()
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

    /// Waits up to `timeoutMilliseconds` for bytes and copies what is there into `buffer`.
    /// Throws `SocketError` when the connection broke (a reset) rather than ended.
    func receive(into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32) throws -> ReceiveResult {
        let (result, resume) = try inbox.take(into: buffer, timeoutNanoseconds: UInt64(max(0, timeoutMilliseconds)) * 1_000_000,
                                              peer: peerAddress)
        if resume {
            let channel = self.channel
            channel.eventLoop.execute { channel.read() }
        }
        return result
    }

    func close() {
        inbox.close()
        channel.close(promise: nil)
    }
}

/// The bytes of one connection between the event loop (producer) and the receiver thread (consumer).
private final class Inbox: @unchecked Sendable {
    private let lock = QueueLock()
    private var bytes: [UInt8] = []
    private var start = 0
    private var ended = false
    private var failure: IOError?
    private var closed = false
    /// The channel stopped reading because the buffer was full; the consumer resumes it.
    private var paused = false

    /// Called on the event loop; returns whether to read on.
    func add(_ buffer: ByteBuffer) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return false }
        bytes.append(contentsOf: buffer.readableBytesView)
        lock.signalNotEmpty()
        paused = bytes.count - start >= SenderConnection.bufferLimit
        return !paused
    }

    func end(_ error: IOError?) {
        lock.lock()
        ended = true
        failure = failure ?? error
        lock.broadcast()
        lock.unlock()
    }

    func close() {
        lock.lock()
        closed = true
        bytes = []
        start = 0
        lock.broadcast()
        lock.unlock()
    }

    /// The result, and whether the channel must be told to read again.
    func take(into buffer: UnsafeMutableRawBufferPointer, timeoutNanoseconds: UInt64, peer: String) throws -> (SenderConnection.ReceiveResult, Bool) {
        lock.lock()
        defer { lock.unlock() }
        if start == bytes.count && !ended {
            var deadline = QueueLock.deadline(afterNanoseconds: timeoutNanoseconds)
            while start == bytes.count && !ended {
                if !lock.waitNotEmpty(until: &deadline) { break }
            }
        }
        let available = bytes.count - start
        if available > 0 {
            let n = min(available, buffer.count)
            bytes.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + start, byteCount: n) }
            start += n
            // What was taken goes once it is as large as the limit, so a sender the receiver keeps up
            // with, never quite drained, cannot grow the buffer without end.
            if start == bytes.count {
                bytes.removeAll(keepingCapacity: true)
                start = 0
            } else if start >= SenderConnection.bufferLimit {
                bytes.removeFirst(start)
                start = 0
            }
            let resume = paused && bytes.count - start < SenderConnection.bufferLimit / 2
            if resume { paused = false }
            return (.bytes(n), resume)
        }
        if ended {
            if let failure { throw SocketError("recv", Errno(rawValue: failure.errnoCode), address: peer) }
            return (.endOfStream, false)
        }
        return (.timedOut, false)
    }
}

/// Fills an `Inbox` from its channel, reading only while the inbox has room (autoRead is off).
private final class InboxFiller: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private let inbox: Inbox

    init(inbox: Inbox) { self.inbox = inbox }

    func handlerAdded(context: ChannelHandlerContext) {
        context.channel.setOption(.autoRead, value: false).whenComplete { _ in }
        if context.channel.isActive { context.read() }
    }

    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readOn = inbox.add(unwrapInboundIn(data))
    }

    /// Whether to ask for more once this batch of reads is done: not while the inbox is full.
    private var readOn = false

    func channelReadComplete(context: ChannelHandlerContext) {
        if readOn {
            readOn = false
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        inbox.end(nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        inbox.end(error as? IOError)
        context.close(promise: nil)
    }
}
