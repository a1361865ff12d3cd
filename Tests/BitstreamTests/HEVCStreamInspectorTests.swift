import Foundation
import XCTest

@testable import Bitstream

/// The one inspector on H.265 streams: libx265's own output (Tests/fixtures/hevc) and streams built
/// from its units in camrec's layout.
final class HEVCStreamInspectorTests: XCTestCase {
    private func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../fixtures/hevc/\(name)")
        return [UInt8](try Data(contentsOf: url))
    }

    private func units(_ bytes: [UInt8]) -> [NALUnit] {
        var scanner = AnnexBScanner()
        return scanner.append(bytes) + scanner.finish()
    }

    private func annexB(_ units: [NALUnit]) -> [UInt8] { units.flatMap { [0, 0, 0, 1] + $0.bytes } }

    /// All at once, one byte at a time, and in 7-byte pieces: the same report.
    private func inspect(_ bytes: [UInt8], codec: VideoCodec? = nil) -> StreamReport {
        var whole = StreamInspector(codec: codec)
        whole.append(bytes)
        let report = whole.finish()
        var byByte = StreamInspector(codec: codec)
        for byte in bytes { byByte.append([byte]) }
        XCTAssertEqual(byByte.finish(), report)
        var pieces = StreamInspector(codec: codec)
        for start in stride(from: 0, to: bytes.count, by: 7) { pieces.append(bytes[start..<min(bytes.count, start + 7)]) }
        XCTAssertEqual(pieces.finish(), report)
        return report
    }

    private func type(_ unit: NALUnit) -> UInt8 { VideoCodec.hevc.typeValue(of: unit.bytes) }

    func testLibx265OutputIsRecognisedAndItsThreeFaultsNamed() throws {
        let report = inspect(try fixture("x265-main-320x240-25fps.h265"))
        XCTAssertEqual(report.codec, .hevc)
        XCTAssertEqual(report.frameCount, 4)
        XCTAssertEqual(report.idrCount, 1)
        XCTAssertEqual(report.typeCounts[32], 2)
        XCTAssertEqual(report.hevc.sps?.displayedWidth, 320)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: report.violations.map { ($0.kind, $0.count) }),
                       [.threeByteStartCode: 4, .unitBetweenParameterSetsAndIDR: 1, .randomAccessNotIDR: 1, .notBare: 2])
        let text = report.render(verbose: true)
        XCTAssertTrue(text.contains("video: H.265/HEVC Main profile, Main tier, level 2, 320x240, 4:2:0 8-bit, 25 fps"), text)
        XCTAssertTrue(text.contains("frame 0: SEI stands between the PPS and the IDR slice"), text)
        XCTAssertTrue(text.contains("frame 1 is CRA"), text)
        XCTAssertTrue(text.contains("  21 CRA"), text)
        XCTAssertEqual(inspect(try fixture("x265-main-320x240-25fps.h265"), codec: .hevc), report)
    }

    func testCamrecsLayoutKeepsTheContract() throws {
        // libx265's VPS SPS PPS SEI IDR TRAIL, rewritten as camrec writes it by default: bare, 4-byte codes.
        let u = units(try fixture("x265-main422-10-322x242.h265"))
        XCTAssertEqual(u.map(type), [32, 33, 34, 39, 20, 1])
        let report = inspect(annexB([u[0], u[1], u[2], u[4], u[5]]))
        XCTAssertTrue(report.contractHolds, report.render(verbose: false))
        XCTAssertTrue(report.render(verbose: false).contains("stream contract: OK — 4-byte start codes on all 5 NAL units, VPS+SPS+PPS right before all 1 IDRs"))
        XCTAssertTrue(report.render(verbose: false).contains("bare: yes"))
        XCTAssertEqual(report.gopLengths, [2])
        // With --encoder-sei (SEI first): every rule holds but the bare one, which names the access unit.
        let withSEI = inspect(annexB([u[3], u[0], u[1], u[2], u[4], u[5]]))
        XCTAssertEqual(withSEI.violations.map(\.kind), [.notBare])
        XCTAssertTrue(withSEI.render(verbose: false).contains("access unit 0 is prefix SEI VPS SPS PPS IDR_N_LP at offset 0"), withSEI.render(verbose: false))
    }

    func testAMissingVPSIsNamed() throws {
        let u = units(try fixture("x265-main422-10-322x242.h265"))
        let report = inspect(annexB([u[1], u[2], u[4], u[5]]), codec: .hevc)
        XCTAssertEqual(Set(report.violations.map(\.kind)), [.doesNotBeginWithSPS, .idrWithoutParameterSets, .unknownParameterSetID])
        let text = report.render(verbose: false)
        XCTAssertTrue(text.contains("stream begins with SPS instead of VPS"), text)
        XCTAssertTrue(text.contains("frame 0 lacks VPS"), text)
        XCTAssertTrue(text.contains("VPS id 0"), text)
    }

    func testTheCodecIsGuessedFromTheFirstUnit() throws {
        let u = units(try fixture("x265-main-320x240-25fps.h265"))
        XCTAssertEqual(VideoCodec.guess(fromFirstUnit: u[0].bytes), .hevc)  // VPS
        XCTAssertEqual(VideoCodec.guess(fromFirstUnit: u[1].bytes), .hevc)  // SPS
        XCTAssertEqual(VideoCodec.guess(fromFirstUnit: u[3].bytes), .hevc)  // prefix SEI
        XCTAssertEqual(VideoCodec.guess(fromFirstUnit: u[4].bytes), .h264, "a slice does not start a stream")
        XCTAssertEqual(VideoCodec.guess(fromFirstUnit: [0x67, 0x64, 0x00, 0x1E]), .h264)  // H.264 SPS
        XCTAssertEqual(VideoCodec.guess(fromFirstUnit: [0x09, 0xF0]), .h264)  // H.264 AUD
        XCTAssertEqual(VideoCodec.guess(fromFirstUnit: [0x06, 0x05]), .h264)  // H.264 SEI
        XCTAssertEqual(VideoCodec.guess(fromFirstUnit: [0x40]), .h264, "too short for an H.265 header")
    }
}
