import XCTest
@testable import Bitstream

/// Parameter sets produced by FFmpeg 5.1 + libx264 from `testsrc`, copied from the
/// encoded streams (NAL header byte included, still escaped).
enum X264Fixtures {
    /// 1920x1080, 30 fps, -profile:v baseline -tune zerolatency.
    static let sps1080pBaseline = hex("67 42 c0 28 da 01 e0 08 9f 97 01 10 00 00 03 00 10 00 00 03 03 c8 f1 83 2a")
    static let pps1080pBaseline = hex("68 ce 0f c8")
    /// The two IDR slices (sliced threads) and the first two P slices of that stream, truncated.
    static let idrSlice0 = hex("65 88 84 3a 26 28 00 09 02 c9 c9 c9 c9 c9 c9 c9")
    static let idrSlice1 = hex("65 00 1f e2 22 10 e8 98 a0 00 24 0b 27 27 27 27")
    static let pSliceFrame1 = hex("41 9a 20 5a 0d f3 55 df e0 86 af bc 10 f5 e8 20")
    static let pSliceFrame2 = hex("41 9a 40 6a 0d f5 70 07 8e 7a f9 81 00 9e 41 94")
    /// 642x482 (odd macroblock cropping), 25 fps, High, CABAC.
    static let sps642x482High = hex("67 64 00 1e ac d9 40 a4 3f e2 22 30 11 00 00 03 00 01 00 00 03 00 32 0f 16 2d 96")
    static let pps642x482High = hex("68 eb e3 cb 22 c0")
    /// 641x481 4:4:4 (crop unit of one sample), 25 fps, High 4:4:4 Predictive.
    static let sps641x481High444 = hex("67 f4 00 1e 91 96 80 a4 3f e1 08 43 01 10 00 00 03 00 10 00 00 03 03 20 f1 62 ea")
    /// 1920x1080 interlaced (MBAFF, frame_mbs_only_flag 0), 25 fps, Main.
    static let sps1080iMain = hex("67 4d 40 28 f4 03 c0 22 7e f0 11 00 00 03 00 01 00 00 03 00 32 1f 16 2e a0")
    static let pps1080iMain = hex("68 de 0f c8")
    static let idrSlice1080i = hex("65 88 82 2c 3a 93 14 00 04 81 64 c5 00 01 20 5c")
    /// 320x240, 30 fps, Constrained Baseline level 1.3 (stream written with aud=1).
    static let sps320x240 = hex("67 42 c0 0d da 05 07 ec 04 40 00 00 03 00 40 00 00 0f 03 c5 0a a8")
    /// 642x482 4:2:2 10-bit, 25 fps, High 4:2:2.
    static let sps642x482High422 = hex("67 7a 00 1e b6 cb 40 52 1f f1 11 f8 08 80 00 00 03 00 80 00 00 19 07 8b 17 50")
    /// 1280x720, 60 fps, High level 3.2.
    static let sps720p60High = hex("67 64 00 20 ac d9 40 50 05 bb 01 10 00 00 03 00 10 00 00 07 80 f1 83 19 60")
}

/// Builds an SPS RBSP field by field, so tests can reach branches libx264 never writes.
struct SPSBuilder {
    var profileIdc: UInt8 = 100
    var constraintFlags: UInt8 = 0
    var levelIdc: UInt8 = 31
    var spsID: UInt32 = 0
    var chromaFormatIdc: UInt32 = 1
    var scalingLists: [[Int32]?] = []  // per list: nil = not present, else delta_scale values
    var log2MaxFrameNumMinus4: UInt32 = 0
    var pocType: UInt32 = 0
    var widthInMbs: UInt32 = 120
    var heightInMapUnits: UInt32 = 68
    var frameMbsOnly = true
    var crop: (left: UInt32, right: UInt32, top: UInt32, bottom: UInt32)?
    var timing: (numUnitsInTick: UInt32, timeScale: UInt32)?
    var sar: (width: UInt16, height: UInt16)?

    func rbsp() -> [UInt8] {
        var writer = BitWriter()
        writer.writeBits(profileIdc, count: 8)
        writer.writeBits(constraintFlags, count: 8)
        writer.writeBits(levelIdc, count: 8)
        writer.writeUE(spsID)
        if [100, 110, 122, 244].contains(profileIdc) {
            writer.writeUE(chromaFormatIdc)
            if chromaFormatIdc == 3 { writer.writeFlag(false) }
            writer.writeUE(0)
            writer.writeUE(0)
            writer.writeFlag(false)
            writer.writeFlag(!scalingLists.isEmpty)
            if !scalingLists.isEmpty {
                for index in 0..<(chromaFormatIdc == 3 ? 12 : 8) {
                    let deltas = index < scalingLists.count ? scalingLists[index] : nil
                    writer.writeFlag(deltas != nil)
                    deltas?.forEach { writer.writeSE($0) }
                }
            }
        }
        writer.writeUE(log2MaxFrameNumMinus4)
        writer.writeUE(pocType)
        if pocType == 0 { writer.writeUE(2) }
        if pocType == 1 {
            writer.writeFlag(false)
            writer.writeSE(-1)
            writer.writeSE(2)
            writer.writeUE(3)
            [1, -2, 3].forEach { writer.writeSE($0) }
        }
        writer.writeUE(4)  // max_num_ref_frames
        writer.writeFlag(false)
        writer.writeUE(widthInMbs - 1)
        writer.writeUE(heightInMapUnits - 1)
        writer.writeFlag(frameMbsOnly)
        if !frameMbsOnly { writer.writeFlag(false) }
        writer.writeFlag(true)
        writer.writeFlag(crop != nil)
        if let crop {
            [crop.left, crop.right, crop.top, crop.bottom].forEach { writer.writeUE($0) }
        }
        writer.writeFlag(timing != nil || sar != nil)
        if timing != nil || sar != nil {
            writer.writeFlag(sar != nil)
            if let sar {
                writer.writeBits(255, count: 8)
                writer.writeBits(sar.width, count: 16)
                writer.writeBits(sar.height, count: 16)
            }
            writer.writeFlag(false)  // overscan
            writer.writeFlag(false)  // video signal type
            writer.writeFlag(false)  // chroma loc
            writer.writeFlag(timing != nil)
            if let timing {
                writer.writeBits(timing.numUnitsInTick, count: 32)
                writer.writeBits(timing.timeScale, count: 32)
                writer.writeFlag(true)
            }
            writer.writeFlag(false)  // nal hrd
            writer.writeFlag(false)  // vcl hrd
            writer.writeFlag(false)  // pic_struct_present
            writer.writeFlag(false)  // bitstream_restriction
        }
        writer.writeTrailingBits()
        return writer.bytes
    }

    /// The SPS as a NAL unit with header byte and emulation prevention.
    func nalBytes() -> [UInt8] {
        [0x67] + RBSP.addingEmulationPrevention(rbsp())
    }
}

final class ParameterSetTests: XCTestCase {
    private func sps(_ bytes: [UInt8]) throws -> SequenceParameterSet {
        try SequenceParameterSet(nalUnit: NALUnit(bytes: bytes))
    }

    func testX264Baseline1080p() throws {
        let sps = try sps(X264Fixtures.sps1080pBaseline)
        XCTAssertEqual(sps.profileIdc, 66)
        XCTAssertEqual(sps.profileName, "Constrained Baseline")
        XCTAssertEqual(sps.levelName, "4")
        XCTAssertEqual(sps.picWidthInMbs, 120)
        XCTAssertEqual(sps.picHeightInMapUnits, 68)
        XCTAssertTrue(sps.frameCroppingFlag)
        XCTAssertEqual(sps.frameCropBottomOffset, 4, "8 rows of 4:2:0 crop units")
        XCTAssertEqual(sps.width, 1920)
        XCTAssertEqual(sps.height, 1080)
        XCTAssertEqual(sps.frameRate, 30)
        XCTAssertEqual(sps.vui?.timeScale, 60)
        XCTAssertEqual(sps.vui?.numUnitsInTick, 1)

        let pps = try PictureParameterSet(nalUnit: NALUnit(bytes: X264Fixtures.pps1080pBaseline))
        XCTAssertFalse(pps.isCABAC)
        XCTAssertEqual(pps.entropyCodingName, "CAVLC")
        XCTAssertEqual(pps.picParameterSetID, 0)
        XCTAssertEqual(pps.seqParameterSetID, 0)
        XCTAssertEqual(pps.numSliceGroups, 1)
    }

    func testX264OddSizesAndProfiles() throws {
        let high = try sps(X264Fixtures.sps642x482High)
        XCTAssertEqual(high.profileName, "High")
        XCTAssertEqual(high.levelName, "3")
        XCTAssertEqual([high.width, high.height], [642, 482])
        XCTAssertEqual(high.frameRate, 25)
        let cabac = try PictureParameterSet(nalUnit: NALUnit(bytes: X264Fixtures.pps642x482High))
        XCTAssertTrue(cabac.isCABAC)
        XCTAssertEqual(cabac.transform8x8ModeFlag, true)

        let yuv444 = try sps(X264Fixtures.sps641x481High444)
        XCTAssertEqual(yuv444.profileName, "High 4:4:4 Predictive")
        XCTAssertEqual(yuv444.chromaFormatIdc, 3)
        XCTAssertEqual([yuv444.width, yuv444.height], [641, 481])

        let yuv422 = try sps(X264Fixtures.sps642x482High422)
        XCTAssertEqual(yuv422.profileName, "High 4:2:2")
        XCTAssertEqual(yuv422.chromaFormatIdc, 2)
        XCTAssertEqual(yuv422.bitDepthLuma, 10)
        XCTAssertEqual([yuv422.width, yuv422.height], [642, 482])
        XCTAssertEqual(yuv422.frameRate, 25)

        let small = try sps(X264Fixtures.sps320x240)
        XCTAssertEqual(small.profileName, "Constrained Baseline")
        XCTAssertEqual(small.levelName, "1.3")
        XCTAssertEqual([small.width, small.height], [320, 240])
        XCTAssertEqual(small.frameRate, 30)

        let hd = try sps(X264Fixtures.sps720p60High)
        XCTAssertEqual(hd.levelName, "3.2")
        XCTAssertEqual([hd.width, hd.height], [1280, 720])
        XCTAssertEqual(hd.frameRate, 60)
    }

    func testX264Interlaced() throws {
        let sps = try sps(X264Fixtures.sps1080iMain)
        XCTAssertEqual(sps.profileName, "Main")
        XCTAssertFalse(sps.frameMbsOnlyFlag)
        XCTAssertTrue(sps.mbAdaptiveFrameFieldFlag)
        XCTAssertEqual(sps.picHeightInMapUnits, 34)
        XCTAssertEqual([sps.width, sps.height], [1920, 1080])
        XCTAssertEqual(sps.frameRate, 25)
        let pps = try PictureParameterSet(nalUnit: NALUnit(bytes: X264Fixtures.pps1080iMain))
        XCTAssertFalse(pps.isCABAC, "preset ultrafast turns CABAC off")
    }

    func testHandBuiltCroppingPerChromaFormat() throws {
        // 4:2:0 progressive: crop units are 2x2.
        var builder = SPSBuilder(widthInMbs: 41, heightInMapUnits: 31, crop: (0, 3, 0, 7))
        var sps = try SequenceParameterSet(rbsp: builder.rbsp())
        XCTAssertEqual([sps.width, sps.height], [41 * 16 - 6, 31 * 16 - 14])
        // 4:2:0 interlaced: vertical unit doubles, height counts both fields.
        builder.frameMbsOnly = false
        sps = try SequenceParameterSet(rbsp: builder.rbsp())
        XCTAssertEqual([sps.width, sps.height], [41 * 16 - 6, 62 * 16 - 28])
        // 4:2:2: 2x1. 4:4:4: 1x1.
        builder.frameMbsOnly = true
        builder.chromaFormatIdc = 2
        sps = try SequenceParameterSet(rbsp: builder.rbsp())
        XCTAssertEqual([sps.width, sps.height], [41 * 16 - 6, 31 * 16 - 7])
        builder.chromaFormatIdc = 3
        sps = try SequenceParameterSet(rbsp: builder.rbsp())
        XCTAssertEqual([sps.width, sps.height], [41 * 16 - 3, 31 * 16 - 7])
        // Monochrome: 1x1 as well.
        builder.chromaFormatIdc = 0
        sps = try SequenceParameterSet(rbsp: builder.rbsp())
        XCTAssertEqual([sps.width, sps.height], [41 * 16 - 3, 31 * 16 - 7])
    }

    func testCroppingLargerThanPictureIsRejected() {
        let builder = SPSBuilder(widthInMbs: 1, heightInMapUnits: 1, crop: (0, 8, 0, 0))
        XCTAssertThrowsError(try SequenceParameterSet(rbsp: builder.rbsp()))
    }

    func testScalingListsAreSkippedCorrectly() throws {
        // List 0 explicit (16 deltas), list 1 "use default" (delta -8 -> next 0), list 6 explicit 8x8
        // that stops early via nextScale 0, the rest absent. Fields after them must still parse.
        let list0: [Int32] = [1, 2, 3, -4, 5, 0, 0, 1, -1, 2, 3, 4, -5, 6, 7, 8]
        var list6: [Int32] = Array(repeating: 1, count: 10)
        list6.append(-18)  // (lastScale 18 - 18) = 0: repeat to the end, nothing more coded
        var builder = SPSBuilder(scalingLists: [list0, [-8], nil, nil, nil, nil, list6], timing: (1001, 60000))
        builder.widthInMbs = 80
        builder.heightInMapUnits = 45
        let sps = try SequenceParameterSet(rbsp: builder.rbsp())
        XCTAssertTrue(sps.seqScalingMatrixPresentFlag)
        XCTAssertEqual([sps.width, sps.height], [1280, 720])
        XCTAssertEqual(sps.frameRate!, 60000.0 / 2002.0, accuracy: 1e-9)
        // 4:4:4 has 12 lists.
        builder.chromaFormatIdc = 3
        builder.scalingLists = Array(repeating: nil, count: 11) + [[-8]]
        XCTAssertEqual(try SequenceParameterSet(rbsp: builder.rbsp()).width, 1280)
    }

    func testPicOrderCountType1AndExtendedSAR() throws {
        var builder = SPSBuilder(profileIdc: 77, pocType: 1, widthInMbs: 40, heightInMapUnits: 30)
        builder.sar = (4, 3)
        let sps = try SequenceParameterSet(rbsp: builder.rbsp())
        XCTAssertEqual(sps.picOrderCntType, 1)
        XCTAssertEqual(sps.offsetsForRefFrame, [1, -2, 3])
        XCTAssertEqual(sps.offsetForNonRefPic, -1)
        XCTAssertEqual(sps.vui?.sampleAspectRatio?.width, 4)
        XCTAssertNil(sps.frameRate)
        XCTAssertEqual([sps.width, sps.height], [640, 480])
    }

    func testProfileAndLevelNames() throws {
        func names(_ profile: UInt8, _ flags: UInt8, _ level: UInt8) throws -> (String, String) {
            let sps = try SequenceParameterSet(rbsp: SPSBuilder(profileIdc: profile, constraintFlags: flags, levelIdc: level).rbsp())
            return (sps.profileName, sps.levelName)
        }
        XCTAssertEqual(try names(66, 0, 31).0, "Baseline")
        XCTAssertEqual(try names(66, 0x40, 31).0, "Constrained Baseline")
        XCTAssertEqual(try names(66, 0x10, 11).1, "1b")
        XCTAssertEqual(try names(77, 0, 9).1, "1b")
        XCTAssertEqual(try names(100, 0x0C, 51).0, "Constrained High")
        XCTAssertEqual(try names(100, 0x08, 51).0, "Progressive High")
        XCTAssertEqual(try names(100, 0, 31).1, "3.1")
        XCTAssertEqual(try names(100, 0, 40).1, "4")
        XCTAssertEqual(try names(110, 0x10, 40).0, "High 10 Intra")
    }

    func testTruncatedParameterSetsThrow() {
        let full = RBSP.removingEmulationPrevention(X264Fixtures.sps1080pBaseline.dropFirst())
        // Cut before the VUI: every prefix shorter than the core fields must throw.
        for length in 0..<8 {
            XCTAssertThrowsError(try SequenceParameterSet(rbsp: Array(full.prefix(length))), "length \(length)")
        }
        XCTAssertThrowsError(try PictureParameterSet(rbsp: [0x80]))
        XCTAssertThrowsError(try SequenceParameterSet(nalUnit: NALUnit(bytes: X264Fixtures.pps1080pBaseline))) {
            XCTAssertEqual($0 as? BitstreamError, .wrongNALUnitType(.pps))
        }
    }

    func testSliceHeaders() throws {
        let sps = try sps(X264Fixtures.sps1080pBaseline)
        let first = try SliceHeader(nalUnit: NALUnit(bytes: X264Fixtures.idrSlice0), sequenceParameterSet: sps)
        XCTAssertEqual(first.firstMbInSlice, 0)
        XCTAssertTrue(first.startsPicture)
        XCTAssertEqual(first.sliceType, .i)
        XCTAssertEqual(first.sliceType.name, "I")
        XCTAssertEqual(first.picParameterSetID, 0)
        XCTAssertEqual(first.frameNum, 0)

        let second = try SliceHeader(nalUnit: NALUnit(bytes: X264Fixtures.idrSlice1))
        XCTAssertEqual(second.firstMbInSlice, 4080, "second of two slices in 8160 macroblocks")
        XCTAssertFalse(second.startsPicture)
        XCTAssertNil(second.frameNum)

        let p1 = try SliceHeader(nalUnit: NALUnit(bytes: X264Fixtures.pSliceFrame1), sequenceParameterSet: sps)
        XCTAssertEqual(p1.sliceType, .p)
        XCTAssertEqual(p1.frameNum, 1)
        let p2 = try SliceHeader(nalUnit: NALUnit(bytes: X264Fixtures.pSliceFrame2), sequenceParameterSet: sps)
        XCTAssertEqual(p2.frameNum, 2)

        let interlacedSPS = try self.sps(X264Fixtures.sps1080iMain)
        let interlaced = try SliceHeader(nalUnit: NALUnit(bytes: X264Fixtures.idrSlice1080i), sequenceParameterSet: interlacedSPS)
        XCTAssertEqual(interlaced.sliceType, .i)
        XCTAssertEqual(interlaced.frameNum, 0)

        XCTAssertThrowsError(try SliceHeader(nalUnit: NALUnit(bytes: X264Fixtures.sps1080pBaseline)))
        XCTAssertThrowsError(try SliceHeader(nalUnit: NALUnit(bytes: [0x65])))
    }

    func testNALHeaderFields() {
        let unit = NALUnit(bytes: [0xE5, 0x00])
        XCTAssertTrue(unit.forbiddenZeroBit)
        XCTAssertEqual(unit.nalRefIdc, 3)
        XCTAssertEqual(unit.type, .idrSlice)
        XCTAssertTrue(unit.isIDR)
        XCTAssertEqual(NALUnit(bytes: []).type, .unspecified0)
        XCTAssertEqual(NALUnitType.sps.name, "Sequence parameter set")
        XCTAssertEqual(NALUnitType.idrSlice.name, "Coded slice of an IDR picture")
        XCTAssertEqual(NALUnitType.reserved17.name, "Reserved")
        XCTAssertEqual(NALUnitType.unspecified30.name, "Unspecified")
        XCTAssertEqual(NALUnitType.nonIDRSlice.shortName, "non-IDR")
        XCTAssertEqual(NALUnitType.allCases.count, 32)
        XCTAssertEqual(NALUnitType.allCases.filter(\.isVCL).map(\.rawValue), [1, 2, 3, 4, 5])
        XCTAssertEqual(NALUnitType.allCases.filter(\.isSlice).map(\.rawValue), [1, 2, 5])
    }
}
