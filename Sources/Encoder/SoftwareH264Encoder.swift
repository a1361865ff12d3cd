import CFFmpeg
import Libav
import Frames

/// H.264 in software: libx264 through libavcodec.
///
/// Pool buffers reach libx264 without a copy: each frame wraps the buffer's
/// planes in an AVBuffer whose free callback hands the buffer back, so it returns
/// to the pool exactly when libavcodec lets go of it.
public final class SoftwareH264Encoder: VideoEncoder {
    public let name = "libx264 (software)"
    public let inputFormat = PixelFormat.nv12
    public let maximumBuffersInFlight = 2
    public var onBufferDone: ((PixelBuffer) -> Void)?
    public var onPacket: ((EncodedPacket) -> Void)?

    private let settings: EncoderSettings
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private let frame: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private var packets: PacketDrain

    public init(settings: EncoderSettings) throws {
        self.settings = settings
        packets = PacketDrain(frameRate: settings.frameRateRational, encoderName: "libx264")
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

    /// Whether this libavcodec has libx264 at all.
    public static var isAvailable: Bool { avcodec_find_encoder_by_name("libx264") != nil }

    public func start() throws {
        guard let codec = avcodec_find_encoder_by_name("libx264") else {
            throw EncoderError(.unavailable, "this FFmpeg has no libx264 encoder; install Debian's libavcodec59 (which links libx264)")
        }
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw EncoderError(.unavailable, "out of memory setting up libx264")
        }
        context = ctx
        let rate = settings.frameRateRational
        ctx.pointee.width = Int32(settings.size.width)
        ctx.pointee.height = Int32(settings.size.height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_NV12
        // Timestamps count frames (pts = sequence), so drops show as gaps in time.
        ctx.pointee.time_base = AVRational(num: rate.denominator, den: rate.numerator)
        ctx.pointee.framerate = AVRational(num: rate.numerator, den: rate.denominator)
        ctx.pointee.gop_size = Int32(settings.keyframeInterval)
        ctx.pointee.keyint_min = Int32(settings.keyframeInterval)
        ctx.pointee.max_b_frames = 0
        // tune=zerolatency turns on sliced threads: one slice per thread, so the slice count
        // would follow the machine's cores. One slice per picture (the default) means either
        // one thread or frame threads; several slices means exactly that many sliced threads.
        let slices = settings.slicesPerPicture
        var x264Params = "scenecut=0:aud=0"
        if slices > 1 {
            ctx.pointee.thread_count = Int32(clamping: slices)
            x264Params += ":sliced-threads=1:slices=\(slices)"
        } else {
            ctx.pointee.thread_count = Int32(clamping: settings.softwareThreads)
            x264Params += ":sliced-threads=0:slices=1"
        }
        if let qp = settings.constantQP {
            ctx.pointee.global_quality = 0
            av_opt_set_int(ctx.pointee.priv_data, "qp", Int64(qp), 0)
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
        av_opt_set(priv, "profile", settings.profile.rawValue, 0)
        // A forced keyframe must be an IDR, and x264 must not add IDRs at scene cuts:
        // IDRs come exactly where the recorder asks for them.
        av_opt_set(priv, "forced-idr", "1", 0)
        av_opt_set(priv, "x264-params", x264Params, 0)
        var options: OpaquePointer?
        let status = avcodec_open2(ctx, codec, &options)
        av_dict_free(&options)
        guard status >= 0 else {
            throw EncoderError(.unavailable, "libx264 refused the settings (\(settings.size) @ \(settings.framesPerSecond) fps, "
                + "profile \(settings.profile.rawValue), preset \(settings.preset)): \(libavErrorDescription(status))")
        }
    }

    public func encode(_ buffer: PixelBuffer, forceKeyframe: Bool) throws {
        guard let ctx = context else { preconditionFailure("start() first") }
        frame.pointee.format = AV_PIX_FMT_NV12.rawValue
        frame.pointee.width = Int32(buffer.width)
        frame.pointee.height = Int32(buffer.height)
        frame.pointee.pts = Int64(buffer.sequence)
        frame.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        packets.remember(sequence: buffer.sequence, captureTimeNanoseconds: buffer.captureTimeNanoseconds)
        let planes = buffer.planes
        frame.pointee.data.0 = planes[0].base
        frame.pointee.data.1 = planes[1].base
        frame.pointee.linesize.0 = Int32(planes[0].stride)
        frame.pointee.linesize.1 = Int32(planes[1].stride)
        // The AVBuffer's free callback is the "buffer done" signal.
        let token = Unmanaged.passRetained(BufferReturn(encoder: self, buffer: buffer)).toOpaque()
        guard let ref = av_buffer_create(planes[0].base, buffer.byteCount, { opaque, _ in
            let ret = Unmanaged<BufferReturn>.fromOpaque(opaque!).takeRetainedValue()
            ret.encoder?.onBufferDone?(ret.buffer)
        }, token, 0) else {
            Unmanaged<BufferReturn>.fromOpaque(token).release()
            onBufferDone?(buffer)
            throw EncoderError(.failed, "out of memory wrapping a frame for libx264")
        }
        frame.pointee.buf.0 = ref
        let status = avcodec_send_frame(ctx, frame)
        av_frame_unref(frame)
        guard status >= 0 else {
            throw EncoderError(.failed, "libx264 failed to encode frame \(buffer.sequence): \(libavErrorDescription(status))")
        }
        try drain()
    }

    public func flush() throws {
        guard let ctx = context else { return }
        let status = avcodec_send_frame(ctx, nil)
        if status < 0 && status != camrec_AVERROR_EOF {
            throw EncoderError(.failed, "libx264 failed to flush: \(libavErrorDescription(status))")
        }
        try drain()
    }

    private func drain() throws {
        guard let ctx = context else { return }
        try packets.drain(ctx, packet, onPacket: onPacket)
    }
}

/// Carries a pool buffer through libavcodec's free callback back to its encoder.
final class BufferReturn {
    weak var encoder: SoftwareH264Encoder?
    let buffer: PixelBuffer

    init(encoder: SoftwareH264Encoder, buffer: PixelBuffer) {
        self.encoder = encoder
        self.buffer = buffer
    }
}
