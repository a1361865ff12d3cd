import CFFmpeg

/// A picture of an H.264 or H.265 stream as a JPEG: `/snapshot.jpg` and event thumbnails.
///
/// Decodes the access units from an IDR to the newest frame with libavcodec's decoder and encodes
/// the last picture with its mjpeg encoder, shrunk first when asked. Runs only when asked; nothing
/// is kept open between requests.
public enum PictureSnapshot {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// - Parameter accessUnits: Annex-B access units, the first an IDR, in decoding order.
    /// - Parameter hevc: the stream is H.265 (else H.264).
    /// - Parameter quality: mjpeg's quantizer, 2 (best) to 31.
    /// - Parameter maximumWidth: a wider picture is shrunk by a whole factor (each pixel the mean of a block) to at most this.
    public static func jpeg(accessUnits: [[UInt8]], hevc: Bool = false, quality: Int32 = 3, maximumWidth: Int? = nil) throws -> [UInt8] {
        let decoder: LibavDecoderSession
        do {
            decoder = try LibavDecoderSession(codec: hevc ? AV_CODEC_ID_HEVC : AV_CODEC_ID_H264)
        } catch {
            throw Failure("cannot open libavcodec's \(hevc ? "H.265" : "H.264") decoder: \(error)")
        }
        guard let picture = av_frame_alloc() else { throw Failure("out of memory") }
        var pictureToFree: UnsafeMutablePointer<AVFrame>? = picture
        defer { av_frame_free(&pictureToFree) }
        var decoded = false
        func receive() {
            while avcodec_receive_frame(decoder.context, decoder.frame) >= 0 {
                av_frame_unref(picture)
                av_frame_move_ref(picture, decoder.frame)
                decoded = true
            }
        }
        for unit in accessUnits {
            guard let size = Int32(exactly: unit.count) else { continue }
            var bytes = unit
            _ = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
                decoder.packet.pointee.data = buffer.baseAddress
                decoder.packet.pointee.size = size
                defer {
                    decoder.packet.pointee.data = nil
                    decoder.packet.pointee.size = 0
                }
                return avcodec_send_packet(decoder.context, decoder.packet)
            }
            receive()
        }
        _ = avcodec_send_packet(decoder.context, nil)
        receive()
        guard decoded else { throw Failure("the decoder gave no picture") }
        if let maximumWidth, maximumWidth >= 16, Int(picture.pointee.width) > maximumWidth,
           let small = try shrunk(picture, by: (Int(picture.pointee.width) + maximumWidth - 1) / maximumWidth) {
            var smallToFree: UnsafeMutablePointer<AVFrame>? = small
            defer { av_frame_free(&smallToFree) }
            return try encodeJPEG(small, quality: quality)
        }
        return try encodeJPEG(picture, quality: quality)
    }

    /// A new picture `factor` times smaller each way (even sizes), each sample the mean of its block;
    /// nil for a format other than planar 4:2:0, 4:2:2 or 4:4:4 (encodeJPEG refuses those anyway).
    private static func shrunk(_ picture: UnsafeMutablePointer<AVFrame>, by factor: Int) throws -> UnsafeMutablePointer<AVFrame>? {
        let format = AVPixelFormat(rawValue: picture.pointee.format)
        let (shiftX, shiftY): (Int, Int)
        switch format {
        case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P: (shiftX, shiftY) = (1, 1)
        case AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P: (shiftX, shiftY) = (1, 0)
        case AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUVJ444P: (shiftX, shiftY) = (0, 0)
        default: return nil
        }
        let width = (Int(picture.pointee.width) / factor) & ~1, height = (Int(picture.pointee.height) / factor) & ~1
        guard width >= 2, height >= 2, let small = av_frame_alloc() else { throw Failure("out of memory") }
        small.pointee.format = picture.pointee.format
        small.pointee.width = Int32(width)
        small.pointee.height = Int32(height)
        small.pointee.color_range = picture.pointee.color_range
        var toFree: UnsafeMutablePointer<AVFrame>? = small
        guard av_frame_get_buffer(small, 0) >= 0 else {
            av_frame_free(&toFree)
            throw Failure("out of memory")
        }
        let area = factor * factor
        for index in 0..<3 {
            let (w, h) = index == 0 ? (width, height) : (width >> shiftX, height >> shiftY)
            guard let source = plane(picture, index), let target = plane(small, index) else { continue }
            for row in 0..<h {
                let line = target.base + row * target.stride
                for column in 0..<w {
                    var sum = 0
                    for y in 0..<factor {
                        let from = source.base + (row * factor + y) * source.stride + column * factor
                        for x in 0..<factor { sum += Int(from[x]) }
                    }
                    line[column] = UInt8(truncatingIfNeeded: (sum + area / 2) / area)
                }
            }
        }
        return small
    }

    private static func plane(_ frame: UnsafeMutablePointer<AVFrame>, _ index: Int) -> (base: UnsafeMutablePointer<UInt8>, stride: Int)? {
        let base: UnsafeMutablePointer<UInt8>? = switch index {
        case 0: frame.pointee.data.0
        case 1: frame.pointee.data.1
        default: frame.pointee.data.2
        }
        let stride = switch index {
        case 0: frame.pointee.linesize.0
        case 1: frame.pointee.linesize.1
        default: frame.pointee.linesize.2
        }
        return base.map { ($0, Int(stride)) }
    }

    /// JPEG wants full-range samples (`yuvj`): a limited-range picture is stretched first.
    static func encodeJPEG(_ picture: UnsafeMutablePointer<AVFrame>, quality: Int32) throws -> [UInt8] {
        let format = AVPixelFormat(rawValue: picture.pointee.format)
        let target: AVPixelFormat
        switch format {
        case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P: target = AV_PIX_FMT_YUVJ420P
        case AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P: target = AV_PIX_FMT_YUVJ422P
        case AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUVJ444P: target = AV_PIX_FMT_YUVJ444P
        default:
            throw Failure("pictures in \(av_get_pix_fmt_name(format).map { String(cString: $0) } ?? "format \(format.rawValue)") cannot be made into a JPEG")
        }
        let limited = picture.pointee.color_range != AVCOL_RANGE_JPEG
            && format != AV_PIX_FMT_YUVJ420P && format != AV_PIX_FMT_YUVJ422P && format != AV_PIX_FMT_YUVJ444P
        if limited {
            guard av_frame_make_writable(picture) >= 0 else { throw Failure("out of memory") }
            stretchToFullRange(picture, format: target)
        }
        picture.pointee.format = target.rawValue
        picture.pointee.color_range = AVCOL_RANGE_JPEG

        guard let codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG) else { throw Failure("this FFmpeg has no mjpeg encoder") }
        guard let context = avcodec_alloc_context3(codec) else { throw Failure("out of memory") }
        var contextToFree: UnsafeMutablePointer<AVCodecContext>? = context
        defer { avcodec_free_context(&contextToFree) }
        context.pointee.width = picture.pointee.width
        context.pointee.height = picture.pointee.height
        context.pointee.pix_fmt = target
        context.pointee.color_range = AVCOL_RANGE_JPEG
        context.pointee.time_base = AVRational(num: 1, den: 25)
        context.pointee.flags |= AV_CODEC_FLAG_QSCALE
        context.pointee.global_quality = FF_QP2LAMBDA * max(2, min(31, quality))
        let opened = avcodec_open2(context, codec, nil)
        guard opened >= 0 else { throw Failure("cannot open the mjpeg encoder: \(libavErrorDescription(opened))") }
        picture.pointee.quality = context.pointee.global_quality
        picture.pointee.pts = 0
        picture.pointee.pict_type = AV_PICTURE_TYPE_I
        let sent = avcodec_send_frame(context, picture)
        guard sent >= 0 else { throw Failure("the mjpeg encoder refused the picture: \(libavErrorDescription(sent))") }
        _ = avcodec_send_frame(context, nil)
        guard let packet = av_packet_alloc() else { throw Failure("out of memory") }
        var packetToFree: UnsafeMutablePointer<AVPacket>? = packet
        defer { av_packet_free(&packetToFree) }
        let received = avcodec_receive_packet(context, packet)
        guard received >= 0, let data = packet.pointee.data else {
            throw Failure("the mjpeg encoder gave no picture: \(libavErrorDescription(received))")
        }
        return Array(UnsafeBufferPointer(start: data, count: Int(packet.pointee.size)))
    }

    /// Limited range (luma 16–235, chroma 16–240) to full range (0–255), in place.
    private static func stretchToFullRange(_ picture: UnsafeMutablePointer<AVFrame>, format: AVPixelFormat) {
        let width = Int(picture.pointee.width), height = Int(picture.pointee.height)
        let (chromaWidth, chromaHeight): (Int, Int) = switch format {
        case AV_PIX_FMT_YUVJ420P: ((width + 1) / 2, (height + 1) / 2)
        case AV_PIX_FMT_YUVJ422P: ((width + 1) / 2, height)
        default: (width, height)
        }
        let luma = (0..<256).map { UInt8(clamping: (($0 - 16) * 255 + 109) / 219) }
        let chroma = (0..<256).map { UInt8(clamping: (($0 - 128) * 255 + (($0 >= 128) ? 112 : -112)) / 224 + 128) }
        withUnsafeMutablePointer(to: &picture.pointee.data) { planes in
            planes.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 3) { plane in
                withUnsafePointer(to: &picture.pointee.linesize) { strides in
                    strides.withMemoryRebound(to: Int32.self, capacity: 3) { stride in
                        for index in 0..<3 {
                            guard let base = plane[index] else { continue }
                            let table = index == 0 ? luma : chroma
                            let (w, h) = index == 0 ? (width, height) : (chromaWidth, chromaHeight)
                            for row in 0..<h {
                                let line = base + row * Int(stride[index])
                                for column in 0..<w { line[column] = table[Int(line[column])] }
                            }
                        }
                    }
                }
            }
        }
    }
}
