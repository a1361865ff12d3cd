import Capture
import Frames
import Motion
import XCTest

/// The detector on `--test-scene`, whose timeline says which frames hold motion: an object crossing
/// from 10 s to 15 s of every 30, the lights on from 20 s to 30 s (a change of the whole picture,
/// never motion), sensor-like noise in every frame (never motion).
final class MotionDetectorTests: XCTestCase {
    /// The burned-in counter (rows 16-31) changes every frame, as a camera's clock overlay does: masked,
    /// as a user masks an overlay.
    private static func counterStrip(_ size: FrameSize) -> MotionDetector.Rectangle {
        MotionDetector.Rectangle(x: 0, y: 0, width: size.width, height: 48)
    }

    /// - Parameter noise: added to every luma sample before the detector looks, fresh every frame:
    ///   an integer in -noise...noise, all equally likely.
    private func verdicts(size: FrameSize, fps: Double, frames: Int, noise: Int = 0,
                          settings: MotionDetector.Settings? = nil) throws -> [MotionDetector.Verdict] {
        let settings = settings ?? .init(mask: [Self.counterStrip(size)])
        let source = TestPatternSource(size: size, fps: fps, realTime: false, picture: .eventScene)
        let pool = PixelBufferPool(format: .nv12, width: size.width, height: size.height, capacity: 3)
        try source.start(pool: pool)
        defer { source.stop() }
        let detector = MotionDetector(width: size.width, height: size.height, settings: settings)
        var got: [MotionDetector.Verdict] = []
        var bits: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<frames {
            let frame = try XCTUnwrap(source.nextFrame())
            if noise > 0 {
                let luma = frame.planes[0]
                for y in 0..<luma.height {
                    let row = luma.base + y * luma.stride
                    for x in 0..<luma.width {
                        bits ^= bits << 13; bits ^= bits >> 7; bits ^= bits << 17
                        row[x] = UInt8(clamping: Int(row[x]) + Int(bits % UInt64(2 * noise + 1)) - noise)
                    }
                }
            }
            got.append(detector.look(at: frame))
            frame.recycle()
        }
        return got
    }

    private func isMotion(_ verdict: MotionDetector.Verdict) -> Bool {
        if case .motion = verdict { return true }
        return false
    }

    private func score(_ verdict: MotionDetector.Verdict) -> Double {
        switch verdict {
        case .learning: 0
        case .still(let s), .motion(let s), .globalChange(let s): s
        }
    }

    func testMotionOnlyWhileTheObjectCrossesAndNeverForNoiseOrTheLights() throws {
        // The scene's own noise (at most 3) is far below the threshold; this adds up to 14 either way in
        // every sample, above it, as a camera in poor light gives. Only taking a cell's brightness as the
        // mean of its 16 samples keeps such noise from being motion.
        let noise = 14
        XCTAssertGreaterThan(noise, MotionDetector.Settings.defaultThreshold)
        for (size, fps) in [(FrameSize(width: 640, height: 360), 10.0), (FrameSize(width: 320, height: 240), 30.0)] {
            let scene = TestScene(size: size, fps: fps)
            let frames = Int(scene.periodFrames) * 2 + 10
            let got = try verdicts(size: size, fps: fps, frames: frames, noise: noise)
            // The trail a passing object leaves in the background fades within 15 frames (1/8 a frame).
            let trail = 15
            for period in 0..<2 {
                let base = period * Int(scene.periodFrames)
                let object = (base + Int(scene.objectFrames.lowerBound))..<(base + Int(scene.objectFrames.upperBound))
                let motion = (base..<min(frames, base + Int(scene.periodFrames))).filter { isMotion(got[$0]) }
                let context = "\(size) @ \(fps) fps, period \(period): motion in \(motion)"
                XCTAssertTrue(motion.allSatisfy { object.lowerBound <= $0 && $0 < object.upperBound + trail }, context)
                XCTAssertEqual(motion.first.map { $0 < object.lowerBound + 3 }, true, "noticed within 3 frames of entering: " + context)
                XCTAssertGreaterThanOrEqual(motion.filter { object.contains($0) }.count, object.count * 8 / 10,
                                            "most of the crossing: " + context)
                let lights = base + Int(scene.lightsFrames.lowerBound)
                XCTAssertFalse(isMotion(got[lights]) || isMotion(got[lights + 1]), "lights on: \(got[lights]) \(got[lights + 1])")
                if base + Int(scene.periodFrames) + 1 < frames {
                    let off = base + Int(scene.periodFrames)
                    XCTAssertFalse(isMotion(got[off]) || isMotion(got[off + 1]), "lights off: \(got[off]) \(got[off + 1])")
                }
            }
            let stillScores = got.indices.filter { i in
                let phase = UInt64(i) % scene.periodFrames
                if case .globalChange = got[i] { return false }
                return !(scene.objectFrames.lowerBound..<(scene.objectFrames.upperBound + UInt64(trail))).contains(phase)
            }.map { score(got[$0]) }
            print("motion: \(size) @ \(fps) fps, noise ±\(noise): the largest score of a frame without the object or the lights switching: \(stillScores.max() ?? 0)")
        }
    }

    func testTheLightsAreNoMotionEvenWithoutTheGlobalGuard() throws {
        // globalFraction 1: only taking the picture's mean change off keeps the lights from being motion.
        let size = FrameSize(width: 320, height: 240)
        let scene = TestScene(size: size, fps: 10)
        let got = try verdicts(size: size, fps: 10, frames: Int(scene.periodFrames) + 5,
                               settings: .init(globalFraction: 1, mask: [Self.counterStrip(size)]))
        let lights = Int(scene.lightsFrames.lowerBound), off = Int(scene.periodFrames)
        for i in [lights, lights + 1, lights + 2, off, off + 1, off + 2] {
            XCTAssertFalse(isMotion(got[i]), "frame \(i): \(got[i])")
        }
    }

    /// Issue 47: unmasked, the counter's cells neither brighten with the lights nor keep still; at
    /// 1280x720 they are under the motion area (the lowest 5-7 of its 34 cells change, of 3600 cells).
    func testTheLightsAreNoMotionWhileTheUnmaskedCounterChangesAndStaysAsBright() throws {
        let size = FrameSize(width: 1280, height: 720)
        let scene = TestScene(size: size, fps: 10)
        let got = try verdicts(size: size, fps: 10, frames: Int(scene.periodFrames) + 5, settings: .init())
        let motion = got.indices.filter { isMotion(got[$0]) }
        let crossing = Int(scene.objectFrames.lowerBound)..<(Int(scene.objectFrames.upperBound) + 15)
        XCTAssertTrue(motion.allSatisfy { crossing.contains($0) }, "motion only while the object crosses \(crossing) and its trail fades: \(motion)")
        XCTAssertEqual(motion.first.map { $0 < crossing.lowerBound + 3 }, true, "the crossing is still noticed: \(motion)")
        for i in [Int(scene.lightsFrames.lowerBound), Int(scene.periodFrames)] {
            guard case .globalChange(let share) = got[i], share >= 3566.0 / 3600 else {
                return XCTFail("frame \(i): the lights change all cells but the counter's 34: \(got[i])")
            }
        }
    }

    /// A room (16x16 cells of 40-119) with a timestamp overlay whose text covers half of each of its 20
    /// cells (not lit), and a fan of 3 cells (lit) that changes every frame; the lights add 60 in frames
    /// 10-19. The overlay's cells change by half the room's step; the fan is under the motion area.
    func testTheLightsAreNoMotionWhileAnOverlayStaysAsBrightAndAFanTurns() {
        let width = 640, height = 360
        let detector = MotionDetector(width: width, height: height)
        var plane = [UInt8](repeating: 0, count: width * height)
        var random: UInt64 = 0x9E37_79B9_7F4A_7C15
        var got: [MotionDetector.Verdict] = []
        for frame in 0..<40 {
            let lights = (10..<20).contains(frame) ? 60 : 0
            for y in 0..<height {
                for x in 0..<width {
                    random ^= random << 13; random ^= random >> 7; random ^= random << 17
                    var value = 40 + (x / 16 * 7 + y / 16 * 13) % 80 + lights + Int(random & 7) - 4
                    if (16..<32).contains(y) && (16..<336).contains(x) && x % 16 < 8 { value = 235 }
                    if (160..<176).contains(y) && (320..<368).contains(x) { value += frame % 2 == 0 ? 40 : -30 }
                    plane[y * width + x] = UInt8(min(235, max(16, value)))
                }
            }
            got.append(plane.withUnsafeBufferPointer { detector.look(luma: $0.baseAddress!, stride: width) })
        }
        XCTAssertFalse(got.contains { isMotion($0) }, "\(got.enumerated().filter { isMotion($0.element) }.map(\.offset))")
        for i in [10, 20] {
            guard case .globalChange = got[i] else { return XCTFail("frame \(i), the lights: \(got[i])") }
        }
        XCTAssertTrue(got[3...9].allSatisfy { score($0) == 3.0 / 880 }, "the fan's 3 cells, seen: \(got[3...9])")
    }

    /// docs/EVENTS.md's rule: an event stays open while `--motion-area` of the watched picture keeps
    /// changing. At 640x360 (880 cells) the default 0.5% is 4.4 cells: 5 cells that change every frame
    /// are motion in every frame, 4 never, 5 masked never; the test scene's counter, unmasked, is motion
    /// from frame 17 on (its lowest five cells, the fifth first changing in frame 16).
    func testSteadyChangeOverTheMotionAreaIsMotionInEveryFrameAndUnderItNever() throws {
        let width = 640, height = 360
        func verdicts(changing cells: Int, mask: [MotionDetector.Rectangle] = []) -> [MotionDetector.Verdict] {
            let detector = MotionDetector(width: width, height: height, settings: .init(mask: mask))
            var plane = [UInt8](repeating: 100, count: width * height)
            return (0..<40).map { frame in
                for y in 64..<80 {
                    for x in 64..<(64 + cells * 16) { plane[y * width + x] = frame % 2 == 0 ? 200 : 40 }
                }
                return plane.withUnsafeBufferPointer { detector.look(luma: $0.baseAddress!, stride: width) }
            }
        }
        let five = verdicts(changing: 5)
        XCTAssertTrue(five[2...].allSatisfy(isMotion), "\(five)")
        XCTAssertFalse(verdicts(changing: 4).contains { isMotion($0) })
        XCTAssertFalse(verdicts(changing: 5, mask: [.init(x: 64, y: 64, width: 80, height: 16)]).contains { isMotion($0) })

        let size = FrameSize(width: 640, height: 360)
        let scene = TestScene(size: size, fps: 10)
        let counter = try self.verdicts(size: size, fps: 10, frames: Int(scene.objectFrames.lowerBound), settings: .init())
        XCTAssertEqual(counter.indices.filter { isMotion(counter[$0]) }, Array(17..<counter.count))
    }

    func testAPictureThatTurnsGreyIsAGlobalChangeAndTheBackgroundStartsAgain() {
        // A camera's day/night switch: texture gone, the mean brightness the same. Every cell differs.
        let width = 320, height = 240
        let textured = (0..<(width * height)).map { i in UInt8(((i % width) / 16 + (i / width) / 16) % 2 == 0 ? 60 : 180) }
        let grey = [UInt8](repeating: 120, count: width * height)
        let detector = MotionDetector(width: width, height: height)
        func look(_ plane: [UInt8]) -> MotionDetector.Verdict {
            plane.withUnsafeBufferPointer { detector.look(luma: $0.baseAddress!, stride: width) }
        }
        XCTAssertEqual(look(textured), .learning)
        XCTAssertEqual(look(textured), .still(score: 0))
        XCTAssertEqual(look(grey), .globalChange(score: 1))
        XCTAssertEqual(look(grey), .still(score: 0), "learned again from the grey picture")
        XCTAssertEqual(look(grey), .still(score: 0))
    }

    func testAMaskedObjectIsNoMotion() throws {
        let size = FrameSize(width: 640, height: 360)
        let scene = TestScene(size: size, fps: 10)
        // The band the object crosses in, masked.
        let side = size.height / 3
        let mask = MotionDetector.Rectangle(x: 0, y: (size.height - side) / 2 - 16, width: size.width, height: side + 32)
        let got = try verdicts(size: size, fps: 10, frames: Int(scene.objectFrames.upperBound) + 20,
                               settings: .init(mask: [mask, Self.counterStrip(size)]))
        XCTAssertFalse(got.contains { isMotion($0) }, "\(got.enumerated().filter { isMotion($0.element) }.map(\.offset))")
    }

    /// The same band and counter strip as `testAMaskedObjectIsNoMotion`, drawn black on a quarter-size
    /// white PGM (as a user draws on a snapshot), hide the crossing; the same image all white does not.
    func testADrawnMaskStretchedOverThePictureHidesTheObject() throws {
        let size = FrameSize(width: 640, height: 360)
        let scene = TestScene(size: size, fps: 10)
        let (width, height) = (size.width / 4, size.height / 4)
        let side = size.height / 3
        let band = ((size.height - side) / 2 - 16)..<((size.height - side) / 2 + side + 16)
        func pgm(drawn: Bool) -> [UInt8] {
            var bytes = Array("P5\n# drawn on a snapshot\n\(width) \(height)\n255\n".utf8)
            for row in 0..<height {
                let y = row * 4
                let black = drawn && (y < 48 || band.contains(y))
                bytes += [UInt8](repeating: black ? 0 : 255, count: width)
            }
            return bytes
        }
        let frames = Int(scene.objectFrames.upperBound) + 20
        let hidden = try verdicts(size: size, fps: 10, frames: frames, settings: .init(maskImage: GrayMask(pgm: pgm(drawn: true))))
        XCTAssertFalse(hidden.contains { isMotion($0) }, "\(hidden.enumerated().filter { isMotion($0.element) }.map(\.offset))")
        let seen = try verdicts(size: size, fps: 10, frames: frames,
                                settings: .init(mask: [Self.counterStrip(size)], maskImage: GrayMask(pgm: pgm(drawn: false))))
        XCTAssertTrue(seen.contains { isMotion($0) }, "an all-white mask hides nothing")
    }

    func testAMaskOverTheWholePictureLeavesNothingToWatch() throws {
        let black = try GrayMask(pgm: Array("P2 2 1 15 7 3".utf8))
        XCTAssertEqual(MotionDetector(width: 640, height: 360, settings: .init(maskImage: black)).countedCells, 0)
        let all = MotionDetector.Rectangle(x: 0, y: 0, width: 100_000, height: 100_000)
        XCTAssertEqual(MotionDetector(width: 640, height: 360, settings: .init(mask: [all])).countedCells, 0)
        XCTAssertEqual(MotionDetector(width: 640, height: 360).countedCells, 40 * 22)
    }

    func testPGMFilesAreReadOrRefusedWithTheReason() throws {
        let sixteenBit = try GrayMask(pgm: Array("P5 2 1 1000\n".utf8) + [0x01, 0xF3, 0x01, 0xF4])
        XCTAssertEqual(sixteenBit.hidden, [true, false], "499 of 1000 hides, 500 does not")
        let text = try GrayMask(pgm: Array("P2\n#c\n3 1\n#c\n255\n0 127 128\n".utf8))
        XCTAssertEqual(text.hidden, [true, true, false])
        XCTAssertTrue(text.hides(x: 639, y: 0, frameWidth: 1920, frameHeight: 1080) == true)
        XCTAssertFalse(text.hides(x: 1919, y: 1079, frameWidth: 1920, frameHeight: 1080))
        let refused: [(String, [UInt8])] = [
            ("PNG", [0x89, 0x50, 0x4E, 0x47]), ("empty", []), ("P6 colour", Array("P6 1 1 255\n\0\0\0".utf8)),
            ("cut short", Array("P5 4 4 255\n".utf8) + [0, 0, 0]), ("zero width", Array("P5 0 4 255\n".utf8)),
            ("too wide", Array("P5 8193 1 255\n".utf8) + [UInt8](repeating: 0, count: 8193)),
            ("huge number", Array("P5 99999999999999999999 1 255\n".utf8)), ("maxval 0", Array("P5 1 1 0\n\0".utf8)),
            ("maxval 65536", Array("P5 1 1 65536\n\0\0".utf8)), ("text above maximum", Array("P2 1 1 15 16".utf8)),
            ("text short", Array("P2 2 1 15 3".utf8)), ("negative", Array("P2 1 1 15 -1".utf8)),
        ]
        for (name, bytes) in refused {
            XCTAssertThrowsError(try GrayMask(pgm: bytes), name)
        }
    }

    func testTheFirstFrameIsLearnedAndSettingsAreClamped() {
        let settings = MotionDetector.Settings(threshold: 1000, minimumArea: .nan, globalFraction: -3, framesToConfirm: 0)
        XCTAssertEqual(settings.threshold, 255)
        XCTAssertEqual(settings.minimumArea, MotionDetector.Settings.defaultMinimumArea)
        XCTAssertEqual(settings.globalFraction, 0)
        XCTAssertEqual(settings.framesToConfirm, 1)
        let detector = MotionDetector(width: 64, height: 32)
        let plane = [UInt8](repeating: 100, count: 64 * 32)
        XCTAssertEqual(plane.withUnsafeBufferPointer { detector.look(luma: $0.baseAddress!, stride: 64) }, .learning)
        XCTAssertEqual(plane.withUnsafeBufferPointer { detector.look(luma: $0.baseAddress!, stride: 64) }, .still(score: 0))
    }
}
