import Encoder
import CFFmpeg
import Libav

/// The recording's sound encoder: AAC-LC through libavcodec's own encoder (`aac`, 1024 samples a
/// frame) or Opus through libopus (960 samples a frame at 48 kHz), one frame at a time.
///
/// Reuses one frame and one packet; libavcodec copies the samples, so nothing is allocated per frame.
/// libopus takes interleaved samples: they are written into planes first (the sources' shape), then
/// interleaved into the frame.
public final class SoundEncoder {
    /// One encoded packet, valid only inside the `emit` call.
    public struct Packet {
        public let bytes: UnsafeRawBufferPointer
        /// The packet's first sample, counted like the input's: the first packets start before 0 (the
        /// encoder's priming, `track.primingSamples`).
        public let firstSample: Int64
        public let sampleCount: Int64
    }

    public let codec: SoundCodec
    public let format: AudioFormat
    public let bitrate: Int
    /// Samples in every frame but the last.
    public let frameSize: Int
    public let track: AudioTrackFormat
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var nextSample: Int64 = 0
    /// Planes the sources write for an interleaving encoder (Opus); nil for AAC, whose frame is planar.
    private let planes: UnsafeMutableBufferPointer<Float>?
    private var sampleFormat: AVSampleFormat { codec == .aac ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_FLT }

    /// `opusFrameMilliseconds`: libopus's frame length (2.5, 5, 10, 20 (its default), 40 or 60 ms); shorter
    /// frames leave sooner after their last sample is captured.
    public init(codec: SoundCodec = .aac, format: AudioFormat, bitrate: Int, opusFrameMilliseconds: Double? = nil) throws {
        self.codec = codec
        self.format = format
        self.bitrate = bitrate
        let name = codec.displayName
        guard let encoder = avcodec_find_encoder_by_name(codec.encoderName) else {
            throw EncoderError(.unavailable, "this libavcodec has no \(name) encoder (\(codec.encoderName)); install Debian's \(codec.package)")
        }
        var context = avcodec_alloc_context3(encoder)
        guard let made = context else { throw EncoderError(.unavailable, "out of memory opening the \(name) encoder") }
        made.pointee.sample_fmt = codec == .aac ? AV_SAMPLE_FMT_FLTP : AV_SAMPLE_FMT_FLT
        made.pointee.sample_rate = Int32(format.sampleRate)
        av_channel_layout_default(&made.pointee.ch_layout, Int32(format.channels))
        made.pointee.bit_rate = Int64(bitrate)
        made.pointee.time_base = AVRational(num: 1, den: Int32(format.sampleRate))
        if codec == .aac { made.pointee.profile = FF_PROFILE_AAC_LOW }
        // The AudioSpecificConfig (AAC) or OpusHead out of band: MP4 and Matroska describe the track with it.
        made.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        if codec == .opus, let opusFrameMilliseconds {
            _ = av_opt_set(made.pointee.priv_data, "frame_duration", "\(opusFrameMilliseconds)", 0)
        }
        let status = avcodec_open2(made, encoder, nil)
        guard status >= 0 else {
            avcodec_free_context(&context)
            throw EncoderError(.unavailable, "the \(name) encoder refused \(format) at \(bitrate) bit/s: \(libavErrorDescription(status))")
        }
        frameSize = Int(made.pointee.frame_size)
        do {
            track = try AudioTrackFormat(context: made, format: format, codec: codec)
        } catch {
            avcodec_free_context(&context)
            throw error
        }
        self.context = made
        planes = codec == .aac ? nil : .allocate(capacity: frameSize * format.channels)
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard let frame, packet != nil else { throw EncoderError(.unavailable, "out of memory opening the \(name) encoder") }
        frame.pointee.nb_samples = Int32(frameSize)
        frame.pointee.format = sampleFormat.rawValue
        frame.pointee.sample_rate = Int32(format.sampleRate)
        guard av_channel_layout_copy(&frame.pointee.ch_layout, &made.pointee.ch_layout) >= 0,
              av_frame_get_buffer(frame, 0) >= 0 else {
            throw EncoderError(.unavailable, "out of memory for the \(name) encoder's frame")
        }
    }

    deinit {
        planes?.deallocate()
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&context)
    }

    /// Encodes `sampleCount` samples (`frameSize`, or fewer for the last frame), which `fill` writes
    /// into each channel's plane; hands every packet that is ready to `emit`.
    public func encode(sampleCount: Int, fill: (_ channel: Int, _ plane: UnsafeMutableBufferPointer<Float>) -> Void,
                       emit: (Packet) throws -> Void) throws {
        guard let context, let frame else { return }
        precondition(sampleCount > 0 && sampleCount <= frameSize, "1...frameSize samples a frame")
        guard av_frame_make_writable(frame) >= 0 else { throw EncoderError(.failed, "out of memory encoding \(codec.displayName)") }
        frame.pointee.nb_samples = Int32(sampleCount)
        if let planes {
            let channels = format.channels
            for channel in 0..<channels {
                fill(channel, UnsafeMutableBufferPointer(rebasing: planes[(channel * frameSize)..<(channel * frameSize + sampleCount)]))
            }
            let interleaved = UnsafeMutableRawPointer(frame.pointee.data.0!).assumingMemoryBound(to: Float.self)
            for i in 0..<sampleCount {
                for channel in 0..<channels { interleaved[i * channels + channel] = planes[channel * frameSize + i] }
            }
        } else {
            for channel in 0..<format.channels {
                let plane = UnsafeMutableRawPointer(frame.pointee.extended_data[channel]!).assumingMemoryBound(to: Float.self)
                fill(channel, UnsafeMutableBufferPointer(start: plane, count: sampleCount))
            }
        }
        frame.pointee.pts = nextSample
        nextSample += Int64(sampleCount)
        let status = avcodec_send_frame(context, frame)
        guard status >= 0 else { throw EncoderError(.failed, "the \(codec.displayName) encoder failed: \(libavErrorDescription(status))") }
        try drain(emit)
    }

    /// Puts out what the encoder still holds; nothing can be encoded after it.
    public func flush(emit: (Packet) throws -> Void) throws {
        guard let context else { return }
        let status = avcodec_send_frame(context, nil)
        guard status >= 0 || status == camrec_AVERROR_EOF else {
            throw EncoderError(.failed, "finishing the \(codec.displayName) encoder failed: \(libavErrorDescription(status))")
        }
        try drain(emit)
    }

    private func drain(_ emit: (Packet) throws -> Void) throws {
        guard let context, let packet else { return }
        while true {
            let status = avcodec_receive_packet(context, packet)
            if status == camrec_AVERROR_EAGAIN || status == camrec_AVERROR_EOF { return }
            guard status >= 0 else { throw EncoderError(.failed, "the \(codec.displayName) encoder failed: \(libavErrorDescription(status))") }
            defer { av_packet_unref(packet) }
            try emit(Packet(bytes: UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size)),
                            firstSample: packet.pointee.pts, sampleCount: packet.pointee.duration))
        }
    }
}
