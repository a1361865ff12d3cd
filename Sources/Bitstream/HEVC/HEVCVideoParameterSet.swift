/// `video_parameter_set_rbsp()` (H.265 7.3.2.1), up to its timing information.
public struct HEVCVideoParameterSet: Sendable, Hashable {
    public var videoParameterSetID: Int
    public var maxSubLayers: Int
    public var profileTierLevel: HEVCProfileTierLevel
    /// `vps_num_units_in_tick` and `vps_time_scale`, when the VPS carries timing.
    public var numUnitsInTick: UInt32?
    public var timeScale: UInt32?

    /// - Parameter unit: the whole NAL unit, header included, still escaped.
    public init(nalUnit unit: NALUnit) throws {
        try self.init(rbsp: try HEVCParameterSetRBSP.payload(of: unit, expecting: .vps))
    }

    public init(rbsp: [UInt8]) throws {
        var reader = BitReader(rbsp)
        videoParameterSetID = Int(try reader.readBits(4))
        try reader.skipBits(2 + 6)  // base layer flags, vps_max_layers_minus1
        maxSubLayers = Int(try reader.readBits(3)) + 1
        guard maxSubLayers <= 7 else { throw BitstreamError.invalidValue("vps_max_sub_layers_minus1 = \(maxSubLayers - 1), max 6") }
        try reader.skipBits(1 + 16)  // temporal id nesting, reserved 0xffff
        profileTierLevel = try HEVCProfileTierLevel(reading: &reader, maxSubLayersMinus1: maxSubLayers - 1)
        let orderingForEach = try reader.readFlag()
        for _ in (orderingForEach ? 0 : maxSubLayers - 1)..<maxSubLayers {
            for name in ["vps_max_dec_pic_buffering_minus1", "vps_max_num_reorder_pics", "vps_max_latency_increase_plus1"] {
                _ = try reader.readUE(max: Int(UInt32.max - 1), name)
            }
        }
        let maxLayerID = Int(try reader.readBits(6))
        let layerSets = try reader.readUE(max: 1023, "vps_num_layer_sets_minus1")
        try reader.skipBits(layerSets * (maxLayerID + 1))
        if try reader.readFlag() {
            numUnitsInTick = try reader.readBits32(32)
            timeScale = try reader.readBits32(32)
        }
    }
}

/// The payload of an H.265 parameter set: its two-byte header checked and removed, emulation
/// prevention undone.
enum HEVCParameterSetRBSP {
    static func payload(of unit: NALUnit, expecting type: HEVCNALUnitType) throws -> [UInt8] {
        guard let header = HEVCNALHeader(unit.bytes) else { throw BitstreamError.truncated }
        guard header.type == type else {
            throw BitstreamError.invalidValue("nal_unit_type = \(header.type.rawValue) (\(header.type.shortName)), expected \(type.shortName)")
        }
        return RBSP.removingEmulationPrevention(unit.bytes.dropFirst(2))
    }
}
