import Foundation
import XCTest

@testable import Bitstream

/// The one stream writer on libx265's H.265 output: what it fixes, checked by the inspector and by
/// the unit order itself.
final class HEVCStreamWriterTests: XCTestCase {
    private func units(_ name: String) throws -> [NALUnit] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../fixtures/hevc/\(name)")
        var scanner = AnnexBScanner()
        return scanner.append([UInt8](try Data(contentsOf: url))) + scanner.finish()
    }

    /// Access units as libx265 hands them over: each ends with its picture's slice, 3-byte codes kept.
    private func accessUnits(_ units: [NALUnit]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var current: [UInt8] = []
        for unit in units {
            current += (unit.startCodeLength == 3 ? [0, 0, 1] : [0, 0, 0, 1]) + unit.bytes
            if VideoCodec.hevc.role(ofType: VideoCodec.hevc.typeValue(of: unit.bytes)).isVCL {
                out.append(current)
                current = []
            }
        }
        return out
    }

    private func types(_ bytes: [UInt8]) -> [UInt8] {
        var scanner = AnnexBScanner()
        return (scanner.append(bytes) + scanner.finish()).map { VideoCodec.hevc.typeValue(of: $0.bytes) }
    }

    func testLibx265OutputIsRewrittenToKeepTheContract() throws {
        // VPS SPS PPS SEI(version) IDR | TRAIL, with 3-byte codes on the SEI and the IDR.
        var writer = AnnexBStreamWriter(codec: .hevc, maxSlicesPerPicture: 1)
        var output: [UInt8] = []
        let aus = accessUnits(try units("x265-main422-10-322x242.h265"))
        XCTAssertEqual(aus.count, 2)
        let first = try writer.write(accessUnit: aus[0], into: &output)
        XCTAssertTrue(first.isIDR)
        XCTAssertEqual(first.droppedUnits, 1, "libx265's version banner")
        XCTAssertFalse(first.insertedParameterSets)
        XCTAssertEqual(types(output), [32, 33, 34, 20])
        try writer.write(accessUnit: aus[1], into: &output)
        let report = StreamInspector.inspect(output)
        XCTAssertEqual(report.codec, .hevc)
        XCTAssertTrue(report.contractHolds, report.render(verbose: true))
        XCTAssertEqual(report.frameCount, 2)
        XCTAssertEqual(writer.hevcSequenceParameterSet?.displayedWidth, 322)
    }

    func testAnIDRWithoutParameterSetsGetsTheRememberedOnesInOrder() throws {
        let u = try units("x265-main422-10-322x242.h265")
        var writer = AnnexBStreamWriter(codec: .hevc)
        var output: [UInt8] = []
        // Parameter sets alone are held back and remembered; an SEI kept (not libx265's banner) stays ahead.
        let sets = [u[0], u[1], u[2]].flatMap { [UInt8]([0, 0, 0, 1]) + $0.bytes }
        XCTAssertTrue(try writer.write(accessUnit: sets, into: &output).heldBack)
        XCTAssertTrue(output.isEmpty)
        var keeping = AnnexBStreamWriter(codec: .hevc, layout: .encoderUnits, keepsEncoderVersionSEI: true)
        _ = try keeping.write(accessUnit: sets, into: &output)
        let idrOnly: [UInt8] = [0, 0, 1] + u[3].bytes + [UInt8]([0, 0, 1]) + u[4].bytes
        let info = try keeping.write(accessUnit: idrOnly, into: &output)
        XCTAssertTrue(info.insertedParameterSets)
        XCTAssertEqual(types(output), [39, 32, 33, 34, 20], "SEI ahead of VPS SPS PPS, right before the IDR slice")
        XCTAssertEqual(keeping.parameterSetsAnnexB().map(types), [32, 33, 34])
        XCTAssertEqual(StreamInspector.inspect(output).violations.map(\.kind), [.notBare], StreamInspector.inspect(output).render(verbose: true))
        // Without any VPS ever seen, an IDR cannot be made whole.
        var noVPS = AnnexBStreamWriter(codec: .hevc)
        let withoutVPS = [u[1], u[2], u[4]].flatMap { [UInt8]([0, 0, 0, 1]) + $0.bytes }
        XCTAssertThrowsError(try noVPS.write(accessUnit: withoutVPS, into: &output)) { error in
            XCTAssertEqual(error as? StreamContractError, .missingParameterSets)
        }
    }

    func testAPictureInTwoSliceSegmentsIsRefused() throws {
        let u = try units("x265-main422-10-322x242.h265")
        var writer = AnnexBStreamWriter(codec: .hevc, maxSlicesPerPicture: 1)
        var output: [UInt8] = []
        let twoSlices = [u[0], u[1], u[2], u[4], u[4]].flatMap { [UInt8]([0, 0, 0, 1]) + $0.bytes }
        XCTAssertThrowsError(try writer.write(accessUnit: twoSlices, into: &output)) { error in
            XCTAssertEqual(error as? StreamContractError, .tooManySlices(found: 2, allowed: 1))
        }
    }
}
