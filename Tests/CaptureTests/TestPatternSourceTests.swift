import Capture
import Frames
import Glibc
import Synchronization
import Threading
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

    /// The source as a recording drives it: paced frames taken on a capture thread while another
    /// thread reads `statistics` and then stops it; the capture thread sees the stop at its next frame.
    /// Each frame's burned-in counter is its number, and the numbers only rise (a paced source may drop).
    func testStopAndStatisticsFromAnotherThreadWhileACaptureThreadTakesFrames() throws {
        let source = TestPatternSource(size: FrameSize(width: 640, height: 360), fps: 100)
        let pool = PixelBufferPool(format: .nv12, width: 640, height: 360, capacity: 3)
        try source.start(pool: pool)
        let taken = Mutex<[(sequence: UInt64, counter: UInt64?)]>([])
        let capture = WorkerThread(name: "test-capture") {
            while let frame = try? source.nextFrame() {
                let luma = frame.planes[0]
                let counter = TestPatternSource.readCounter(luma: luma.base, stride: luma.stride)
                taken.withLock { $0.append((frame.sequence, counter)) }
                frame.recycle()
            }
        }
        capture.start()
        let deadline = MonotonicClock.now() + 10_000_000_000
        while source.statistics.delivered < 20 && MonotonicClock.now() < deadline { usleep(1000) }
        source.stop()
        capture.join()
        let frames = taken.withLock { $0 }
        XCTAssertGreaterThanOrEqual(frames.count, 20)
        XCTAssertEqual(source.statistics.delivered, UInt64(frames.count))
        XCTAssertEqual(source.end, .finished)
        XCTAssertEqual(frames.filter { $0.counter != $0.sequence }.count, 0, "each frame's counter is its number")
        XCTAssertTrue(zip(frames, frames.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "\(frames.map(\.sequence))")
        XCTAssertEqual(pool.freeCount, pool.capacity)
    }

    func testSizeParsing() {
        XCTAssertEqual(FrameSize(parsing: "1280x720"), FrameSize(width: 1280, height: 720))
        XCTAssertEqual(FrameSize(parsing: "641X481"), FrameSize(width: 641, height: 481))
        for bad in ["", "1280", "x720", "1280x", "0x0", "-1x5", "1280x720x3", "99999x1", "abcxdef"] {
            XCTAssertNil(FrameSize(parsing: bad), bad)
        }
    }
}
