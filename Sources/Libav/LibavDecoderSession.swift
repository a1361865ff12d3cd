import CFFmpeg

/// A libavcodec decoder opened once for a whole stream, with the packet and frame every
/// input reuses, so decoding allocates no frame memory of its own per input.
///
/// Single-threaded (one input in, its picture out, no frame-threading delay), and damage
/// the decoder notices surfaces as an error code (`AV_EF_EXPLODE` plus `errorRecognition`).
public final class LibavDecoderSession {
    public let context: UnsafeMutablePointer<AVCodecContext>
    public let packet: UnsafeMutablePointer<AVPacket>
    public let frame: UnsafeMutablePointer<AVFrame>

    public enum OpenError: Error {
        case noDecoder
        case outOfMemory
        /// `avcodec_open2` refused, in libavutil's words.
        case refused(String)
    }

    public init(codec id: AVCodecID, errorRecognition: Int32 = 0) throws(OpenError) {
        guard let codec = avcodec_find_decoder(id) else { throw .noDecoder }
        guard let ctx = avcodec_alloc_context3(codec) else { throw .outOfMemory }
        var unopened: UnsafeMutablePointer<AVCodecContext>? = ctx
        guard let pkt = av_packet_alloc() else {
            avcodec_free_context(&unopened)
            throw .outOfMemory
        }
        guard let frm = av_frame_alloc() else {
            var p: UnsafeMutablePointer<AVPacket>? = pkt
            av_packet_free(&p)
            avcodec_free_context(&unopened)
            throw .outOfMemory
        }
        ctx.pointee.thread_count = 1
        ctx.pointee.err_recognition |= Int32(AV_EF_EXPLODE) | errorRecognition
        let status = avcodec_open2(ctx, codec, nil)
        guard status >= 0 else {
            var p: UnsafeMutablePointer<AVPacket>? = pkt
            av_packet_free(&p)
            var f: UnsafeMutablePointer<AVFrame>? = frm
            av_frame_free(&f)
            avcodec_free_context(&unopened)
            throw .refused(libavErrorDescription(status))
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
}
