import Foundation
import XCTest

@testable import Bitstream

/// H.265 NAL headers and parameter sets, checked against libx265 streams whose every syntax element
/// FFmpeg's own parser printed (`ffmpeg -i F -c copy -bsf:v trace_headers -f null -`): the expected
/// values below are its readings, not ours.
final class HEVCParameterSetTests: XCTestCase {
    private func units(_ name: String) throws -> [NALUnit] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../fixtures/hevc/\(name)")
        var scanner = AnnexBScanner()
        return scanner.append(try Data(contentsOf: url)) + scanner.finish()
    }

    private func header(_ unit: NALUnit) -> HEVCNALHeader { HEVCNALHeader(unit.bytes)! }

    func testUnitTypesAndStartCodesOfALibx265Stream() throws {
        // ffmpeg -f lavfi -i testsrc=size=320x240:rate=25 -frames:v 4 -c:v libx265 -x265-params keyint=2
        let all = try units("x265-main-320x240-25fps.h265")
        XCTAssertEqual(all.map { header($0).type.rawValue }, [32, 33, 34, 39, 20, 32, 33, 34, 39, 21, 8, 1])
        XCTAssertEqual(all.map { header($0).type.shortName },
                       ["VPS", "SPS", "PPS", "prefix SEI", "IDR_N_LP", "VPS", "SPS", "PPS", "prefix SEI", "CRA", "RASL_N", "TRAIL_R"])
        // libx265 writes 3-byte start codes before its SEI and the first slice of each picture.
        XCTAssertEqual(all.map(\.startCodeLength), [4, 4, 4, 3, 3, 4, 4, 4, 3, 3, 4, 4])
        XCTAssertEqual(all.filter { header($0).type.isIRAP }.count, 2)
        XCTAssertEqual(all.filter { header($0).type.isIDR }.count, 1)
        for unit in all {
            XCTAssertFalse(header(unit).forbiddenZeroBit)
            XCTAssertEqual(header(unit).layerID, 0)
            XCTAssertEqual(header(unit).temporalID, 0)
        }
        let slices = try all.filter { header($0).type.isVCL }.map { try HEVCSliceSegmentHeader(nalUnit: $0) }
        XCTAssertEqual(slices.map(\.firstSliceSegmentInPicFlag), [true, true, true, true])
        XCTAssertEqual(slices.map(\.picParameterSetID), [0, 0, 0, 0])
        XCTAssertEqual(slices.map { $0.noOutputOfPriorPicsFlag != nil }, [true, true, false, false])
    }

    func testMain420ParameterSets() throws {
        let all = try units("x265-main-320x240-25fps.h265")
        let vps = try HEVCVideoParameterSet(nalUnit: all[0])
        XCTAssertEqual(vps.videoParameterSetID, 0)
        XCTAssertEqual(vps.maxSubLayers, 1)
        XCTAssertEqual(vps.profileTierLevel.profileIdc, 1)
        XCTAssertNil(vps.timeScale, "vps_timing_info_present_flag = 0")
        let sps = try HEVCSequenceParameterSet(nalUnit: all[1])
        XCTAssertEqual(sps.profileTierLevel.profileName, "Main")
        XCTAssertEqual(sps.profileTierLevel.tierName, "Main")
        XCTAssertEqual(sps.profileTierLevel.levelIdc, 60)
        XCTAssertEqual(sps.profileTierLevel.levelName, "2")
        XCTAssertEqual(sps.chromaFormatIdc, 1)
        XCTAssertEqual(sps.chromaFormatName, "4:2:0")
        XCTAssertEqual([sps.picWidthInLumaSamples, sps.picHeightInLumaSamples], [320, 240])
        XCTAssertEqual([sps.displayedWidth, sps.displayedHeight], [320, 240])
        XCTAssertEqual([sps.bitDepthLuma, sps.bitDepthChroma], [8, 8])
        XCTAssertEqual(sps.log2MaxPicOrderCntLsb, 8)
        XCTAssertEqual(sps.log2CodingTreeBlockSize, 6)
        XCTAssertTrue(sps.sampleAdaptiveOffsetEnabledFlag)
        XCTAssertTrue(sps.temporalMVPEnabledFlag)
        XCTAssertEqual(sps.numShortTermRefPicSets, 0)
        XCTAssertEqual(sps.videoFullRangeFlag, false)
        XCTAssertEqual(sps.framesPerSecond, 25)
        let pps = try HEVCPictureParameterSet(nalUnit: all[2])
        XCTAssertEqual([pps.picParameterSetID, pps.seqParameterSetID, pps.numExtraSliceHeaderBits, pps.initQP], [0, 0, 0, 26])
        XCTAssertFalse(pps.dependentSliceSegmentsEnabledFlag)
        XCTAssertFalse(pps.tilesEnabledFlag)
        XCTAssertTrue(pps.entropyCodingSyncEnabledFlag)
    }

    func testRangeExtensions422TenBitWithAConformanceWindow() throws {
        // ffmpeg -f lavfi -i testsrc=size=322x242:rate=30000/1001 -frames:v 2 -c:v libx265
        //        -x265-params range=full -pix_fmt yuv422p10le
        let all = try units("x265-main422-10-322x242.h265")
        let sps = try HEVCSequenceParameterSet(nalUnit: all[1])
        XCTAssertEqual(sps.profileTierLevel.profileIdc, 4)
        XCTAssertEqual(sps.profileTierLevel.profileName, "Range Extensions")
        XCTAssertEqual(sps.chromaFormatName, "4:2:2")
        XCTAssertEqual([sps.bitDepthLuma, sps.bitDepthChroma], [10, 10])
        XCTAssertEqual([sps.picWidthInLumaSamples, sps.picHeightInLumaSamples], [328, 248])
        XCTAssertEqual(sps.conformanceWindow, [0, 3, 0, 6])
        // 4:2:2: SubWidthC 2, SubHeightC 1.
        XCTAssertEqual([sps.displayedWidth, sps.displayedHeight], [322, 242])
        XCTAssertEqual(sps.videoFullRangeFlag, true)
        XCTAssertEqual(sps.numUnitsInTick, 1001)
        XCTAssertEqual(sps.timeScale, 30000)
        XCTAssertEqual(sps.framesPerSecond ?? 0, 29.97, accuracy: 0.001)
    }

    /// What libx265 never writes in an SPS, built bit by bit: a scaling list, PCM, three short-term
    /// reference picture sets (the later two predicted from the one before), long-term pictures.
    /// FFmpeg's trace_headers reads these same bytes (with a VPS and PPS around them) the same way,
    /// through vui_time_scale = 50.
    func testAnSPSWithScalingListsPCMAndPredictedReferenceSets() throws {
        var w = BitWriter()
        func zeros(_ n: Int) { for _ in 0..<n { w.writeFlag(false) } }
        w.writeBits(0, count: 4)  // sps_video_parameter_set_id
        w.writeBits(1, count: 3)  // sps_max_sub_layers_minus1 = 1
        w.writeFlag(true)
        // profile_tier_level(1, 1): general part, then one sub-layer with profile and level present.
        w.writeBits(0, count: 2); w.writeFlag(true); w.writeBits(2, count: 5)  // High tier, Main 10
        w.writeBits(0x2000_0000, count: 32)
        zeros(48)
        w.writeBits(153, count: 8)  // level 5.1
        w.writeFlag(true); w.writeFlag(true)
        w.writeBits(0, count: 2 * 7)
        zeros(88); w.writeBits(150, count: 8)
        w.writeUE(3)  // sps_seq_parameter_set_id
        w.writeUE(1)  // 4:2:0
        w.writeUE(1920); w.writeUE(1088)
        w.writeFlag(true); w.writeUE(0); w.writeUE(0); w.writeUE(0); w.writeUE(4)  // crop 8 rows
        w.writeUE(2); w.writeUE(2)  // 10 bit
        w.writeUE(4)  // log2_max_pic_order_cnt_lsb = 8
        w.writeFlag(false)  // ordering info for the highest sub-layer only
        w.writeUE(4); w.writeUE(2); w.writeUE(0)
        w.writeUE(0); w.writeUE(3); w.writeUE(0); w.writeUE(3); w.writeUE(1); w.writeUE(1)
        w.writeFlag(true); w.writeFlag(true)  // scaling lists, with data
        for sizeID in 0..<4 {
            for matrixID in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                let explicit = matrixID == 0
                w.writeFlag(explicit)
                if !explicit { w.writeUE(0); continue }
                if sizeID > 1 { w.writeSE(8) }
                for _ in 0..<min(64, 1 << (4 + (sizeID << 1))) { w.writeSE(-1) }
            }
        }
        w.writeFlag(true)  // amp
        w.writeFlag(false)  // SAO
        w.writeFlag(true); w.writeBits(7, count: 4); w.writeBits(7, count: 4); w.writeUE(0); w.writeUE(1); w.writeFlag(false)  // PCM
        w.writeUE(3)  // num_short_term_ref_pic_sets
        w.writeUE(2); w.writeUE(1)  // set 0: two before, one after
        for _ in 0..<3 { w.writeUE(0); w.writeFlag(true) }
        // Set 0 is {-1, -2 | +1}. Set 1, predicted from it with deltaRps +1, has 3 + 1 entries: -1 + 1 = 0
        // drops out although used, -2 + 1 = -1 stays, +1 + 1 = 2 stays as use_delta only, the
        // reference itself (+1) is left out: {-1 | 2}, two pictures.
        w.writeFlag(true); w.writeFlag(false); w.writeUE(0)
        w.writeFlag(true); w.writeFlag(true); w.writeFlag(false); w.writeFlag(true); w.writeFlag(false); w.writeFlag(false)
        // Set 2, predicted from set 1 with deltaRps -1, so it reads 2 + 1 entries (not 3 + 1): {-1, -2 | 1}.
        w.writeFlag(true); w.writeFlag(true); w.writeUE(0)
        for _ in 0..<3 { w.writeFlag(true) }
        w.writeFlag(true); w.writeUE(2)  // two long-term pictures
        w.writeBits(5, count: 8); w.writeFlag(true); w.writeBits(9, count: 8); w.writeFlag(false)
        w.writeFlag(true); w.writeFlag(false)  // temporal MVP, no strong intra smoothing
        w.writeFlag(true)  // VUI
        w.writeFlag(true); w.writeBits(255, count: 8); w.writeBits(4, count: 16); w.writeBits(3, count: 16)
        w.writeFlag(false)
        w.writeFlag(true); w.writeBits(5, count: 3); w.writeFlag(true); w.writeFlag(true); w.writeBits(0x010101, count: 24)
        w.writeFlag(true); w.writeUE(1); w.writeUE(1)
        w.writeBits(0, count: 3)
        w.writeFlag(true); for _ in 0..<4 { w.writeUE(2) }
        w.writeFlag(true); w.writeBits(1, count: 32); w.writeBits(50, count: 32)
        w.writeFlag(true)  // rbsp stop bit
        while !w.isByteAligned { w.writeFlag(false) }

        let sps = try HEVCSequenceParameterSet(rbsp: w.bytes)
        XCTAssertEqual(sps.maxSubLayers, 2)
        XCTAssertEqual(sps.profileTierLevel.profileName, "Main 10")
        XCTAssertEqual(sps.profileTierLevel.tierName, "High")
        XCTAssertEqual(sps.profileTierLevel.levelName, "5.1")
        XCTAssertEqual(sps.seqParameterSetID, 3)
        XCTAssertEqual([sps.displayedWidth, sps.displayedHeight], [1920, 1080])
        XCTAssertEqual(sps.bitDepthLuma, 10)
        XCTAssertTrue(sps.scalingListEnabledFlag)
        XCTAssertTrue(sps.pcmEnabledFlag)
        XCTAssertEqual(sps.numShortTermRefPicSets, 3)
        XCTAssertTrue(sps.longTermRefPicsPresentFlag)
        XCTAssertTrue(sps.temporalMVPEnabledFlag)
        XCTAssertEqual(sps.videoFullRangeFlag, true)
        XCTAssertEqual(sps.framesPerSecond, 50, "read correctly only if everything before it was")
    }

    func testGarbageIsAnErrorNotATrap() {
        XCTAssertNil(HEVCNALHeader([0x40]))
        XCTAssertThrowsError(try HEVCSequenceParameterSet(nalUnit: NALUnit(bytes: [0x40, 0x01, 0x0C])), "a VPS is not an SPS")
        XCTAssertThrowsError(try HEVCSequenceParameterSet(nalUnit: NALUnit(bytes: [0x42, 0x01, 0x01])), "truncated")
        XCTAssertThrowsError(try HEVCSliceSegmentHeader(nalUnit: NALUnit(bytes: [0x40, 0x01, 0xFF])), "a VPS is not a slice")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? HEVCVideoParameterSet(rbsp: bytes)
            _ = try? HEVCSequenceParameterSet(rbsp: bytes)
            _ = try? HEVCPictureParameterSet(rbsp: bytes)
            _ = try? HEVCSliceSegmentHeader(nalUnit: NALUnit(bytes: [0x26, 0x01] + bytes))
        }
    }
}
