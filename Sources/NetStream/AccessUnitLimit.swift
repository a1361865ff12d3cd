import Bitstream

/// The most bytes one access unit may take, from what the stream's own SPS declares, so a
/// peer that keeps a picture open (filler units, endless slices) cannot grow memory.
///
/// Two hard limits from H.264 Annex A apply to every coded picture of a level:
/// - its size in the coded picture buffer: MaxCPB (Table A-1) × cpbBrNalFactor (Table A-2:
///   1200 bits for Baseline/Main/Extended, 1500 High, 3600 High 10, 4800 High 4:2:2/4:4:4);
/// - its macroblocks: at most the picture's macroblocks (never more than MaxFS) × (128 +
///   RawMbBits) bits each (A.3.1), RawMbBits = 256 × luma depth + 2 × chroma samples × chroma depth.
///
/// The bound is twice the larger of the two (emulation-prevention bytes add up to half
/// again; a sender may ignore its CPB) plus 1 MiB for SEI and parameter sets: 1.8 MB for
/// 320x240 at level 1.3, 10.4 MB for 1080p at level 4.0 High, 24.5 MB at level 4.2 High, and
/// at most 0.96 GB (level 6.2, High 4:4:4). An unknown level is read as 6.2.
public enum AccessUnitLimit {
    /// Bytes of slack for units that carry no picture data (SEI, SPS, PPS, AUD).
    public static let slackBytes = 1 << 20

    /// (level_idc, MaxFS in macroblocks, MaxCPB in units of cpbBrNalFactor bits), Table A-1.
    /// Level 1b is level_idc 9 here (or 11 with constraint_set3_flag, see `maximumBytes`).
    static let levels: [(idc: UInt8, maxFrameMacroblocks: Int, maxCPB: Int)] = [
        (10, 99, 175), (9, 99, 350), (11, 396, 500), (12, 396, 1000), (13, 396, 2000),
        (20, 396, 2000), (21, 792, 4000), (22, 1620, 4000), (30, 1620, 10000), (31, 3600, 14000),
        (32, 5120, 20000), (40, 8192, 25000), (41, 8192, 62500), (42, 8704, 62500), (50, 22080, 135000),
        (51, 36864, 240000), (52, 36864, 240000), (60, 139264, 240000), (61, 139264, 480000), (62, 139264, 800000),
    ]

    /// The bound for access units coded with `sps`.
    public static func maximumBytes(for sps: SequenceParameterSet) -> Int {
        var levelIdc = sps.levelIdc
        // Level 1b in Baseline, Main and Extended: level_idc 11 with constraint_set3_flag.
        if levelIdc == 11, [66, 77, 88].contains(sps.profileIdc), sps.constraintFlags.count > 3, sps.constraintFlags[3] {
            levelIdc = 9
        }
        let level = levels.first { $0.idc == levelIdc } ?? levels[levels.count - 1]
        let cpbBytes = level.maxCPB * nalFactorBits(profileIdc: sps.profileIdc) / 8

        let (frameHeight, overflow) = sps.picHeightInMapUnits.multipliedReportingOverflow(by: sps.frameMbsOnlyFlag ? 1 : 2)
        let (pictureMacroblocks, overflow2) = sps.picWidthInMbs.multipliedReportingOverflow(by: frameHeight)
        let macroblocks = overflow || overflow2 || pictureMacroblocks <= 0
            ? level.maxFrameMacroblocks : min(pictureMacroblocks, level.maxFrameMacroblocks)
        let macroblockBytes = (128 + rawMacroblockBits(sps)) / 8 + 1
        let pictureBytes = macroblocks * macroblockBytes
        return 2 * max(cpbBytes, pictureBytes) + slackBytes
    }

    /// Table A-2's cpbBrNalFactor.
    /// H.265 Table A.8: MaxCPB in units of 1000 bits (Main tier, High tier) by general_level_idc.
    static let hevcLevels: [(idc: Int, mainTier: Int, highTier: Int)] = [
        (30, 350, 350), (60, 1500, 1500), (63, 3000, 3000), (90, 6000, 6000), (93, 10000, 10000),
        (120, 12000, 30000), (123, 20000, 50000), (150, 25000, 100000), (153, 40000, 160000), (156, 60000, 240000),
        (180, 60000, 240000), (183, 120000, 480000), (186, 240000, 800000),
    ]

    /// The same bound for H.265: twice the larger of the level's CPB (NAL factor 1100) and the
    /// picture's raw size, plus the slack.
    public static func maximumBytes(for sps: HEVCSequenceParameterSet) -> Int {
        let ptl = sps.profileTierLevel
        let level = hevcLevels.first { $0.idc == ptl.levelIdc } ?? hevcLevels[hevcLevels.count - 1]
        let cpbBytes = (ptl.tierFlag ? level.highTier : level.mainTier) * 1100 / 8
        let chromaPerLuma = [0.0, 0.5, 1.0, 2.0][sps.chromaFormatIdc]
        let lumaSamples = Double(sps.picWidthInLumaSamples) * Double(sps.picHeightInLumaSamples)
        let rawBits = lumaSamples * Double(sps.bitDepthLuma) + lumaSamples * chromaPerLuma * Double(sps.bitDepthChroma)
        let pictureBytes = Int(min(rawBits / 8, Double(1 << 40)))
        return 2 * max(cpbBytes, pictureBytes) + slackBytes
    }

    static func nalFactorBits(profileIdc: UInt8) -> Int {
        switch profileIdc {
        case 66, 77, 88: return 1200
        case 100: return 1500
        case 110: return 3600
        default: return 4800  // 122, 244, 44 and anything unknown: the largest
        }
    }

    /// RawMbBits (7.4.2.1.1): the bits of one uncompressed macroblock.
    static func rawMacroblockBits(_ sps: SequenceParameterSet) -> Int {
        let lumaDepth = min(max(sps.bitDepthLuma, 8), 14)
        let chromaDepth = min(max(sps.bitDepthChroma, 8), 14)
        let chromaSamples: Int
        switch sps.separateColourPlaneFlag ? 0 : sps.chromaFormatIdc {
        case 1: chromaSamples = 64      // 4:2:0, 8×8 per component
        case 2: chromaSamples = 128     // 4:2:2
        case 3: chromaSamples = 256     // 4:4:4
        default: chromaSamples = 0      // monochrome (or colour planes coded apart)
        }
        // Colour planes coded apart are three monochrome pictures in one access unit.
        let planes = sps.separateColourPlaneFlag ? 3 : 1
        return planes * (256 * lumaDepth + 2 * chromaSamples * chromaDepth)
    }
}
