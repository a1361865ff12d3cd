import CX264
import Frames
import SystemSupport
import Synchronization

/// H.264 in software through libx264 itself, not through libavcodec, so a recording that needs
/// no container, decoder or VA-API loads none of libavcodec's ~130 libraries (issue 26: memory).
///
/// Asks x264 for what `SoftwareEncoder` asks it through libavcodec's wrapper, parameter for
/// parameter, so both make the same bytes (`X264EncoderTests` compares them): IDRs exactly where
/// the recorder asks, no B-frames, one slice per picture unless told more, no added latency.
/// x264 copies each picture into frames of its own inside `x264_encoder_encode`, so a pool
/// buffer goes back as soon as that call returns.
public final class X264Encoder: VideoEncoder {
    public let name = "libx264 (software)"
    public let inputFormat: PixelFormat
    public let maximumBuffersInFlight = 1
    public var onBufferDone: ((PixelBuffer) -> Void)?
    public var onPacket: ((EncodedPacket) -> Void)?

    private let settings: EncoderSettings
    private var encoder: OpaquePointer?
    private var picture = x264_picture_t()
    private var captureTimes = CaptureTimeRing()
    /// x264's log lines go through camrec's C callback; one state per encoder.
    private let log = UnsafeMutablePointer<camrec_x264_log>.allocate(capacity: 1)

    /// libx264 is linked into camrec, so it is always there.
    public static let isAvailable = true

    public init(settings: EncoderSettings) {
        precondition(settings.codec == .h264, "X264Encoder encodes H.264 only")
        self.settings = settings
        inputFormat = settings.planarInput ? .i420 : .nv12
        log.initialize(to: camrec_x264_log())
    }

    deinit {
        if let encoder { x264_encoder_close(encoder) }
        log.deallocate()
    }

    /// How loudly x264 logs: errors only, or its info lines too (CPU flags, the closing stats).
    public static var verbose: Bool {
        get { verboseLogging.load(ordering: .relaxed) }
        set { verboseLogging.store(newValue, ordering: .relaxed) }
    }
    private static let verboseLogging = Atomic(false)

    public func start() throws {
        log.pointee.last_error.0 = 0
        var parameters = try makeParameters()
        guard let opened = camrec_x264_encoder_open(&parameters) else {
            throw EncoderError(.unavailable, "libx264 refused the settings (\(settings.size) @ \(settings.framesPerSecond) fps, "
                + "profile \(settings.profile.rawValue), preset \(settings.preset))" + lastError.map { ": \($0)" }.orEmpty)
        }
        encoder = opened
    }

    private var lastError: String? {
        let text = String(cArray: log.pointee.last_error)
        return text.isEmpty ? nil : text
    }

    /// What libavcodec 5.1's libx264 wrapper sets from the context `SoftwareEncoder` fills, in
    /// its order: the preset with tune=zerolatency, rate control, GOP, profile, picture and
    /// timing, threads, then the x264-params string.
    private func makeParameters() throws -> x264_param_t {
        var parameters = x264_param_t()
        // x264_param_default_preset starts from x264_param_default: the log callback goes on after it.
        guard x264_param_default_preset(&parameters, settings.preset, "zerolatency") == 0 else {
            throw EncoderError(.unavailable, "libx264 has no preset \"\(settings.preset)\"")
        }
        log.pointee.level = Self.verbose ? X264_LOG_INFO : X264_LOG_ERROR
        camrec_x264_log_attach(&parameters, log)
        parameters.i_csp = inputFormat == .nv12 ? X264_CSP_NV12 : X264_CSP_I420
        parameters.i_bitdepth = 8
        if let qp = settings.constantQP {
            parameters.rc.i_rc_method = X264_RC_CQP
            parameters.rc.i_qp_constant = Int32(clamping: qp)
        } else {
            // One second of VBV, x264's own initial occupancy (0.9), which libavcodec 5.1 leaves alone.
            let bitrate = Int64(settings.effectiveBitrate)
            let bufferSize = Int64(Int32(clamping: bitrate))
            parameters.rc.i_bitrate = Int32(clamping: bitrate / 1000)
            parameters.rc.i_rc_method = X264_RC_ABR
            parameters.rc.i_vbv_buffer_size = Int32(clamping: bufferSize / 1000)
            parameters.rc.i_vbv_max_bitrate = Int32(clamping: bitrate / 1000)
        }
        parameters.i_keyint_max = Int32(clamping: settings.keyframeInterval)
        parameters.i_keyint_min = Int32(clamping: settings.keyframeInterval)
        parameters.i_bframe = 0
        guard x264_param_apply_profile(&parameters, settings.profile.rawValue) == 0 else {
            // With camrec's settings only lossless coding (constant QP 0) is beyond every profile it offers.
            let profile = settings.profile.rawValue
            throw EncoderError(.unavailable, settings.constantQP == 0
                ? "libx264 cannot make profile \(profile) with constant QP 0: that is lossless, which needs High 4:4:4; use --qp 1 or more"
                : "libx264 refused profile \(profile) with these settings (\(settings.size) @ \(settings.framesPerSecond) fps, preset \(settings.preset))")
        }
        let rate = settings.frameRateRational
        parameters.i_width = Int32(clamping: settings.size.width)
        parameters.i_height = Int32(clamping: settings.size.height)
        parameters.i_fps_num = UInt32(rate.numerator)
        parameters.i_fps_den = UInt32(rate.denominator)
        // Timestamps count frames (pts = sequence), so drops show as gaps in time.
        parameters.i_timebase_num = UInt32(rate.denominator)
        parameters.i_timebase_den = UInt32(rate.numerator)
        let slices = settings.slicesPerPicture
        parameters.i_threads = Int32(clamping: slices > 1 ? slices : settings.softwareThreads)
        parameters.b_open_gop = 1
        parameters.i_slice_count = 0
        parameters.vui.b_fullrange = 0
        // tune=zerolatency turns on sliced threads: one slice per thread, so the slice count
        // would follow the machine's cores. One slice per picture (the default) means one thread
        // or frame threads; several slices means exactly that many sliced threads.
        var options = [("scenecut", "0"), ("aud", "0")]
        options += slices > 1 ? [("sliced-threads", "1"), ("slices", "\(slices)")] : [("sliced-threads", "0"), ("slices", "1")]
        for (name, value) in options where x264_param_parse(&parameters, name, value) != 0 {
            throw EncoderError(.unavailable, "libx264 refused \(name)=\(value)")
        }
        return parameters
    }

    public func encode(_ buffer: PixelBuffer, forceKeyframe: Bool) throws {
        guard let encoder else { preconditionFailure("start() first") }
        x264_picture_init(&picture)
        picture.img.i_csp = inputFormat == .nv12 ? X264_CSP_NV12 : X264_CSP_I420
        let planes = buffer.planes
        picture.img.i_plane = Int32(planes.count)
        withUnsafeMutableBytes(of: &picture.img.plane) { slots in
            let pointers = slots.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
            for (index, plane) in planes.prefix(4).enumerated() { pointers[index] = plane.base }
        }
        withUnsafeMutableBytes(of: &picture.img.i_stride) { slots in
            let strides = slots.bindMemory(to: Int32.self)
            for (index, plane) in planes.prefix(4).enumerated() { strides[index] = Int32(plane.stride) }
        }
        picture.i_pts = Int64(buffer.sequence)
        // A forced keyframe must be an IDR: IDRs come exactly where the recorder asks for them.
        picture.i_type = forceKeyframe ? X264_TYPE_IDR : X264_TYPE_AUTO
        captureTimes.remember(sequence: buffer.sequence, captureTimeNanoseconds: buffer.captureTimeNanoseconds,
                              presentationTimeNanoseconds: buffer.presentationTimeNanoseconds)
        let status = encodeAndDeliver(encoder, &picture)
        // x264 has copied the picture: the pool buffer is free again.
        onBufferDone?(buffer)
        guard status >= 0 else {
            throw EncoderError(.failed, "libx264 failed to encode frame \(buffer.sequence)" + lastError.map { ": \($0)" }.orEmpty)
        }
    }

    /// Hands x264's output for one call on as one access unit: its NAL units lie one after
    /// another in memory, start codes included.
    private func encodeAndDeliver(_ encoder: OpaquePointer, _ input: UnsafeMutablePointer<x264_picture_t>?) -> Int32 {
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        var output = x264_picture_t()
        let size = x264_encoder_encode(encoder, &nals, &count, input, &output)
        guard size > 0, let nals, count > 0 else { return size }
        let sequence = UInt64(max(0, output.i_pts))
        let pts = captureTimes.presentationTime(of: sequence, orAt: settings.frameRateRational)
        onPacket?(EncodedPacket(data: UnsafeRawBufferPointer(start: nals[0].p_payload, count: Int(size)),
                                isKeyframe: output.b_keyframe != 0, sequence: sequence, presentationTimeNanoseconds: pts,
                                captureTimeNanoseconds: captureTimes.captureTime(of: sequence)))
        return size
    }

    public func flush() throws {
        guard let encoder else { return }
        while x264_encoder_delayed_frames(encoder) > 0 {
            guard encodeAndDeliver(encoder, nil) >= 0 else {
                throw EncoderError(.failed, "libx264 failed to flush" + lastError.map { ": \($0)" }.orEmpty)
            }
        }
    }

    /// Drains the frames x264's frame threads hold, then opens a new encoder, whose first frame
    /// is an IDR with its parameter sets (as libavcodec, which cannot reopen a flushed one).
    public func finishPending() throws {
        guard let encoder else { return }
        try flush()
        x264_encoder_close(encoder)
        self.encoder = nil
        try start()
    }
}

private extension Optional where Wrapped == String {
    var orEmpty: String { self ?? "" }
}
