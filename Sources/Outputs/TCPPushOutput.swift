import Bitstream
import Hub
import NIOCore
import NIOPosix
import NetStream
import Threading
import Synchronization
import SystemPackage
import SystemSupport

/// `tcp://HOST:PORT`: pushes the stream to a receiver listening there, on SwiftNIO like `--listen` (the
/// connection is a `TCPReceiverSession` on an event loop; no thread of its own).
///
/// If the receiver is not up yet, or goes away, recording goes on and this output keeps reconnecting with
/// backoff (0.25 s doubling to 5 s); each new connection starts at an IDR (one is requested,
/// rate-limited), so it always begins with SPS+PPS+IDR. Never reports a failure to the recorder: a
/// receiver's trouble only affects this output.
public final class TCPPushOutput: StreamOutput, Sendable {
    public let endpoint: TCPEndpoint
    public var kind: OutputKind { .push }
    public var label: String { endpoint.description }
    public var failure: OutputError? { nil }

    private let log: NetworkEventLog
    private let queueCapacity: Int
    private let stallTimeoutSeconds: Double
    private let sendsTimingSEI: Bool
    private let codec: VideoCodec
    private let loop = EventLoops.shared.next()
    private let state = Mutex(State())
    /// Signalled when the reconnect task has returned, so `finish` waits without polling.
    private let ended = QueueLock()
    static let connectTimeout = TimeAmount.seconds(2)

    private struct State {
        var stopping = false
        var abandoned = false
        var loopEnded = false
        var current: TCPReceiverSession?
        var totals = PushTotals()
        /// Set by `open`: the hub, and the task that keeps reconnecting.
        var hub: StreamHub?
        var task: Task<Void, Never>?
    }

    public init(endpoint: TCPEndpoint, queueCapacity: Int = 60, stallTimeoutSeconds: Double = 10,
                sendsTimingSEI: Bool = false, codec: VideoCodec = .h264, log: @escaping NetworkEventLog) {
        self.endpoint = endpoint
        self.queueCapacity = queueCapacity
        self.stallTimeoutSeconds = stallTimeoutSeconds
        self.sendsTimingSEI = sendsTimingSEI
        self.codec = codec
        self.log = log
    }

    /// Tries once to connect before capture starts, so a receiver that is already up gets the stream
    /// from its very first frame; then keeps trying in the background.
    /// `onFailure` is never called: a receiver's trouble only affects this output.
    public func open(hub: StreamHub, onFailure: @escaping @Sendable (OutputError) -> Void) throws {
        state.withLock { $0.hub = hub }
        var schedule = ReconnectSchedule(label: label, peerKind: "receiver", log: log)
        var first: Channel?
        do {
            first = try connect().wait()
        } catch {
            schedule.firstAttemptFailed(describe(error))
        }
        // Joined before capture starts, the first connection gets frame 0 (an IDR) whatever the
        // event loop's pace: joining from its task could come a frame late and cost an extra IDR.
        let connected = first.map { ($0, subscribe(hub, for: $0)) }
        // Under the lock, so `finish` and `abandon` see the task however soon it ends.
        state.withLock { s in
            s.task = Task(executorPreference: EventLoopExecutor(loop)) { [self, schedule] in
                await reconnectLoop(hub, first: connected, schedule: schedule)
                ended.lock()
                state.withLock { $0.loopEnded = true }
                ended.broadcast()
                ended.unlock()
            }
        }
    }

    private func connect() -> EventLoopFuture<Channel> {
        guard let host = endpoint.host else { return loop.makeFailedFuture(ChannelError.badInterfaceAddressFamily) }
        return ClientBootstrap(group: loop)
            .connectTimeout(Self.connectTimeout)
            .channelOption(.socketOption(.so_sndbuf), value: 256 * 1024)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connect(host: host, port: Int(endpoint.port))
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    private func subscribe(_ hub: StreamHub, for channel: Channel) -> Subscription? {
        let name = receiverName(of: channel)
        // The IDR is asked for as the subscription joins, under the hub's lock: asked later, once frame 0
        // is published to a connection that joined before capture, it would add an IDR at frame 1.
        return hub.subscribe(name, from: .nextIDR, policy: .skipToIDR(depth: max(2, queueCapacity)), askForIDR: true,
                             onCatchUp: Subscription.catchUpLog(of: name, to: log))
    }

    private func receiverName(of channel: Channel) -> String {
        "receiver \(channel.remoteAddress.map(TCPListenOutput.text) ?? endpoint.description)"
    }

    private func reconnectLoop(_ hub: StreamHub, first: (Channel, Subscription?)?, schedule: ReconnectSchedule) async {
        var channel = first?.0
        var joined = first?.1
        var schedule = schedule
        while !stopping {
            if channel == nil {
                if let wait = schedule.nextWait() {
                    try? await Task.sleep(nanoseconds: wait)  // a backoff, not a poll: `finish` and `abandon` cancel it
                    if stopping { break }
                }
                do {
                    channel = try await connect().get()
                } catch {
                    schedule.connectFailed(describe(error))
                    continue
                }
            }
            guard let connected = channel else { continue }
            channel = nil
            let subscription = joined ?? subscribe(hub, for: connected)
            joined = nil
            guard await serve(connected, hub: hub, subscription: subscription, schedule: &schedule) else { break }
        }
        joined?.cancel()
        if let channel { try? await channel.close() }
    }

    /// One connection, from its first IDR until the receiver leaves or the stream ends. False when
    /// there is nothing more to send (the recording has ended).
    private func serve(_ channel: Channel, hub: StreamHub, subscription: Subscription?,
                       schedule: inout ReconnectSchedule) async -> Bool {
        let address = channel.remoteAddress.map(TCPListenOutput.text) ?? endpoint.description
        let name = receiverName(of: channel)
        guard let subscription,
              let connection = try? await channel.eventLoop.submit({
                  try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
              }).get()
        else {
            subscription?.cancel()
            try? await channel.close()
            return false
        }
        let session = TCPReceiverSession(channel: channel, name: name, peerAddress: address, subscription: subscription,
                                         stallTimeoutSeconds: stallTimeoutSeconds, sendsTimingSEI: sendsTimingSEI, codec: codec, log: log)
        let (n, abandoned) = state.withLock { s -> (Int, Bool) in
            s.current = session
            s.totals.connections += 1
            return (s.totals.connections, s.abandoned)
        }
        if abandoned { session.abortNow() }
        schedule.reached(connection: n, streaming: false)
        await session.run(connection)
        session.leaveHub()
        let summary = session.summary
        state.withLock { s in
            s.current = nil
            s.totals.add(summary)
        }
        return !hub.isClosed
    }

    /// `connect() on 127.0.0.1:9000: Connection refused (errno 111)`, as the rest of camrec words socket errors.
    private func describe(_ error: Error) -> String {
        let target = endpoint.host.map { hostAndPort($0, endpoint.port) } ?? label
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first, let io = first.error as? IOError {
                return "\(SocketError("connect", Errno(rawValue: io.errnoCode), address: TCPListenOutput.text(first.target)))"
            }
            if let dns = error.dnsAAAAError ?? error.dnsAError { return "cannot resolve \(target): \(dns)" }
            return "connect() on \(target): no address answered"
        }
        if let io = error as? IOError { return "\(SocketError("connect", Errno(rawValue: io.errnoCode), address: target))" }
        if let error = error as? ChannelError, case .connectTimeout = error {
            return "connect() on \(target): no answer within 2 s"
        }
        return "\(error)"
    }

    /// A second interrupt: stop waiting for the receiver (connecting, sending or flushing) now.
    public func abandon() {
        let (current, task) = state.withLock { s -> (TCPReceiverSession?, Task<Void, Never>?) in
            s.abandoned = true
            s.stopping = true
            return (s.current, s.task)
        }
        current?.abortNow()
        task?.cancel()
    }

    public var counters: OutputCounters {
        let (all, current) = state.withLock { ($0.totals, $0.current) }
        return all.counters(current: current?.summary, currentAlive: current?.isAlive == true)
    }

    public func finish() -> OutputReport {
        // The hub has closed: the connection sends what it has queued, within 5 s (at once after a
        // second interrupt), and the reconnect loop ends; a wait between attempts is cut short.
        let current = state.withLock { s -> (TCPReceiverSession?, Bool, Task<Void, Never>?) in
            s.stopping = true
            return (s.current, s.abandoned, s.task)
        }
        current.0?.finish(within: current.1 ? 0 : 5)
        if current.0 == nil { current.2?.cancel() }
        ended.lock()
        while !state.withLock({ $0.loopEnded }) && current.2 != nil { ended.waitNotEmpty() }
        ended.unlock()
        let (all, hub) = state.withLock { ($0.totals, $0.hub) }
        log(all.summary(label: label, peerKind: "receiver", published: hub?.publishedCount ?? 0))
        return all.sent.report(kind: kind, label: label)
    }
}
