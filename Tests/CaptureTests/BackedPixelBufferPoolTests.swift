@testable import Capture
import Frames
import Glibc
import XCTest

/// Lends each buffer rows with odd strides (not the pool's 64-byte padding) and a sentinel in
/// the padding, so tests see whether sources honour the lent strides and stay inside their rows.
private final class FakeBacking: PixelBufferBacking, @unchecked Sendable {
    static let sentinel: UInt8 = 0xEE
    let format: PixelFormat
    let width: Int, height: Int
    private(set) var memory: [UnsafeMutablePointer<UInt8>] = []
    private(set) var layout: [(stride: Int, width: Int, height: Int, offset: Int)] = []
    private(set) var attached: [Bool]
    private(set) var attaches = 0, detaches = 0
    var failNext = false

    init(format: PixelFormat, width: Int, height: Int, capacity: Int) {
        self.format = format
        self.width = width
        self.height = height
        let cw = (width + 1) / 2, ch = (height + 1) / 2
        let planes: [(Int, Int)] = format == .nv12 ? [(width, height), (cw * 2, ch)] : [(width, height), (cw, ch), (cw, ch)]
        var offset = 0
        for (w, h) in planes {
            layout.append((w + 13, w, h, offset))  // an odd stride, unlike the pool's own
            offset += (w + 13) * h
        }
        attached = Array(repeating: false, count: capacity)
        for _ in 0..<capacity {
            let m = UnsafeMutablePointer<UInt8>.allocate(capacity: offset)
            m.initialize(repeating: Self.sentinel, count: offset)
            memory.append(m)
        }
    }

    deinit { memory.forEach { $0.deallocate() } }

    func attach(bufferIndex: Int, planes: inout [PlaneMemory]) throws {
        if failNext {
            failNext = false
            throw CaptureError(.invalidInput, "no memory to lend")
        }
        attaches += 1
        attached[bufferIndex] = true
        for p in layout { planes.append(PlaneMemory(base: memory[bufferIndex] + p.offset, stride: p.stride)) }
    }

    func detach(bufferIndex: Int) {
        if attached[bufferIndex] { detaches += 1 }
        attached[bufferIndex] = false
    }

    /// Whether every byte past each row's width is still the sentinel.
    func paddingUntouched(_ bufferIndex: Int) -> Bool {
        layout.allSatisfy { p in
            (0..<p.height).allSatisfy { row in
                let start = memory[bufferIndex] + p.offset + row * p.stride
                return (p.width..<p.stride).allSatisfy { start[$0] == Self.sentinel }
            }
        }
    }
}

final class BackedPixelBufferPoolTests: XCTestCase {
    func testBackedPoolLendsMemoryAtTakeAndEndsTheLoanAtRecycle() throws {
        let backing = FakeBacking(format: .nv12, width: 64, height: 48, capacity: 2)
        let pool = PixelBufferPool(format: .nv12, width: 64, height: 48, capacity: 2, backing: backing)
        XCTAssertFalse(pool.hasStableMemory)
        XCTAssertTrue(PixelBufferPool(format: .nv12, width: 64, height: 48, capacity: 2).hasStableMemory)
        let a = try XCTUnwrap(pool.tryTake())
        let b = try XCTUnwrap(pool.take())
        XCTAssertNil(pool.tryTake(), "a backed pool never grows either")
        XCTAssertEqual(pool.exhaustedCount, 1)
        XCTAssertEqual(backing.attaches, 2)
        for buffer in [a, b] {
            XCTAssertFalse(buffer.isInOwnMemory)
            XCTAssertEqual(buffer.planes[0].base, backing.memory[buffer.index])
            XCTAssertEqual(buffer.planes[0].stride, 64 + 13)
            XCTAssertEqual(buffer.planes[1].width, 64)
            XCTAssertEqual(buffer.planes[1].height, 24)
            XCTAssertTrue(buffer.backing === backing)
        }
        a.recycle()
        XCTAssertEqual(backing.detaches, 1, "recycled unencoded: the loan ends")
        XCTAssertFalse(backing.attached[a.index])
        XCTAssertTrue(pool.tryTake() === a)
        XCTAssertEqual(backing.attaches, 3)
    }

    func testFailedLoanFallsBackToTheBuffersOwnMemory() throws {
        let backing = FakeBacking(format: .i420, width: 40, height: 30, capacity: 1)
        let pool = PixelBufferPool(format: .i420, width: 40, height: 30, capacity: 1, backing: backing)
        backing.failNext = true
        let buffer = try XCTUnwrap(pool.tryTake())
        XCTAssertTrue(buffer.isInOwnMemory)
        XCTAssertEqual(buffer.planes.count, 3)
        XCTAssertEqual(buffer.planes[0].stride % 64, 0)
        XCTAssertEqual(pool.backingFailureCount, 1)
        buffer.planes.forEach { $0.base.update(repeating: 1, count: $0.width) }  // writable
        buffer.recycle()
        XCTAssertEqual(backing.detaches, 0)
        let again = try XCTUnwrap(pool.tryTake())
        XCTAssertFalse(again.isInOwnMemory, "the next take borrows again")
        XCTAssertEqual(again.planes[2].base, backing.memory[0] + backing.layout[2].offset)
    }

    /// Sources write the same pixels into lent memory with odd strides as into the pool's own,
    /// and nothing past each row.
    func testSourcesHonourLentStridesAndStayInsideTheirRows() throws {
        for (width, height) in [(650, 482), (641, 361)] {
            for format in [PixelFormat.nv12, .i420] {
                let backing = FakeBacking(format: format, width: width, height: height, capacity: 1)
                let lent = PixelBufferPool(format: format, width: width, height: height, capacity: 1, backing: backing)
                let own = PixelBufferPool(format: format, width: width, height: height, capacity: 1)
                let size = FrameSize(width: width, height: height)
                let a = TestPatternSource(size: size, fps: 30, realTime: false)
                let b = TestPatternSource(size: size, fps: 30, realTime: false)
                try a.start(pool: lent)
                try b.start(pool: own)
                let x = try XCTUnwrap(a.nextFrame()), y = try XCTUnwrap(b.nextFrame())
                XCTAssertFalse(x.isInOwnMemory)
                assertSamePixels(x, y, "test pattern \(width)x\(height) \(format)")
                XCTAssertTrue(backing.paddingUntouched(0), "test pattern \(width)x\(height) \(format)")
                x.recycle()
                y.recycle()

                // Every conversion the camera and raw-file sources use, from one random frame.
                let cw = (width + 1) / 2
                var bytes = [UInt8](repeating: 0, count: width * height * 4 + 64)
                for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
                try bytes.withUnsafeBytes { raw in
                    let base = raw.baseAddress!
                    var images: [(String, (PixelBuffer) -> Void)] = []
                    for f in [PixelFormat.yuyv, .uyvy, .nv12, .i420] {
                        let image = FrameConverter.SourceImage.packed(format: f, width: width, height: height, base: base)
                        images.append(("\(f)", { FrameConverter.convert(image, into: $0) }))
                    }
                    let camera: [(CameraPixelLayout, [UnsafeRawPointer], [Int])] = [
                        (.nv21, [base, base + width * height], [width, cw * 2]),
                        (.nv16, [base, base + width * height], [width, cw * 2]),
                        (.yuv422p, [base, base + width * height, base + width * height + cw * height], [width, cw, cw]),
                        (.grey, [base], [width]),
                        (.rgb24, [base], [width * 3]),
                        (.bgrx, [base], [width * 4]),
                        (.yvyu, [base], [cw * 4]),
                    ]
                    for (layout, planes, strides) in camera {
                        let image = FrameConverter.CameraImage(layout: layout, width: width, height: height, planes: planes, strides: strides)
                        images.append(("camera \(layout)", { FrameConverter.convert(image, into: $0) }))
                    }
                    for (name, convert) in images {
                        let x = try XCTUnwrap(lent.tryTake()), y = try XCTUnwrap(own.tryTake())
                        convert(x)
                        convert(y)
                        assertSamePixels(x, y, "\(name) → \(format) \(width)x\(height)")
                        XCTAssertTrue(backing.paddingUntouched(0), "\(name) → \(format) \(width)x\(height) wrote past a row")
                        x.recycle()
                        y.recycle()
                    }
                }
            }
        }
    }

    private func assertSamePixels(_ x: PixelBuffer, _ y: PixelBuffer, _ what: String) {
        for (p, q) in zip(x.planes, y.planes) {
            for row in 0..<p.height where memcmp(p.base + row * p.stride, q.base + row * q.stride, p.width) != 0 {
                XCTFail("\(what): row \(row) differs")
                return
            }
        }
    }
}
