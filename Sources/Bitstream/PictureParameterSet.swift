/// `pic_parameter_set_rbsp()` (H.264 7.3.2.2), parsed up to `redundant_pic_cnt_present_flag`
/// plus `transform_8x8_mode_flag` when present. The rest (PPS scaling lists) would need the
/// SPS to parse and nothing in camrec uses it, so parsing stops there.
public struct PictureParameterSet: Sendable, Hashable {
    public var picParameterSetID: Int
    public var seqParameterSetID: Int
    public var entropyCodingModeFlag: Bool
    public var bottomFieldPicOrderInFramePresentFlag: Bool
    public var numSliceGroups: Int
    public var sliceGroupMapType: Int?
    public var numRefIdxL0DefaultActive: Int
    public var numRefIdxL1DefaultActive: Int
    public var weightedPredFlag: Bool
    public var weightedBipredIdc: Int
    public var picInitQP: Int
    public var picInitQS: Int
    public var chromaQPIndexOffset: Int
    public var deblockingFilterControlPresentFlag: Bool
    public var constrainedIntraPredFlag: Bool
    public var redundantPicCntPresentFlag: Bool
    /// Only in High profile PPSs; nil when the PPS ends before it.
    public var transform8x8ModeFlag: Bool?

    /// CABAC entropy coding (Main and higher) rather than CAVLC.
    public var isCABAC: Bool { entropyCodingModeFlag }
    public var entropyCodingName: String { entropyCodingModeFlag ? "CABAC" : "CAVLC" }

    public init(nalUnit: NALUnit) throws {
        guard nalUnit.type == .pps else { throw BitstreamError.wrongNALUnitType(nalUnit.type) }
        try self.init(rbsp: RBSP.removingEmulationPrevention(nalUnit.payload))
    }

    public init(rbsp: [UInt8]) throws {
        var reader = BitReader(rbsp)
        picParameterSetID = try reader.readUE(max: 255, "pic_parameter_set_id")
        seqParameterSetID = try reader.readUE(max: 31, "seq_parameter_set_id")
        entropyCodingModeFlag = try reader.readFlag()
        bottomFieldPicOrderInFramePresentFlag = try reader.readFlag()
        numSliceGroups = 1 + (try reader.readUE(max: 7, "num_slice_groups_minus1"))
        if numSliceGroups > 1 {
            // Flexible macroblock ordering (Baseline only). Walked so the fields after it are right.
            let mapType = try reader.readUE(max: 6, "slice_group_map_type")
            sliceGroupMapType = mapType
            switch mapType {
            case 0:
                for _ in 0..<numSliceGroups { _ = try reader.readUE() }  // run_length_minus1
            case 2:
                for _ in 0..<(numSliceGroups - 1) {
                    _ = try reader.readUE()  // top_left
                    _ = try reader.readUE()  // bottom_right
                }
            case 3, 4, 5:
                try reader.skipBits(1)  // slice_group_change_direction_flag
                _ = try reader.readUE()  // slice_group_change_rate_minus1
            case 6:
                let mapUnits = 1 + (try reader.readUE(max: 1 << 22, "pic_size_in_map_units_minus1"))
                // slice_group_id is u(v) with Ceil(Log2(num_slice_groups)) bits.
                let idBits = Int.bitWidth - (numSliceGroups - 1).leadingZeroBitCount
                try reader.skipBits(mapUnits * idBits)
            default:
                break
            }
        }
        numRefIdxL0DefaultActive = 1 + (try reader.readUE(max: 31, "num_ref_idx_l0_default_active_minus1"))
        numRefIdxL1DefaultActive = 1 + (try reader.readUE(max: 31, "num_ref_idx_l1_default_active_minus1"))
        weightedPredFlag = try reader.readFlag()
        weightedBipredIdc = Int(try reader.readBits(2))
        picInitQP = 26 + Int(try reader.readSE())
        picInitQS = 26 + Int(try reader.readSE())
        chromaQPIndexOffset = Int(try reader.readSE())
        deblockingFilterControlPresentFlag = try reader.readFlag()
        constrainedIntraPredFlag = try reader.readFlag()
        redundantPicCntPresentFlag = try reader.readFlag()
        if reader.moreRBSPData() {
            transform8x8ModeFlag = try reader.readFlag()
        }
    }
}
