import CFFmpeg
import Frames
import Libav

/// Pool buffers (NV12 or I420, limited range) as JPEGs, with libavcodec's mjpeg encoder opened once:
/// `/stream.mjpg` for a raw camera or the test pattern.
///
/// Each frame is copied once into a 4:2:0 full-range picture (JPEG's range; the same stretch
/// `PictureSnapshot` makes) whose memory comes from an AVBufferPool, so the encoder may keep a
/// reference to it and the next frame still takes no new memory. The packet is reused.
/// Not thread-safe: one thread encodes.
public final class JPEGPictureEncoder {
    public let width: Int
    public let height: Int
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let picture: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private var framePool: OpaquePointer?
    private let lumaStride: Int
    private let chromaStride: Int
    private var pts: Int64 = 0
    private static let luma: [UInt8] = (0..<256).map { UInt8(clamping: (($0 - 16) * 255 + 109) / 219) }
    private static let chroma: [UInt8] = (0..<256).map { UInt8(clamping: (($0 - 128) * 255 + (($0 >= 128) ? 112 : -112)) / 224 + 128) }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// - Parameter quality: mjpeg's quantizer, 2 (best) to 31.
    public init(width: Int, height: Int, quality: Int32 = 5) throws(Failure) {
        self.width = width
        self.height = height
        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else { throw Failure(description: "this FFmpeg has no mjpeg encoder") }
        guard let context = avcodec_alloc_context3(codec), let picture = av_frame_alloc(), let packet = av_packet_alloc() else {
            throw Failure(description: "out of memory")
        }
        self.context = context
        self.picture = picture
        self.packet = packet
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUVJ420P
        context.pointee.color_range = AVCOL_RANGE_JPEG
        context.pointee.time_base = AVRational(num: 1, den: 1000)
        context.pointee.thread_count = 1
        context.pointee.flags |= AV_CODEC_FLAG_QSCALE
        context.pointee.global_quality = FF_QP2LAMBDA * max(2, min(31, quality))
        lumaStride = PixelBuffer.paddedStride(width)
        chromaStride = PixelBuffer.paddedStride((width + 1) / 2)
        let chromaBytes = chromaStride * ((height + 1) / 2)
        framePool = av_buffer_pool_init(lumaStride * height + 2 * chromaBytes + 64, nil)
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0, framePool != nil else {
            throw Failure(description: "cannot open the mjpeg encoder: \(libavErrorDescription(opened))")
        }
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var f: UnsafeMutablePointer<AVFrame>? = picture
        av_frame_free(&f)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        if framePool != nil { av_buffer_pool_uninit(&framePool) }
    }

    /// Encodes `buffer` and hands the JPEG to `body` (valid only during the call).
    public func encode(_ buffer: PixelBuffer, _ body: (UnsafeRawBufferPointer) -> Void) throws(Failure) {
        precondition(buffer.width == width && buffer.height == height, "the encoder's size")
        guard let memory = av_buffer_pool_get(framePool), let base = memory.pointee.data else {
            throw Failure(description: "out of memory")
        }
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        let y = base, u = base + lumaStride * height, v = u + chromaStride * chromaHeight
        Self.luma.withUnsafeBufferPointer { lut in
            let source = buffer.planes[0]
            for row in 0..<height {
                let s = source.base + row * source.stride, d = y + row * lumaStride
                for x in 0..<width { d[x] = lut[Int(s[x])] }
            }
        }
        Self.chroma.withUnsafeBufferPointer { lut in
            if buffer.format == .nv12 {
                let source = buffer.planes[1]
                for row in 0..<chromaHeight {
                    let s = source.base + row * source.stride
                    let du = u + row * chromaStride, dv = v + row * chromaStride
                    for x in 0..<chromaWidth {
                        du[x] = lut[Int(s[2 * x])]
                        dv[x] = lut[Int(s[2 * x + 1])]
                    }
                }
            } else {
                func stretch(_ plane: PixelBuffer.Plane, into target: UnsafeMutablePointer<UInt8>) {
                    for row in 0..<chromaHeight {
                        let s = plane.base + row * plane.stride, d = target + row * chromaStride
                        for x in 0..<chromaWidth { d[x] = lut[Int(s[x])] }
                    }
                }
                stretch(buffer.planes[1], into: u)
                stretch(buffer.planes[2], into: v)
            }
        }
        picture.pointee.buf.0 = memory
        picture.pointee.data.0 = y
        picture.pointee.data.1 = u
        picture.pointee.data.2 = v
        picture.pointee.linesize.0 = Int32(lumaStride)
        picture.pointee.linesize.1 = Int32(chromaStride)
        picture.pointee.linesize.2 = Int32(chromaStride)
        picture.pointee.width = Int32(width)
        picture.pointee.height = Int32(height)
        picture.pointee.format = AV_PIX_FMT_YUVJ420P.rawValue
        picture.pointee.color_range = AVCOL_RANGE_JPEG
        picture.pointee.quality = context.pointee.global_quality
        picture.pointee.pict_type = AV_PICTURE_TYPE_I
        picture.pointee.pts = pts
        pts += 1
        // The encoder takes its own reference to the memory; ours goes now (back to the pool once it is done).
        let sent = avcodec_send_frame(context, picture)
        av_frame_unref(picture)
        guard sent >= 0 else { throw Failure(description: "the mjpeg encoder refused the picture: \(libavErrorDescription(sent))") }
        let received = avcodec_receive_packet(context, packet)
        guard received >= 0, let data = packet.pointee.data else {
            throw Failure(description: "the mjpeg encoder gave no picture: \(libavErrorDescription(received))")
        }
        defer { av_packet_unref(packet) }
        body(UnsafeRawBufferPointer(start: data, count: Int(packet.pointee.size)))
    }
}
