import Capture
import Glibc
import Frames
import Threading
import XCTest

/// Starts `source` on a capture thread of its own with a pool of two buffers and holds every frame it
/// delivers, so that its third waits for a buffer; once two are delivered, `stop()` from this thread must
/// end that wait. Returns the two frames, in the order delivered (the caller recycles them).
func framesKeptUntilStoppedWhileWaitingForABuffer(_ source: some FrameSource, pool: PixelBufferPool,
                                                   file: StaticString = #filePath, line: UInt = #line) throws -> [PixelBuffer] {
    try source.start(pool: pool)
    let kept = BlockingQueue<PixelBuffer>(capacity: 3)
    let capture = WorkerThread(name: "test-capture") {
        defer { kept.close() }
        while let frame = try? source.nextFrame() { _ = kept.push(frame) }
    }
    capture.start()
    let deadline = MonotonicClock.now() + 10_000_000_000
    while source.statistics.delivered < 2 && MonotonicClock.now() < deadline { usleep(1000) }
    XCTAssertEqual(pool.freeCount, 0, "both buffers held: the capture thread waits for one", file: file, line: line)
    source.stop()
    capture.join()
    XCTAssertEqual(source.end, .finished, file: file, line: line)
    XCTAssertEqual(source.statistics.delivered, 2, file: file, line: line)
    var frames: [PixelBuffer] = []
    while let buffer = kept.pop() { frames.append(buffer) }
    XCTAssertEqual(frames.count, 2, file: file, line: line)
    return frames
}
