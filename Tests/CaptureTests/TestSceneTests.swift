import Capture
import Frames
import XCTest

/// `--test-scene`: what each frame shows follows from its number alone, so motion and event tests
/// can say which frames hold motion. Checked on the pixels the source writes.
final class TestSceneTests: XCTestCase {
    func testTimelineInFrames() {
        let ten = TestScene(size: FrameSize(width: 320, height: 240), fps: 10)
        XCTAssertEqual(ten.periodFrames, 300)
        XCTAssertEqual(ten.objectFrames, 100..<150)
        XCTAssertEqual(ten.lightsFrames, 200..<300)
        let thirty = TestScene(size: FrameSize(width: 1920, height: 1080), fps: 30)
        XCTAssertEqual(thirty.objectFrames, 300..<450)
        XCTAssertEqual(thirty.lightsFrames, 600..<900)
        XCTAssertNil(thirty.objectRectangle(frame: 299))
        XCTAssertNotNil(thirty.objectRectangle(frame: 300))
        XCTAssertNotNil(thirty.objectRectangle(frame: 449))
        XCTAssertNil(thirty.objectRectangle(frame: 450))
        XCTAssertNotNil(thirty.objectRectangle(frame: 900 + 300), "every period")
    }

    /// 310 frames at 10 fps (one period and a bit), 640x360 (the counter needs 576 wide): the still room changes only by its noise,
    /// the object is there in exactly its frames (some part of it in the picture), the lights raise
    /// the whole picture, and the counter reads back in every frame.
    func testEachFrameShowsItsPartOfTheTimeline() throws {
        let size = FrameSize(width: 640, height: 360)
        let scene = TestScene(size: size, fps: 10)
        let source = TestPatternSource(size: size, fps: 10, realTime: false, picture: .eventScene)
        XCTAssertEqual(source.summary, "test scene 640x360 @ 10 fps")
        let pool = PixelBufferPool(format: .nv12, width: 640, height: 360, capacity: 3)
        try source.start(pool: pool)
        defer { source.stop() }
        var stillReference: [UInt8]?
        var darkMean: Double?
        // Below the counter strip (16...31), so only the scene is compared.
        let rows = 40..<360
        for expected in 0..<UInt64(310) {
            let frame = try XCTUnwrap(source.nextFrame())
            let luma = frame.planes[0]
            XCTAssertEqual(TestPatternSource.readCounter(luma: luma.base, stride: luma.stride), expected)
            var pixels = [UInt8]()
            for y in rows { pixels += UnsafeBufferPointer(start: luma.base + y * luma.stride, count: 640) }
            frame.recycle()
            let mean = Double(pixels.reduce(0) { $0 + Int($1) }) / Double(pixels.count)
            let phase = expected % 300
            if scene.lightsFrames.contains(phase) {
                let dark = try XCTUnwrap(darkMean)
                XCTAssertGreaterThan(mean, dark + 50, "frame \(expected): the lights are on")
                continue
            }
            guard let reference = stillReference else {
                stillReference = pixels
                darkMean = mean
                continue
            }
            let differences = zip(pixels, reference).map { abs(Int($0) - Int($1)) }
            if scene.objectFrames.contains(phase) {
                let moved = differences.filter { $0 > 40 }.count
                XCTAssertGreaterThan(moved, 100, "frame \(expected): the object is in the picture")
            } else {
                XCTAssertLessThanOrEqual(differences.max() ?? 0, 2 * TestScene.noiseAmplitude, "frame \(expected): only noise")
                XCTAssertGreaterThan(differences.filter { $0 > 0 }.count, pixels.count / 2, "frame \(expected): the noise is new")
                XCTAssertEqual(mean, try XCTUnwrap(darkMean), accuracy: 1, "frame \(expected): lights off")
            }
        }
    }
}
