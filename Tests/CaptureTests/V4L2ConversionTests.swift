@testable import Capture
import Frames
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

    /// The converter's whole-block fast path and its odd-edge path, against a per-pixel reference
    /// written straight from the formulas: random pixels, odd and even sizes, padded rows, every
    /// byte order, NV12 and I420.
    func testRGBMatchesAPerPixelReferenceAtOddSizesAndPaddedRows() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func random() -> UInt8 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: seed >> 56)
        }
        let orders: [(CameraPixelLayout, bpp: Int, r: Int, g: Int, b: Int)] = [
            (.rgb24, 3, 0, 1, 2), (.bgr24, 3, 2, 1, 0), (.bgrx, 4, 2, 1, 0),
            (.xrgb, 4, 1, 2, 3), (.rgbx, 4, 0, 1, 2), (.xbgr, 4, 3, 2, 1),
        ]
        for (width, height) in [(7, 5), (8, 6), (1, 1), (2, 3), (33, 2)] {
            for (layout, bpp, ro, go, bo) in orders {
                let stride = width * bpp + 5
                let pixels = (0..<stride * height).map { _ in random() }
                func rgb(_ x: Int, _ y: Int) -> (Int, Int, Int) {
                    let p = y * stride + x * bpp
                    return (Int(pixels[p + ro]), Int(pixels[p + go]), Int(pixels[p + bo]))
                }
                for format in [PixelFormat.nv12, .i420] {
                    let out = convert(layout, width: width, height: height, planes: [pixels], strides: [stride],
                                      into: format)
                    let name = "\(layout) \(width)x\(height) \(format)"
                    for y in 0..<height {
                        let expected = (0..<width).map { x -> UInt8 in
                            let (r, g, b) = rgb(x, y)
                            let luma: Int = 66 * r + 129 * g + 25 * b + 128
                            return UInt8(16 + (luma >> 8))
                        }
                        XCTAssertEqual(row(out, 0, y), expected, "\(name) luma row \(y)")
                    }
                    for cy in 0..<(height + 1) / 2 {
                        var cbs: [UInt8] = [], crs: [UInt8] = []
                        for cx in 0..<(width + 1) / 2 {
                            let block = [(2 * cx, 2 * cy), (2 * cx + 1, 2 * cy), (2 * cx, 2 * cy + 1),
                                         (2 * cx + 1, 2 * cy + 1)].filter { $0.0 < width && $0.1 < height }
                            var sumR = 0, sumG = 0, sumB = 0
                            for (x, y) in block {
                                let (r, g, b) = rgb(x, y)
                                sumR += r; sumG += g; sumB += b
                            }
                            let n = block.count
                            let r = (sumR + n / 2) / n, g = (sumG + n / 2) / n, b = (sumB + n / 2) / n
                            let cb: Int = -38 * r - 74 * g + 112 * b + 128
                            let cr: Int = 112 * r - 94 * g - 18 * b + 128
                            cbs.append(UInt8(128 + (cb >> 8)))
                            crs.append(UInt8(128 + (cr >> 8)))
                        }
                        if format == .nv12 {
                            let interleaved = zip(cbs, crs).flatMap { [$0, $1] }
                            XCTAssertEqual(Array(row(out, 1, cy).prefix(interleaved.count)), interleaved,
                                           "\(name) chroma row \(cy)")
                        } else {
                            XCTAssertEqual(row(out, 1, cy), cbs, "\(name) Cb row \(cy)")
                            XCTAssertEqual(row(out, 2, cy), crs, "\(name) Cr row \(cy)")
                        }
                    }
                }
            }
        }
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
