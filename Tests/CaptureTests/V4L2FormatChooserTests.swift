@testable import Capture
import Frames
import XCTest

final class V4L2FormatChooserTests: XCTestCase {
    private func fps(_ rates: Double...) -> V4L2FrameIntervals {
        .discrete(rates.map { V4L2Fraction(framesPerSecond: $0) })
    }

    private func size(_ w: Int, _ h: Int, _ rates: V4L2FrameIntervals) -> V4L2SizeOffer {
        V4L2SizeOffer(size: FrameSize(width: w, height: h), intervals: rates)
    }

    /// A typical UVC webcam: YUYV up to 720p at low rates, MJPEG up to 1080p30.
    private var webcam: [V4L2FormatOffer] {
        [
            V4L2FormatOffer(pixelFormat: .mjpeg, isCompressed: true, sizes: .discrete([
                size(640, 480, fps(30, 15)), size(1280, 720, fps(30, 15)), size(1920, 1080, fps(30, 15)),
            ])),
            V4L2FormatOffer(pixelFormat: .yuyv, sizes: .discrete([
                size(640, 480, fps(30, 15)), size(1280, 720, fps(10, 5)),
            ])),
        ]
    }

    func testNV12IsPreferredOverYUYVAtTheSameSize() throws {
        let offers = [
            V4L2FormatOffer(pixelFormat: .yuyv, sizes: .discrete([size(1280, 720, fps(30))])),
            V4L2FormatOffer(pixelFormat: .rgb24, sizes: .discrete([size(1280, 720, fps(30))])),
            V4L2FormatOffer(pixelFormat: .nv12, sizes: .discrete([size(1280, 720, fps(30))])),
        ]
        let choice = try V4L2FormatChooser.choose(from: offers, request: .init())
        XCTAssertEqual(choice.pixelFormat, .nv12)
        XCTAssertEqual(choice.size, FrameSize(width: 1280, height: 720))
        XCTAssertEqual(choice.interval, V4L2Fraction(numerator: 1, denominator: 30))
    }

    func testPackedYUVBeatsRGBAndGrey() throws {
        let offers = [V4L2PixelFormat.grey, .rgb24, .uyvy].map {
            V4L2FormatOffer(pixelFormat: $0, sizes: .discrete([size(640, 480, fps(30))]))
        }
        XCTAssertEqual(try V4L2FormatChooser.choose(from: offers, request: .init()).pixelFormat, .uyvy)
    }

    /// Rate beats format: USB 2.0 limits YUYV at 720p to 10 fps, MJPEG runs at 30.
    func testWebcamDefaultsTo720pMJPEGAt30RatherThanYUYVAt10() throws {
        let choice = try V4L2FormatChooser.choose(from: webcam, request: .init())
        XCTAssertEqual(choice.pixelFormat, .mjpeg)
        XCTAssertEqual(choice.size, FrameSize(width: 1280, height: 720))
        XCTAssertEqual(choice.interval?.framesPerSecond, 30)
    }

    func testWebcamGivesYUYVAtTheRateAskedForWhenItHasIt() throws {
        let choice = try V4L2FormatChooser.choose(from: webcam, request: .init(framesPerSecond: 10))
        XCTAssertEqual(choice.pixelFormat, .yuyv)
        XCTAssertEqual(choice.size, FrameSize(width: 1280, height: 720))
        let slow = try V4L2FormatChooser.choose(from: webcam, request: .init(size: FrameSize(width: 640, height: 480)))
        XCTAssertEqual(slow.pixelFormat, .yuyv, "same size, same rate: uncompressed wins")
        XCTAssertEqual(slow.interval?.framesPerSecond, 30)
    }

    /// Size beats format.
    func testMJPEG720pBeatsYUYVOnlyUpTo480p() throws {
        let offers = [
            V4L2FormatOffer(pixelFormat: .yuyv, sizes: .discrete([size(320, 240, fps(30)), size(640, 480, fps(30))])),
            V4L2FormatOffer(pixelFormat: .mjpeg, isCompressed: true, sizes: .discrete([
                size(640, 480, fps(30)), size(1280, 720, fps(30)),
            ])),
        ]
        let choice = try V4L2FormatChooser.choose(from: offers, request: .init())
        XCTAssertEqual(choice.pixelFormat, .mjpeg)
        XCTAssertEqual(choice.size, FrameSize(width: 1280, height: 720))
        XCTAssertEqual(choice.interval?.framesPerSecond, 30)
    }

    func testMJPEGRanksAfterUncompressedColourAndBeforeGrey() throws {
        func choose(_ formats: [V4L2PixelFormat]) throws -> V4L2PixelFormat {
            try V4L2FormatChooser.choose(from: formats.map {
                V4L2FormatOffer(pixelFormat: $0, sizes: .discrete([size(1280, 720, fps(30, 15))]))
            }, request: .init()).pixelFormat
        }
        XCTAssertEqual(try choose([.mjpeg, .yuyv]), .yuyv)
        XCTAssertEqual(try choose([.mjpeg, .nv21]), .nv21)
        XCTAssertEqual(try choose([.mjpeg, .rgb24]), .rgb24)
        XCTAssertEqual(try choose([.grey, .mjpeg]), .mjpeg)
        XCTAssertEqual(try choose([.grey, .jpeg]), .jpeg, "'JPEG' is MJPEG under another code")
        XCTAssertEqual(try choose([.mjpeg]), .mjpeg)
    }

    func testRateRanking() {
        func better(_ a: V4L2Fraction?, _ b: V4L2Fraction?) -> Bool { V4L2FormatChooser.rateRank(a) < V4L2FormatChooser.rateRank(b) }
        XCTAssertTrue(better(V4L2Fraction(framesPerSecond: 30), V4L2Fraction(framesPerSecond: 25)))
        XCTAssertTrue(better(V4L2Fraction(numerator: 1001, denominator: 30000), V4L2Fraction(framesPerSecond: 25)))
        XCTAssertTrue(better(V4L2Fraction(framesPerSecond: 25), V4L2Fraction(framesPerSecond: 10)))
        XCTAssertTrue(better(V4L2Fraction(framesPerSecond: 10), V4L2Fraction(framesPerSecond: 60)))
        XCTAssertTrue(better(V4L2Fraction(framesPerSecond: 60), nil))
    }

    func testFpsWithoutSizePicksTheBestSizeRunningAtThatRate() throws {
        let choice = try V4L2FormatChooser.choose(from: [webcam[1]], request: .init(framesPerSecond: 30))
        XCTAssertEqual(choice.size, FrameSize(width: 640, height: 480))
        XCTAssertEqual(choice.interval?.framesPerSecond, 30)
    }

    func testWithout720pTheLargestSizeWithin1080pIsTaken() throws {
        let offers = [V4L2FormatOffer(pixelFormat: .yuyv, sizes: .discrete([
            size(320, 240, fps(30)), size(800, 600, fps(30)), size(2592, 1944, fps(5)),
        ]))]
        XCTAssertEqual(try V4L2FormatChooser.choose(from: offers, request: .init()).size, FrameSize(width: 800, height: 600))
    }

    func testRateOf2997MatchesARequestFor30() throws {
        let offers = [V4L2FormatOffer(pixelFormat: .nv12, sizes: .discrete([
            size(1280, 720, .discrete([V4L2Fraction(numerator: 1001, denominator: 30000)])),
        ]))]
        let choice = try V4L2FormatChooser.choose(from: offers, request: .init(framesPerSecond: 30))
        XCTAssertEqual(choice.interval, V4L2Fraction(numerator: 1001, denominator: 30000))
    }

    func testUnsupportedRequestsListWhatIsOffered() {
        XCTAssertThrowsError(try V4L2FormatChooser.choose(
            from: webcam, request: .init(size: FrameSize(width: 1000, height: 500)), device: "/dev/video0")) { error in
            let e = error as! CaptureError
            XCTAssertEqual(e.kind, .unsupportedFormat)
            XCTAssertEqual(e.message, "/dev/video0 does not offer 1000x500; sizes offered: 640x480, 1280x720, 1920x1080")
        }
        XCTAssertThrowsError(try V4L2FormatChooser.choose(
            from: webcam, request: .init(size: FrameSize(width: 1280, height: 720), framesPerSecond: 60))) { error in
            XCTAssertTrue((error as! CaptureError).message.hasSuffix("rates offered at 1280x720: YUYV: 5, 10 fps; MJPG: 15, 30 fps"),
                          (error as! CaptureError).message)
        }
        XCTAssertThrowsError(try V4L2FormatChooser.choose(
            from: [webcam[1]], request: .init(size: FrameSize(width: 1280, height: 720), framesPerSecond: 30))) { error in
            XCTAssertTrue((error as! CaptureError).message.hasSuffix("rates offered at 1280x720: 5, 10 fps"))
        }
        let withH264 = webcam + [V4L2FormatOffer(pixelFormat: .h264, isCompressed: true,
                                                 sizes: .discrete([size(1920, 1080, fps(30))]))]
        // H264 asked for is the camera's own stream, recorded as it is (--encoder camera); never chosen unasked.
        XCTAssertEqual(try V4L2FormatChooser.choose(from: withH264, request: .init(pixelFormat: .h264)),
                       V4L2FormatChoice(pixelFormat: .h264, size: FrameSize(width: 1920, height: 1080), interval: V4L2Fraction(numerator: 1, denominator: 30)))
        XCTAssertEqual(try V4L2FormatChooser.choose(from: withH264, request: .init()).pixelFormat, .mjpeg)
        XCTAssertThrowsError(try V4L2FormatChooser.choose(from: webcam, request: .init(pixelFormat: .nv12))) { error in
            XCTAssertTrue((error as! CaptureError).message.hasSuffix("does not offer pixel format NV12; it offers: MJPG, YUYV"))
        }
        XCTAssertThrowsError(try V4L2FormatChooser.choose(from: [withH264[2]], request: .init())) { error in
            XCTAssertEqual((error as! CaptureError).message,
                           "the camera offers no pixel format camrec can record (it offers: H264)")
        }
    }

    func testPixelFormatMJPEGIsHonoured() throws {
        let choice = try V4L2FormatChooser.choose(from: webcam, request: .init(size: FrameSize(width: 640, height: 480),
                                                                             pixelFormat: .mjpeg))
        XCTAssertEqual(choice.pixelFormat, .mjpeg)
        XCTAssertEqual(choice.interval?.framesPerSecond, 30)
        let fullHD = try V4L2FormatChooser.choose(from: [webcam[0]], request: .init())
        XCTAssertEqual(fullHD.size, FrameSize(width: 1280, height: 720))
        XCTAssertEqual(V4L2PixelFormat(name: "mjpeg"), .mjpeg)
        XCTAssertEqual(V4L2PixelFormat(name: "jpeg"), .jpeg)
    }

    func testRangesOfSizesAndRates() throws {
        let offers = [V4L2FormatOffer(pixelFormat: .yuyv, sizes: .range(
            minimum: FrameSize(width: 16, height: 16), maximum: FrameSize(width: 4096, height: 2160), stepWidth: 16, stepHeight: 8))]
        let choice = try V4L2FormatChooser.choose(from: offers, request: .init(framesPerSecond: 25))
        XCTAssertEqual(choice.size, FrameSize(width: 1280, height: 720))
        XCTAssertEqual(choice.interval, V4L2Fraction(numerator: 1, denominator: 25))
        XCTAssertThrowsError(try V4L2FormatChooser.choose(
            from: offers, request: .init(size: FrameSize(width: 1282, height: 720))))
    }

    func testFractionDescriptions() {
        XCTAssertEqual(V4L2Fraction(numerator: 2, denominator: 25).description, "12.5")
        XCTAssertEqual(V4L2Fraction(numerator: 1001, denominator: 30000).description, "29.97")
        XCTAssertEqual(V4L2Fraction(numerator: 1, denominator: 30).description, "30")
    }
}
