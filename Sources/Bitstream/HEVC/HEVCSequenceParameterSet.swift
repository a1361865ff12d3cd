/// `seq_parameter_set_rbsp()` (H.265 7.3.2.2), parsed through the VUI's timing information,
/// with the displayed size (conformance window applied) and the frame rate worked out.
public struct HEVCSequenceParameterSet: Sendable, Hashable {
    public var videoParameterSetID: Int
    public var maxSubLayers: Int
    public var profileTierLevel: HEVCProfileTierLevel
    public var seqParameterSetID: Int
    /// 0 monochrome, 1 4:2:0, 2 4:2:2, 3 4:4:4.
    public var chromaFormatIdc: Int
    public var separateColourPlaneFlag = false
    public var picWidthInLumaSamples: Int
    public var picHeightInLumaSamples: Int
    /// Conformance window offsets (left, right, top, bottom), in chroma sample units: SubWidthC and
    /// SubHeightC luma samples each.
    public var conformanceWindow = [0, 0, 0, 0]
    public var bitDepthLuma: Int
    public var bitDepthChroma: Int
    public var log2MaxPicOrderCntLsb: Int
    public var log2MinLumaCodingBlockSize: Int
    public var log2CodingTreeBlockSize: Int
    public var scalingListEnabledFlag = false
    public var sampleAdaptiveOffsetEnabledFlag = false
    public var pcmEnabledFlag = false
    public var numShortTermRefPicSets = 0
    public var longTermRefPicsPresentFlag = false
    public var temporalMVPEnabledFlag = false
    public var vuiParametersPresentFlag = false
    /// From the VUI, when signalled.
    public var videoFullRangeFlag: Bool?
    public var numUnitsInTick: UInt32?
    public var timeScale: UInt32?

    public init(nalUnit unit: NALUnit) throws {
        try self.init(rbsp: try HEVCParameterSetRBSP.payload(of: unit, expecting: .sps))
    }

    public init(rbsp: [UInt8]) throws {
        var reader = BitReader(rbsp)
        videoParameterSetID = Int(try reader.readBits(4))
        maxSubLayers = Int(try reader.readBits(3)) + 1
        guard maxSubLayers <= 7 else { throw BitstreamError.invalidValue("sps_max_sub_layers_minus1 = \(maxSubLayers - 1), max 6") }
        try reader.skipBits(1)  // sps_temporal_id_nesting_flag
        profileTierLevel = try HEVCProfileTierLevel(reading: &reader, maxSubLayersMinus1: maxSubLayers - 1)
        seqParameterSetID = try reader.readUE(max: 15, "sps_seq_parameter_set_id")
        chromaFormatIdc = try reader.readUE(max: 3, "chroma_format_idc")
        if chromaFormatIdc == 3 { separateColourPlaneFlag = try reader.readFlag() }
        picWidthInLumaSamples = try reader.readUE(max: 16888, "pic_width_in_luma_samples")
        picHeightInLumaSamples = try reader.readUE(max: 16888, "pic_height_in_luma_samples")
        if try reader.readFlag() {
            conformanceWindow = try ["left", "right", "top", "bottom"].map { try reader.readUE(max: 16888, "conf_win_\($0)_offset") }
        }
        bitDepthLuma = try reader.readUE(max: 8, "bit_depth_luma_minus8") + 8
        bitDepthChroma = try reader.readUE(max: 8, "bit_depth_chroma_minus8") + 8
        log2MaxPicOrderCntLsb = try reader.readUE(max: 12, "log2_max_pic_order_cnt_lsb_minus4") + 4
        let orderingForEach = try reader.readFlag()
        for _ in (orderingForEach ? 0 : maxSubLayers - 1)..<maxSubLayers {
            for name in ["sps_max_dec_pic_buffering_minus1", "sps_max_num_reorder_pics", "sps_max_latency_increase_plus1"] {
                _ = try reader.readUE(max: Int(UInt32.max - 1), name)
            }
        }
        log2MinLumaCodingBlockSize = try reader.readUE(max: 3, "log2_min_luma_coding_block_size_minus3") + 3
        log2CodingTreeBlockSize = log2MinLumaCodingBlockSize + (try reader.readUE(max: 3, "log2_diff_max_min_luma_coding_block_size"))
        _ = try reader.readUE(max: 3, "log2_min_luma_transform_block_size_minus2")
        _ = try reader.readUE(max: 3, "log2_diff_max_min_luma_transform_block_size")
        _ = try reader.readUE(max: 5, "max_transform_hierarchy_depth_inter")
        _ = try reader.readUE(max: 5, "max_transform_hierarchy_depth_intra")
        scalingListEnabledFlag = try reader.readFlag()
        if scalingListEnabledFlag, try reader.readFlag() { try Self.skipScalingListData(&reader) }
        try reader.skipBits(1)  // amp_enabled_flag
        sampleAdaptiveOffsetEnabledFlag = try reader.readFlag()
        pcmEnabledFlag = try reader.readFlag()
        if pcmEnabledFlag {
            try reader.skipBits(4 + 4)
            _ = try reader.readUE(max: 2, "log2_min_pcm_luma_coding_block_size_minus3")
            _ = try reader.readUE(max: 2, "log2_diff_max_min_pcm_luma_coding_block_size")
            try reader.skipBits(1)
        }
        numShortTermRefPicSets = try reader.readUE(max: 64, "num_short_term_ref_pic_sets")
        var sets: [ShortTermRefPicSet] = []
        for index in 0..<numShortTermRefPicSets {
            sets.append(try Self.readShortTermRefPicSet(&reader, index: index, before: sets))
        }
        longTermRefPicsPresentFlag = try reader.readFlag()
        if longTermRefPicsPresentFlag {
            let count = try reader.readUE(max: 32, "num_long_term_ref_pics_sps")
            try reader.skipBits(count * (log2MaxPicOrderCntLsb + 1))
        }
        temporalMVPEnabledFlag = try reader.readFlag()
        try reader.skipBits(1)  // strong_intra_smoothing_enabled_flag
        vuiParametersPresentFlag = try reader.readFlag()
        if vuiParametersPresentFlag { try readVUITiming(&reader) }
    }

    /// The picture size after the conformance window.
    public var displayedWidth: Int {
        let subWidth = chromaFormatIdc == 1 || chromaFormatIdc == 2 ? 2 : 1
        return picWidthInLumaSamples - subWidth * (conformanceWindow[0] + conformanceWindow[1])
    }

    public var displayedHeight: Int {
        let subHeight = chromaFormatIdc == 1 ? 2 : 1
        return picHeightInLumaSamples - subHeight * (conformanceWindow[2] + conformanceWindow[3])
    }

    /// Pictures per second from the VUI timing (E.3.1: one picture per tick), when signalled.
    public var framesPerSecond: Double? {
        guard let ticks = numUnitsInTick, let scale = timeScale, ticks > 0, scale > 0 else { return nil }
        return Double(scale) / Double(ticks)
    }

    public var chromaFormatName: String {
        ["4:0:0", "4:2:0", "4:2:2", "4:4:4"][chromaFormatIdc]
    }

    /// `vui_parameters()` (E.2.1) up to `vui_time_scale`; what follows (HRD) is not needed.
    private mutating func readVUITiming(_ reader: inout BitReader) throws {
        if try reader.readFlag(), try reader.readBits(8) == 255 { try reader.skipBits(32) }  // aspect ratio
        if try reader.readFlag() { try reader.skipBits(1) }  // overscan
        if try reader.readFlag() {  // video signal type
            try reader.skipBits(3)
            videoFullRangeFlag = try reader.readFlag()
            if try reader.readFlag() { try reader.skipBits(24) }
        }
        if try reader.readFlag() {  // chroma location
            _ = try reader.readUE(max: 5, "chroma_sample_loc_type_top_field")
            _ = try reader.readUE(max: 5, "chroma_sample_loc_type_bottom_field")
        }
        try reader.skipBits(3)  // neutral chroma, field_seq, frame_field_info_present
        if try reader.readFlag() {  // default display window
            for side in ["left", "right", "top", "bottom"] { _ = try reader.readUE(max: 16888, "def_disp_win_\(side)_offset") }
        }
        if try reader.readFlag() {
            numUnitsInTick = try reader.readBits32(32)
            timeScale = try reader.readBits32(32)
        }
    }

    /// `scaling_list_data()` (7.3.4), read past.
    private static func skipScalingListData(_ reader: inout BitReader) throws {
        for sizeID in 0..<4 {
            for _ in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                if try !reader.readFlag() {
                    _ = try reader.readUE(max: 5, "scaling_list_pred_matrix_id_delta")
                    continue
                }
                if sizeID > 1 { _ = try reader.readSE() }
                for _ in 0..<min(64, 1 << (4 + (sizeID << 1))) { _ = try reader.readSE() }
            }
        }
    }

    /// The picture order count differences of one short-term reference picture set: negative
    /// ones nearest first, then positive ones nearest first (7.4.8).
    struct ShortTermRefPicSet {
        var negative: [Int] = []
        var positive: [Int] = []
    }

    /// `st_ref_pic_set(index)` (7.3.7) as it appears in an SPS. A set predicted from the one before
    /// it is derived as 7.4.8 says (equations 7-61 and 7-62), because how many entries the next
    /// predicted set reads depends on the values, not only the counts.
    static func readShortTermRefPicSet(_ reader: inout BitReader, index: Int, before: [ShortTermRefPicSet]) throws -> ShortTermRefPicSet {
        var set = ShortTermRefPicSet()
        if index > 0, try reader.readFlag() {
            // delta_idx_minus1 is only in slice headers: in an SPS the reference is the set before.
            let sign = try reader.readFlag()
            let magnitude = try reader.readUE(max: 1 << 15, "abs_delta_rps_minus1") + 1
            let deltaRPS = sign ? -magnitude : magnitude
            let reference = before[index - 1]
            let count = reference.negative.count + reference.positive.count
            var useDelta: [Bool] = []
            for _ in 0...count {
                // used_by_curr_pic_flag, and use_delta_flag (inferred 1) when that is 0.
                useDelta.append(try reader.readFlag() ? true : try reader.readFlag())
            }
            let negatives = reference.negative.count
            for (j, d) in reference.positive.enumerated().reversed() where d + deltaRPS < 0 && useDelta[negatives + j] {
                set.negative.append(d + deltaRPS)
            }
            if deltaRPS < 0 && useDelta[count] { set.negative.append(deltaRPS) }
            for (j, d) in reference.negative.enumerated() where d + deltaRPS < 0 && useDelta[j] {
                set.negative.append(d + deltaRPS)
            }
            for (j, d) in reference.negative.enumerated().reversed() where d + deltaRPS > 0 && useDelta[j] {
                set.positive.append(d + deltaRPS)
            }
            if deltaRPS > 0 && useDelta[count] { set.positive.append(deltaRPS) }
            for (j, d) in reference.positive.enumerated() where d + deltaRPS > 0 && useDelta[negatives + j] {
                set.positive.append(d + deltaRPS)
            }
            guard set.negative.count + set.positive.count <= 16 else {
                throw BitstreamError.invalidValue("short-term reference picture set \(index) has \(set.negative.count + set.positive.count) pictures, max 16")
            }
            return set
        }
        let negative = try reader.readUE(max: 16, "num_negative_pics")
        let positive = try reader.readUE(max: 16 - negative, "num_positive_pics")
        var poc = 0
        for _ in 0..<negative {
            poc -= try reader.readUE(max: 1 << 15, "delta_poc_s0_minus1") + 1
            set.negative.append(poc)
            try reader.skipBits(1)
        }
        poc = 0
        for _ in 0..<positive {
            poc += try reader.readUE(max: 1 << 15, "delta_poc_s1_minus1") + 1
            set.positive.append(poc)
            try reader.skipBits(1)
        }
        return set
    }
}
