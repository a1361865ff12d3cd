@testable import Capture
import XCTest

/// Camera layouts → NV12/I420, each against values worked out by hand.
final class V4L2ConversionTests: XCTestCase {
    private func convert(_ layout: CameraPixelLayout, width: Int, height: Int, planes: [[UInt8]], strides: [Int],
                         into format: PixelFormat = .nv12) -> PixelBuffer {
        let pool = PixelBufferPool(format: format, width: width, height: height, capacity: 1)
        let out = pool.tryTake()!
        let copies = planes.map { bytes -> UnsafeMutableRawBufferPointer in
            let p = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
            p.copyBytes(from: bytes)
            return p
        }
        defer { copies.forEach { $0.deallocate() } }
        FrameConverter.convert(.init(layout: layout, width: width, height: height,
                                     planes: copies.map { UnsafeRawPointer($0.baseAddress!) }, strides: strides), into: out)
        return out
    }

    private func row(_ b: PixelBuffer, _ plane: Int, _ y: Int) -> [UInt8] {
        let p = b.planes[plane]
        return Array(UnsafeBufferPointer(start: p.base + y * p.stride, count: p.width))
    }

    func testNV21SwapsChromaIntoNV12() {
        let out = convert(.nv21, width: 4, height: 2, planes: [[1, 2, 3, 4, 5, 6, 7, 8], [200, 100, 210, 110]],
                          strides: [4, 4])
        XCTAssertEqual(row(out, 0, 0), [1, 2, 3, 4])
        XCTAssertEqual(row(out, 0, 1), [5, 6, 7, 8])
        XCTAssertEqual(row(out, 1, 0), [100, 200, 110, 210])
    }

    func testYV12IsI420WithPlanesSwapped() {
        let out = convert(.yv12, width: 4, height: 2, planes: [[1, 2, 3, 4, 5, 6, 7, 8], [200, 210], [100, 110]],
                          strides: [4, 2, 2], into: .i420)
        XCTAssertEqual(row(out, 1, 0), [100, 110])
        XCTAssertEqual(row(out, 2, 0), [200, 210])
    }

    func testNV16AveragesRowPairsAndHonoursPaddedStrides() {
        // Stride 6: two bytes of padding per row that must never be read as pixels.
        let y: [UInt8] = [1, 2, 3, 4, 99, 99, 5, 6, 7, 8, 99, 99]
        let uv: [UInt8] = [100, 200, 50, 60, 99, 99, 103, 201, 53, 61, 99, 99]
        let out = convert(.nv16, width: 4, height: 2, planes: [y, uv], strides: [6, 6])
        XCTAssertEqual(row(out, 0, 1), [5, 6, 7, 8])
        // (100+103+1)/2=102, (200+201+1)/2=201, (50+53+1)/2=52, (60+61+1)/2=61
        XCTAssertEqual(row(out, 1, 0), [102, 201, 52, 61])
        let swapped = convert(.nv61, width: 4, height: 2, planes: [y, uv], strides: [6, 6])
        XCTAssertEqual(row(swapped, 1, 0), [201, 102, 61, 52])
    }

    func testPlanar422ToI420() {
        let out = convert(.yuv422p, width: 4, height: 2, planes: [[1, 2, 3, 4, 5, 6, 7, 8], [10, 20, 12, 22], [30, 40, 33, 43]],
                          strides: [4, 2, 2], into: .i420)
        XCTAssertEqual(row(out, 1, 0), [11, 21])
        XCTAssertEqual(row(out, 2, 0), [32, 42])
    }

    func testYVYUAndVYUYOrders() {
        // Two pixels Y0=10 Y1=20, Cb=100 Cr=200, on both rows.
        let yvyu = convert(.yvyu, width: 2, height: 2, planes: [[10, 200, 20, 100, 10, 200, 20, 100]], strides: [4])
        XCTAssertEqual(row(yvyu, 0, 0), [10, 20])
        XCTAssertEqual(row(yvyu, 1, 0), [100, 200])
        let vyuy = convert(.vyuy, width: 2, height: 2, planes: [[200, 10, 100, 20, 200, 10, 100, 20]], strides: [4])
        XCTAssertEqual(row(vyuy, 0, 1), [10, 20])
        XCTAssertEqual(row(vyuy, 1, 0), [100, 200])
    }

    func testGreyGetsNeutralChroma() {
        let out = convert(.grey, width: 2, height: 2, planes: [[16, 235, 100, 50]], strides: [2], into: .i420)
        XCTAssertEqual(row(out, 0, 0), [16, 235])
        XCTAssertEqual(row(out, 1, 0), [128])
        XCTAssertEqual(row(out, 2, 0), [128])
    }

    /// BT.601 limited range: white → 235/128/128, black → 16/128/128, red → 82/90/240.
    func testRGBUsesBT601LimitedRange() {
        func solid(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> (y: UInt8, cb: UInt8, cr: UInt8) {
            let px = [r, g, b]
            let out = convert(.rgb24, width: 2, height: 2, planes: [px + px + px + px], strides: [6])
            return (row(out, 0, 0)[0], row(out, 1, 0)[0], row(out, 1, 0)[1])
        }
        XCTAssertTrue(solid(255, 255, 255) == (235, 128, 128))
        XCTAssertTrue(solid(0, 0, 0) == (16, 128, 128))
        XCTAssertTrue(solid(255, 0, 0) == (82, 90, 240))
        XCTAssertTrue(solid(0, 0, 255) == (41, 240, 110))
    }

    func testRGBByteOrders() {
        // One red pixel in each memory order, 1x1 frames padded to 2x2 by repetition.
        let cases: [(CameraPixelLayout, [UInt8])] = [
            (.rgb24, [255, 0, 0]), (.bgr24, [0, 0, 255]),
            (.bgrx, [0, 0, 255, 7]), (.xrgb, [7, 255, 0, 0]), (.rgbx, [255, 0, 0, 7]), (.xbgr, [7, 0, 0, 255]),
        ]
        for (layout, px) in cases {
            let out = convert(layout, width: 2, height: 2, planes: [px + px + px + px], strides: [px.count * 2])
            XCTAssertEqual(row(out, 0, 1), [82, 82], "\(layout)")
            XCTAssertEqual(row(out, 1, 0), [90, 240], "\(layout)")
        }
    }

    func testRGBChromaIsThatOfTheBlockAverage() {
        // Left column white, right column black: average grey 127.5 → 128 → Cb = Cr = 128.
        let w: [UInt8] = [255, 255, 255], k: [UInt8] = [0, 0, 0]
        let out = convert(.rgb24, width: 2, height: 2, planes: [w + k + w + k], strides: [6], into: .i420)
        XCTAssertEqual(row(out, 0, 0), [235, 16])
        XCTAssertEqual(row(out, 1, 0), [128])
        XCTAssertEqual(row(out, 2, 0), [128])
    }

    func testPlaneGeometryOfSingleBufferFormats() {
        XCTAssertEqual(V4L2PlaneGeometry(.nv12, width: 640, height: 480, bytesPerLine: 640),
                       V4L2PlaneGeometry(offsets: [0, 307_200], strides: [640, 640], byteCount: 460_800))
        XCTAssertEqual(V4L2PlaneGeometry(.i420, width: 640, height: 480, bytesPerLine: 704),
                       V4L2PlaneGeometry(offsets: [0, 337_920, 422_400], strides: [704, 352, 352], byteCount: 506_880))
        XCTAssertEqual(V4L2PlaneGeometry(.yuyv, width: 640, height: 480, bytesPerLine: 1280).byteCount, 614_400)
        XCTAssertEqual(V4L2PlaneGeometry.minimumBytesPerLine(.rgb24, width: 641), 1923)
        XCTAssertEqual(V4L2PlaneGeometry.minimumBytesPerLine(.yuyv, width: 641), 1284)
    }
}
