@testable import Capture
import Frames
import CV4L2
import Glibc
import XCTest

/// Formats only libv4lconvert converts: the chooser's last resort, and the real library at work.
final class LibV4LConversionTests: XCTestCase {
    private let bayer = V4L2PixelFormat(fourcc: "BA81")!

    /// The real libv4lconvert, on a pretend device: it asks the device's capabilities when it
    /// starts, and only the conversion is under test here (the VM runs it on vivid).
    private func converter(_ format: v4l2_format) -> LibV4LConverter? {
        var ops = libv4l_dev_ops()
        ops.ioctl = { _, _, request, arg in
            guard request == UInt(CAMREC_VIDIOC_QUERYCAP), let arg else {
                errno = EINVAL
                return -1
            }
            let caps = arg.assumingMemoryBound(to: v4l2_capability.self)
            caps.pointee.capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING)
            caps.pointee.device_caps = caps.pointee.capabilities
            return 0
        }
        guard let library = v4lconvert_create_with_dev_ops(-1, nil, &ops) else { return nil }
        return LibV4LConverter(library: library, source: format)
    }

    private func offer(_ format: V4L2PixelFormat, _ w: Int, _ h: Int) -> V4L2FormatOffer {
        V4L2FormatOffer(pixelFormat: format, sizes: .discrete([
            V4L2SizeOffer(size: FrameSize(width: w, height: h), intervals: .discrete([V4L2Fraction(framesPerSecond: 30)])),
        ]))
    }

    func testLibraryFormatsAreTakenOnlyWhenNothingElseIsOfferedOrWhenAskedFor() throws {
        let bayerOnly = [offer(bayer, 1280, 720)]
        XCTAssertEqual(try V4L2FormatChooser.choose(from: bayerOnly, request: .init(), libraryConverted: [bayer]).pixelFormat, bayer)
        XCTAssertThrowsError(try V4L2FormatChooser.choose(from: bayerOnly, request: .init()), "without libv4lconvert's help")

        let both = [offer(bayer, 1280, 720), offer(.grey, 1280, 720)]
        XCTAssertEqual(try V4L2FormatChooser.choose(from: both, request: .init(), libraryConverted: [bayer]).pixelFormat, .grey)
        XCTAssertEqual(try V4L2FormatChooser.choose(from: both, request: .init(pixelFormat: bayer),
                                                    libraryConverted: [bayer]).pixelFormat, bayer)
    }

    func testAFormatNobodyConvertsIsRefusedWithWhatIsOffered() {
        let hsv = V4L2PixelFormat(fourcc: "NV24")!
        XCTAssertThrowsError(try V4L2FormatChooser.choose(from: [offer(hsv, 640, 480), offer(.yuyv, 640, 480)],
                                                          request: .init(pixelFormat: hsv), device: "/dev/video0")) {
            XCTAssertEqual(($0 as? CaptureError)?.message,
                           "camrec cannot convert NV24 from /dev/video0, not even with libv4lconvert; use one of: YUYV")
        }
    }

    /// A flat colour in a BGGR mosaic comes out of the real library as that colour in YUV.
    func testRealLibV4LConvertDemosaicsBayerIntoPlanarYUV() throws {
        let (w, h) = (64, 32)
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.width = UInt32(w)
        format.fmt.pix.height = UInt32(h)
        format.fmt.pix.pixelformat = bayer.rawValue
        format.fmt.pix.bytesperline = UInt32(w)
        format.fmt.pix.sizeimage = UInt32(w * h)
        let converter = try XCTUnwrap(converter(format))
        // BGGR: even rows B G B G…, odd rows G R G R…; pure red is R=200, G=B=0.
        var mosaic = [UInt8](repeating: 0, count: w * h)
        for y in stride(from: 1, to: h, by: 2) { for x in stride(from: 1, to: w, by: 2) { mosaic[y * w + x] = 200 } }
        let image = try XCTUnwrap(mosaic.withUnsafeBytes { converter.convert($0.baseAddress!, byteCount: $0.count) })
        XCTAssertEqual(image.layout, .i420)
        let centre = (y: h / 2, x: w / 2)
        let luma = image.planes[0].load(fromByteOffset: centre.y * image.strides[0] + centre.x, as: UInt8.self)
        let v = image.planes[2].load(fromByteOffset: centre.y / 2 * image.strides[2] + centre.x / 2, as: UInt8.self)
        // BT.601 limited range: red 200 → Y ≈ 16 + 0.257·200 ≈ 67, V ≈ 128 + 0.439·200 ≈ 216.
        XCTAssertEqual(Int(luma), 67, accuracy: 6)
        XCTAssertEqual(Int(v), 216, accuracy: 8)
    }

    func testAFormatTheLibraryCannotConvertGivesNoConverter() {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.width = 64
        format.fmt.pix.height = 32
        format.fmt.pix.pixelformat = V4L2PixelFormat(fourcc: "NV24")!.rawValue
        format.fmt.pix.bytesperline = 64
        format.fmt.pix.sizeimage = 64 * 3 * 32
        XCTAssertNil(converter(format), "and nothing freed twice on the way out")
    }

    func testAFrameTheLibraryRejectsIsNil() throws {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.width = 64
        format.fmt.pix.height = 32
        format.fmt.pix.pixelformat = bayer.rawValue
        format.fmt.pix.bytesperline = 64
        format.fmt.pix.sizeimage = 64 * 32
        let converter = try XCTUnwrap(converter(format))
        let short = [UInt8](repeating: 0, count: 100)
        XCTAssertNil(short.withUnsafeBytes { converter.convert($0.baseAddress!, byteCount: $0.count) }, "a truncated frame")
    }
}
