/// `seq_parameter_set_data()` (H.264 7.3.2.1.1), parsed up to and including the VUI timing
/// information, with the picture size and frame rate worked out.
public struct SequenceParameterSet: Sendable, Hashable {
    public var profileIdc: UInt8
    /// constraint_set0_flag ... constraint_set5_flag, index 0 to 5.
    public var constraintFlags: [Bool]
    public var levelIdc: UInt8
    public var seqParameterSetID: Int

    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4. 1 unless a high profile says otherwise.
    public var chromaFormatIdc: Int = 1
    public var separateColourPlaneFlag = false
    public var bitDepthLuma = 8
    public var bitDepthChroma = 8
    public var qpprimeYZeroTransformBypassFlag = false
    public var seqScalingMatrixPresentFlag = false

    public var log2MaxFrameNum: Int
    public var picOrderCntType: Int
    /// For pic_order_cnt_type 0.
    public var log2MaxPicOrderCntLsb: Int?
    /// For pic_order_cnt_type 1.
    public var deltaPicOrderAlwaysZeroFlag = false
    public var offsetForNonRefPic: Int32 = 0
    public var offsetForTopToBottomField: Int32 = 0
    public var offsetsForRefFrame: [Int32] = []

    public var maxNumRefFrames: Int
    public var gapsInFrameNumValueAllowedFlag: Bool
    public var picWidthInMbs: Int
    public var picHeightInMapUnits: Int
    public var frameMbsOnlyFlag: Bool
    public var mbAdaptiveFrameFieldFlag = false
    public var direct8x8InferenceFlag: Bool
    public var frameCroppingFlag: Bool
    public var frameCropLeftOffset = 0
    public var frameCropRightOffset = 0
    public var frameCropTopOffset = 0
    public var frameCropBottomOffset = 0

    public var vuiParametersPresentFlag: Bool
    /// Nil when absent, or when present but unreadable (the core fields are still valid).
    public var vui: VUI?

    /// The part of `vui_parameters()` (Annex E.1.1) that says how to display and time frames.
    public struct VUI: Sendable, Hashable {
        public var aspectRatioIdc: UInt8?
        /// Sample aspect ratio: from the Table E-1 entry or the explicit values (idc 255).
        public var sampleAspectRatio: (width: Int, height: Int)? {
            guard let idc = aspectRatioIdc else { return nil }
            if idc == 255 { return sarWidth > 0 && sarHeight > 0 ? (sarWidth, sarHeight) : nil }
            let table: [(Int, Int)] = [(0, 0), (1, 1), (12, 11), (10, 11), (16, 11), (40, 33), (24, 11),
                                       (20, 11), (32, 11), (80, 33), (18, 11), (15, 11), (64, 33),
                                       (160, 99), (4, 3), (3, 2), (2, 1)]
            guard idc >= 1 && Int(idc) < table.count else { return nil }
            return table[Int(idc)]
        }
        public var sarWidth = 0
        public var sarHeight = 0
        public var videoFullRangeFlag: Bool?
        public var colourPrimaries: UInt8?
        public var transferCharacteristics: UInt8?
        public var matrixCoefficients: UInt8?
        public var timingInfoPresentFlag = false
        public var numUnitsInTick: UInt32 = 0
        public var timeScale: UInt32 = 0
        public var fixedFrameRateFlag = false
    }

    /// Parses an SPS NAL unit (header byte and escaped payload).
    public init(nalUnit: NALUnit) throws {
        guard nalUnit.type == .sps else { throw BitstreamError.wrongNALUnitType(nalUnit.type) }
        try self.init(rbsp: RBSP.removingEmulationPrevention(nalUnit.payload))
    }

    /// Parses the RBSP that follows the NAL header byte.
    public init(rbsp: [UInt8]) throws {
        var reader = BitReader(rbsp)
        profileIdc = UInt8(try reader.readBits(8))
        let flags = try reader.readBits(8)
        constraintFlags = (0..<6).map { flags & (0x80 >> UInt64($0)) != 0 }
        levelIdc = UInt8(try reader.readBits(8))
        seqParameterSetID = try reader.readUE(max: 31, "seq_parameter_set_id")

        if Self.profilesWithChromaInfo.contains(profileIdc) {
            chromaFormatIdc = try reader.readUE(max: 3, "chroma_format_idc")
            if chromaFormatIdc == 3 {
                separateColourPlaneFlag = try reader.readFlag()
            }
            bitDepthLuma = 8 + (try reader.readUE(max: 6, "bit_depth_luma_minus8"))
            bitDepthChroma = 8 + (try reader.readUE(max: 6, "bit_depth_chroma_minus8"))
            qpprimeYZeroTransformBypassFlag = try reader.readFlag()
            seqScalingMatrixPresentFlag = try reader.readFlag()
            if seqScalingMatrixPresentFlag {
                let listCount = chromaFormatIdc != 3 ? 8 : 12
                for index in 0..<listCount where try reader.readFlag() {
                    try Self.skipScalingList(&reader, size: index < 6 ? 16 : 64)
                }
            }
        }

        log2MaxFrameNum = 4 + (try reader.readUE(max: 12, "log2_max_frame_num_minus4"))
        picOrderCntType = try reader.readUE(max: 2, "pic_order_cnt_type")
        if picOrderCntType == 0 {
            log2MaxPicOrderCntLsb = 4 + (try reader.readUE(max: 12, "log2_max_pic_order_cnt_lsb_minus4"))
        } else if picOrderCntType == 1 {
            deltaPicOrderAlwaysZeroFlag = try reader.readFlag()
            offsetForNonRefPic = try reader.readSE()
            offsetForTopToBottomField = try reader.readSE()
            let cycleLength = try reader.readUE(max: 255, "num_ref_frames_in_pic_order_cnt_cycle")
            for _ in 0..<cycleLength {
                offsetsForRefFrame.append(try reader.readSE())
            }
        }

        // The spec caps this at MaxDpbFrames (16); accept a little slack for odd encoders.
        maxNumRefFrames = try reader.readUE(max: 32, "max_num_ref_frames")
        gapsInFrameNumValueAllowedFlag = try reader.readFlag()
        // Limits keep width/height arithmetic far from overflow; real streams are far below.
        picWidthInMbs = 1 + (try reader.readUE(max: 1 << 16, "pic_width_in_mbs_minus1"))
        picHeightInMapUnits = 1 + (try reader.readUE(max: 1 << 16, "pic_height_in_map_units_minus1"))
        frameMbsOnlyFlag = try reader.readFlag()
        if !frameMbsOnlyFlag {
            mbAdaptiveFrameFieldFlag = try reader.readFlag()
        }
        direct8x8InferenceFlag = try reader.readFlag()
        frameCroppingFlag = try reader.readFlag()
        if frameCroppingFlag {
            frameCropLeftOffset = try reader.readUE(max: 1 << 20, "frame_crop_left_offset")
            frameCropRightOffset = try reader.readUE(max: 1 << 20, "frame_crop_right_offset")
            frameCropTopOffset = try reader.readUE(max: 1 << 20, "frame_crop_top_offset")
            frameCropBottomOffset = try reader.readUE(max: 1 << 20, "frame_crop_bottom_offset")
        }
        vuiParametersPresentFlag = try reader.readFlag()
        if vuiParametersPresentFlag {
            // A broken VUI should not hide the picture size, so its errors are absorbed.
            vui = try? Self.parseVUI(&reader)
        }

        guard width > 0 && height > 0 else {
            throw BitstreamError.invalidValue("cropping leaves no picture (\(width)x\(height))")
        }
    }

    // MARK: - Derived values

    /// ChromaArrayType (7.4.2.1.1): 0 when planes are coded separately or monochrome.
    public var chromaArrayType: Int { separateColourPlaneFlag ? 0 : chromaFormatIdc }

    /// Height of the frame in macroblocks: map units are field MB rows when fields may be coded.
    public var frameHeightInMbs: Int { (frameMbsOnlyFlag ? 1 : 2) * picHeightInMapUnits }

    /// Crop offsets count in chroma samples (and in field rows for interlaced streams) (7-19..7-22).
    private var cropUnitX: Int {
        switch chromaArrayType {
        case 1, 2: return 2
        default: return 1
        }
    }
    private var cropUnitY: Int {
        let subHeightC = chromaArrayType == 1 ? 2 : 1
        return subHeightC * (frameMbsOnlyFlag ? 1 : 2)
    }

    /// Displayed width in luma samples after cropping.
    public var width: Int {
        picWidthInMbs * 16 - cropUnitX * (frameCropLeftOffset + frameCropRightOffset)
    }

    /// Displayed height in luma samples after cropping.
    public var height: Int {
        frameHeightInMbs * 16 - cropUnitY * (frameCropTopOffset + frameCropBottomOffset)
    }

    /// Frames per second from VUI timing: time_scale / (2 * num_units_in_tick), since a
    /// tick is a field period. Nil when the stream carries no timing.
    public var frameRate: Double? {
        guard let vui, vui.timingInfoPresentFlag, vui.numUnitsInTick > 0, vui.timeScale > 0 else { return nil }
        return Double(vui.timeScale) / (2 * Double(vui.numUnitsInTick))
    }

    public var constrainedIntraOnly: Bool { constraintFlags[3] }

    /// Profile name as in Annex A, refined by the constraint flags where they define one.
    public var profileName: String {
        let set1 = constraintFlags[1], set3 = constraintFlags[3], set4 = constraintFlags[4], set5 = constraintFlags[5]
        switch profileIdc {
        case 66: return set1 ? "Constrained Baseline" : "Baseline"
        case 77: return "Main"
        case 88: return "Extended"
        case 100:
            if set4 && set5 { return "Constrained High" }
            return set4 ? "Progressive High" : "High"
        case 110: return set3 ? "High 10 Intra" : (set4 ? "Progressive High 10" : "High 10")
        case 122: return set3 ? "High 4:2:2 Intra" : "High 4:2:2"
        case 244: return set3 ? "High 4:4:4 Intra" : "High 4:4:4 Predictive"
        case 44: return "CAVLC 4:4:4 Intra"
        case 83: return "Scalable Baseline"
        case 86: return "Scalable High"
        case 118: return "Multiview High"
        case 128: return "Stereo High"
        case 134: return "MFC High"
        case 135: return "MFC Depth High"
        case 138: return "Multiview Depth High"
        case 139: return "Enhanced Multiview Depth High"
        default: return "Unknown profile \(profileIdc)"
        }
    }

    /// Level as written in Table A-1: "3", "3.1", "1b".
    public var levelName: String {
        // Level 1b is level_idc 11 with constraint_set3 in Baseline/Main/Extended, or 9.
        if levelIdc == 9 || (levelIdc == 11 && constraintFlags[3] && [66, 77, 88].contains(profileIdc)) {
            return "1b"
        }
        let major = levelIdc / 10, minor = levelIdc % 10
        return minor == 0 ? "\(major)" : "\(major).\(minor)"
    }

    // MARK: - Private

    /// Profiles whose SPS carries chroma_format_idc, bit depths and scaling matrices.
    private static let profilesWithChromaInfo: Set<UInt8> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// scaling_list() (7.3.2.1.1.1): only parsed to get past it; camrec needs no matrices.
    private static func skipScalingList(_ reader: inout BitReader, size: Int) throws {
        var lastScale: Int32 = 8
        var nextScale: Int32 = 8
        for _ in 0..<size {
            if nextScale != 0 {
                let delta = try reader.readSE()
                guard delta >= -128 && delta <= 127 else { throw BitstreamError.invalidValue("delta_scale = \(delta)") }
                nextScale = (lastScale + delta + 256) % 256
            }
            // nextScale 0 means "repeat the last value to the end": nothing more is coded.
            lastScale = nextScale == 0 ? lastScale : nextScale
        }
    }

    private static func parseVUI(_ reader: inout BitReader) throws -> VUI {
        var vui = VUI()
        if try reader.readFlag() {  // aspect_ratio_info_present_flag
            let idc = UInt8(try reader.readBits(8))
            vui.aspectRatioIdc = idc
            if idc == 255 {  // Extended_SAR
                vui.sarWidth = Int(try reader.readBits(16))
                vui.sarHeight = Int(try reader.readBits(16))
            }
        }
        if try reader.readFlag() {  // overscan_info_present_flag
            try reader.skipBits(1)  // overscan_appropriate_flag
        }
        if try reader.readFlag() {  // video_signal_type_present_flag
            try reader.skipBits(3)  // video_format
            vui.videoFullRangeFlag = try reader.readFlag()
            if try reader.readFlag() {  // colour_description_present_flag
                vui.colourPrimaries = UInt8(try reader.readBits(8))
                vui.transferCharacteristics = UInt8(try reader.readBits(8))
                vui.matrixCoefficients = UInt8(try reader.readBits(8))
            }
        }
        if try reader.readFlag() {  // chroma_loc_info_present_flag
            _ = try reader.readUE()  // chroma_sample_loc_type_top_field
            _ = try reader.readUE()  // chroma_sample_loc_type_bottom_field
        }
        vui.timingInfoPresentFlag = try reader.readFlag()
        if vui.timingInfoPresentFlag {
            vui.numUnitsInTick = try reader.readBits32(32)
            vui.timeScale = try reader.readBits32(32)
            vui.fixedFrameRateFlag = try reader.readFlag()
        }
        // HRD parameters and bitstream restrictions follow; camrec does not need them.
        return vui
    }
}
