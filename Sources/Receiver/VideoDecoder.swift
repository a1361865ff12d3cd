import Bitstream
import CFFmpeg
import Libav

/// Decodes H.264 (or H.265) access units with libavcodec's own decoder, to check what arrives.
///
/// Errors are made to surface as return codes (`AV_EF_EXPLODE`), and frames the decoder
/// marks corrupt are counted too. Single-threaded: one access unit in, its picture out,
/// no frame-threading delay.
public final class VideoDecoder {
    private let session: LibavDecoderSession
    private var context: UnsafeMutablePointer<AVCodecContext> { session.context }
    private var packet: UnsafeMutablePointer<AVPacket> { session.packet }
    private var frame: UnsafeMutablePointer<AVFrame> { session.frame }
    public private(set) var framesDecoded = 0
    public private(set) var width = 0
    public private(set) var height = 0

    public struct Result {
        /// Pictures that came out.
        public var frames = 0
        /// What went wrong, if anything (libavcodec's words).
        public var error: String?
    }

    public let codec: VideoCodec

    public init(codec: VideoCodec = .h264) throws(DecoderError) {
        self.codec = codec
        do {
            session = try LibavDecoderSession(codec: codec == .h264 ? AV_CODEC_ID_H264 : AV_CODEC_ID_HEVC,
                                              errorRecognition: Int32(AV_EF_BITSTREAM | AV_EF_BUFFER))
        } catch {
            switch error {
            case .noDecoder: throw DecoderError("this FFmpeg has no \(codec.displayName) decoder")
            case .outOfMemory: throw DecoderError("out of memory setting up the \(codec.displayName) decoder")
            case .refused(let why): throw DecoderError("cannot open the \(codec.displayName) decoder: \(why)")
            }
        }
    }

    /// Decodes one access unit (Annex B).
    public func decode(_ accessUnit: [UInt8]) -> Result {
        var result = Result()
        guard let size = Int32(exactly: accessUnit.count) else {
            result.error = "an access unit of \(accessUnit.count) bytes is more than libavcodec takes"
            return result
        }
        var bytes = accessUnit
        let status: Int32 = bytes.withUnsafeMutableBufferPointer { buffer in
            // Not reference counted: send_packet copies it (with the padding it needs).
            packet.pointee.data = buffer.baseAddress
            packet.pointee.size = size
            defer {
                packet.pointee.data = nil
                packet.pointee.size = 0
            }
            return avcodec_send_packet(context, packet)
        }
        if status < 0 && status != camrec_AVERROR_EAGAIN {
            result.error = libavErrorDescription(status)
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
                result.error = result.error ?? libavErrorDescription(status)
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

    /// Quiets libavcodec's own log lines (the receiver reports errors itself), or not.
    public static func setLibraryLogging(verbose: Bool) {
        camrec_av_set_log_level(verbose ? AV_LOG_INFO : AV_LOG_QUIET)
    }
}

public struct DecoderError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
