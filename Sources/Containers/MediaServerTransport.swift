import Audio
import Hub
import Bitstream
import CFFmpeg
import Libav
import NetStream
import Outputs

/// One publishing session to a media server, written by libavformat: RTSP ANNOUNCE/RECORD
/// (interleaved over the RTSP TCP connection), FLV over RTMP, or MPEG-TS over SRT.
///
/// The session starts at the first access unit sent, an IDR whose parameter sets describe the
/// stream to the server (the SDP's sprop-parameter-sets or sprop-vps/sps/pps, FLV's AVC sequence
/// header); they also stay in-band before every IDR. Every libavformat call that can wait on the network runs under an
/// interrupt callback that ends it once the sender's `abort` says so (a stalled server, the
/// recording's end), so nothing here blocks longer than the sender allows.
public final class MediaServerTransport: PeerTransport {
    public let server: MediaServerURL
    public var peerAddress: String { server.redacted }

    private var context: UnsafeMutablePointer<AVFormatContext>?
    /// The video, and the recording's sound beside it when `audio` is given.
    private var tracks: MuxedTracks?
    private let audio: AudioTrackFormat?
    private let frameIntervalNanoseconds: UInt64
    /// The header (the announce) is written: packets may follow.
    private var streaming = false
    private let packet: UnsafeMutablePointer<AVPacket>
    /// Polled by libavformat's interrupt callback while a call waits.
    private var abort: () -> Bool = { false }
    private var interrupted = false
    /// The TCP connection libavformat opened (RTMP, RTSP), to end it gracefully: see `LibraryConnection`.
    private var connection: LibraryConnection?

    public let codec: VideoCodec

    /// - Parameter codec: H.264 to any server; H.265 over RTSP (RFC 7798) and SRT (MPEG-TS) only,
    ///   since FLV (RTMP) carries H.264 only: the caller refuses that before.
    /// - Parameter audio: the recording's sound, sent beside the video (AAC: FLV, RTSP's
    ///   mpeg4-generic, MPEG-TS); `framesPerSecond` says where the video ends, for the sound's end.
    public init(server: MediaServerURL, codec: VideoCodec = .h264, audio: AudioTrackFormat? = nil, framesPerSecond: Double = 30) {
        precondition(codec == .h264 || server.kind != .rtmp, "RTMP carries H.264 only")
        self.server = server
        self.codec = codec
        self.audio = audio
        let fps = framesPerSecond.isFinite && framesPerSecond > 0 ? framesPerSecond : 30
        frameIntervalNanoseconds = UInt64((1e9 / fps).rounded())
        packet = av_packet_alloc()
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        release()
    }

    private func release() {
        tracks?.discard()
        guard let context else { return }
        if server.kind != .rtsp, context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
        self.context = nil
        connection = nil
        streaming = false
    }

    /// A server that goes away shows at the next write; it never sends anything to read here.
    public func isOpen() throws -> Bool { true }

    public func send(_ chunk: StreamChunk, stallTimeoutMilliseconds: Int, abort: () -> Bool) throws {
        try withoutActuallyEscaping(abort) { abort in
            self.abort = abort
            LibavLogging.keepThreadErrors(true)
            defer {
                self.abort = { false }
                LibavLogging.keepThreadErrors(false)
            }
            try write(chunk)
        }
    }

    private func write(_ chunk: StreamChunk) throws {
        if context == nil {
            guard tracks == nil else { throw OutputError(.unwritable, "the session to \(peerAddress) has ended") }
            // A session starts at the picture; sound before it has nothing to go with.
            guard chunk.kind == .video else { return }
            try start(with: chunk)
        }
        guard let context, streaming, var tracks else { return }
        let status = tracks.write(chunk, into: context, using: packet)
        self.tracks = tracks
        if status >= 0, let pb = context.pointee.pb { avio_flush(pb) }
        let ioError = context.pointee.pb.map { $0.pointee.error } ?? 0
        if status < 0 || ioError < 0 { throw failure("sending", status < 0 ? status : ioError) }
    }

    /// Opens the session: the connection, then the muxer's header (which, for RTSP, is the
    /// whole OPTIONS/ANNOUNCE/SETUP/RECORD exchange).
    private func start(with chunk: StreamChunk) throws {
        var made: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_alloc_output_context2(&made, nil, server.kind.muxer, server.url) >= 0, let made else {
            throw OutputError(.unwritable, "this FFmpeg cannot publish \(server.kind.rawValue) (no \(server.kind.muxer) muxer)")
        }
        context = made
        made.pointee.interrupt_callback = AVIOInterruptCB(callback: { opaque in
            let transport = Unmanaged<MediaServerTransport>.fromOpaque(opaque!).takeUnretainedValue()
            if transport.abort() { transport.interrupted = true; return 1 }
            return 0
        }, opaque: Unmanaged.passUnretained(self).toOpaque())
        let video = try VideoTrack(in: made, codec: codec, firstAccessUnit: chunk.bytes, what: peerAddress)
        let sound = try audio.map { try AudioTrack(in: made, format: $0, what: peerAddress) }
        tracks = MuxedTracks(video: video, audio: sound, frameIntervalNanoseconds: frameIntervalNanoseconds, writesDurations: false)

        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        switch server.kind {
        case .rtsp:
            av_dict_set(&options, "rtsp_transport", "tcp", 0)
        case .rtmp:
            av_dict_set(&options, "flvflags", "no_duration_filesize", 0)
        case .srt:
            break
        }
        // SRT is UDP: nothing to find.
        let socketsBefore = server.tcpPort.map { _ in LibraryConnection.sockets() }
        if server.kind != .rtsp {
            var ioOptions: OpaquePointer?
            defer { av_dict_free(&ioOptions) }
            // SRT's live mode drops what is still unsent when the socket closes: the last frames
            // of a recording. Wait up to 3 s for them (a `linger` in the URL takes precedence).
            if server.kind == .srt { av_dict_set(&ioOptions, "linger", "3", 0) }
            let opened = avio_open2(&made.pointee.pb, server.url, AVIO_FLAG_WRITE, &made.pointee.interrupt_callback, &ioOptions)
            guard opened >= 0 else { throw failure("connecting", opened) }
        }
        let status = avformat_write_header(made, &options)
        guard status >= 0 else { throw failure(server.kind == .rtsp ? "connecting and announcing the stream" : "starting the stream", status) }
        if let port = server.tcpPort, let socketsBefore { connection = LibraryConnection.opened(since: socketsBefore, toPort: port) }
        streaming = true
    }

    /// An SRT receiver hands data on only after its latency window (120 ms by default) and
    /// drops what it still holds when the sender closes: the last frames of every recording.
    /// Closing a second later lets them out (linger only waits for them to be acknowledged).
    private func waitForSRTDelivery(pause: (UInt64) -> Void) {
        pause(1_000_000_000)
    }

    /// What went wrong, with libavformat's own error lines ("method ANNOUNCE failed: 404 Not
    /// Found") when it logged any: they say more than its return code.
    private func failure(_ doing: String, _ status: Int32) -> Error {
        let detail = LibavLogging.takeThreadErrors().map { " (\(LibavLogging.redactURLs($0)))" } ?? ""
        if interrupted || status == camrec_averror(EINTR) || status == -0x54495845 /* AVERROR_EXIT */ {
            if !streaming {
                return OutputError(.unwritable, "\(doing) gave up: no answer in time\(detail)")
            }
            return SocketError("send", .timedOut, address: peerAddress)
        }
        return OutputError(.unwritable, "\(doing) failed: \(libavErrorDescription(status))\(detail)")
    }

    public func close(abort: () -> Bool, pause: (UInt64) -> Void) {
        withoutActuallyEscaping(abort) { abort in
            self.abort = abort
            LibavLogging.keepThreadErrors(true)  // a server already gone: said when sending failed
            defer {
                self.abort = { false }
                LibavLogging.keepThreadErrors(false)
            }
            // Held before the trailer: RTSP's TEARDOWN closes the connection, RTMP's only at `release`.
            var held = streaming ? connection?.hold() : nil
            if let context, streaming {
                if var tracks {
                    _ = tracks.finishSound(into: context, using: packet)
                    self.tracks = tracks
                }
                _ = av_write_trailer(context)  // RTSP: TEARDOWN; FLV and MPEG-TS: nothing that matters live
                if let pb = context.pointee.pb { avio_flush(pb) }
                if server.kind == .srt { waitForSRTDelivery(pause: pause) }
            }
            release()
            held.take()?.lingeringClose(quietNanoseconds: Self.lingerQuietNanoseconds, limitNanoseconds: Self.lingerNanoseconds, abort: abort)
        }
    }

    /// How long a server may take to read the end and close its side, when the sender sets no
    /// earlier deadline (it does at the recording's end: the flush timeout).
    static let lingerNanoseconds: UInt64 = 5_000_000_000
    /// How long a server may say nothing meanwhile: an RTMP server reading acknowledges every window
    /// (ffmpeg's every MiB), and a stopped one must not hold camrec's end for the whole limit.
    static let lingerQuietNanoseconds: UInt64 = 2_000_000_000
}
