import HummingbirdCore
import Logging
import NIOCore

/// Closes a connection whose first request head has not fully arrived within `deadline`: one that
/// connects and says nothing, or sends half a request and stalls. Hummingbird's own idle timer starts
/// only once a first request has been read, so without this such connections would hold a slot of the
/// 256 until camrec ends. It watches raw bytes for the blank line that ends a request head, then
/// leaves the pipeline, so it costs nothing afterwards (later requests are Hummingbird's idle timer's).
final class RequestHeadDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let deadline: TimeAmount
    private var timer: Scheduled<Void>?
    /// The last bytes seen, for a `\r\n\r\n` split across reads.
    private var tail: [UInt8] = []

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startTimer(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startTimer(context)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Only the first request head passes through here, so copying its reads costs little.
        let window = tail + Array(Self.unwrapInboundIn(data).readableBytesView)
        let complete = window.firstRange(of: [13, 10, 13, 10]) != nil
        tail = Array(window.suffix(3))
        context.fireChannelRead(data)
        if complete {
            timer?.cancel()
            timer = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    private func startTimer(_ context: ChannelHandlerContext) {
        guard timer == nil else { return }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: deadline) { bound.value.close(promise: nil) }
    }
}

/// A server child channel with a `RequestHeadDeadline` in front of everything the base sets up.
struct RequestHeadDeadlineChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let deadline: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(deadline: deadline), position: .first)
        }.flatMap { base.setup(channel: channel, logger: logger) }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
