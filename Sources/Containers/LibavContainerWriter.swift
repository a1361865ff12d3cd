import Audio
import Hub
import Bitstream
import CFFmpeg
import Libav
import Outputs

/// One recording file (H.264 or H.265) in MP4, QuickTime, Matroska or MPEG-TS, written by libavformat through the
/// file's own sink (so the temporary name, fsync, the move into place and disk-full handling stay
/// `FileSink`'s). An MP4 file without sound is `FragmentedMP4Writer`'s instead (`ContainerWriters`).
///
/// The output is written as a stream, never seeked: MP4 and QuickTime are fragmented (an empty
/// `moov`, then a `moof`+`mdat` fragment at every IDR and at least every second), Matroska is
/// written cluster by cluster. libavformat holds a fragment or cluster until it is whole, so what is
/// on disk always ends on one: after SIGKILL or a power cut the `.partial` plays up to the last one.
///
/// The parameter sets go into the sample entry (`avcC` or `hvcC` / CodecPrivate, from the file's
/// first IDR) and stay in-band before every IDR as the stream contract wants (they never change in
/// a recording, so the in-band copies are the sample entry's). H.265 in MP4 is tagged `hvc1`. Timestamps are the frames' presentation
/// times (their capture times), so dropped frames are gaps in time; a time that does not move
/// forward is moved to just after the previous one and counted. With `audio`, the recording's sound
/// is a second track, interleaved with the picture by libavformat, from the file's first picture on
/// (`AudioTrack`).
public final class LibavContainerWriter: ContainerWriter {
    public let format: ContainerFormat
    public let codec: VideoCodec
    public var clampedTimestamps: Int { tracks?.clampedTimestamps ?? 0 }

    private let sink: ByteSink
    private let frameIntervalNanoseconds: UInt64
    /// MP4 only: a fragment for every access unit, written as soon as it is given (live viewing).
    private let fragmentEveryFrame: Bool
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var io: UnsafeMutablePointer<AVIOContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The video, and the sound beside it; described at the header.
    private var tracks: MuxedTracks?
    /// The recording's sound, when it has one (`audio`).
    private let audio: AudioTrackFormat?
    /// Audio packets not written (before the first picture, after the last, or overlapping).
    public var droppedAudioPackets: Int { tracks?.droppedAudioPackets ?? 0 }
    /// The header is written and the trailer not yet.
    private var started = false
    /// The sink's error from inside libavformat's write callback, rethrown to the caller.
    private var writeError: Error?

    /// libavformat's name for each container.
    static func muxerName(_ format: ContainerFormat) -> String? {
        switch format {
        case .raw: nil
        case .mp4: "mp4"
        case .mov: "mov"
        case .mkv: "matroska"
        case .ts: "mpegts"
        }
    }

    /// - Parameter framesPerSecond: the source's rate, for the last frame's duration.
    /// - Parameter fragmentEveryFrame: MP4 only: one `moof`+`mdat` per access unit, handed to the
    ///   sink (with a boundary) as soon as the frame is written, not when the next one comes.
    /// - Parameter audio: a sound track beside the video (the recording's `--audio`), interleaved with it.
    public init(format: ContainerFormat, codec: VideoCodec = .h264, sink: ByteSink, framesPerSecond: Double,
                fragmentEveryFrame: Bool = false, audio: AudioTrackFormat? = nil) throws {
        guard let name = Self.muxerName(format) else { preconditionFailure("raw Annex-B needs no container writer") }
        self.audio = audio
        self.format = format
        self.codec = codec
        self.fragmentEveryFrame = fragmentEveryFrame && format == .mp4
        self.sink = sink
        let fps = framesPerSecond.isFinite && framesPerSecond > 0 ? framesPerSecond : 30
        frameIntervalNanoseconds = UInt64((1e9 / fps).rounded())
        var made: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_alloc_output_context2(&made, nil, name, nil) >= 0, let made else {
            throw OutputError(.unwritable, "this FFmpeg cannot write \(format.rawValue) (no \(name) muxer)")
        }
        context = made
        let bufferSize: Int32 = 1 << 16
        // Matroska fills in its duration, index (Cues) and SeekHead at the end when it can seek
        // back, so a finished .mkv is seekable; everything else is written strictly forward.
        let seeks = format == .mkv && sink is SeekableByteSink
        let seek: (@convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64)? = seeks ? { opaque, offset, whence in
            Unmanaged<LibavContainerWriter>.fromOpaque(opaque!).takeUnretainedValue().seekOut(offset, whence)
        } : nil
        guard let buffer = av_malloc(Int(bufferSize)),
              let io = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), bufferSize, 1,
                                          Unmanaged.passUnretained(self).toOpaque(), nil, { opaque, bytes, count in
                  let writer = Unmanaged<LibavContainerWriter>.fromOpaque(opaque!).takeUnretainedValue()
                  return writer.writeOut(bytes, count)
              }, seek) else {
            throw OutputError(.unwritable, "out of memory setting up the \(format.rawValue) writer")
        }
        self.io = io
        made.pointee.pb = io
        made.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        packet = av_packet_alloc()
    }

    deinit {
        tracks?.discard()
        var p = packet
        av_packet_free(&p)
        if let context {
            avformat_free_context(context)
        }
        if let io {
            var buffer: UnsafeMutablePointer<UInt8>? = io.pointee.buffer
            av_freep(&buffer)
            var i: UnsafeMutablePointer<AVIOContext>? = io
            avio_context_free(&i)
        }
    }

    private func writeOut(_ bytes: UnsafeMutablePointer<UInt8>?, _ count: Int32) -> Int32 {
        guard let bytes, count > 0 else { return 0 }
        if writeError != nil { return camrec_averror(EIO) }
        do {
            try sink.write(UnsafeRawBufferPointer(start: bytes, count: Int(count)))
            return count
        } catch {
            writeError = error
            return camrec_averror(EIO)
        }
    }

    private func seekOut(_ offset: Int64, _ whence: Int32) -> Int64 {
        guard let sink = sink as? SeekableByteSink, writeError == nil else { return Int64(camrec_averror(EIO)) }
        if whence & AVSEEK_SIZE != 0 { return Int64(sink.size) }
        let target: Int64
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: target = offset
        case SEEK_END: target = Int64(sink.size) &+ offset
        default: return Int64(camrec_averror(EINVAL))
        }
        guard let to = Int(exactly: target) else { return Int64(camrec_averror(EINVAL)) }
        do {
            return Int64(try sink.seek(to: to))
        } catch {
            writeError = error
            return Int64(camrec_averror(EIO))
        }
    }

    private func failure(_ what: String, _ status: Int32) -> Error {
        if let writeError { return writeError }
        return OutputError(.unwritable, "\(what): \(libavErrorDescription(status))")
    }

    public func write(_ chunk: StreamChunk) throws {
        guard let context, let packet else { return }
        if tracks == nil { try start(with: chunk) }
        guard started, var tracks else { return }
        let status = tracks.write(chunk, into: context, using: packet)
        self.tracks = tracks
        guard status >= 0 else { throw failure("writing a frame into \(sink.label) failed", status) }
        // Live: sound goes out in the next picture's fragment.
        if fragmentEveryFrame && chunk.kind == .audio { return }
        if fragmentEveryFrame {
            // With frag_custom a null packet closes the fragment now.
            let flushed = av_write_frame(context, nil)
            guard flushed >= 0 else { throw failure("writing a fragment into \(sink.label) failed", flushed) }
        }
        avio_flush(context.pointee.pb)
        if let writeError { throw writeError }
        sink.commitBoundary()
    }

    public func beginsBeforeVideoEnd(_ chunk: StreamChunk) -> Bool { tracks?.beginsBeforeVideoEnd(chunk) ?? false }

    public var soundReachesVideoEnd: Bool { tracks?.soundReachesVideoEnd ?? true }
    public func takeSoundPastVideoEnd() -> [StreamChunk] { tracks?.takeSoundPastVideoEnd() ?? [] }

    /// Describes the stream from the file's first access unit (an IDR with its parameter sets) and writes
    /// the container's header.
    private func start(with chunk: StreamChunk) throws {
        guard let context, chunk.kind == .video else { return }
        let track = try VideoTrack(in: context, codec: codec, firstAccessUnit: chunk.bytes, what: "the \(format.rawValue) file \(sink.label)")
        if format == .mp4 || format == .mov { track.tagForMP4() }
        let audioTrack = try audio.map { try AudioTrack(in: context, format: $0, what: "the \(format.rawValue) file \(sink.label)") }
        tracks = MuxedTracks(video: track, audio: audioTrack, frameIntervalNanoseconds: frameIntervalNanoseconds, writesDurations: true,
                             interleaved: !fragmentEveryFrame)

        var options: OpaquePointer?
        defer { av_dict_free(&options) }
        if fragmentEveryFrame {
            av_dict_set(&options, "movflags", "+frag_custom+empty_moov+default_base_moof", 0)
        } else if format == .mp4 || format == .mov {
            // Fragments: at every IDR (frag_keyframe) and at least every second, after an empty moov.
            av_dict_set(&options, "movflags", "+frag_keyframe+empty_moov+default_base_moof", 0)
            av_dict_set(&options, "frag_duration", "1000000", 0)
        } else if format == .mkv {
            // A cluster at every IDR and at least every second, as MP4's fragments.
            av_dict_set(&options, "cluster_time_limit", "1000", 0)
        }
        let status = avformat_write_header(context, &options)
        guard status >= 0 else { throw failure("starting the \(format.rawValue) file \(sink.label) failed", status) }
        started = true
        avio_flush(context.pointee.pb)
        if let writeError { throw writeError }
        sink.commitBoundary()
    }

    public func finish() throws {
        guard let context, started else { return }
        // The sound up to the picture's end, the last packet shortened to end with it; none after.
        if var tracks, let packet {
            let written = tracks.finishSound(into: context, using: packet)
            self.tracks = tracks
            guard written >= 0 else {
                started = false
                throw failure("writing the sound into \(sink.label) failed", written)
            }
        }
        let status = av_write_trailer(context)
        avio_flush(context.pointee.pb)
        started = false
        guard status >= 0 else { throw failure("finishing the \(format.rawValue) file \(sink.label) failed", status) }
        if let writeError { throw writeError }
        sink.commitBoundary()
    }
}
