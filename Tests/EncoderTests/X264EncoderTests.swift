import Bitstream
import Capture
import Frames
import Encoder
import TestSupport
import XCTest

/// libx264 called directly must make what libx264 through libavcodec made: the same bytes, packet
/// for packet (x264's SEI in the first packet lists every parameter it ran with, so equal bytes
/// also mean equal settings), with the same keyframe flags and sequence numbers.
final class X264EncoderTests: XCTestCase {
    /// One thread: the same bytes. x264 with several threads is not deterministic itself (two runs
    /// through libavcodec differ from the tenth frame on, measured), so there: the same parameter
    /// SEI, the same frames, keyframes and NAL unit types (slice count included) in every packet.
    private func assertSameBytes(_ settings: EncoderSettings, frames: Int = 24, idrs: Set<Int> = [0, 7, 8, 19],
                                 finishAfter: Int? = nil, _ label: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let deterministic = settings.slicesPerPicture == 1 && settings.softwareThreads == 1
        let (reference, direct) = try compareEncoders(reference: try SoftwareEncoder(settings: settings), direct: X264Encoder(settings: settings),
                                                      settings: settings, frames: frames, idrs: idrs, finishAfter: finishAfter,
                                                      sameBytes: deterministic, label, file: file, line: line)
        if !deterministic {
            let types = { (packets: [ComparedPacket]) in packets.map { AnnexBScanner.units(in: $0.bytes).map(\.type) } }
            XCTAssertEqual(types(direct), types(reference), "\(label): NAL unit types", file: file, line: line)
            let sei = { (packets: [ComparedPacket]) in packets.first.flatMap { AnnexBScanner.units(in: $0.bytes).first { $0.type == .sei }?.bytes } }
            XCTAssertNotNil(sei(reference), "\(label): x264 wrote its parameter SEI", file: file, line: line)
            XCTAssertEqual(sei(direct), sei(reference), "\(label): x264's parameters", file: file, line: line)
        }
    }

    private func settings(_ size: FrameSize = FrameSize(width: 320, height: 240), fps: Double = 30, bitrate: Int? = 400_000,
                          qp: Int? = nil, profile: H264Profile = .high, preset: String = "veryfast", slices: Int = 1,
                          threads: Int = 1, planar: Bool = false) -> EncoderSettings {
        var settings = EncoderSettings(codec: .h264, size: size, framesPerSecond: fps, keyframeInterval: 10, bitrate: bitrate,
                                       constantQP: qp, profile: profile, preset: preset, slicesPerPicture: slices,
                                       softwareThreads: threads)
        settings.planarInput = planar
        return settings
    }

    func testTheSameBytesAsLibavcodecsLibx264WithEachPresetAndProfile() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable, "libavcodec has no libx264 to compare with")
        for preset in ["ultrafast", "veryfast", "medium"] {
            for profile in H264Profile.allCases {
                try assertSameBytes(settings(profile: profile, preset: preset), "\(preset) \(profile)")
            }
        }
    }

    func testTheSameBytesAsLibavcodecsLibx264WithEachRateControlAndTiming() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable, "libavcodec has no libx264 to compare with")
        try assertSameBytes(settings(bitrate: 777_777), "an odd bit rate")
        try assertSameBytes(settings(bitrate: nil), "the bit rate camrec picks")
        try assertSameBytes(settings(qp: 20), "constant QP 20")
        try assertSameBytes(settings(fps: 30000.0 / 1001), "29.97 fps")
        try assertSameBytes(settings(fps: 7.5), "7.5 fps")
        try assertSameBytes(settings(FrameSize(width: 640, height: 360), bitrate: 6_000_000, preset: "ultrafast"), "640x360 at 6 Mbit/s")
    }

    func testTheSameBytesAsLibavcodecsLibx264WithThreadsSlicesAndPlanarInput() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable, "libavcodec has no libx264 to compare with")
        try assertSameBytes(settings(threads: 2), "two frame threads")
        try assertSameBytes(settings(threads: 0), "threads x264 picks")
        try assertSameBytes(settings(slices: 2), "two slices on sliced threads")
        try assertSameBytes(settings(slices: 3, threads: 2), "three slices")
        try assertSameBytes(settings(planar: true), "I420 input")
    }

    func testTheSameBytesAsLibavcodecsLibx264AcrossACameraGap() throws {
        try XCTSkipUnless(SoftwareEncoder.isAvailable, "libavcodec has no libx264 to compare with")
        try assertSameBytes(settings(), finishAfter: 12, "one thread, frames finished after frame 12")
        try assertSameBytes(settings(threads: 2), finishAfter: 12, "frame threads, frames finished after frame 12")
    }

    func testAFrameAfterFinishPendingIsAnIDRWithItsParameterSets() throws {
        let settings = settings(threads: 2)
        let packets = try encodeTestPattern(X264Encoder(settings: settings), settings: settings, frames: 20, idrs: [0], finishAfter: 5)
        XCTAssertEqual(packets.map(\.sequence), Array(0..<20), "frame threads drained: no frame lost")
        XCTAssertEqual(packets.filter(\.key).map(\.sequence), [0, 6, 16], "IDRs at the start, after the gap, 10 frames after it")
        for packet in packets where packet.key {
            let types = AnnexBScanner.units(in: packet.bytes).map(\.type)
            XCTAssertTrue(types.contains(.sps) && types.contains(.pps) && types.contains(.idrSlice), "frame \(packet.sequence): \(types)")
        }
    }

    func testImpossibleSettingsAreReportedAsUnavailableInX264sWords() throws {
        let badPreset = X264Encoder(settings: settings(preset: "no-such-preset"))
        XCTAssertThrowsError(try badPreset.start()) { error in
            XCTAssertEqual((error as? EncoderError)?.kind, .unavailable)
            XCTAssertTrue("\(error)".contains("no-such-preset"), "\(error)")
        }
        // Constant QP 0 is lossless, which no profile camrec offers carries: say what to do.
        let lossless = X264Encoder(settings: settings(qp: 0))
        XCTAssertThrowsError(try lossless.start()) { error in
            XCTAssertEqual((error as? EncoderError)?.kind, .unavailable)
            XCTAssertTrue("\(error)".contains("use --qp 1 or more"), "\(error)")
        }
        // NV12 needs an even width; x264's own reason ends camrec's one line.
        let oddWidth = X264Encoder(settings: settings(FrameSize(width: 321, height: 240)))
        XCTAssertThrowsError(try oddWidth.start()) { error in
            XCTAssertEqual((error as? EncoderError)?.kind, .unavailable)
            XCTAssertTrue("\(error)".contains("divisible by 2"), "\(error)")
        }
    }

    func testEachPacketCarriesItsFramesOwnPresentationTime() throws {
        let settings = settings()
        try assertPacketsCarryTheirFramesTimes(X264Encoder(settings: settings), settings: settings)
    }

}
