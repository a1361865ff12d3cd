import CJPEG
import Frames
import Libav

/// Decodes a camera's MJPEG frames with libjpeg-turbo (Debian's libjpeg62-turbo, opened on first use),
/// each straight into a pool buffer. libjpeg decodes the planes as they are coded (raw data: no
/// upsampling, no colour conversion), one strip of 8 or 16 rows at a time into the decoder's own
/// strip, and each strip goes into the pool buffer in one pass (full → limited range, chroma to 4:2:0)
/// while it is still in cache: no whole decoded picture is ever held.
///
/// The JPEG is copied once, first, from the mmap'd V4L2 buffer into a buffer the decoder keeps (grown
/// only for a larger frame): v4l2loopback's writer does not wait for a reader to give a buffer back, so
/// a frame decoded in place for tens of milliseconds (the test VM's emulated CPU) was sometimes written
/// over mid-decode, which libjpeg rightly calls damaged (vm-mjpeg's numbered camera: errored=8 of 68
/// frames dequeued decoding in place, 0 of 60 with the copy); and a mapping may be uncached memory on
/// some platforms, slow to read bit by bit. The copy costs microseconds. camrec allocates nothing per
/// frame: the copy, the strip and its description are made at the first frame, and libjpeg's
/// per-picture working memory comes from an arena the C side keeps (Sources/CJPEG/LazyJPEG.c).
///
/// There is no fallback to libavcodec's decoder: libyuv0, which camrec links, depends on
/// libjpeg62-turbo, so wherever camrec starts, the library is there (already mapped, so opening it
/// costs nothing). The one line naming the package stays for a libyuv built without it.
///
/// Single-threaded: one frame in, its picture out.
public final class MJPEGDecoder {
    public let frameSize: FrameSize
    private let decoder: OpaquePointer
    /// What the C side says about the picture being decoded (its own memory, kept: no exclusivity
    /// checks or copies per strip).
    private let picture: UnsafeMutablePointer<camrec_jpeg_picture>
    /// The strip as the conversion reads it; made again only when libjpeg's layout changes.
    private var strip: FrameConverter.PlanarYCbCrImage?
    /// The frame's bytes, copied out of the camera's buffer before anything reads them.
    private var copy = UnsafeMutableRawBufferPointer(start: nil, count: 0)

    /// Fails only when libjpeg cannot be opened (`.libraryMissing`, the line names the package).
    public init(frameSize: FrameSize) throws(CaptureError) {
        self.frameSize = frameSize
        var made: OpaquePointer?
        let reason = LazyLibrary.loadFailure { error, size in
            made = camrec_jpeg_decoder_create(error, size)
            return made != nil
        }
        guard let made else { throw CaptureError(.libraryMissing, reason ?? "cannot open libjpeg") }
        decoder = made
        picture = .allocate(capacity: 1)
        picture.initialize(to: camrec_jpeg_picture())
    }

    deinit {
        camrec_jpeg_decoder_destroy(decoder)
        picture.deallocate()
        copy.deallocate()
    }

    /// Decodes one JPEG (the `bytesused` bytes of a V4L2 buffer) into `buffer`, and returns the copy it
    /// decoded (valid until the next call): what a reader of the camera's own JPEGs takes, never the
    /// camera's buffer, which v4l2loopback may have written over while this decoded.
    /// On a throw `buffer` holds nothing usable; the decoder is ready for the next frame.
    @discardableResult
    public func decode(_ jpeg: UnsafeRawBufferPointer, into buffer: PixelBuffer) throws(MJPEGFrameError) -> UnsafeRawBufferPointer {
        precondition(buffer.width == frameSize.width && buffer.height == frameSize.height, "pool size differs from the camera's")
        if jpeg.count > copy.count {
            copy.deallocate()
            copy = .allocate(byteCount: max(jpeg.count, 256 * 1024), alignment: 64)
        }
        if !jpeg.isEmpty { copy.baseAddress!.copyMemory(from: jpeg.baseAddress!, byteCount: jpeg.count) }
        let jpeg = UnsafeRawBufferPointer(rebasing: copy[..<jpeg.count])
        try Self.checkFraming(jpeg)
        try check(camrec_jpeg_read_header(decoder, jpeg.baseAddress, jpeg.count, picture))
        let p = picture.pointee
        guard Int(p.width) == frameSize.width && Int(p.height) == frameSize.height else {
            camrec_jpeg_abort(decoder)
            throw .wrongSize(width: Int(p.width), height: Int(p.height), expected: frameSize)
        }
        try check(camrec_jpeg_start(decoder, picture))
        var image = stripImage()
        var row = 0
        while true {
            let rows = Int(camrec_jpeg_read_strip(decoder))
            if rows == 0 { break }
            if rows < 0 { try check(Int32(rows)) }
            image.height = rows
            FrameConverter.convert(image, into: buffer, atRow: row)
            row += rows
        }
        try check(camrec_jpeg_finish(decoder))
        return jpeg
    }

    /// A status of the C side as the frame's error.
    private func check(_ status: Int32) throws(MJPEGFrameError) {
        guard Int(status) != CAMREC_JPEG_OK else { return }
        let message = String(cString: camrec_jpeg_message(decoder))
        switch Int(status) {
        case CAMREC_JPEG_DAMAGED: throw .damaged
        case CAMREC_JPEG_UNSUPPORTED: throw .unsupportedPicture(message)
        default: throw .undecodable(message)
        }
    }

    /// The strip libjpeg decodes into, as the conversion reads it: the same as the last frame's unless
    /// the layout changed (the first frame; a JPEG sampled differently, or larger).
    private func stripImage() -> FrameConverter.PlanarYCbCrImage {
        let p = picture.pointee
        let count = p.components == 1 ? 1 : 3
        func plane(_ i: Int) -> UnsafeRawPointer {
            UnsafeRawPointer(i == 0 ? p.planes.0! : i == 1 ? p.planes.1! : p.planes.2!)
        }
        func stride(_ i: Int) -> Int { i == 0 ? p.strides.0 : i == 1 ? p.strides.1 : p.strides.2 }
        if let strip, strip.planes.count == count, strip.chromaShiftX == Int(p.chroma_shift_x),
           strip.chromaShiftY == Int(p.chroma_shift_y), strip.fullRange == (p.full_range != 0),
           (0..<count).allSatisfy({ strip.planes[$0] == plane($0) && strip.strides[$0] == stride($0) }) {
            return strip
        }
        let made = FrameConverter.PlanarYCbCrImage(
            width: frameSize.width, height: Int(p.strip_rows), planes: (0..<count).map(plane),
            strides: (0..<count).map(stride), chromaShiftX: Int(p.chroma_shift_x), chromaShiftY: Int(p.chroma_shift_y),
            fullRange: p.full_range != 0)
        strip = made
        return made
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
}

extension V4L2PixelFormat {
    /// MJPEG, or the older 'JPEG' code some drivers use for the same frames.
    public var isJPEG: Bool { self == .mjpeg || self == .jpeg }

    /// Whether camrec can record this format: convert it (`cameraLayout`) or decode it (JPEG).
    public var isRecordable: Bool { cameraLayout != nil || isJPEG }
}
