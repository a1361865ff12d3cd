import CFFmpeg

/// Decodes H.264 access units with libavcodec's own decoder, to check what arrives.
///
/// Errors are made to surface as return codes (`AV_EF_EXPLODE`), and frames the decoder
/// marks corrupt are counted too. Single-threaded: one access unit in, its picture out,
/// no frame-threading delay.
public final class H264Decoder {
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let frame: UnsafeMutablePointer<AVFrame>
    public private(set) var framesDecoded = 0
    public private(set) var width = 0
    public private(set) var height = 0

    public struct Result {
        /// Pictures that came out.
        public var frames = 0
        /// What went wrong, if anything (libavcodec's words).
        public var error: String?
    }

    public init() throws(DecoderError) {
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_H264) else {
            throw DecoderError("this FFmpeg has no H.264 decoder")
        }
        guard let ctx = avcodec_alloc_context3(codec), let pkt = av_packet_alloc(), let frm = av_frame_alloc() else {
            throw DecoderError("out of memory setting up the H.264 decoder")
        }
        ctx.pointee.thread_count = 1
        ctx.pointee.err_recognition |= Int32(AV_EF_EXPLODE | AV_EF_BITSTREAM | AV_EF_BUFFER)
        let status = avcodec_open2(ctx, codec, nil)
        guard status >= 0 else {
            var c: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&c)
            throw DecoderError("cannot open the H.264 decoder: \(Self.describe(status))")
        }
        context = ctx
        packet = pkt
        frame = frm
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
    }

    /// Decodes one access unit (Annex B).
    public func decode(_ accessUnit: [UInt8]) -> Result {
        var result = Result()
        var bytes = accessUnit
        let status: Int32 = bytes.withUnsafeMutableBufferPointer { buffer in
            // Not reference counted: send_packet copies it (with the padding it needs).
            packet.pointee.data = buffer.baseAddress
            packet.pointee.size = Int32(buffer.count)
            defer {
                packet.pointee.data = nil
                packet.pointee.size = 0
            }
            return avcodec_send_packet(context, packet)
        }
        if status < 0 && status != camrec_AVERROR_EAGAIN {
            result.error = Self.describe(status)
        }
        receive(into: &result)
        return result
    }

    /// Drains pictures the decoder still holds (end of stream).
    public func flush() -> Result {
        var result = Result()
        _ = avcodec_send_packet(context, nil)
        receive(into: &result)
        avcodec_flush_buffers(context)
        return result
    }

    private func receive(into result: inout Result) {
        while true {
            let status = avcodec_receive_frame(context, frame)
            if status == camrec_AVERROR_EAGAIN || status == camrec_AVERROR_EOF { return }
            if status < 0 {
                result.error = result.error ?? Self.describe(status)
                return
            }
            result.frames += 1
            framesDecoded += 1
            width = Int(frame.pointee.width)
            height = Int(frame.pointee.height)
            if frame.pointee.decode_error_flags != 0 || frame.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0 {
                result.error = result.error ?? "the decoder marked the picture corrupt (missing references or damaged slices)"
            }
            av_frame_unref(frame)
        }
    }

    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        camrec_av_error_string(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Quiets libavcodec's own log lines (the receiver reports errors itself), or not.
    public static func setLibraryLogging(verbose: Bool) {
        camrec_av_set_log_level(verbose ? AV_LOG_INFO : AV_LOG_QUIET)
    }
}

public struct DecoderError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
