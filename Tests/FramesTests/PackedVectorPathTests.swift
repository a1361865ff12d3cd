@testable import Frames
import TestSupport
import XCTest

/// libyuv's rows for YUYV and UYVY against camrec's scalar loop (kept as the reference): byte for
/// byte, on random pictures whose widths leave every tail length, odd heights, padded rows, into NV12
/// and I420.
final class PackedVectorPathTests: XCTestCase {
    func testYUYVAndUYVYMatchTheScalarReferenceByteForByte() {
        var generator = SystemRandomNumberGenerator()
        let sizes = [(16, 2), (17, 3), (31, 1), (32, 4), (33, 5), (48, 2), (1, 1), (2, 2), (15, 6), (640, 7), (1922, 3), (1920, 4), (1280, 5)]
        for (width, height) in sizes {
            for padding in [0, 4, 36] {
                let stride = 2 * ((width + 1) / 2) * 2 + padding
                let source = (0..<(stride * height)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                for format in [PixelFormat.nv12, .i420] {
                    for (name, yOff, uOff, vOff) in [("YUYV", 0, 1, 3), ("UYVY", 1, 0, 2)] {
                        let fast = PixelBufferPool(format: format, width: width, height: height, capacity: 1).tryTake()!
                        let reference = PixelBufferPool(format: format, width: width, height: height, capacity: 1).tryTake()!
                        source.withUnsafeBytes { raw in
                            FrameConverter.packed422(base: raw.baseAddress!, stride: stride, width: width, height: height,
                                                     into: fast, yOff: yOff, uOff: uOff, vOff: vOff)
                            FrameConverter.packed422(base: raw.baseAddress!, stride: stride, width: width, height: height,
                                                     into: reference, yOff: yOff, uOff: uOff, vOff: vOff, vectorised: false)
                        }
                        XCTAssertEqual(visibleBytes(fast), visibleBytes(reference), "\(name) \(width)x\(height) stride \(stride) into \(format)")
                    }
                }
            }
        }
    }

}

/// A raw-file source converts YUYV and UYVY frames strip by strip (`RawFrameSource.stripRows` rows at
/// a time) into the pool buffer: the same bytes as the whole frame converted at once.
final class StripConversionTests: XCTestCase {
    func testAFrameConvertedStripByStripIsTheFrameConvertedWhole() {
        var generator = SystemRandomNumberGenerator()
        for (width, height) in [(1920, 1080), (33, 7), (2, 2), (17, 64), (640, 33), (1, 5)] {
            let stride = (width + 1) / 2 * 4
            let frame = (0..<(stride * height)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for source in [PixelFormat.yuyv, .uyvy] {
                for format in [PixelFormat.nv12, .i420] {
                    let whole = PixelBufferPool(format: format, width: width, height: height, capacity: 1).tryTake()!
                    frame.withUnsafeBytes { raw in
                        FrameConverter.convert(.packed(format: source, width: width, height: height, base: raw.baseAddress!), into: whole)
                    }
                    for stripRows in [2, 4, 32] {
                        let strips = PixelBufferPool(format: format, width: width, height: height, capacity: 1).tryTake()!
                        var row = 0
                        while row < height {
                            let rows = min(stripRows, height - row)
                            frame.withUnsafeBytes { raw in
                                FrameConverter.convertStrip(packed: source, base: raw.baseAddress! + row * stride, rows: rows,
                                                            into: strips, firstRow: row)
                            }
                            row += rows
                        }
                        XCTAssertEqual(visibleBytes(strips), visibleBytes(whole), "\(source) \(width)x\(height) into \(format), \(stripRows) rows at a time")
                    }
                }
            }
        }
    }
}
