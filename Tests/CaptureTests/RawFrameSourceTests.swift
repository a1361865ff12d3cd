@testable import Capture
import Foundation
import Frames
import Glibc
import TestSupport
import Threading
import XCTest

/// A raw-file source reads YUYV and UYVY frames strip by strip straight into pool buffers: every whole
/// frame arrives as the whole-frame conversion makes it, a partial last frame is counted and gives its
/// pool buffer back, and an input shorter than one frame is a one-line error.
final class RawFrameSourceTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "camrec-raw-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// 64x70: two strips of 32 rows and one of 6, so strips end inside the frame and at its end.
    func testStripsMakeTheWholeFrameConversionAndAPartialLastFrameGivesItsBufferBack() throws {
        let (width, height) = (64, 70)
        let frameBytes = width / 2 * 4 * height
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(3 * frameBytes + 1000)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let path = "\(directory)/in.yuyv"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        for format in [PixelFormat.nv12, .i420] {
            let source = try RawFrameSource(path: path, format: .yuyv, size: FrameSize(width: width, height: height), fps: 30)
            let pool = PixelBufferPool(format: format, width: width, height: height, capacity: 2)
            try source.start(pool: pool)
            var frames = 0
            while let buffer = try source.nextFrame() {
                assertFrame(buffer, is: frames, of: bytes, width: width, height: height, format: format)
                buffer.recycle()
                frames += 1
            }
            XCTAssertEqual(frames, 3, "three whole frames")
            XCTAssertEqual(source.trailingBytes, 1000, "the partial frame's bytes are counted")
            XCTAssertEqual(source.end, .finished)
            XCTAssertEqual(pool.freeCount, pool.capacity, "the buffer taken for the partial frame went back")
        }
    }

    /// From a pipe, as `ffmpeg … - | camrec --input -` runs it: a capture thread keeps the two frames it
    /// took, so its third waits for a pool buffer; `stop()` from another thread (which reads `statistics`
    /// meanwhile) ends that wait, and the two frames hold the pipe's bytes converted.
    func testStopFromAnotherThreadEndsACaptureWaitingForABuffer() throws {
        let (width, height) = (64, 70)
        let frameBytes = width / 2 * 4 * height
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(3 * frameBytes)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var ends: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]) }
        // All three frames fit in the pipe (64 KiB), so the writer never waits on the reader.
        XCTAssertEqual(bytes.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }, bytes.count)
        defer { close(ends[1]) }
        let source = try RawFrameSource(path: "/dev/fd/\(ends[0])", format: .yuyv, size: FrameSize(width: width, height: height), fps: 30)
        let pool = PixelBufferPool(format: .nv12, width: width, height: height, capacity: 2)
        for (index, buffer) in try framesKeptUntilStoppedWhileWaitingForABuffer(source, pool: pool).enumerated() {
            assertFrame(buffer, is: index, of: bytes, width: width, height: height, format: .nv12)
            buffer.recycle()
        }
    }

    func testAYUYVInputShorterThanOneFrameIsAnError() throws {
        let path = "\(directory)/short.yuyv"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(count: 1000)))
        let source = try RawFrameSource(path: path, format: .yuyv, size: FrameSize(width: 64, height: 64), fps: 30)
        let pool = PixelBufferPool(format: .nv12, width: 64, height: 64, capacity: 2)
        try source.start(pool: pool)
        XCTAssertThrowsError(try source.nextFrame()) { error in
            XCTAssertTrue("\(error)".contains("holds 1000 bytes, less than one"), "\(error)")
        }
        XCTAssertEqual(pool.freeCount, pool.capacity, "no buffer kept")
    }

    /// `buffer` is YUYV frame `index` of `bytes`, numbered so, converted as the whole-frame conversion makes it.
    private func assertFrame(_ buffer: PixelBuffer, is index: Int, of bytes: [UInt8], width: Int, height: Int, format: PixelFormat,
                             file: StaticString = #filePath, line: UInt = #line) {
        let expected = PixelBufferPool(format: format, width: width, height: height, capacity: 1).tryTake()!
        bytes.withUnsafeBytes { raw in
            FrameConverter.convert(.packed(format: .yuyv, width: width, height: height, base: raw.baseAddress! + index * width / 2 * 4 * height),
                                   into: expected)
        }
        XCTAssertEqual(buffer.sequence, UInt64(index), file: file, line: line)
        XCTAssertEqual(visibleBytes(buffer), visibleBytes(expected), "frame \(index) into \(format)", file: file, line: line)
    }
}
