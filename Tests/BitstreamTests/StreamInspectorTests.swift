import XCTest
@testable import Bitstream
import SystemSupport

final class StreamInspectorTests: XCTestCase {
    private let sps = Units.sps()
    private let pps = Units.pps()
    private let idr = Units.slice(idr: true)
    private let p = Units.slice(idr: false)

    /// `gops` GOPs of `length` frames, each IDR with SPS+PPS, 4-byte start codes.
    private func goodStream(gops: Int, length: Int) -> [[UInt8]] {
        var units: [[UInt8]] = []
        for _ in 0..<gops {
            units += [sps, pps, idr]
            for _ in 1..<length { units += [p] }
        }
        return units
    }

    private func kinds(_ report: StreamReport) -> [ContractViolation.Kind] {
        report.violations.map(\.kind)
    }

    func testGoodStream() {
        let report = inspectAllWays(annexB(goodStream(gops: 4, length: 30)))
        XCTAssertTrue(report.contractHolds, report.render(verbose: false))
        XCTAssertEqual(report.frameCount, 120)
        XCTAssertEqual(report.idrFrameIndices, [0, 30, 60, 90])
        XCTAssertEqual(report.gopLengths, [30, 30, 30, 30])
        XCTAssertEqual(report.gopSummary, StreamReport.GOPSummary(minimum: 30, maximum: 30, typical: 30))
        XCTAssertEqual(report.sequenceParameterSet?.width, 320)
        XCTAssertEqual(report.pictureParameterSet?.isCABAC, false)
        XCTAssertEqual(report.nalUnitCount, 4 * 3 + 4 * 29)
        XCTAssertEqual(report.typeCounts[NALUnitType.idrSlice.rawValue], 4)
        XCTAssertEqual(report.records.first, NALRecord(offset: 0, startCodeLength: 4, type: .sps, nalRefIdc: sps[0] >> 5, size: sps.count))

        let text = report.render(verbose: false)
        XCTAssertTrue(text.contains("Constrained Baseline profile, level 1.3, 320x240, 30 fps, CAVLC"), text)
        XCTAssertTrue(text.contains("GOP: IDR every 30 frames (frames 0, 30, 60, …)"), text)
        XCTAssertTrue(text.contains("stream contract: OK — 4-byte start codes on all \(report.nalUnitCount) NAL units, SPS+PPS right before all 4 IDRs, one slice per picture, bare"), text)
        XCTAssertTrue(text.contains("bare: yes"), text)
        XCTAssertTrue(text.contains("parameter sets: SPS \(sps.count) bytes, PPS \(pps.count) (within seed 001's windows of 35 and 25)"), text)
        XCTAssertTrue(text.contains("slices per picture: 1"), text)
        XCTAssertFalse(text.contains("offset  sc"))
        let verbose = report.render(verbose: true)
        XCTAssertTrue(verbose.contains("5 IDR"), verbose)
        XCTAssertEqual(verbose.split(separator: "\n").count, text.split(separator: "\n").count + 1 + report.nalUnitCount)
    }

    /// camrec's layout before the stream became bare (`--encoder-sei`): AUD and SEI ahead of the
    /// parameter sets keep every rule but the bare one, and the first such access unit is named.
    func testAUDAndSEIBreakOnlyTheBareRule() {
        var units: [[UInt8]] = []
        for _ in 0..<2 {
            units += [Units.aud, Units.sei, sps, pps, idr]
            for _ in 1..<5 { units += [Units.aud, p] }
        }
        let report = inspectAllWays(annexB(units))
        XCTAssertEqual(kinds(report), [.notBare])
        XCTAssertEqual(report.violations[0].count, 10)
        XCTAssertEqual(report.violations[0].offset, 0)
        XCTAssertFalse(report.isBare)
        let text = report.render(verbose: false)
        XCTAssertTrue(text.contains("10 of 10 access units are not bare (first: access unit 0 is AUD SEI SPS PPS IDR at offset 0)"), text)
        XCTAssertTrue(text.contains("bare: no"), text)
    }

    /// Out of MPEG-TS every access unit starts with the carriage's AUD: the container's, so the stream
    /// inside is still bare; the same AUDs in a raw stream are not.
    func testAUDsOfTheTSCarriageLeaveTheStreamBare() {
        let units = [Units.aud, sps, pps, idr, Units.aud, p, Units.aud, p]
        var fromTS = StreamInspector(delimitedByContainer: true)
        fromTS.append(annexB(units))
        let report = fromTS.finish()
        XCTAssertTrue(report.contractHolds && report.isBare, report.render(verbose: false))
        XCTAssertEqual(kinds(inspectAllWays(annexB(units))), [.notBare])
        // An SEI is not the carriage's.
        var withSEI = StreamInspector(delimitedByContainer: true)
        withSEI.append(annexB([Units.aud, Units.sei, sps, pps, idr]))
        XCTAssertEqual(kinds(withSEI.finish()), [.notBare])
    }

    /// Seed 001's windows: an SPS over 35 bytes or a PPS over 25 is a warning, not a broken contract.
    func testParameterSetsOverSeed001sWindowsAreAWarning() {
        let longSPS = Units.sps() + [UInt8](repeating: 0x55, count: 36 - Units.sps().count) + [0x80]
        let report = inspectAllWays(annexB([longSPS, pps, idr]))
        XCTAssertEqual(report.largestParameterSets, StreamReport.ParameterSetSizes(sps: longSPS.count, pps: pps.count))
        XCTAssertTrue(report.render(verbose: false).contains("warning: the largest SPS is \(longSPS.count) bytes"), report.render(verbose: false))
        let fits = inspectAllWays(annexB([sps, pps, idr]))
        XCTAssertFalse(fits.render(verbose: false).contains("warning:"))
    }

    func testIrregularGOPsAndMultiSliceFrames() {
        var units: [[UInt8]] = []
        for length in [10, 12, 12, 5] {
            units += [sps, pps, idr, Units.slice(idr: true, firstMb: 150)]
            for _ in 1..<length { units += [p, Units.slice(idr: false, firstMb: 150)] }
        }
        let report = inspectAllWays(annexB(units), maxSlicesPerPicture: 2)
        XCTAssertTrue(report.contractHolds)
        XCTAssertEqual(report.slicesPerPicture, 2...2)
        XCTAssertEqual(report.frameCount, 39)
        XCTAssertEqual(report.gopLengths, [10, 12, 12, 5])
        XCTAssertEqual(report.gopSummary, StreamReport.GOPSummary(minimum: 10, maximum: 12, typical: 12))
        XCTAssertTrue(report.render(verbose: false).contains("IDR every 10–12 frames, typically 12 (frames 0, 10, 22, …)"))
    }

    func testTwoSlicesPerPictureAreReportedUnlessAllowed() {
        let second = Units.slice(idr: false, firstMb: 150)
        let units = [sps, pps, idr, p, p, second, p]
        let report = inspectAllWays(annexB(units))
        XCTAssertEqual(kinds(report), [.tooManySlices])
        XCTAssertEqual(report.violations[0].count, 1)
        XCTAssertEqual(report.violations[0].offset, annexB(Array(units[0..<4])).count)
        XCTAssertTrue(report.violations[0].message.contains("1 of 4 pictures"), report.violations[0].message)
        XCTAssertTrue(report.violations[0].message.contains("frame 2 has 2 slices"), report.violations[0].message)
        XCTAssertEqual(report.slicesPerPicture, 1...2)
        XCTAssertTrue(report.render(verbose: false).contains("slices per picture: 1–2"))
        XCTAssertTrue(inspectAllWays(annexB(units), maxSlicesPerPicture: 2).contractHolds)
    }

    func testAnythingBetweenPPSAndIDRSliceIsReported() {
        // libx264's own file layout: SPS PPS SEI IDR.
        let units = [sps, pps, Units.sei, idr, p, Units.sei, sps, pps, idr, p, sps, Units.sei, pps, idr]
        let report = inspectAllWays(annexB(units))
        XCTAssertEqual(kinds(report), [.unitBetweenParameterSetsAndIDR, .notBare])
        XCTAssertEqual(report.violations[0].count, 2)
        XCTAssertEqual(report.violations[0].offset, annexB(Array(units[0..<3])).count)
        XCTAssertTrue(report.violations[0].message.contains("2 of 3 IDR frames"), report.violations[0].message)
        XCTAssertTrue(report.violations[0].message.contains("frame 0: SEI stands between the PPS and the IDR slice"),
                      report.violations[0].message)
        // AUD and SEI ahead of the SPS break only the bare rule.
        XCTAssertEqual(kinds(inspectAllWays(annexB([Units.aud, Units.sei, sps, pps, idr]))), [.notBare])
    }

    func testThreeByteStartCodesAreReported() {
        let units = [Units.sei, sps, pps, idr, p]
        let report = inspectAllWays(annexB(units, startCodes: [4, 4, 3, 3, 3]))
        XCTAssertEqual(kinds(report), [.threeByteStartCode, .notBare])
        XCTAssertEqual(report.violations[0].count, 3)
        let seiOffset = annexB([Units.sei, sps]).count
        XCTAssertEqual(report.violations[0].offset, seiOffset)
        XCTAssertEqual(report.violations[0].message, "3 of 5 NAL units have a 3-byte start code (first at offset \(seiOffset))")
        XCTAssertTrue(report.render(verbose: false).contains("stream contract: BROKEN — 2 problems:"))
    }

    func testIDRWithoutParameterSetsIsReported() {
        // Second IDR has only a PPS; third has neither.
        let units = [sps, pps, idr, p, pps, idr, p, idr]
        let report = inspectAllWays(annexB(units))
        XCTAssertEqual(kinds(report), [.idrWithoutParameterSets])
        XCTAssertEqual(report.violations[0].count, 2)
        XCTAssertEqual(report.violations[0].offset, annexB(Array(units[0..<5])).count)
        XCTAssertTrue(report.violations[0].message.contains("2 of 3 IDR frames"), report.violations[0].message)
        XCTAssertTrue(report.violations[0].message.contains("frame 2 lacks SPS"), report.violations[0].message)
    }

    func testParameterSetsAfterTheSlicesBelongToTheNextAccessUnit() {
        // SPS/PPS trailing a picture start the next access unit, so the IDR after them is fine.
        let report = inspectAllWays(annexB([sps, pps, idr, p, Units.sei, sps, pps, idr]))
        XCTAssertEqual(kinds(report), [.notBare], report.render(verbose: false))
        XCTAssertTrue(inspectAllWays(annexB([sps, pps, idr, p, sps, pps, idr])).contractHolds)
        // But SPS+PPS before the *previous* picture do not count for a second IDR picture.
        let back = inspectAllWays(annexB([sps, pps, idr, idr]))
        XCTAssertEqual(kinds(back), [.idrWithoutParameterSets])
    }

    func testStreamMustBeginWithSPS() {
        XCTAssertEqual(kinds(inspectAllWays(annexB([Units.aud, sps, pps, idr]))), [.notBare])
        XCTAssertEqual(kinds(inspectAllWays(annexB([Units.aud, Units.sei, sps, pps, idr]))), [.notBare])
        let ppsFirst = inspectAllWays(annexB([Units.sei, pps, sps, pps, idr]))
        XCTAssertEqual(kinds(ppsFirst), [.doesNotBeginWithSPS, .notBare])
        XCTAssertEqual(ppsFirst.violations[0].message, "stream begins with PPS instead of SPS at offset 9")
        let twoAUDs = inspectAllWays(annexB([Units.aud, Units.aud, sps, pps, idr]))
        XCTAssertEqual(kinds(twoAUDs), [.doesNotBeginWithSPS, .notBare])
    }

    func testForbiddenZeroBit() {
        var broken = Units.sei
        broken[0] |= 0x80
        let report = inspectAllWays(annexB([Units.sei, broken, sps, pps, idr]))
        XCTAssertEqual(kinds(report), [.forbiddenZeroBit, .notBare])
        XCTAssertEqual(report.violations[0].offset, annexB([Units.sei]).count)
    }

    func testGarbageBeforeFirstStartCode() {
        let report = inspectAllWays([0x12, 0x34, 0x56] + annexB([sps, pps, idr]))
        XCTAssertEqual(kinds(report), [.garbageBeforeFirstStartCode])
        XCTAssertEqual(report.skippedLeadingBytes, 3)
        XCTAssertEqual(report.violations[0].message, "3 bytes before the first start code")
        XCTAssertEqual(report.records.first?.offset, 3)
    }

    func testUnknownParameterSetIDs() {
        let report = inspectAllWays(annexB([sps, pps, idr, Units.slice(idr: false, ppsID: 4), Units.pps(id: 2, spsID: 3),
                                            Units.slice(idr: false, ppsID: 2)]))
        XCTAssertEqual(kinds(report), [.unknownParameterSetID, .notBare])
        XCTAssertEqual(report.violations[0].count, 2)
        XCTAssertTrue(report.violations[0].message.contains("PPS id 4"), report.violations[0].message)
    }

    func testNoIDR() {
        let report = inspectAllWays(annexB([sps, pps, p, p]))
        XCTAssertEqual(kinds(report), [.noIDR, .notBare])
        XCTAssertTrue(report.render(verbose: false).contains("GOP: no IDR frames"))
        XCTAssertNil(report.gopSummary)
    }

    func testFramesBeforeTheFirstIDR() {
        let report = inspectAllWays(annexB([sps, pps, p, p, sps, pps, idr, p]))
        XCTAssertEqual(kinds(report), [.notBare], "parameter sets with a P picture")
        XCTAssertEqual(report.idrFrameIndices, [2])
        XCTAssertEqual(report.gopLengths, [2])
        XCTAssertTrue(report.render(verbose: false).contains("single IDR at frame 2, 2 frames from there; 2 frames before the first IDR"))
    }

    func testUnparsableUnits() {
        let report = inspectAllWays(annexB([sps, [0x67, 0x42], sps, pps, idr, [0x41]]))
        XCTAssertEqual(kinds(report), [.unparsableUnit, .notBare])
        XCTAssertEqual(report.violations[0].count, 2)
    }

    func testEmptyAllZerosAndNoStartCode() {
        let empty = inspectAllWays([])
        XCTAssertEqual(kinds(empty), [.doesNotBeginWithSPS, .noIDR])
        XCTAssertEqual(empty.violations[0].message, "stream holds no NAL units")
        XCTAssertEqual(empty.frameCount, 0)
        _ = empty.render(verbose: true)

        let zeros = inspectAllWays([UInt8](repeating: 0, count: 100))
        XCTAssertEqual(kinds(zeros), [.doesNotBeginWithSPS, .garbageBeforeFirstStartCode, .noIDR])
        XCTAssertEqual(zeros.byteCount, 100)

        let noStartCode = inspectAllWays(hex("6742c01e 68ce3c80 65888400"))
        XCTAssertEqual(noStartCode.nalUnitCount, 0)
        XCTAssertFalse(noStartCode.contractHolds)
    }

    func testEveryViolationAtOnce() {
        var broken = p
        broken[0] |= 0x80
        let bytes = [0xEE] + annexB([Units.sei, p, Units.slice(idr: false, ppsID: 9), broken], startCodes: [3, 4, 4, 4])
        let report = inspectAllWays(bytes)
        XCTAssertEqual(Set(kinds(report)), [.threeByteStartCode, .doesNotBeginWithSPS, .forbiddenZeroBit,
                                            .garbageBeforeFirstStartCode, .unknownParameterSetID, .noIDR, .notBare])
        XCTAssertTrue(report.render(verbose: false).contains("stream contract: BROKEN — 7 problems:"))
    }

    func testRecordLimitKeepsCounting() {
        var inspector = StreamInspector(recordLimit: 10)
        inspector.append(annexB(goodStream(gops: 2, length: 10)))
        let report = inspector.finish()
        XCTAssertEqual(report.records.count, 10)
        XCTAssertTrue(report.recordsTruncated)
        XCTAssertEqual(report.frameCount, 20)
        XCTAssertTrue(report.render(verbose: true).contains("more NAL units not listed"))
    }

    func testNumberFormatting() {
        XCTAssertEqual(30.0.decimalText(places: 3, trimmingZeros: true), "30")
        XCTAssertEqual((30000.0 / 1001.0).decimalText(places: 3, trimmingZeros: true), "29.97")
        XCTAssertEqual(59.94.decimalText(places: 3, trimmingZeros: true), "59.94")
        XCTAssertEqual(0.5.decimalText(places: 1, trimmingZeros: true), "0.5")
        XCTAssertEqual(StreamReport.humanSize(512), "512 B")
        XCTAssertEqual(StreamReport.humanSize(30494), "29.8 KiB")
        XCTAssertEqual(StreamReport.humanSize(3 << 20), "3 MiB")
    }

    func testRandomGarbageNeverTraps() {
        // Bytes biased towards start codes and small headers, so units of every type and
        // half-formed parameter sets and slices reach the parsers.
        var generator = SeededGenerator(seed: 2024)
        for _ in 0..<40 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...60, using: &generator) {
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes += [0, 0, 1]
                case 1: bytes += [0, 0, 0, 1, UInt8.random(in: 0...255, using: &generator)]
                case 2: bytes.append(0)
                default: bytes += (0..<Int.random(in: 1...6, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                }
            }
            let report = inspectAllWays(bytes)
            _ = report.render(verbose: true)
            var writer = AnnexBStreamWriter()
            writer.rememberParameterSets(fromAnnexB: annexB([sps, pps]))
            var output: [UInt8] = []
            _ = try? writer.write(accessUnit: annexB([idr]), into: &output)
            _ = try? writer.write(accessUnit: bytes, into: &output)
        }
    }
}
