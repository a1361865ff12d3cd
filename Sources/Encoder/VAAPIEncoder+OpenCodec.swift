import CFFmpeg
import Glibc

/// Opening an h264_vaapi or hevc_vaapi context with camrec's settings: the private options, the
/// profile and the rate control the driver offers.
extension VAAPIEncoder {
    /// A QP for about `bitrate` when the driver has only constant QP: QP 26 at 0.1 bit per pixel, and
    /// 6 more for each halving (H.264's and H.265's step size doubles every 6 QP). Rough, as the picture decides.
    static func constantQP(forBitrate bitrate: Int, width: Int, height: Int, framesPerSecond: Double) -> Int {
        let bitsPerPixel = Double(bitrate) / (Double(max(1, width * height)) * max(1, framesPerSecond))
        let qp = 26 - 6 * log2(max(bitsPerPixel, 1e-6) / 0.1)
        return min(45, max(18, Int(qp.rounded())))
    }

    /// An h264_vaapi or hevc_vaapi context with camrec's settings, open.
    func openCodec(_ codec: UnsafePointer<AVCodec>, frames: UnsafeMutablePointer<AVBufferRef>,
                           profile: VAAPICapabilities.Profile) throws -> UnsafeMutablePointer<AVCodecContext> {
        let caps = device.capabilities
        guard let ctx = avcodec_alloc_context3(codec) else {
            throw EncoderError(.unavailable, "out of memory setting up \(codecName)")
        }
        var opened = false
        defer {
            if !opened {
                var unopened: UnsafeMutablePointer<AVCodecContext>? = ctx
                avcodec_free_context(&unopened)
            }
        }
        let rate = settings.frameRateRational
        ctx.pointee.width = Int32(settings.size.width)
        ctx.pointee.height = Int32(settings.size.height)
        ctx.pointee.pix_fmt = AV_PIX_FMT_VAAPI
        ctx.pointee.sw_pix_fmt = AV_PIX_FMT_NV12
        ctx.pointee.time_base = AVRational(num: rate.denominator, den: rate.numerator)
        ctx.pointee.framerate = AVRational(num: rate.numerator, den: rate.denominator)
        ctx.pointee.gop_size = Int32(settings.keyframeInterval)
        ctx.pointee.max_b_frames = 0
        // The encoder cuts a picture into this many slices (0 would also mean one; say it).
        ctx.pointee.slices = Int32(clamping: settings.slicesPerPicture)
        ctx.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        ctx.pointee.hw_frames_ctx = av_buffer_ref(frames)
        ctx.pointee.hw_device_ctx = av_buffer_ref(device.deviceRef)
        let priv = ctx.pointee.priv_data
        try option(priv, "async_depth", 1)
        try option(priv, "low_power", usesLowPower ? 1 : 0)
        // FFmpeg's default is identifier, timing (HRD) and recovery-point SEI; the bare stream wants none.
        if !settings.encoderSEI { try option(priv, "sei", 0) }
        let profileOption = switch profile.camrecProfile {
        case .baseline: "constrained_baseline"
        case .main, nil: "main"  // nil: H.265 Main
        case .high: "high"
        }
        try option(priv, "profile", profileOption)

        let modes = device.rateControlModes(profile: profile.vaProfile, lowPower: usesLowPower)
        if let qp = settings.constantQP {
            guard modes & camrec_VA_RC_CQP != 0 else {
                throw EncoderError(.unavailable, "the VA driver (\(caps.vendor)) has no constant-QP mode; use --bitrate")
            }
            try option(priv, "rc_mode", "CQP")
            try option(priv, "qp", Int64(qp))
            rateControl = "CQP \(qp)"
        } else {
            let bitrate = Int64(settings.effectiveBitrate)
            ctx.pointee.bit_rate = bitrate
            ctx.pointee.rc_max_rate = bitrate
            // One second of HRD buffer, as for libx264.
            ctx.pointee.rc_buffer_size = Int32(clamping: bitrate)
            if modes & camrec_VA_RC_CBR != 0 {
                try option(priv, "rc_mode", "CBR")
                rateControl = "CBR \(bitrate) bit/s"
            } else if modes & camrec_VA_RC_VBR != 0 {
                try option(priv, "rc_mode", "VBR")
                rateControl = "VBR \(bitrate) bit/s"
            } else if modes & camrec_VA_RC_CQP != 0 {
                // Constant QP only (Intel's low-power encoder without HuC firmware): a QP for about that rate.
                let qp = Self.constantQP(forBitrate: Int(bitrate), width: settings.size.width, height: settings.size.height,
                                         framesPerSecond: settings.framesPerSecond)
                try option(priv, "rc_mode", "CQP")
                try option(priv, "qp", Int64(qp))
                rateControl = "CQP \(qp) (for about \(bitrate) bit/s)"
                let hint = usesLowPower
                    ? "; for bit-rate control, Intel's low-power encoder needs its HuC firmware (i915.enable_guc=2) "
                        + "or the intel-media-va-driver-non-free package"
                    : ""
                rateControlNote = "the VA driver (\(caps.vendor)) has no bit-rate control: constant QP \(qp) instead, "
                    + "chosen for about \(bitrate) bit/s (--qp sets it)\(hint)"
            } else {
                throw EncoderError(.unavailable, "the VA driver (\(caps.vendor)) has no rate control camrec can use "
                    + "(no CBR, VBR or constant QP)")
            }
        }
        var options: OpaquePointer?
        let status = avcodec_open2(ctx, codec, &options)
        av_dict_free(&options)
        guard status >= 0 else {
            throw unavailable("\(codecName) refused the settings (\(describeSettings(profile)))", status)
        }
        opened = true
        return ctx
    }

    /// Sets a private option of the encoder; an FFmpeg without it can't do what camrec needs.
    private func option(_ priv: UnsafeMutableRawPointer?, _ name: String, _ value: String) throws {
        let status = av_opt_set(priv, name, value, 0)
        guard status >= 0 else { throw unavailable("\(codecName) refused option \(name)=\(value)", status) }
    }

    private func option(_ priv: UnsafeMutableRawPointer?, _ name: String, _ value: Int64) throws {
        let status = av_opt_set_int(priv, name, value, 0)
        guard status >= 0 else { throw unavailable("\(codecName) refused option \(name)=\(value)", status) }
    }
}
