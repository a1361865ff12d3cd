/// The start of `slice_segment_header()` (H.265 7.3.6.1): whether the segment begins a picture
/// and which PPS it uses. That much needs no parameter set, so a stream can be split into
/// pictures before its SPS is understood.
public struct HEVCSliceSegmentHeader: Sendable, Hashable {
    public var type: HEVCNALUnitType
    public var firstSliceSegmentInPicFlag: Bool
    /// Only in IRAP pictures.
    public var noOutputOfPriorPicsFlag: Bool?
    public var picParameterSetID: Int

    public init(nalUnit unit: NALUnit) throws {
        guard let header = HEVCNALHeader(unit.bytes) else { throw BitstreamError.truncated }
        guard header.type.isVCL else {
            throw BitstreamError.invalidValue("nal_unit_type = \(header.type.rawValue) (\(header.type.shortName)) is not a slice segment")
        }
        type = header.type
        // The first bytes are enough: the fields read here end within the first 5 bytes.
        var reader = BitReader(RBSP.removingEmulationPrevention(unit.bytes.dropFirst(2).prefix(8)))
        firstSliceSegmentInPicFlag = try reader.readFlag()
        noOutputOfPriorPicsFlag = header.type.isIRAP ? try reader.readFlag() : nil
        picParameterSetID = try reader.readUE(max: 63, "slice_pic_parameter_set_id")
    }
}
