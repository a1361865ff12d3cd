import Frames
import XCTest

final class FrameConverterTests: XCTestCase {
    /// 4x2 YUYV with distinct values everywhere, converted by hand.
    func testYUYVToNV12AveragesChromaOfRowPairs() {
        let yuyv: [UInt8] = [
            10, 100, 20, 200, 30, 50, 40, 60,
            11, 102, 21, 201, 31, 53, 41, 61,
        ]
        let pool = PixelBufferPool(format: .nv12, width: 4, height: 2, capacity: 1)
        let out = pool.tryTake()!
        yuyv.withUnsafeBytes { raw in
            FrameConverter.convert(.packed(format: .yuyv, width: 4, height: 2, base: raw.baseAddress!), into: out)
        }
        XCTAssertEqual(row(out, plane: 0, 0), [10, 20, 30, 40])
        XCTAssertEqual(row(out, plane: 0, 1), [11, 21, 31, 41])
        // (100+102+1)/2=101, (200+201+1)/2=201, (50+53+1)/2=52, (60+61+1)/2=61
        XCTAssertEqual(row(out, plane: 1, 0), [101, 201, 52, 61])
    }

    func testUYVYToI420() {
        let uyvy: [UInt8] = [
            100, 10, 200, 20, 50, 30, 60, 40,
            100, 12, 200, 22, 52, 32, 62, 42,
        ]
        let pool = PixelBufferPool(format: .i420, width: 4, height: 2, capacity: 1)
        let out = pool.tryTake()!
        uyvy.withUnsafeBytes { raw in
            FrameConverter.convert(.packed(format: .uyvy, width: 4, height: 2, base: raw.baseAddress!), into: out)
        }
        XCTAssertEqual(row(out, plane: 0, 0), [10, 20, 30, 40])
        XCTAssertEqual(row(out, plane: 0, 1), [12, 22, 32, 42])
        XCTAssertEqual(row(out, plane: 1, 0), [100, 51])
        XCTAssertEqual(row(out, plane: 2, 0), [200, 61])
    }

    func testI420ToNV12InterleavesAndRoundTrips() {
        let width = 6, height = 4
        let size = PixelFormat.i420.packedFrameSize(width: width, height: height)
        let i420 = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let nv12Pool = PixelBufferPool(format: .nv12, width: width, height: height, capacity: 1)
        let nv12 = nv12Pool.tryTake()!
        i420.withUnsafeBytes { raw in
            FrameConverter.convert(.packed(format: .i420, width: width, height: height, base: raw.baseAddress!), into: nv12)
        }
        let u = Array(i420[24..<30]), v = Array(i420[30..<36])
        XCTAssertEqual(row(nv12, plane: 1, 0), [u[0], v[0], u[1], v[1], u[2], v[2]])
        // NV12 → I420 gives the original back.
        let back = PixelBufferPool(format: .i420, width: width, height: height, capacity: 1).tryTake()!
        var packedNV12: [UInt8] = []
        for r in 0..<height { packedNV12 += row(nv12, plane: 0, r) }
        for r in 0..<height / 2 { packedNV12 += row(nv12, plane: 1, r) }
        packedNV12.withUnsafeBytes { raw in
            FrameConverter.convert(.packed(format: .nv12, width: width, height: height, base: raw.baseAddress!), into: back)
        }
        var packedI420: [UInt8] = []
        for p in 0..<3 { for r in 0..<back.planes[p].height { packedI420 += row(back, plane: p, r) } }
        XCTAssertEqual(packedI420, i420)
    }

    /// Odd sizes: the last column and row are kept, chroma rounds up.
    func testOddSizeYUYV() {
        let width = 3, height = 3
        XCTAssertEqual(PixelFormat.yuyv.packedFrameSize(width: width, height: height), 2 * 4 * 3)
        let yuyv: [UInt8] = [
            1, 100, 2, 200, 3, 110, 9, 210,
            4, 102, 5, 202, 6, 112, 9, 212,
            7, 104, 8, 204, 9, 114, 9, 214,
        ]
        let out = PixelBufferPool(format: .nv12, width: width, height: height, capacity: 1).tryTake()!
        yuyv.withUnsafeBytes { raw in
            FrameConverter.convert(.packed(format: .yuyv, width: width, height: height, base: raw.baseAddress!), into: out)
        }
        XCTAssertEqual(row(out, plane: 0, 0), [1, 2, 3])
        XCTAssertEqual(row(out, plane: 0, 2), [7, 8, 9])
        XCTAssertEqual(row(out, plane: 1, 0), [101, 201, 111, 211])
        XCTAssertEqual(row(out, plane: 1, 1), [104, 204, 114, 214], "a lone last row pairs with itself")
    }

    func testPackedFrameSizes() {
        XCTAssertEqual(PixelFormat.yuyv.packedFrameSize(width: 1920, height: 1080), 1920 * 1080 * 2)
        XCTAssertEqual(PixelFormat.nv12.packedFrameSize(width: 1920, height: 1080), 1920 * 1080 * 3 / 2)
        XCTAssertEqual(PixelFormat.i420.packedFrameSize(width: 641, height: 481), 641 * 481 + 2 * 321 * 241)
    }

    private func row(_ buffer: PixelBuffer, plane: Int, _ r: Int) -> [UInt8] {
        let p = buffer.planes[plane]
        return Array(UnsafeBufferPointer(start: p.base + r * p.stride, count: p.width))
    }
}
