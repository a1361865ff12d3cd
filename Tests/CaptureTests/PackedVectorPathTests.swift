@testable import Frames
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
                        XCTAssertEqual(planes(fast), planes(reference), "\(name) \(width)x\(height) stride \(stride) into \(format)")
                    }
                }
            }
        }
    }

    /// Every plane's visible bytes, row by row.
    private func planes(_ buffer: PixelBuffer) -> [[UInt8]] {
        buffer.planes.map { plane in
            (0..<plane.height).flatMap { r in Array(UnsafeBufferPointer(start: plane.base + r * plane.stride, count: plane.width)) }
        }
    }
}
