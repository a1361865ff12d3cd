import Glibc
import Hub
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NetStream
import NIOCore
import Threading
import ServiceLifecycle
import Synchronization

/// `--http`: camrec's web server. `/` is the live page, `/live` the WebSocket that feeds it.
/// A service of camrec's one service group (Hummingbird's application runs inside `run`); the
/// recording waits for it to listen (`waitUntilListening`) and never after that.
public final class LiveHTTPServer: Sendable {
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
        var underlying: Error?
    }

    private let host: String
    private let port: Int
    private let live: LiveViewOutput
    private let hls: LiveHLS
    private let access: HTTPAccess
    private let status: @Sendable () -> LiveStatus
    private let actions: LiveActions
    private let recordings: RecordingShelf
    private let metrics: LiveMetrics
    private let pictures: JPEGFeed?
    private let webRTC: WebRTCViewers?
    private let logger: Logger
    /// How the start went: the port listened on, or why not; set once, then `settled` opens.
    private let started = Mutex<Result<Int, StartError>?>(nil)
    private let settled = Latch()

    /// The longest label `POST /api/events?label=` takes.
    static let maximumLabelBytes = 200
    /// The largest SDP offer `POST /whep` reads (Chromium's are about 6 KiB).
    static let maximumOfferBytes = 64 * 1024

    public init(host: String, port: Int, live: LiveViewOutput, access: HTTPAccess,
                status: @escaping @Sendable () -> LiveStatus, actions: LiveActions, metrics: LiveMetrics, recordings: RecordingShelf,
                pictures: JPEGFeed? = nil, webRTC: WebRTCViewers? = nil, logger: Logger) {
        self.pictures = pictures
        self.webRTC = webRTC
        self.recordings = recordings
        self.metrics = metrics
        self.host = host
        self.port = port
        self.live = live
        hls = LiveHLS(live: live)
        self.access = access
        self.status = status
        self.actions = actions
        self.logger = logger
    }

    /// Hummingbird's application with camrec's routes; it reports its start to `settle`.
    private func makeApplication() -> any Service {
        let router = Router(context: LiveRequestContext.self)
        router.add(middleware: HTTPAccessMiddleware(access: access))
        router.get("/api/status") { [status, live, webRTC] _, _ -> LiveStatus in
            var now = status()
            now.viewers = live.viewerCount + (webRTC?.count ?? 0)
            return now
        }
        router.post("/api/keyframe") { [actions] _, _ -> EditedResponse<ActionAnswer> in
            actions.keyframe()
                ? EditedResponse(status: .accepted, response: ActionAnswer(done: true, message: "an IDR was asked for"))
                : EditedResponse(status: .tooManyRequests,
                                 response: ActionAnswer(done: false, message: "an IDR was asked for less than a second ago; try again"))
        }
        router.post("/api/rotate") { [actions] _, _ -> EditedResponse<ActionAnswer> in
            let files = actions.rotate()
            return files > 0
                ? EditedResponse(status: .accepted, response: ActionAnswer(done: true, message: "\(files) file output\(files == 1 ? " starts" : "s start") a new file at the next IDR"))
                : EditedResponse(status: .conflict, response: ActionAnswer(done: false, message: "this recording writes no files"))
        }
        router.post("/api/events") { [actions] request, _ -> EditedResponse<EventAnswer> in
            guard let trigger = actions.event else {
                return EditedResponse(status: .conflict, response: EventAnswer(
                    done: false, message: "this recording makes no event clips: start camrec with --event-output PATTERN", event: nil))
            }
            var label: String?
            let query = request.uri.query.map { String($0) } ?? ""
            if query.utf8.count > 4 * Self.maximumLabelBytes + 64 {
                return EditedResponse(status: .badRequest, response: EventAnswer(
                    done: false, message: "label: at most \(Self.maximumLabelBytes) bytes of printable text", event: nil))
            }
            var given: String?
            var malformed = false
            do { given = try EventQuery(query: query).label } catch { malformed = true }
            if malformed || given != nil {
                // A label goes into JSON, logs and a command's environment: short, printable, valid UTF-8.
                guard let text = given, text.utf8.count <= Self.maximumLabelBytes,
                      text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
                    return EditedResponse(status: .badRequest, response: EventAnswer(
                        done: false, message: "label: at most \(Self.maximumLabelBytes) bytes of printable text", event: nil))
                }
                label = text.isEmpty ? nil : text
            }
            switch trigger(label) {
            case .started(let event):
                return EditedResponse(status: .created, response: EventAnswer(
                    done: true, message: "event \(event.id) started at frame \(event.triggerFrame)", event: event))
            case .extended(let event):
                return EditedResponse(status: .ok, response: EventAnswer(
                    done: true, message: "event \(event.id) extended at frame \(event.lastTriggerFrame)", event: event))
            case .refused(let why):
                return EditedResponse(status: .serviceUnavailable, response: EventAnswer(done: false, message: why, event: nil))
            }
        }
        router.get("/api/events") { [actions] _, _ in EventListing(events: actions.events()) }
        router.get("/api/events/:id/thumbnail.jpg") { [actions] _, context -> Response in
            guard let id = context.parameters.get("id", as: Int.self), let jpeg = actions.thumbnails?.jpeg(eventID: id) else {
                throw HTTPError(.notFound, message: "no thumbnail for that event (not made yet, or no longer kept)")
            }
            // An event's first picture never changes.
            return Response(status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "private, max-age=86400"],
                            body: ResponseBody(byteBuffer: ByteBuffer(bytes: jpeg)))
        }
        router.get("/metrics") { [metrics] _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.render())))
        }
        router.get("/api/recordings") { [recordings] _, _ in RecordingShelf.Listing(recordings: recordings.list()) }
        router.get("/recordings/**") { [recordings] request, _ in try recordings.response(to: request) }
        let snapshot = LiveSnapshot(live: live)
        router.get("/stream.mjpg") { [pictures] request, context -> Response in
            guard let pictures else { throw HTTPError(.notFound, message: "this recording has no /stream.mjpg") }
            let rate = try MJPEGStream.rate(query: request.uri.queryParameters["fps"]).get()
            guard pictures.readerCount < pictures.maximumReaders else {
                throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"],
                                message: "\(pictures.maximumReaders) viewers are watching /stream.mjpg already")
            }
            return MJPEGStream.response(feed: pictures, framesPerSecond: rate, connection: context.connection)
        }
        router.get("/snapshot.jpg") { [pictures] _, _ -> Response in
            // An MJPEG camera's newest JPEG, as it came: nothing decoded or encoded.
            if let pictures, pictures.everyFrame {
                guard let (jpeg, sequence) = pictures.newestJPEG() else {
                    throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"], message: "no picture yet: the camera has sent none")
                }
                return Response(status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "no-store",
                                                       HTTPFields.Element.Name("X-Camrec-Frame")!: "\(sequence)"],
                                body: ResponseBody(byteBuffer: ByteBuffer(bytes: jpeg)))
            }
            do throws(LiveSnapshot.Failure) {
                let (sequence, jpeg) = try await snapshot.jpeg()
                return Response(status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "no-store",
                                                       HTTPFields.Element.Name("X-Camrec-Frame")!: "\(sequence)"],
                                body: ResponseBody(byteBuffer: ByteBuffer(bytes: jpeg)))
            } catch {
                switch error {
                case .busy: throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"],
                                            message: "\(LiveSnapshot.maximumWaiting) snapshots are being made; ask again in a second")
                case .noPicture: throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"],
                                                 message: "no picture yet: the recording has not reached its first IDR")
                case .failed(let why): throw HTTPError(.internalServerError, message: "the snapshot failed: \(why)")
                }
            }
        }
        let page = LivePage.html(sound: live.hasSound)
        router.get("/") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
        }
        router.post("/whep") { [webRTC] request, _ -> Response in
            try await Self.whepOffer(request, webRTC: webRTC)
        }
        router.delete("/whep/:id") { [webRTC] _, context -> Response in
            guard let id = context.parameters.get("id"), let webRTC, await webRTC.close(id: id) else {
                return Self.line(.notFound, "no such WebRTC session (it ended, or was never made)")
            }
            return Response(status: .ok)
        }
        // HLS (`LiveHLS`): the playlist, its init segment and its segments.
        router.get("/live.m3u8") { [hls] _, _ -> Response in
            guard let text = await hls.playlist() else {
                throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "1"],
                                message: "no HLS segment yet: the recording has not reached a second IDR, or it is over")
            }
            return Response(status: .ok, headers: [.contentType: "application/vnd.apple.mpegurl", .cacheControl: "no-store"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("/hls/:name") { [hls] _, context -> Response in
            let name = context.parameters.get("name") ?? ""
            var bytes: ByteBuffer?
            if name.hasPrefix("init-"), name.hasSuffix(".mp4"), let generation = Int(name.dropFirst(5).dropLast(4)) {
                bytes = hls.initSegment(generation: generation)
            } else if name.hasSuffix(".m4s"), let sequence = Int(name.dropLast(4)) {
                bytes = hls.segment(sequence)
            }
            guard let bytes else { throw HTTPError(.notFound, message: "no such HLS file (segments leave the window after a few seconds)") }
            return Response(status: .ok, headers: [.contentType: "video/mp4", .cacheControl: "max-age=60"],
                            body: ResponseBody(byteBuffer: bytes))
        }
        router.ws("/live", shouldUpgrade: { [live] _, _ in
            guard live.reservePlace() else {
                throw HTTPError(.serviceUnavailable, message: "\(live.maximumViewers) viewers are watching already")
            }
            return .upgrade([:])
        }) { [live] inbound, outbound, _ in
            guard let viewer = live.join() else { return }
            defer { live.leave(viewer) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The browser says nothing; its close (or a dead connection) ends the sending too.
                group.addTask { for try await _ in inbound {} }
                group.addTask {
                    while true {
                        let pieces: [LiveViewer.Piece]?
                        do {
                            pieces = try await viewer.nextPieces()
                        } catch {
                            live.viewerFailed(error)
                            return
                        }
                        guard let pieces else { return }
                        for piece in pieces {
                            switch piece {
                            case .description(let json): try await outbound.write(.text(json))
                            case .initSegment(let bytes): try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
                            case .fragment(let bytes):
                                try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
                                viewer.sent(bytes: bytes.count)
                            }
                        }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
        var quiet = logger
        quiet.logLevel = .warning
        let app = Application(
            router: router,
            server: Self.serverBuilder(router: router),
            // Connections of every kind, idle ones included: each costs a little memory and a descriptor.
            configuration: .init(address: .hostname(host, port: port), serverName: "camrec",
                                 availableConnectionsDelegate: MaximumAvailableConnections(256)),
            onServerRunning: { [self] channel in settle(.success(channel.localAddress?.port ?? 0)) },
            eventLoopGroupProvider: .shared(EventLoops.shared),
            logger: quiet
        )
        return app
    }

    /// WHEP: an SDP offer in, 201 with the answer and the session's resource (`Location`) out; else a 4xx
    /// or 503 with one line of text, which the page shows before it falls back to MSE.
    private static func whepOffer(_ request: Request, webRTC: WebRTCViewers?) async throws -> Response {
        guard let webRTC else {
            return line(.serviceUnavailable, "WebRTC is off: \(WebRTCViewers.unavailableReason() ?? "this camrec serves no WebRTC")")
        }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/sdp") == true else {
            return line(.unsupportedMediaType, "send the SDP offer as Content-Type: application/sdp")
        }
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: maximumOfferBytes)
        } catch is NIOTooManyBytesError {
            return line(.contentTooLarge, "the offer is larger than \(maximumOfferBytes / 1024) KiB")
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return line(.contentTooLarge, "the offer is larger than \(maximumOfferBytes / 1024) KiB")
        }
        do throws(WebRTCViewers.Refusal) {
            let (id, answer) = try await webRTC.open(offer: String(buffer: body))
            return Response(status: .created, headers: [.contentType: "application/sdp", .location: "/whep/\(id)", .cacheControl: "no-store"],
                            body: ResponseBody(byteBuffer: ByteBuffer(string: answer)))
        } catch {
            var response = line(HTTPResponse.Status(code: error.status), error.message)
            if error.retryAfter { response.headers[.retryAfter] = "1" }
            return response
        }
    }

    /// A status with one line of text.
    private static func line(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                 body: ResponseBody(byteBuffer: ByteBuffer(string: text + "\n")))
    }

    private func settle(_ outcome: Result<Int, StartError>) {
        let first = started.withLock { s -> Bool in
            guard s == nil else { return false }
            s = outcome
            return true
        }
        if first { settled.open() }
    }

    /// Blocks until the server listens, and returns its port (the one asked, or the one the kernel chose
    /// for 0); throws when it cannot bind, or has not started within 10 s. For the recording's thread,
    /// before capture starts.
    public func waitUntilListening() throws(StartError) -> Int {
        if !settled.wait(nanoseconds: 10_000_000_000) {
            settle(.failure(StartError(description: "the HTTP server did not start within 10 s")))
        }
        return try started.withLock { $0 ?? .failure(StartError(description: "not started")) }.get()
    }

    /// HTTP/1.1 with the WebSocket upgrade, where no connection holds a slot for long without asking for
    /// something: 15 s for the first request head to arrive (`RequestHeadDeadline`), then 15 s idle
    /// between requests (Hummingbird's timer). The page asks for its status every 2 s; a WebSocket, once
    /// upgraded, and a response being sent are not subject to either.
    private static func serverBuilder(router: Router<LiveRequestContext>) -> HTTPServerBuilder {
        let webSocketResponder = router.buildResponder()
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(http1: .init(idleTimeout: .seconds(15)))
        return HTTPServerBuilder { responder in
            RequestHeadDeadlineChannel(
                base: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder,
                                                   configuration: configuration),
                deadline: .seconds(15))
        }
    }

    /// One line for a start failure: the system's words for a socket error (a port in use).
    public static func describe(_ error: Error) -> String {
        if let start = error as? StartError, let io = start.underlying as? IOError {
            return String(cString: strerror(io.errnoCode))
        }
        return "\(error)"
    }

}

extension LiveHTTPServer: Service {
    /// In camrec's service group: Hummingbird's application serves until the group shuts down, which
    /// reaches it after the recording has finished (so the page sees the end). The shutdown closes the
    /// listener and, once they are done, every connection; those still open 2 s into it (a live page
    /// that keeps its WebSocket) are cancelled.
    public func run() async {
        let app = makeApplication()
        await withTaskGroup(of: Void.self) { tasks in
            // A child task: it sees the group's graceful shutdown as this service does.
            tasks.addTask { [self] in
                do {
                    try await app.run()
                } catch {
                    settle(.failure(StartError(description: "\(error)", underlying: error)))
                }
                settle(.failure(StartError(description: "the HTTP server ended before it listened")))
            }
            tasks.addTask { [hls] in await hls.run() }
            try? await gracefulShutdown()
            await webRTC?.finish()
            // Whichever ends first, the application or the 2 s; the other is cancelled.
            tasks.addTask { try? await Task.sleep(for: .seconds(2)) }  // the shutdown's bound, not a poll
            await tasks.next()
            tasks.cancelAll()
        }
    }
}

/// Hummingbird's WebSocket request context with the request's connection, which a streamed response's
/// deadline closes (`/stream.mjpg`'s viewer that stopped reading): the writer stays in its own task.
struct LiveRequestContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<Self>
    let connection: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        connection = source.channel
    }
}
