@testable import Capture
import Foundation
import Frames
import TestSupport
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
                let expected = PixelBufferPool(format: format, width: width, height: height, capacity: 1).tryTake()!
                bytes.withUnsafeBytes { raw in
                    FrameConverter.convert(.packed(format: .yuyv, width: width, height: height, base: raw.baseAddress! + frames * frameBytes),
                                           into: expected)
                }
                XCTAssertEqual(buffer.sequence, UInt64(frames))
                XCTAssertEqual(visibleBytes(buffer), visibleBytes(expected), "frame \(frames) into \(format)")
                buffer.recycle()
                frames += 1
            }
            XCTAssertEqual(frames, 3, "three whole frames")
            XCTAssertEqual(source.trailingBytes, 1000, "the partial frame's bytes are counted")
            XCTAssertEqual(source.end, .finished)
            XCTAssertEqual(pool.freeCount, pool.capacity, "the buffer taken for the partial frame went back")
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
}
