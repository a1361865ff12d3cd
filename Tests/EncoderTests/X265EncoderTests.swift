import Bitstream
import Capture
import Frames
import Encoder
import TestSupport
import XCTest

/// libx265 called directly must make what libx265 through libavcodec made: the same bytes, packet
/// for packet, with the same keyframe flags and sequence numbers.
final class X265EncoderTests: XCTestCase {
    private func assertSameBytes(_ settings: EncoderSettings, frames: Int = 24, idrs: Set<Int> = [0, 7, 8, 19],
                                 finishAfter: Int? = nil, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try compareEncoders(reference: try SoftwareEncoder(settings: settings), direct: X265Encoder(settings: settings), settings: settings,
                            frames: frames, idrs: idrs, finishAfter: finishAfter, sameBytes: true, label, file: file, line: line)
    }

    private func settings(_ size: FrameSize = FrameSize(width: 320, height: 240), fps: Double = 30, bitrate: Int? = 400_000,
                          qp: Int? = nil, preset: String = "ultrafast", slices: Int = 1, threads: Int = 1) -> EncoderSettings {
        EncoderSettings(codec: .hevc, size: size, framesPerSecond: fps, keyframeInterval: 10, bitrate: bitrate,
                        constantQP: qp, preset: preset, slicesPerPicture: slices, softwareThreads: threads)
    }

    func testTheSameBytesAsLibavcodecsLibx265WithEachPreset() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable(.hevc), "libavcodec has no libx265 to compare with")
        for preset in ["ultrafast", "veryfast", "medium"] {
            try assertSameBytes(settings(preset: preset), preset)
        }
    }

    func testTheSameBytesAsLibavcodecsLibx265WithEachRateControlTimingAndSize() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable(.hevc), "libavcodec has no libx265 to compare with")
        try assertSameBytes(settings(bitrate: 777_777), "an odd bit rate")
        try assertSameBytes(settings(bitrate: nil), "the bit rate camrec picks")
        try assertSameBytes(settings(qp: 20), "constant QP 20")
        try assertSameBytes(settings(fps: 30000.0 / 1001), "29.97 fps")
        try assertSameBytes(settings(fps: 7.5), "7.5 fps")
        try assertSameBytes(settings(FrameSize(width: 640, height: 360), bitrate: 6_000_000), "640x360 at 6 Mbit/s")
        // Squeezed: here the VBV binds, so its size and rate must be libavcodec's too.
        try assertSameBytes(settings(FrameSize(width: 640, height: 360), bitrate: 60_000), frames: 40, "640x360 at 60 kbit/s")
        try assertSameBytes(settings(FrameSize(width: 48, height: 40)), "48x40: 32x32 coding units")
        try assertSameBytes(settings(FrameSize(width: 24, height: 20)), "24x20: 16x16 coding units")
    }

    func testTheSameBytesAsLibavcodecsLibx265WithThreadsAndSlices() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable(.hevc), "libavcodec has no libx265 to compare with")
        try assertSameBytes(settings(threads: 2), "two frame threads")
        try assertSameBytes(settings(threads: 0), "threads camrec picks")
        try assertSameBytes(settings(slices: 2), "two slices")
    }

    func testTheSameBytesAsLibavcodecsLibx265AcrossACameraGap() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable(.hevc), "libavcodec has no libx265 to compare with")
        try assertSameBytes(settings(), finishAfter: 12, "one thread, frames finished after frame 12")
        try assertSameBytes(settings(threads: 2), finishAfter: 12, "frame threads, frames finished after frame 12")
    }

    func testTooSmallAPictureIsReportedAsUnavailable() throws {
        let encoder = X265Encoder(settings: settings(FrameSize(width: 14, height: 14)))
        XCTAssertThrowsError(try encoder.start()) { error in
            XCTAssertEqual((error as? EncoderError)?.kind, .unavailable)
            XCTAssertTrue("\(error)".contains("smaller than 16x16"), "\(error)")
        }
    }

    func testEachPacketCarriesItsFramesOwnPresentationTime() throws {
        let settings = settings()
        try assertPacketsCarryTheirFramesTimes(X265Encoder(settings: settings), settings: settings)
    }

}
