import XCTest
@testable import Bitstream

final class AnnexBStreamWriterTests: XCTestCase {
    private let sps = Units.sps()
    private let pps = Units.pps()
    private let idr = Units.slice(idr: true)
    private let p = Units.slice(idr: false)

    private func units(_ bytes: [UInt8]) -> [[UInt8]] {
        AnnexBScanner.units(in: bytes).map(\.bytes)
    }

    func testThreeByteStartCodesBecomeFourByte() throws {
        // libx264's pattern: 7(4) 8(4) 6(3) 5(3) 5(3), then 1(4) 1(3).
        let second = Units.slice(idr: true, firstMb: 150)
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = []
        let info = try writer.write(accessUnit: annexB([sps, pps, Units.sei, idr, second], startCodes: [4, 4, 3, 3, 3]),
                                    into: &output)
        XCTAssertEqual(output, annexB([sps, pps, idr, second]))
        XCTAssertEqual(info, AccessUnitInfo(isIDR: true, nalCount: 4, insertedParameterSets: false,
                                            byteCount: output.count, containsSPS: true, containsPPS: true, droppedUnits: 1))
        let before = output.count
        let pInfo = try writer.write(accessUnit: annexB([p, Units.slice(idr: false, firstMb: 150)], startCodes: [4, 3]), into: &output)
        XCTAssertEqual(Array(output[before...]), annexB([p, Units.slice(idr: false, firstMb: 150)]))
        XCTAssertFalse(pInfo.isIDR)
        XCTAssertEqual(pInfo.byteCount, output.count - before)
        XCTAssertTrue(inspectAllWays(output, maxSlicesPerPicture: 2).contractHolds)
    }

    func testRealX264AccessUnit() throws {
        let fixture = annexB([X264Fixtures.sps1080pBaseline, X264Fixtures.pps1080pBaseline, Units.sei,
                              X264Fixtures.idrSlice0, X264Fixtures.idrSlice1], startCodes: [4, 4, 3, 3, 3])
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = []
        try writer.write(accessUnit: fixture, into: &output)
        try writer.write(accessUnit: annexB([X264Fixtures.pSliceFrame1]), into: &output)
        try writer.write(accessUnit: annexB([X264Fixtures.idrSlice0, X264Fixtures.idrSlice1], startCodes: [4, 3]), into: &output)
        XCTAssertEqual(writer.sequenceParameterSet?.width, 1920)
        let report = inspectAllWays(output, maxSlicesPerPicture: 2)
        XCTAssertTrue(report.contractHolds, report.render(verbose: true))
        XCTAssertEqual(report.frameCount, 3)
        XCTAssertEqual(report.idrFrameIndices, [0, 2])
    }

    func testIDRWithoutParameterSetsGetsRememberedOnes() throws {
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = []
        try writer.write(accessUnit: annexB([sps, pps, idr]), into: &output)
        try writer.write(accessUnit: annexB([p]), into: &output)
        let start = output.count
        let info = try writer.write(accessUnit: annexB([idr], startCodes: [3]), into: &output)
        XCTAssertTrue(info.insertedParameterSets)
        XCTAssertEqual(info.nalCount, 3)
        XCTAssertEqual(units(Array(output[start...])), [sps, pps, idr])
        XCTAssertTrue(inspectAllWays(output).contractHolds)
    }

    /// The default: nothing but parameter sets and slices, whatever the encoder adds (AUD, its own
    /// SEI, HRD SEI, filler), so seed 001's receiver finds SPS, PPS, IDR or a slice first.
    func testBareLayoutLeavesOutEverythingButParameterSetsAndSlices() throws {
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = []
        let filler: [UInt8] = [0x0C, 0xFF, 0xFF, 0x80]
        let info = try writer.write(accessUnit: annexB([Units.aud, sps, Units.sei, pps, Units.x264VersionSEI, idr, Units.sei]),
                                    into: &output)
        XCTAssertEqual(units(output), [sps, pps, idr])
        XCTAssertEqual(info.droppedUnits, 4)
        XCTAssertEqual(info.nalCount, 3)
        var start = output.count
        let pInfo = try writer.write(accessUnit: annexB([Units.aud, Units.sei, p, filler]), into: &output)
        XCTAssertEqual(units(Array(output[start...])), [p])
        XCTAssertEqual(pInfo.nalCount, 1)
        // Parameter sets repeated with a P picture are left out; one that changed is kept.
        start = output.count
        try writer.write(accessUnit: annexB([sps, pps, p]), into: &output)
        XCTAssertEqual(units(Array(output[start...])), [p])
        let bareEnd = output.count
        let otherPPS = Units.pps(id: 0, initQPOffset: 4)
        start = output.count
        let changed = try writer.write(accessUnit: annexB([otherPPS, p]), into: &output)
        XCTAssertEqual(units(Array(output[start...])), [otherPPS, p])
        XCTAssertTrue(changed.containsPPS)
        // An access unit of SEI alone writes nothing.
        start = output.count
        let seiOnly = try writer.write(accessUnit: annexB([Units.sei]), into: &output)
        XCTAssertEqual(output.count, start)
        XCTAssertEqual(seiOnly.droppedUnits, 1)
        let report = inspectAllWays(Array(output[..<bareEnd]))
        XCTAssertTrue(report.contractHolds && report.isBare, report.render(verbose: false))
        // The changed PPS stands in a P access unit: kept for its picture, and inspect says it is not bare.
        XCTAssertEqual(inspectAllWays(output).violations.map(\.kind), [.notBare])
    }

    func testAUDStaysFirstAndSEIGoesAheadOfTheParameterSets() throws {
        var writer = AnnexBStreamWriter(layout: .encoderUnits)
        var output: [UInt8] = []
        // libx264's order in files: SPS PPS SEI IDR. The SEI must not part PPS and IDR.
        let info = try writer.write(accessUnit: annexB([Units.aud, sps, pps, Units.sei, idr]), into: &output)
        XCTAssertFalse(info.insertedParameterSets)
        XCTAssertEqual(units(output), [Units.aud, Units.sei, sps, pps, idr])
        var start = output.count
        try writer.write(accessUnit: annexB([Units.aud, Units.sei, idr]), into: &output)
        XCTAssertEqual(units(Array(output[start...])), [Units.aud, Units.sei, sps, pps, idr])
        // SEI between SPS and PPS, and an SEI after the slice: only what precedes the slice moves.
        start = output.count
        try writer.write(accessUnit: annexB([sps, Units.sei, pps, idr, Units.sei]), into: &output)
        XCTAssertEqual(units(Array(output[start...])), [Units.sei, sps, pps, idr, Units.sei])
        // Every rule holds but the bare one.
        XCTAssertEqual(inspectAllWays(output).violations.map(\.kind), [.notBare], inspectAllWays(output).render(verbose: true))
    }

    func testEncoderVersionSEIIsDroppedOtherSEIKept() throws {
        var writer = AnnexBStreamWriter(layout: .encoderUnits)
        var output: [UInt8] = []
        let info = try writer.write(accessUnit: annexB([sps, pps, Units.x264VersionSEI, Units.sei, idr]), into: &output)
        XCTAssertEqual(info.droppedUnits, 1)
        XCTAssertEqual(units(output), [Units.sei, sps, pps, idr])
        // In a P access unit too; kept when asked for.
        var keeping = AnnexBStreamWriter(layout: .encoderUnits, keepsEncoderVersionSEI: true)
        var kept: [UInt8] = []
        try keeping.write(accessUnit: annexB([sps, pps, Units.x264VersionSEI, idr]), into: &kept)
        XCTAssertEqual(units(kept), [Units.x264VersionSEI, sps, pps, idr])
        // An SEI of the same payload type under another UUID is not a version banner.
        var other = Units.x264VersionSEI
        other[4] ^= 0xFF
        XCTAssertFalse(other.withUnsafeBytes { AnnexBStreamWriter.isEncoderVersionSEI($0) })
        XCTAssertTrue(Units.x264VersionSEI.withUnsafeBytes { AnnexBStreamWriter.isEncoderVersionSEI($0) })
    }

    func testMoreSlicesThanAllowedThrowAndWriteNothing() throws {
        var writer = AnnexBStreamWriter(maxSlicesPerPicture: 1)
        var output: [UInt8] = []
        try writer.write(accessUnit: annexB([sps, pps, idr]), into: &output)
        let before = output
        XCTAssertThrowsError(try writer.write(accessUnit: annexB([p, Units.slice(idr: false, firstMb: 150)]), into: &output)) {
            XCTAssertEqual($0 as? StreamContractError, .tooManySlices(found: 2, allowed: 1))
        }
        XCTAssertEqual(output, before)
        var three = AnnexBStreamWriter(maxSlicesPerPicture: 3)
        try three.write(accessUnit: annexB([sps, pps, idr, Units.slice(idr: true, firstMb: 150)]), into: &output)
    }

    func testOnlyOneParameterSetPresentGetsTheOther() throws {
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = []
        try writer.write(accessUnit: annexB([sps, pps, idr]), into: &output)
        var start = output.count
        // New SPS content (same id) without PPS: the new SPS is used, the old PPS inserted.
        let newSPS = SPSBuilder(profileIdc: 66, constraintFlags: 0x40, levelIdc: 30, widthInMbs: 40, heightInMapUnits: 30).nalBytes()
        var info = try writer.write(accessUnit: annexB([newSPS, idr]), into: &output)
        XCTAssertTrue(info.insertedParameterSets)
        XCTAssertEqual(units(Array(output[start...])), [newSPS, pps, idr])
        XCTAssertEqual(writer.sequenceParameterSet?.width, 640)
        // PPS without SPS: the latest SPS is inserted.
        start = output.count
        info = try writer.write(accessUnit: annexB([pps, idr]), into: &output)
        XCTAssertTrue(info.insertedParameterSets)
        XCTAssertEqual(units(Array(output[start...])), [newSPS, pps, idr])
        XCTAssertTrue(inspectAllWays(output).contractHolds)
    }

    func testPPSChosenByTheSliceWhenSeveralAreKnown() throws {
        let sps1 = Units.sps(id: 1)
        let pps0 = Units.pps(id: 0, spsID: 0)
        let pps1 = Units.pps(id: 1, spsID: 1)
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = []
        try writer.write(accessUnit: annexB([sps, sps1, pps0, pps1, idr]), into: &output)
        let start = output.count
        let idrUsingPPS1 = Units.slice(idr: true, ppsID: 1)
        try writer.write(accessUnit: annexB([idrUsingPPS1]), into: &output)
        XCTAssertEqual(units(Array(output[start...])), [sps1, pps1, idrUsingPPS1])
        XCTAssertEqual(writer.parameterSetsAnnexB(), annexB([sps, sps1, pps0, pps1]))
    }

    func testMissingParameterSetsThrowsAndWritesNothing() {
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = [1, 2, 3]
        XCTAssertThrowsError(try writer.write(accessUnit: annexB([idr]), into: &output)) {
            XCTAssertEqual($0 as? StreamContractError, .missingParameterSets)
        }
        XCTAssertThrowsError(try writer.write(accessUnit: annexB([sps, idr]), into: &output)) {
            XCTAssertEqual($0 as? StreamContractError, .missingParameterSets)
        }
        XCTAssertEqual(output, [1, 2, 3])
        XCTAssertNil(AnnexBStreamWriter().parameterSetsAnnexB())
    }

    func testStreamMustStartWithIDR() throws {
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = []
        XCTAssertThrowsError(try writer.write(accessUnit: annexB([sps, pps, p]), into: &output)) {
            XCTAssertEqual($0 as? StreamContractError, .firstPictureNotIDR)
        }
        XCTAssertThrowsError(try writer.write(accessUnit: [UInt8](), into: &output)) {
            XCTAssertEqual($0 as? StreamContractError, .noNALUnits)
        }
        XCTAssertThrowsError(try writer.write(accessUnit: hex("6742c0"), into: &output)) {
            XCTAssertEqual($0 as? StreamContractError, .noNALUnits)
        }
        // Parameter sets alone (global headers) are held back, then used for the first IDR.
        let held = try writer.write(accessUnit: annexB([sps, pps]), into: &output)
        XCTAssertTrue(held.heldBack)
        XCTAssertEqual(output, [])
        let first = try writer.write(accessUnit: annexB([idr]), into: &output)
        XCTAssertTrue(first.insertedParameterSets)
        XCTAssertEqual(units(output), [sps, pps, idr])
        // After a restart (new file, new client) a P frame is refused again.
        writer.restartStream()
        XCTAssertThrowsError(try writer.write(accessUnit: annexB([p]), into: &output))
    }

    func testExtradataPrimesTheWriter() throws {
        var writer = AnnexBStreamWriter()
        writer.rememberParameterSets(fromAnnexB: annexB([sps, pps], startCodes: [3, 3]))
        var output: [UInt8] = []
        try writer.write(accessUnit: annexB([idr]), into: &output)
        XCTAssertEqual(units(output), [sps, pps, idr])
    }

    func testLeadingGarbageAndTrailingZerosAreDropped() throws {
        var writer = AnnexBStreamWriter()
        var output: [UInt8] = []
        let info = try writer.write(accessUnit: [0xFF, 0xEE] + annexB([sps, pps, idr]) + [0, 0], into: &output)
        XCTAssertEqual(info.skippedBytes, 2)
        XCTAssertEqual(output, annexB([sps, pps, idr]))
    }

    /// Random access units with random start codes: the output always keeps the contract
    /// and carries every input unit in order (with SPS/PPS moved or added only), and a bare
    /// writer carries the same slices with nothing but parameter sets around them.
    func testRandomStreamsKeepTheContract() throws {
        for seed in chunkSeeds {
            var generator = SeededGenerator(seed: seed)
            var writer = AnnexBStreamWriter(layout: .encoderUnits)
            var bareWriter = AnnexBStreamWriter()
            var bareOutput: [UInt8] = []
            var output: [UInt8] = []
            var expectedNonParameterUnits: [[UInt8]] = []
            for frame in 0..<60 {
                let isIDR = frame == 0 || Int.random(in: 0..<8, using: &generator) == 0
                var unitsOfFrame: [[UInt8]] = []
                if Bool.random(using: &generator) { unitsOfFrame.append(Units.aud) }
                if frame == 0 || Bool.random(using: &generator) {
                    var parameterSets = [sps, pps]
                    // Sometimes only one of them, or in another order, or after an SEI.
                    switch Int.random(in: 0..<5, using: &generator) {
                    case 0 where frame > 0: parameterSets = [sps]
                    case 1 where frame > 0: parameterSets = [pps]
                    case 2: parameterSets = [pps, sps]
                    case 3: unitsOfFrame.append(Units.sei)
                    default: break
                    }
                    unitsOfFrame += parameterSets
                }
                if Bool.random(using: &generator) { unitsOfFrame.append(Units.sei) }
                let sliceCount = Int.random(in: 1...3, using: &generator)
                for slice in 0..<sliceCount {
                    let payload = (0..<Int.random(in: 0...50, using: &generator)).map { _ in
                        Bool.random(using: &generator) ? 0 : UInt8.random(in: 0...255, using: &generator)
                    }
                    unitsOfFrame.append(Units.slice(idr: isIDR, firstMb: UInt32(slice * 100), payload: payload))
                }
                let startCodes = unitsOfFrame.map { _ in Bool.random(using: &generator) ? 3 : 4 }
                try writer.write(accessUnit: annexB(unitsOfFrame, startCodes: startCodes), into: &output)
                try bareWriter.write(accessUnit: annexB(unitsOfFrame, startCodes: startCodes), into: &bareOutput)
                expectedNonParameterUnits += unitsOfFrame.filter { $0[0] & 0x1F != 7 && $0[0] & 0x1F != 8 }
            }
            let report = inspectAllWays(output, maxSlicesPerPicture: 3)
            XCTAssertTrue(report.violations.allSatisfy { $0.kind == .notBare }, "seed \(seed): " + report.render(verbose: false))
            let bareReport = inspectAllWays(bareOutput, maxSlicesPerPicture: 3)
            XCTAssertTrue(bareReport.contractHolds, "seed \(seed): " + bareReport.render(verbose: false))
            XCTAssertEqual(AnnexBScanner.units(in: bareOutput).filter { !$0.isSPS && !$0.isPPS }.map(\.bytes),
                           expectedNonParameterUnits.filter { [1, 5].contains($0[0] & 0x1F) }, "seed \(seed)")
            XCTAssertEqual(report.frameCount, 60)
            let written = AnnexBScanner.units(in: output)
            XCTAssertEqual(written.filter { !$0.isSPS && !$0.isPPS }.map(\.bytes), expectedNonParameterUnits, "seed \(seed)")
            XCTAssertTrue(written.allSatisfy { $0.startCodeLength == 4 })
        }
    }
}
