import Bitstream
import Frames
import Glibc
import NIOCore
import NetStream
import Outputs
import RTSP
import Synchronization

/// One client's RTSP connection, as a task on its event loop: requests are answered in order, RTCP
/// (interleaved on it, or on its session's UDP port) is read as a sign of life, and its session (at most one) sends on it (TCP) or
/// beside it (UDP). The session ends with the connection, at TEARDOWN, or after the timeout with no
/// sign of life; a malformed request is answered 400 and the connection closed.
final class RTSPConnection: Sendable {
    static let methods = "OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER, SET_PARAMETER"
    unowned let server: RTSPServer
    let channel: Channel
    let peer: String
    /// The Digest nonce of this connection.
    let nonce: String
    /// Since when the connection has taken no more bytes (the stall check).
    let writability: RTSPWritability
    private let state: Mutex<State>

    private struct State {
        var life: SessionLife
        var session: RTSPSession?
        var closed = false
        var warnedAuthentication = false
    }

    init(server: RTSPServer, channel: Channel, peer: String, writability: RTSPWritability) {
        self.server = server
        self.writability = writability
        self.channel = channel
        self.peer = peer
        state = Mutex(State(life: SessionLife(timeoutSeconds: server.configuration.sessionTimeoutSeconds, now: MonotonicClock.now())))
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        nonce = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    var session: RTSPSession? { state.withLock { $0.session } }

    func touch() {
        let now = MonotonicClock.now()
        state.withLock { $0.life.alive(at: now) }
    }

    /// RTCP from this client about the stream `ssrc` (its session's): a compound packet that parses is a
    /// sign of life, and its newest report block is kept; anything else is counted and ignored.
    func rtcp(_ bytes: some Collection<UInt8>, ssrc: UInt32) {
        let now = MonotonicClock.now()
        state.withLock { _ = $0.life.rtcp(bytes, ssrc: ssrc, at: now) }
    }

    /// What the client's RTCP said so far.
    var life: SessionLife { state.withLock { $0.life } }

    /// Once a second, on the connection's loop (`RTSPSendLoop.watch`): a client with no sign of life for the
    /// session timeout is closed; one that has taken nothing for the stall timeout is cut with a reset (it
    /// may hold half an interleaved frame).
    func checkLife(at now: UInt64) {
        if state.withLock({ $0.life.expired(at: now) }) {
            server.log("rtsp: \(peer): no sign of life for \(server.configuration.sessionTimeoutSeconds) s (no request, no RTCP); closed")
            channel.close(promise: nil)
        }
        let blocked = writability.blockedSince.load(ordering: .relaxed)
        if blocked > 0 && now > blocked && now - blocked > RTSPSession.stallTimeoutNanoseconds {
            server.log("rtsp: \(peer): fell behind: took nothing for over \(RTSPSession.stallTimeoutNanoseconds / 1_000_000_000) s; disconnected")
            writability.blockedSince.store(0, ordering: .relaxed)
            if let options = channel as? SocketOptionProvider {
                options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { [channel] _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        }
    }

    func run(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        let sendLoop = server.sendLoop(for: channel.eventLoop)
        sendLoop.watch(self)
        var parser = RTSPMessageParser()
        do {
            try await connection.executeThenClose { inbound, _ in
                for try await buffer in inbound {
                    touch()
                    var messages: [RTSPInbound] = []
                    do {
                        try parser.feed(buffer.readableBytesView) { messages.append($0) }
                    } catch let error as RTSPParseError {
                        for message in messages { await handle(message) }
                        if server.firstMalformed(from: peer) { server.log("rtsp: \(peer): malformed request (\(error)); answered 400 and closed") }
                        var response = RTSPResponse(status: 400, cseq: nil, headers: [("Connection", "close")])
                        response.body = []
                        write(response)
                        return
                    }
                    for message in messages { await handle(message) }
                }
            }
        } catch {
            // A reset or a close: the client is gone.
        }
        sendLoop.unwatch(self)
        let session = state.withLock { s -> RTSPSession? in
            s.closed = true
            defer { s.session = nil }
            return s.session
        }
        if let session { await session.end(reason: "left") }
    }

    private func handle(_ message: RTSPInbound) async {
        switch message {
        case .interleaved(let channelNumber, let payload):
            // RTCP from the client (its receiver reports); RTP from a client is ignored.
            if let session, session.isRTCP(channel: channelNumber) {
                session.noteRTCP(payload)
            }
        case .request(let request):
            write(await answer(request))
        }
    }

    func write(_ response: RTSPResponse) {
        var buffer = channel.allocator.buffer(capacity: 256)
        buffer.writeBytes(response.bytes)
        channel.writeAndFlush(buffer, promise: nil)
        if response.headers.contains(where: { $0.name == "Connection" && $0.value == "close" }) {
            channel.close(mode: .output, promise: nil)
            channel.eventLoop.scheduleTask(in: .seconds(1)) { [channel] in channel.close(promise: nil) }
        }
    }

    /// The response to one request.
    private func answer(_ request: RTSPRequest) async -> RTSPResponse {
        let cseq = request.cseq
        guard let cseq else { return RTSPResponse(status: 400, cseq: nil, headers: [("Connection", "close")]) }
        if request.method == "OPTIONS" {
            return RTSPResponse(status: 200, cseq: cseq, headers: [("Public", Self.methods)] + sessionHeader(request))
        }
        if let authentication = server.configuration.authentication,
           !authentication.allows(authorization: request.header("Authorization"), method: request.method, nonce: nonce) {
            let first = state.withLock { s in defer { s.warnedAuthentication = true }; return !s.warnedAuthentication }
            if first && request.header("Authorization") != nil { server.log("rtsp: \(peer): wrong user name or password; answered 401") }
            return RTSPResponse(status: 401, cseq: cseq, headers: authentication.challenges(nonce: nonce).map { ("WWW-Authenticate", $0) })
        }
        switch request.method {
        case "DESCRIBE": return await describe(request, cseq: cseq)
        case "SETUP": return await setup(request, cseq: cseq)
        case "PLAY": return play(request, cseq: cseq)
        case "TEARDOWN":
            guard let session = matchingSession(request) else { return RTSPResponse(status: 454, cseq: cseq) }
            state.withLock { $0.session = nil }
            await session.end(reason: "ended it (TEARDOWN)")
            return RTSPResponse(status: 200, cseq: cseq)
        case "GET_PARAMETER", "SET_PARAMETER":
            // Keep-alives (a body, if any, names nothing camrec sets).
            if request.header("Session") != nil && matchingSession(request) == nil { return RTSPResponse(status: 454, cseq: cseq) }
            return RTSPResponse(status: 200, cseq: cseq, headers: sessionHeader(request))
        default:
            return RTSPResponse(status: 501, cseq: cseq, headers: [("Public", Self.methods)])
        }
    }

    private func sessionHeader(_ request: RTSPRequest) -> [(name: String, value: String)] {
        guard let session, matchingSession(request) != nil else { return [] }
        return [("Session", "\(session.id);timeout=\(server.configuration.sessionTimeoutSeconds)")]
    }

    private func matchingSession(_ request: RTSPRequest) -> RTSPSession? {
        guard let session, let given = request.header("Session") else { return nil }
        let id = given.split(separator: ";").first.map { String($0).trimmingCharacters() } ?? ""
        return id == session.id ? session : nil
    }

    private func describe(_ request: RTSPRequest, cseq: String) async -> RTSPResponse {
        guard let (path, _) = rtspPath(of: request.uri), let mount = server.mount(forPath: path) else {
            return RTSPResponse(status: 404, cseq: cseq)
        }
        // Before the first IDR there are no parameter sets yet: wait a little for them (they also come in-band).
        let sets = await mount.parameterSets(waitingAtMost: .seconds(3), on: channel.eventLoop)
        let local = channel.localAddress?.ipAddress ?? "0.0.0.0"
        let sdp = SessionDescription.make(codec: mount.codec, parameterSets: sets, sessionID: UInt64(MonotonicClock.now() / 1000),
                                          serverAddress: local, framesPerSecond: server.configuration.framesPerSecond,
                                          audio: mount.sound?.track)
        let base = request.uri.hasSuffix("/") ? request.uri : request.uri + "/"
        return RTSPResponse(status: 200, cseq: cseq, headers: [("Content-Base", base), ("Content-Type", "application/sdp")],
                            body: Array(sdp.utf8))
    }

    private func setup(_ request: RTSPRequest, cseq: String) async -> RTSPResponse {
        // The picture is trackID=0 (or the stream's URL itself), the sound trackID=1 when there is one.
        guard let (path, named) = rtspPath(of: request.uri), let mount = server.mount(forPath: path),
              named ?? 0 == 0 || (named == RTPAudioTrack.trackID && mount.sound != nil) else {
            return RTSPResponse(status: 404, cseq: cseq)
        }
        let track = named ?? 0
        if let session {
            // A further track joins the session named; another session, or one already playing, is not served.
            guard matchingSession(request) != nil, session.mount === mount else { return RTSPResponse(status: 459, cseq: cseq) }
            guard !session.isPlaying, !session.legs.contains(where: { $0.track == track }) else { return RTSPResponse(status: 455, cseq: cseq) }
            // Multicast carries the picture alone: its session takes no further track.
            guard !session.isMulticast, let offer = request.header("Transport"),
                  let transport = RTSPTransport.choose(from: offer, nextInterleavedChannel: session.nextInterleavedChannel),
                  !session.collides(transport) else {
                return RTSPResponse(status: 461, cseq: cseq)
            }
            let leg: RTPLeg?
            do {
                leg = try await session.add(track: track, transport: transport)
            } catch {
                server.log("rtsp: \(peer): cannot open UDP ports for the session: \(error)")
                return RTSPResponse(status: 461, cseq: cseq)
            }
            guard let leg else { return RTSPResponse(status: 455, cseq: cseq) }
            return RTSPResponse(status: 200, cseq: cseq, headers: [
                ("Transport", leg.description),
                ("Session", "\(session.id);timeout=\(server.configuration.sessionTimeoutSeconds)"),
            ])
        }
        // Multicast carries the picture alone (the sound's SETUP over it gets 461).
        let multicast = server.configuration.multicast != nil && track == 0
        guard let offer = request.header("Transport"), let transport = RTSPTransport.choose(from: offer, multicast: multicast) else {
            return RTSPResponse(status: 461, cseq: cseq)
        }
        guard server.reserveSession() else {
            server.log("rtsp: \(peer): refused a session: already \(server.configuration.maximumSessions) (the most allowed)")
            return RTSPResponse(status: 453, cseq: cseq)
        }
        let session: RTSPSession
        do {
            session = try await RTSPSession.make(connection: self, mount: mount, track: track, transport: transport)
        } catch {
            server.releaseSession()
            server.log("rtsp: \(peer): cannot open UDP ports for the session: \(error)")
            return RTSPResponse(status: 461, cseq: cseq)
        }
        let stillOpen = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.session = session
            return true
        }
        guard stillOpen else {
            await session.end(reason: "left")
            return RTSPResponse(status: 454, cseq: cseq)
        }
        return RTSPResponse(status: 200, cseq: cseq, headers: [
            ("Transport", session.legs.first?.description ?? ""),
            ("Session", "\(session.id);timeout=\(server.configuration.sessionTimeoutSeconds)"),
        ])
    }

    private func play(_ request: RTSPRequest, cseq: String) -> RTSPResponse {
        guard let session = matchingSession(request) else { return RTSPResponse(status: 454, cseq: cseq) }
        // RTP-Info names each track by its URL: the aggregate URL (a track's own, less its trackID) and trackID=N.
        var base = request.uri
        if rtspPath(of: base)?.track != nil, let slash = base.lastIndex(of: "/") { base = String(base[...slash]) }
        if !base.hasSuffix("/") { base += "/" }
        guard let rtpInfo = session.play(base: base) else { return RTSPResponse(status: 454, cseq: cseq) }
        return RTSPResponse(status: 200, cseq: cseq, headers: [
            ("Range", "npt=now-"), ("RTP-Info", rtpInfo),
            ("Session", "\(session.id);timeout=\(server.configuration.sessionTimeoutSeconds)"),
        ])
    }

    /// The stream of `mount` (or every stream, nil) has ended: the session sends what it holds within
    /// `seconds`, then the connection closes.
    func streamEnded(for mount: RTSPMount?, within seconds: Double) {
        let session = self.session
        if let mount, session?.mount !== mount { return }
        if seconds <= 0 {
            channel.close(promise: nil)
            return
        }
        // A session's sender closes the connection once it has sent what it holds; one without a session closes now.
        if session == nil { channel.close(promise: nil) }
        channel.eventLoop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { [channel] in channel.close(promise: nil) }
    }
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return String(s)
    }
}
