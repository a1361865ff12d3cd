import Capture
import Frames
import XCTest

final class TestPatternSourceTests: XCTestCase {
    func testFramesDifferAndCarryTheirSequenceInTheCounter() throws {
        let source = TestPatternSource(size: FrameSize(width: 640, height: 360), fps: 30, realTime: false)
        let pool = PixelBufferPool(format: .nv12, width: 640, height: 360, capacity: 3)
        try source.start(pool: pool)
        var previous: [UInt8]?
        for expected in 0..<5 as Range<UInt64> {
            let frame = try XCTUnwrap(source.nextFrame())
            XCTAssertEqual(frame.sequence, expected)
            let luma = frame.planes[0]
            XCTAssertEqual(TestPatternSource.readCounter(luma: luma.base, stride: luma.stride), expected)
            let pixels = Array(UnsafeBufferPointer(start: luma.base + 200 * luma.stride, count: 640))
            XCTAssertNotEqual(pixels, previous, "every frame moves")
            previous = pixels
            frame.recycle()
        }
        XCTAssertEqual(source.statistics.delivered, 5)
        source.stop()
        XCTAssertNil(try source.nextFrame())
        XCTAssertEqual(source.end, .finished)
    }

    func testSizeParsing() {
        XCTAssertEqual(FrameSize(parsing: "1280x720"), FrameSize(width: 1280, height: 720))
        XCTAssertEqual(FrameSize(parsing: "641X481"), FrameSize(width: 641, height: 481))
        for bad in ["", "1280", "x720", "1280x", "0x0", "-1x5", "1280x720x3", "99999x1", "abcxdef"] {
            XCTAssertNil(FrameSize(parsing: bad), bad)
        }
    }
}
