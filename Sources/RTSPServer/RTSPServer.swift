import Bitstream
import Frames
import Glibc
import Hub
import NIOCore
import NIOPosix
import NetStream
import Outputs
import RTSP
import Synchronization
import SystemSupport

/// `--rtsp [HOST:]PORT`: camrec as a network camera. An RTSP 1.0 server (RFC 2326) on SwiftNIO's event
/// loops (shared with `--listen` and `--http`; a connection is a task, not a thread). Each encoding is a
/// path: `/` is the default encoding, `/h264` and `/h265` name one (`RTSPMount`, one per hub).
///
/// A client's PLAY subscribes it to its hub at the next IDR (`.skipToIDR`) and asks the keyframe gate
/// for one, as `--listen` does: a TCP client that falls behind skips to the next IDR, and a UDP client
/// never waits for anything. A session lives as long as its RTSP connection, and no longer than 60 s
/// without a sign of life (a request, or RTCP from the client).
public final class RTSPServer: Sendable {
    public struct Configuration: Sendable {
        public var endpoint: TCPEndpoint
        /// The largest RTP packet (header included): the MTU option.
        public var maximumPacketBytes = 1400
        public var maximumSessions = 64
        public var authentication: RTSPAuthentication?
        public var sessionTimeoutSeconds = 60
        public var framesPerSecond: Double?
        /// `--rtsp-multicast`: the group clients that ask for multicast are sent to; the first encoding
        /// on `port` (and `port + 1` for RTCP), the next on `port + 2`, and so on.
        public var multicast: (group: String, port: Int, ttl: Int)?
        public init(endpoint: TCPEndpoint) {
            self.endpoint = endpoint
        }
    }

    public let configuration: Configuration
    let log: NetworkEventLog
    /// Connections over this many are closed at once (sessions are counted on their own).
    var maximumConnections: Int { configuration.maximumSessions + 16 }
    /// The difference between CLOCK_REALTIME and CLOCK_MONOTONIC when the server started: sender reports
    /// give the wall-clock time of each frame's capture.
    let realtimeOffsetNanoseconds: Int64
    /// The recording's map from presentation to capture time, the one the sound is stamped through: sender
    /// reports of both tracks read their NTP time from it, so a client lines them up as the files are.
    private let timeline = Mutex<PresentationTimeline?>(nil)

    private struct State {
        var servers: [Channel] = []
        var mounts: [RTSPMount] = []
        var opened = 0
        var finished = 0
        var connections: [ObjectIdentifier: RTSPConnection] = [:]
        /// Succeeded when the last connection has ended, once `finished` waits for that.
        var connectionsEnded: EventLoopPromise<Void>?
        var sessions = 0
        var stopping = false
        var clients = 0
        /// Clients whose malformed request was logged (bounded), so a broken client is logged once.
        var loggedMalformed: Set<String> = []
    }
    private let state = Mutex(State())
    /// One sending loop an event loop, made on first use.
    private let sendLoops = Mutex<[ObjectIdentifier: RTSPSendLoop]>([:])
    /// The shared UDP ports, by local address and track ("address track").
    private let udpPorts = Mutex<[String: RTSPServerPorts]>([:])

    public init(configuration: Configuration, log: @escaping NetworkEventLog) {
        self.configuration = configuration
        self.log = log
        var real = timespec()
        clock_gettime(CLOCK_REALTIME, &real)
        let realNanoseconds = Int64(real.tv_sec) * 1_000_000_000 + Int64(real.tv_nsec)
        realtimeOffsetNanoseconds = realNanoseconds - Int64(MonotonicClock.now())
    }

    /// The output of one encoding: `paths` (`/`, `/h264`) serve it, with `sound` as its second track.
    public func mount(codec: VideoCodec, paths: [String], sound: RTSPMount.Sound? = nil) -> RTSPMount {
        let index = state.withLock { $0.mounts.count }
        let multicast = configuration.multicast.map { m in
            RTSPMulticast(group: m.group, port: m.port + 2 * index, ttl: m.ttl, codec: codec,
                          maximumPacketBytes: configuration.maximumPacketBytes)
        }
        let mount = RTSPMount(server: self, codec: codec, paths: paths, sound: sound, multicast: multicast)
        state.withLock { $0.mounts.append(mount) }
        return mount
    }

    /// The recording's timeline (set once the recorder exists, before capture starts).
    public func use(timeline: PresentationTimeline) {
        self.timeline.withLock { $0 = timeline }
    }

    /// The NTP time of the instant presented at `presentation`: its capture time through the timeline,
    /// else `capture` (a frame's own), else now.
    func ntp(ofPresentation presentation: UInt64, capturedAt capture: UInt64) -> UInt64 {
        let captured = timeline.withLock { $0 }?.capture(ofPresentation: presentation) ?? (capture > 0 ? capture : MonotonicClock.now())
        return RTCP.ntp(unixNanoseconds: UInt64(max(0, Int64(bitPattern: captured) + realtimeOffsetNanoseconds)))
    }

    public var boundPort: UInt16 {
        state.withLock { s in UInt16(clamping: s.servers.first?.localAddress?.port ?? 0) }
    }

    var label: String { "--rtsp " + hostAndPort(configuration.endpoint.host, configuration.endpoint.port) }

    /// The first mount opened binds the port (before capture starts, so a port in use fails first).
    func opened(_ mount: RTSPMount) throws {
        let first = state.withLock { s -> Bool in
            s.opened += 1
            return s.opened == 1
        }
        guard first else { return }
        let servers = try ServerSockets.bindServing(configuration.endpoint, action: "serve RTSP on \(label)") { [self] channel in
            admit(channel)
        }
        state.withLock { $0.servers = servers }
        let paths = state.withLock { $0.mounts.flatMap(\.paths) }
        let shown = servers.compactMap { $0.localAddress.map(ServerSockets.text) }
        let multicast = configuration.multicast.map { m in "; multicast to \(m.group) from port \(m.port), TTL \(m.ttl)" } ?? ""
        log("serving RTSP on " + shown.map { "rtsp://\($0)" }.joined(separator: ", ") + " (paths \(paths.joined(separator: ", ")))"
            + (configuration.authentication == nil ? "" : "; a password is needed") + multicast)
    }

    func mount(forPath path: String) -> RTSPMount? {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        return state.withLock { s in s.mounts.first { $0.paths.contains(trimmed) && $0.hub != nil } }
    }

    /// The sending loop of the sessions on `loop`.
    func sendLoop(for loop: EventLoop) -> RTSPSendLoop {
        sendLoops.withLock { loops in
            if let made = loops[ObjectIdentifier(loop)] { return made }
            let made = RTSPSendLoop(loop: loop)
            loops[ObjectIdentifier(loop)] = made
            return made
        }
    }

    /// The UDP ports of `track` at the local address `local`, bound on the first UDP SETUP there.
    func ports(local: String, track: Int) async throws -> RTSPServerPorts {
        let key = "\(local) \(track)"
        if let bound = udpPorts.withLock({ $0[key] }) { return bound }
        let made = try await RTSPServerPorts.open(local: local, maximumPacketBytes: configuration.maximumPacketBytes,
                                                  on: EventLoops.shared.next())
        let (ports, spare) = udpPorts.withLock { all -> (RTSPServerPorts, RTSPServerPorts?) in
            // Two SETUPs at once: the first one bound wins.
            if let bound = all[key] { return (bound, made) }
            all[key] = made
            return (made, nil)
        }
        spare?.close(unused: true)
        return ports
    }

    /// A new connection, on its event loop: closed at once over the limit, else served by a task.
    private func admit(_ channel: Channel) -> EventLoopFuture<Void> {
        let address = channel.remoteAddress.map(ServerSockets.text) ?? "?"
        let writability = RTSPWritability()
        do {
            // A client that does not take a picture at once gets no more until it has taken all of it (and
            // the hub queues, then skips it to the next IDR): NIO holds at most about a picture for it.
            try channel.syncOptions?.setOption(.writeBufferWaterMark, value: .init(low: 1, high: 16 * 1024))
            try channel.pipeline.syncOperations.addHandler(writability, position: .first)
        } catch {
            return channel.close()
        }
        let connection = RTSPConnection(server: self, channel: channel, peer: address, writability: writability)
        writability.connection = connection
        let asyncChannel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            asyncChannel = try NIOAsyncChannel(wrappingChannelSynchronously: channel)
        } catch {
            return channel.close()
        }
        let admitted = state.withLock { s -> Bool in
            guard !s.stopping, s.connections.count < maximumConnections else { return false }
            s.connections[ObjectIdentifier(connection)] = connection
            s.clients += 1
            return true
        }
        guard admitted else {
            log("rtsp: refusing \(address): already \(maximumConnections) connections (the most allowed)")
            return channel.close()
        }
        Task(executorPreference: EventLoopExecutor(channel.eventLoop)) { [self] in
            await connection.run(asyncChannel)
            let ended = state.withLock { s -> EventLoopPromise<Void>? in
                s.connections.removeValue(forKey: ObjectIdentifier(connection))
                return s.connections.isEmpty ? s.connectionsEnded : nil
            }
            ended?.succeed()
        }
        return channel.eventLoop.makeSucceededVoidFuture()
    }

    /// A session slot, unless the cap is reached.
    func reserveSession() -> Bool {
        state.withLock { s in
            guard s.sessions < configuration.maximumSessions else { return false }
            s.sessions += 1
            return true
        }
    }

    func releaseSession() { state.withLock { $0.sessions -= 1 } }

    var sessionCount: Int { state.withLock { $0.sessions } }

    /// What each client of `mount` says in its RTCP (for `/metrics`).
    func receptions(of mount: RTSPMount) -> [ReceiverReception] {
        let connections = state.withLock { Array($0.connections.values) }
        return connections.compactMap { connection in
            guard let session = connection.session, session.mount === mount else { return nil }
            return ReceiverReception(session: session, life: connection.life)
        }
    }

    /// Whether to log this client's malformed request: once per address (of the last 1024 kept).
    func firstMalformed(from peer: String) -> Bool {
        let host = peer.split(separator: ":").dropLast().joined(separator: ":")
        return state.withLock { s in
            if s.loggedMalformed.count >= 1024 { s.loggedMalformed.removeAll() }
            return s.loggedMalformed.insert(host).inserted
        }
    }

    /// A mount's hub has closed: its sessions send what they hold (within 5 s), then end; the last mount
    /// to finish closes the port and waits for every connection to end.
    func finished(_ mount: RTSPMount) {
        let (last, connections) = state.withLock { s -> (Bool, [RTSPConnection]) in
            s.finished += 1
            return (s.finished >= s.opened, Array(s.connections.values))
        }
        for connection in connections { connection.streamEnded(for: mount, within: 5) }
        guard last else { return }
        let servers = state.withLock { s -> [Channel] in
            s.stopping = true
            // The mounts hold the server: let them go, so neither outlives the recording.
            s.mounts = []
            defer { s.servers = [] }
            return s.servers
        }
        for server in servers { try? server.close().wait() }
        for connection in state.withLock({ Array($0.connections.values) }) { connection.streamEnded(for: nil, within: 5) }
        // Each connection ends within the 5 s given to it; the closes run on the event loops.
        let loop = EventLoops.shared.next()
        let ended = loop.makePromise(of: Void.self)
        let waits = state.withLock { s -> Bool in
            guard !s.connections.isEmpty else { return false }
            s.connectionsEnded = ended
            return true
        }
        if waits {
            let bound = loop.scheduleTask(in: .seconds(7)) { ended.succeed() }
            try? ended.futureResult.wait()
            bound.cancel()
        } else {
            ended.succeed()
        }
        // No session sends any more: the shared UDP ports close.
        for ports in udpPorts.withLock({ all in defer { all = [:] }; return Array(all.values) }) { ports.close() }
        let clients = state.withLock { $0.clients }
        log("\(label): served \(clients) client connection\(clients == 1 ? "" : "s")")
    }

    func abandon() {
        for connection in state.withLock({ Array($0.connections.values) }) { connection.streamEnded(for: nil, within: 0) }
    }
}

extension ReceiverReception {
    /// A session's client, from what its RTCP said (RFC 3550 §6.4.1: the fraction is over 256, the
    /// jitter in units of the stream's clock, 90 kHz for video).
    init(session: RTSPSession, life: SessionLife) {
        self.init(receiver: session.connection.peer, session: session.id)
        reports = life.receiverReports
        ignored = life.ignored
        if let block = life.newest {
            cumulativeLost = Int(block.cumulativeLost)
            fractionLost = Double(block.fractionLost) / 256
            jitterSeconds = Double(block.jitter) / 90_000
        }
    }
}
