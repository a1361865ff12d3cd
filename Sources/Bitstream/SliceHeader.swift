/// The first fields of `slice_header()` (H.264 7.3.3): enough to tell where a picture
/// starts, what kind of slice it is, and which parameter sets it uses.
public struct SliceHeader: Sendable, Hashable {
    public enum SliceType: Int, Sendable, CaseIterable {
        case p = 0, b = 1, i = 2, sp = 3, si = 4

        public var name: String {
            switch self {
            case .p: return "P"
            case .b: return "B"
            case .i: return "I"
            case .sp: return "SP"
            case .si: return "SI"
            }
        }
    }

    public var firstMbInSlice: Int
    /// slice_type as coded, 0...9; values 5...9 also promise all slices of the picture share it.
    public var sliceTypeRaw: Int
    public var picParameterSetID: Int
    /// Present only when the SPS was given (its width, log2_max_frame_num, is needed).
    public var frameNum: Int?

    public var sliceType: SliceType {
        // sliceTypeRaw is range-checked at parse time, so the fallback never happens.
        SliceType(rawValue: sliceTypeRaw % 5) ?? .p
    }

    /// True for the first slice of a picture (with ordered slices, the usual case).
    public var startsPicture: Bool { firstMbInSlice == 0 }

    /// Enough escaped bytes for the fields parsed here: three ue(v) of at most 63 bits,
    /// 2 bits of colour_plane_id and 16 bits of frame_num fit in 26 RBSP bytes, and
    /// emulation prevention adds at most one byte per two.
    static let headerPrefixLength = 48

    /// Parses the slice header of a slice NAL unit, un-escaping only its first bytes, so
    /// the cost does not depend on the slice size.
    /// - Parameter sequenceParameterSet: when given, `frameNum` is parsed too; it must be
    ///   the SPS the slice's PPS refers to.
    public init(nalUnit: NALUnit, sequenceParameterSet: SequenceParameterSet? = nil) throws {
        guard nalUnit.type.isSlice else { throw BitstreamError.wrongNALUnitType(nalUnit.type) }
        try self.init(escapedPayload: nalUnit.payload, sequenceParameterSet: sequenceParameterSet)
    }

    /// Parses from the escaped bytes after the NAL header byte (only a prefix is read).
    public init(escapedPayload: some Collection<UInt8>, sequenceParameterSet: SequenceParameterSet? = nil) throws {
        try self.init(rbsp: RBSP.removingEmulationPrevention(escapedPayload.prefix(Self.headerPrefixLength)),
                      sequenceParameterSet: sequenceParameterSet)
    }

    /// Parses from an RBSP (emulation prevention removed) that starts at the slice header.
    public init(rbsp: [UInt8], sequenceParameterSet: SequenceParameterSet? = nil) throws {
        var reader = BitReader(rbsp)
        firstMbInSlice = try reader.readUE(max: 1 << 24, "first_mb_in_slice")
        sliceTypeRaw = try reader.readUE(max: 9, "slice_type")
        picParameterSetID = try reader.readUE(max: 255, "pic_parameter_set_id")
        if let sps = sequenceParameterSet {
            if sps.separateColourPlaneFlag {
                try reader.skipBits(2)  // colour_plane_id
            }
            frameNum = Int(try reader.readBits(sps.log2MaxFrameNum))
        }
    }
}
