import CFFmpeg
import Libav
import Frames

/// Decodes a camera's MJPEG frames with libavcodec's `mjpeg` decoder, each straight into
/// a pool buffer (one conversion pass from the decoded picture, full → limited range).
///
/// One decoder lives for the whole recording; its AVPacket and AVFrame are reused, and
/// the decoder's own picture buffers come from libavcodec's internal pool, so steady
/// state allocates nothing per frame.
///
/// The JPEG bytes are copied once, from the mmap'd V4L2 buffer into a buffer from an
/// AVBufferPool: libavcodec's bitstream readers may read up to
/// `AV_INPUT_BUFFER_PADDING_SIZE` bytes past the end and want them zero, while a V4L2
/// buffer's tail holds stale bytes or ends right at `bytesused`. A reference-counted
/// packet is taken by `avcodec_send_packet` without another copy (a packet without
/// `buf` would be copied into a fresh allocation every frame), and the V4L2 buffer can
/// go back to the camera at once. The copy costs a few tens of microseconds per frame,
/// small next to decoding.
///
/// Single-threaded: one frame in, its picture out, no frame-threading delay.
public final class MJPEGDecoder {
    public let frameSize: FrameSize
    private let session: LibavDecoderSession
    private var context: UnsafeMutablePointer<AVCodecContext> { session.context }
    private var packet: UnsafeMutablePointer<AVPacket> { session.packet }
    private var frame: UnsafeMutablePointer<AVFrame> { session.frame }
    private var packetPool: OpaquePointer?
    private var packetCapacity = 0

    /// Fails only when this libavcodec has no usable MJPEG decoder.
    public init(frameSize: FrameSize) throws(CaptureError) {
        self.frameSize = frameSize
        do {
            // Damage the decoder notices becomes an error rather than a half-grey picture.
            session = try LibavDecoderSession(codec: AV_CODEC_ID_MJPEG)
        } catch {
            switch error {
            case .noDecoder:
                throw CaptureError(.unsupportedFormat, "this FFmpeg has no MJPEG decoder; install Debian's libavcodec59 "
                                   + "or choose an uncompressed format with --pixel-format")
            case .outOfMemory:
                throw CaptureError(.deviceFailed, "out of memory setting up the MJPEG decoder")
            case .refused(let why):
                throw CaptureError(.deviceFailed, "cannot open libavcodec's MJPEG decoder: \(why)")
            }
        }
    }

    deinit {
        if packetPool != nil { av_buffer_pool_uninit(&packetPool) }
    }

    /// Decodes one JPEG (the `bytesused` bytes of a V4L2 buffer) into `buffer`.
    /// On a throw `buffer` holds nothing usable; the decoder is ready for the next frame.
    public func decode(_ jpeg: UnsafeRawBufferPointer, into buffer: PixelBuffer) throws(MJPEGFrameError) {
        precondition(buffer.width == frameSize.width && buffer.height == frameSize.height, "pool size differs from the camera's")
        try Self.checkFraming(jpeg)
        try send(jpeg)
        let status = avcodec_receive_frame(context, frame)
        guard status >= 0 else {
            // EAGAIN: headers without a picture.
            throw .undecodable(status == camrec_AVERROR_EAGAIN ? "no picture in the frame" : libavErrorDescription(status))
        }
        defer { av_frame_unref(frame) }
        let f = frame.pointee
        if f.decode_error_flags != 0 || f.flags & AV_FRAME_FLAG_CORRUPT != 0 { throw .damaged }
        guard Int(f.width) == frameSize.width && Int(f.height) == frameSize.height else {
            throw .wrongSize(width: Int(f.width), height: Int(f.height), expected: frameSize)
        }
        let format = AVPixelFormat(rawValue: f.format)
        guard let (shiftX, shiftY, grey) = Self.sampling(format) else {
            throw .unsupportedPicture(pixelFormat: av_get_pix_fmt_name(format).map { String(cString: $0) } ?? "format \(f.format)")
        }
        let planes = withUnsafeBytes(of: f.data) { raw in
            (0..<(grey ? 1 : 3)).map { UnsafeRawPointer(raw.load(fromByteOffset: $0 * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride,
                                                                   as: UnsafeMutablePointer<UInt8>.self)) }
        }
        let strides = withUnsafeBytes(of: f.linesize) { raw in
            (0..<(grey ? 1 : 3)).map { Int(raw.load(fromByteOffset: $0 * MemoryLayout<Int32>.stride, as: Int32.self)) }
        }
        // JPEG (JFIF) is full range unless the decoder says otherwise.
        let fullRange = f.color_range != AVCOL_RANGE_MPEG
        FrameConverter.convert(FrameConverter.PlanarYCbCrImage(
            width: frameSize.width, height: frameSize.height, planes: planes, strides: strides,
            chromaShiftX: shiftX, chromaShiftY: shiftY, fullRange: fullRange), into: buffer)
    }

    /// A UVC frame cut short by a USB error usually lacks the end-of-image marker; libavcodec
    /// would "emulate" it and return a picture grey from the cut down, so such frames stop here.
    /// Some cameras pad after the marker, so it may lie anywhere in the last kilobyte.
    static func checkFraming(_ jpeg: UnsafeRawBufferPointer) throws(MJPEGFrameError) {
        if jpeg.isEmpty { throw .empty }
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { throw .notJPEG }
        var i = jpeg.count - 2
        let stop = max(2, jpeg.count - 1024)
        while i >= stop {
            if jpeg[i] == 0xFF && jpeg[i + 1] == 0xD9 { return }
            i -= 1
        }
        throw .truncated
    }

    private func send(_ jpeg: UnsafeRawBufferPointer) throws(MJPEGFrameError) {
        let padding = Int(AV_INPUT_BUFFER_PADDING_SIZE)
        if jpeg.count > packetCapacity {
            // Sized to the largest frame so far (in practice: once, at the first frame).
            if packetPool != nil { av_buffer_pool_uninit(&packetPool) }
            packetCapacity = max(jpeg.count, 64 * 1024)
            packetPool = av_buffer_pool_init(packetCapacity + padding, nil)
        }
        guard let buf = av_buffer_pool_get(packetPool), let data = buf.pointee.data else {
            throw .undecodable("out of memory")
        }
        data.update(from: jpeg.baseAddress!.assumingMemoryBound(to: UInt8.self), count: jpeg.count)
        (data + jpeg.count).update(repeating: 0, count: padding)
        packet.pointee.buf = buf
        packet.pointee.data = data
        packet.pointee.size = Int32(jpeg.count)
        let status = avcodec_send_packet(context, packet)
        av_packet_unref(packet)
        if status < 0 && status != camrec_AVERROR_EAGAIN { throw .undecodable(libavErrorDescription(status)) }
    }

    /// Chroma subsampling (log2 across, down) of the 8-bit planar pictures the mjpeg decoder
    /// produces, and whether it is luma only; nil for anything else.
    static func sampling(_ format: AVPixelFormat) -> (Int, Int, Bool)? {
        switch format {
        case AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUV420P: return (1, 1, false)
        case AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUV422P: return (1, 0, false)
        case AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_YUV444P: return (0, 0, false)
        case AV_PIX_FMT_YUVJ440P, AV_PIX_FMT_YUV440P: return (0, 1, false)
        case AV_PIX_FMT_YUVJ411P, AV_PIX_FMT_YUV411P: return (2, 0, false)
        case AV_PIX_FMT_GRAY8: return (0, 0, true)
        default: return nil
        }
    }
}

extension V4L2PixelFormat {
    /// MJPEG, or the older 'JPEG' code some drivers use for the same frames.
    public var isJPEG: Bool { self == .mjpeg || self == .jpeg }

    /// Whether camrec can record this format: convert it (`cameraLayout`) or decode it (JPEG).
    public var isRecordable: Bool { cameraLayout != nil || isJPEG }
}
