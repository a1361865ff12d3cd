/// `pic_parameter_set_rbsp()` (H.265 7.3.2.3.1), up to the tile and wavefront flags: what says
/// which SPS it uses and how a slice segment header is laid out.
public struct HEVCPictureParameterSet: Sendable, Hashable {
    public var picParameterSetID: Int
    public var seqParameterSetID: Int
    public var dependentSliceSegmentsEnabledFlag: Bool
    public var outputFlagPresentFlag: Bool
    public var numExtraSliceHeaderBits: Int
    public var signDataHidingEnabledFlag: Bool
    public var cabacInitPresentFlag: Bool
    public var numRefIdxL0DefaultActive: Int
    public var numRefIdxL1DefaultActive: Int
    public var initQP: Int
    public var constrainedIntraPredFlag: Bool
    public var transformSkipEnabledFlag: Bool
    public var cuQPDeltaEnabledFlag: Bool
    public var cbQPOffset: Int
    public var crQPOffset: Int
    public var weightedPredFlag: Bool
    public var weightedBipredFlag: Bool
    public var tilesEnabledFlag: Bool
    /// Wavefront parallel processing.
    public var entropyCodingSyncEnabledFlag: Bool

    public init(nalUnit unit: NALUnit) throws {
        try self.init(rbsp: try HEVCParameterSetRBSP.payload(of: unit, expecting: .pps))
    }

    public init(rbsp: [UInt8]) throws {
        var reader = BitReader(rbsp)
        picParameterSetID = try reader.readUE(max: 63, "pps_pic_parameter_set_id")
        seqParameterSetID = try reader.readUE(max: 15, "pps_seq_parameter_set_id")
        dependentSliceSegmentsEnabledFlag = try reader.readFlag()
        outputFlagPresentFlag = try reader.readFlag()
        numExtraSliceHeaderBits = Int(try reader.readBits(3))
        signDataHidingEnabledFlag = try reader.readFlag()
        cabacInitPresentFlag = try reader.readFlag()
        numRefIdxL0DefaultActive = try reader.readUE(max: 14, "num_ref_idx_l0_default_active_minus1") + 1
        numRefIdxL1DefaultActive = try reader.readUE(max: 14, "num_ref_idx_l1_default_active_minus1") + 1
        initQP = 26 + Int(try reader.readSE())
        constrainedIntraPredFlag = try reader.readFlag()
        transformSkipEnabledFlag = try reader.readFlag()
        cuQPDeltaEnabledFlag = try reader.readFlag()
        if cuQPDeltaEnabledFlag { _ = try reader.readUE(max: 6, "diff_cu_qp_delta_depth") }
        cbQPOffset = Int(try reader.readSE())
        crQPOffset = Int(try reader.readSE())
        try reader.skipBits(1)  // pps_slice_chroma_qp_offsets_present_flag
        weightedPredFlag = try reader.readFlag()
        weightedBipredFlag = try reader.readFlag()
        try reader.skipBits(1)  // transquant_bypass_enabled_flag
        tilesEnabledFlag = try reader.readFlag()
        entropyCodingSyncEnabledFlag = try reader.readFlag()
    }
}
