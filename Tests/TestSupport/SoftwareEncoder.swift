import Bitstream
import CFFmpeg
import Encoder
import Frames
import Libav

/// H.264 or H.265 in software: libx264 or libx265 through libavcodec, each told to make IDRs
/// exactly where the recorder asks, no B-frames, one slice per picture and no added latency.
/// Recordings call both libraries directly (`X264Encoder`, `X265Encoder`); this is the reference
/// `X264EncoderTests` and `X265EncoderTests` compare them with, byte for byte, so it lives with the
/// tests (TestSupport), not in camrec.
///
/// Pool buffers reach the encoder without a copy: each frame wraps the buffer's
/// planes in an AVBuffer whose free callback hands the buffer back, so it returns
/// to the pool exactly when libavcodec lets go of it. libx264 takes NV12; libx265 takes no
/// NV12, so its pool holds planar I420.
public final class SoftwareEncoder: VideoEncoder {
    public let name: String
    public let inputFormat: PixelFormat
    /// libavcodec 5.1's libx264 and libx265 wrappers give the picture to the library inside
    /// `avcodec_send_frame`, and both copy it there: the buffer is back before `encode` returns.
    public let maximumBuffersInFlight = 1
    public var onBufferDone: ((PixelBuffer) -> Void)?
    public var onPacket: ((EncodedPacket) -> Void)?

    private let settings: EncoderSettings
    /// "libx264" or "libx265".
    private let library: String
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private var packets: PacketDrain

    public init(settings: EncoderSettings) throws {
        self.settings = settings
        library = Self.library(for: settings.codec)
        name = "\(library) (software)"
        inputFormat = settings.codec == .h264 && !settings.planarInput ? .nv12 : .i420
        packets = PacketDrain(frameRate: settings.frameRateRational, encoderName: library)
        guard let frame = av_frame_alloc(), let packet = av_packet_alloc() else {
            throw EncoderError(.unavailable, "out of memory setting up the encoder")
        }
        self.frame = frame
        self.packet = packet
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        if context != nil { avcodec_free_context(&context) }
    }

    static func library(for codec: VideoCodec) -> String { codec == .h264 ? "libx264" : "libx265" }

    /// Whether this libavcodec has libx264 (or libx265) at all.
    public static func isAvailable(_ codec: VideoCodec = .h264) -> Bool { avcodec_find_encoder_by_name(library(for: codec)) != nil }
    public static var isAvailable: Bool { isAvailable(.h264) }

    public func start() throws {
        guard let codec = avcodec_find_encoder_by_name(library) else {
            throw EncoderError(.unavailable, "this FFmpeg has no \(library) encoder; install Debian's libavcodec59 (which links libx264 and libx265)")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw EncoderError(.unavailable, "out of memory setting up \(library)")
        }
        context = ctx
        let rate = settings.frameRateRational
        ctx.pointee.width = Int32(settings.size.width)
        ctx.pointee.height = Int32(settings.size.height)
        ctx.pointee.pix_fmt = inputFormat == .nv12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P
        // Timestamps count frames (pts = sequence), so drops show as gaps in time.
        ctx.pointee.time_base = AVRational(num: rate.denominator, den: rate.numerator)
        ctx.pointee.framerate = AVRational(num: rate.numerator, den: rate.denominator)
        ctx.pointee.gop_size = Int32(settings.keyframeInterval)
        ctx.pointee.keyint_min = Int32(settings.keyframeInterval)
        ctx.pointee.max_b_frames = 0
        if settings.constantQP != nil {
            ctx.pointee.global_quality = 0
        } else {
            let bitrate = Int64(settings.effectiveBitrate)
            ctx.pointee.bit_rate = bitrate
            ctx.pointee.rc_max_rate = bitrate
            // One second of VBV: steady enough for streaming, loose enough for motion.
            ctx.pointee.rc_buffer_size = Int32(clamping: bitrate)
        }
        let priv = ctx.pointee.priv_data
        av_opt_set(priv, "preset", settings.preset, 0)
        av_opt_set(priv, "tune", "zerolatency", 0)
        // A forced keyframe must be an IDR, and the encoder must not add IDRs at scene cuts:
        // IDRs come exactly where the recorder asks for them.
        av_opt_set(priv, "forced-idr", "1", 0)
        if settings.codec == .h264 {
            configureX264(ctx, priv)
        } else {
            configureX265(ctx, priv)
        }
        var options: OpaquePointer?
        let status = avcodec_open2(ctx, codec, &options)
        av_dict_free(&options)
        guard status >= 0 else {
            throw EncoderError(.unavailable, "\(library) refused the settings (\(settings.size) @ \(settings.framesPerSecond) fps, "
                + (settings.codec == .h264 ? "profile \(settings.profile.rawValue), " : "") + "preset \(settings.preset)): \(libavErrorDescription(status))")
        }
    }

    /// tune=zerolatency turns on sliced threads: one slice per thread, so the slice count would
    /// follow the machine's cores. One slice per picture (the default) means either one thread or
    /// frame threads; several slices means exactly that many sliced threads.
    private func configureX264(_ ctx: UnsafeMutablePointer<AVCodecContext>, _ priv: UnsafeMutableRawPointer?) {
        let slices = settings.slicesPerPicture
        var params = "scenecut=0:aud=0"
        if slices > 1 {
            ctx.pointee.thread_count = Int32(clamping: slices)
            params += ":sliced-threads=1:slices=\(slices)"
        } else {
            ctx.pointee.thread_count = Int32(clamping: settings.softwareThreads)
            params += ":sliced-threads=0:slices=1"
        }
        if let qp = settings.constantQP { av_opt_set_int(priv, "qp", Int64(qp), 0) }
        av_opt_set(priv, "profile", settings.profile.rawValue, 0)
        av_opt_set(priv, "x264-params", params, 0)
    }

    /// libx265 makes a CRA with leading pictures at its keyframes unless told a closed GOP, and
    /// writes its version SEI and a log line per run unless told not to. Its frame threads (one
    /// frame of delay each) follow `softwareThreads`; wavefront threads cost no delay.
    private func configureX265(_ ctx: UnsafeMutablePointer<AVCodecContext>, _ priv: UnsafeMutableRawPointer?) {
        let params = X265Encoder.x265Options(settings).map { "\($0.name)=\($0.value)" }.joined(separator: ":")
        av_opt_set(priv, "x265-params", params, 0)
    }

    public func encode(_ buffer: PixelBuffer, forceKeyframe: Bool) throws {
        guard let ctx = context else { preconditionFailure("start() first") }
        frame.pointee.format = (inputFormat == .nv12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P).rawValue
        frame.pointee.width = Int32(buffer.width)
        frame.pointee.height = Int32(buffer.height)
        frame.pointee.pts = Int64(buffer.sequence)
        frame.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        packets.remember(sequence: buffer.sequence, captureTimeNanoseconds: buffer.captureTimeNanoseconds,
                         presentationTimeNanoseconds: buffer.presentationTimeNanoseconds)
        let planes = buffer.planes
        frame.pointee.data.0 = planes[0].base
        frame.pointee.data.1 = planes[1].base
        frame.pointee.linesize.0 = Int32(planes[0].stride)
        frame.pointee.linesize.1 = Int32(planes[1].stride)
        if planes.count > 2 {
            frame.pointee.data.2 = planes[2].base
            frame.pointee.linesize.2 = Int32(planes[2].stride)
        }
        // The AVBuffer's free callback is the "buffer done" signal.
        let token = Unmanaged.passRetained(BufferReturn(encoder: self, buffer: buffer)).toOpaque()
        guard let ref = av_buffer_create(planes[0].base, buffer.byteCount, { opaque, _ in
            let ret = Unmanaged<BufferReturn>.fromOpaque(opaque!).takeRetainedValue()
            ret.encoder?.onBufferDone?(ret.buffer)
        }, token, 0) else {
            Unmanaged<BufferReturn>.fromOpaque(token).release()
            onBufferDone?(buffer)
            throw EncoderError(.failed, "out of memory wrapping a frame for \(library)")
        }
        frame.pointee.buf.0 = ref
        let status = avcodec_send_frame(ctx, frame)
        av_frame_unref(frame)
        guard status >= 0 else {
            throw EncoderError(.failed, "\(library) failed to encode frame \(buffer.sequence): \(libavErrorDescription(status))")
        }
        try drain()
    }

    public func flush() throws {
        guard let ctx = context else { return }
        let status = avcodec_send_frame(ctx, nil)
        if status < 0 && status != camrec_AVERROR_EOF {
            throw EncoderError(.failed, "\(library) failed to flush: \(libavErrorDescription(status))")
        }
        try drain()
    }

    /// libx264's and libx265's frame threads hold frames back: drain them all, then start a new
    /// context (libavcodec cannot reopen a flushed encoder), whose first frame is an IDR.
    public func finishPending() throws {
        guard context != nil else { return }
        try flush()
        avcodec_free_context(&context)
        try start()
    }

    private func drain() throws {
        guard let ctx = context else { return }
        try packets.drain(ctx, packet, onPacket: onPacket)
    }
}

/// Carries a pool buffer through libavcodec's free callback back to its encoder.
final class BufferReturn {
    weak var encoder: SoftwareEncoder?
    let buffer: PixelBuffer

    init(encoder: SoftwareEncoder, buffer: PixelBuffer) {
        self.encoder = encoder
        self.buffer = buffer
    }
}
