import CV4L2
import Glibc
import Frames

/// Formats camrec has no converter of its own for (Bayer, vendor formats of old webcams, …),
/// turned into planar YUV 4:2:0 by libv4lconvert, the conversion library behind libv4l2.
///
/// camrec calls the library directly rather than going through libv4l2's `v4l2_ioctl`
/// wrapper: the wrapper converts inside DQBUF, where camrec could no longer see the buffer's
/// flags and `bytesused`, nor keep its own poll watchdog and error counting. The frame lands
/// in a scratch buffer allocated once, then takes the usual pass into a pool buffer.
final class LibV4LConverter {
    private let library: OpaquePointer
    private var source: v4l2_format
    private var destination: v4l2_format
    private let scratch: UnsafeMutablePointer<UInt8>
    private let scratchSize: Int
    /// libv4lconvert goes through RGB for some formats (HSV, …) and writes that intermediate
    /// into the destination whatever size it is told: room for 4 bytes a pixel.
    private let scratchCapacity: Int
    let width: Int
    let height: Int

    /// nil when libv4lconvert can't start on this descriptor, or can't turn `source` into YUV 4:2:0.
    convenience init?(fd: Int32, source: v4l2_format) {
        guard let library = v4lconvert_create(fd) else { return nil }
        self.init(library: library, source: source)
    }

    /// Takes ownership of `library` (a `v4lconvert_data`), destroying it if the format can't be converted.
    init?(library: OpaquePointer, source: v4l2_format) {
        self.library = library
        self.source = source
        width = Int(source.fmt.pix.width)
        height = Int(source.fmt.pix.height)
        destination = v4l2_format()
        destination.type = source.type
        destination.fmt.pix.width = source.fmt.pix.width
        destination.fmt.pix.height = source.fmt.pix.height
        destination.fmt.pix.pixelformat = V4L2PixelFormat.yuv420.rawValue
        destination.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        destination.fmt.pix.bytesperline = UInt32(width)
        let chroma = ((width + 1) / 2) * ((height + 1) / 2)
        scratchSize = width * height + 2 * chroma
        destination.fmt.pix.sizeimage = UInt32(scratchSize)
        scratchCapacity = max(scratchSize, width * height * 4)
        scratch = .allocate(capacity: scratchCapacity)
        // A blank frame tells whether the library has a path from this format at all.
        let probeSize = max(Int(source.fmt.pix.sizeimage), Int(source.fmt.pix.bytesperline) * height, 1)
        let blank = UnsafeMutableRawPointer.allocate(byteCount: probeSize, alignment: 64)
        memset(blank, 0, probeSize)
        defer { blank.deallocate() }
        // Every property is set, so failing here still runs deinit, which frees them.
        guard convert(UnsafeRawPointer(blank), byteCount: probeSize) != nil else { return nil }
    }

    deinit {
        v4lconvert_destroy(library)
        scratch.deallocate()
    }

    /// The last error libv4lconvert reported, for messages.
    var lastError: String {
        v4lconvert_get_error_message(library).map { String(cString: $0) } ?? "unknown error"
    }

    /// Converts one camera frame; nil when the library rejects it (a corrupt frame).
    /// The image stays valid until the next call.
    func convert(_ frame: UnsafeRawPointer, byteCount: Int) -> FrameConverter.CameraImage? {
        // libv4lconvert reads a whole uncompressed picture (Bayer, for one) whatever size it is told:
        // a truncated frame is refused here, not read past its end (a 100-byte frame for a 64x32
        // Bayer format crashed the test process once in six runs). Compressed formats have no
        // bytes per line and are left to the library.
        let whole = Int(source.fmt.pix.bytesperline) * height
        guard whole == 0 || byteCount >= whole else { return nil }
        let written = v4lconvert_convert(library, &source, &destination,
                                         UnsafeMutablePointer(mutating: frame.assumingMemoryBound(to: UInt8.self)),
                                         Int32(byteCount), scratch, Int32(scratchCapacity))
        guard written >= scratchSize else { return nil }
        let chromaWidth = (width + 1) / 2
        let chromaPlane = chromaWidth * ((height + 1) / 2)
        let base = UnsafeRawPointer(scratch)
        return FrameConverter.CameraImage(layout: .i420, width: width, height: height,
                                          planes: [base, base + width * height, base + width * height + chromaPlane],
                                          strides: [width, chromaWidth, chromaWidth])
    }
}
