/// The codecs camrec's stream layer knows. One scanner, one inspector and one writer serve both:
/// what differs (NAL header, which units are parameter sets, which slices start a picture or allow
/// random access) is asked of the codec here, never written out twice.
public enum VideoCodec: String, Sendable, Hashable, CaseIterable {
    case h264
    case hevc

    public var displayName: String {
        switch self {
        case .h264: "H.264"
        case .hevc: "H.265/HEVC"
        }
    }

    /// Bytes of the NAL unit header.
    public var nalHeaderLength: Int { self == .h264 ? 1 : 2 }

    /// The parameter sets that must stand, in this order, right before the first slice of every
    /// IDR picture (seeds 001 and 003).
    public var parameterSetOrder: [ParameterSetKind] { self == .h264 ? [.sps, .pps] : [.vps, .sps, .pps] }

    /// "SPS+PPS" or "VPS+SPS+PPS".
    public var parameterSetNames: String { parameterSetOrder.map(\.rawValue).joined(separator: "+") }

    /// `nal_unit_type` of a unit (header first); 0 for a unit too short to have one.
    public func typeValue(of unit: some Collection<UInt8>) -> UInt8 {
        guard let first = unit.first else { return 0 }
        return self == .h264 ? first & 0x1F : (first >> 1) & 0x3F
    }

    public func shortName(ofType value: UInt8) -> String {
        self == .h264 ? NALUnitType(headerByte: value).shortName : HEVCNALUnitType(rawValue: value).shortName
    }

    /// What a unit of this type is for the stream contract.
    public func role(ofType value: UInt8) -> NALRole {
        switch self {
        case .h264:
            switch NALUnitType(headerByte: value) {
            case .sps: return .parameterSet(.sps)
            case .pps: return .parameterSet(.pps)
            case .sei: return .sei
            case .accessUnitDelimiter: return .accessUnitDelimiter
            case .idrSlice: return .idrSlice
            case .nonIDRSlice, .slicePartitionA: return .slice
            case .slicePartitionB, .slicePartitionC: return .sliceData
            case .endOfSequence, .prefixNALUnit, .subsetSPS, .depthParameterSet, .reserved17, .reserved18:
                return .otherStartingAccessUnit
            default: return .other
            }
        case .hevc:
            let type = HEVCNALUnitType(rawValue: value)
            switch value {
            case 32: return .parameterSet(.vps)
            case 33: return .parameterSet(.sps)
            case 34: return .parameterSet(.pps)
            case 35: return .accessUnitDelimiter
            case 39: return .sei
            case 41...44, 48...55: return .otherStartingAccessUnit
            default:
                if type.isIDR { return .idrSlice }
                if type.isIRAP { return .randomAccessSliceNotIDR }
                return type.isVCL ? .slice : .other
            }
        }
    }

    /// Whether a slice unit is the first of its picture (`first_mb_in_slice == 0` in H.264,
    /// `first_slice_segment_in_pic_flag` in H.265) and the PPS it names; nil when unreadable.
    public func sliceStart(of unit: NALUnit) -> (firstInPicture: Bool, picParameterSetID: Int)? {
        switch self {
        case .h264:
            guard let header = try? SliceHeader(nalUnit: unit) else { return nil }
            return (header.firstMbInSlice == 0, header.picParameterSetID)
        case .hevc:
            guard let header = try? HEVCSliceSegmentHeader(nalUnit: unit) else { return nil }
            return (header.firstSliceSegmentInPicFlag, header.picParameterSetID)
        }
    }

    /// Whether `unit` begins a new access unit when it follows a picture's slices: a unit whose
    /// role says so, or the first slice of a picture. Read from the header and the first payload bit
    /// only (first_mb_in_slice's leading 1 bit means 0; first_slice_segment_in_pic_flag is the bit).
    public func startsAccessUnit(_ unit: NALUnit) -> Bool {
        let role = role(ofType: typeValue(of: unit.bytes))
        if role.startsAccessUnitAfterPicture { return true }
        guard role == .idrSlice || role == .randomAccessSliceNotIDR || role == .slice else { return false }
        // A slice too short to say (a stream cut right after a start code and header) is taken as a new
        // picture, so the cut head of the next access unit never joins the one before it.
        guard unit.bytes.count > nalHeaderLength else { return true }
        return unit.bytes[nalHeaderLength] & 0x80 != 0
    }

    /// The codec of a stream whose first NAL unit is `unit`: H.265 when that unit reads as an H.265
    /// VPS, SPS, PPS, AUD or prefix SEI of the base layer, which as H.264 headers would be types no
    /// stream starts with (0, 2, 6 with nal_ref_idc 2, 14); H.264 otherwise.
    public static func guess(fromFirstUnit unit: some Collection<UInt8>) -> VideoCodec {
        guard let header = HEVCNALHeader(unit), !header.forbiddenZeroBit, header.layerID == 0, header.temporalID == 0
        else { return .h264 }
        return [32, 33, 34, 35, 39].contains(header.type.rawValue) ? .hevc : .h264
    }
}

public enum ParameterSetKind: String, Sendable, Hashable, CaseIterable {
    case vps = "VPS"
    case sps = "SPS"
    case pps = "PPS"
}

/// What a NAL unit is for camrec's stream contract, the same questions for every codec.
public enum NALRole: Sendable, Hashable {
    case parameterSet(ParameterSetKind)
    case sei
    case accessUnitDelimiter
    /// A slice of an IDR picture.
    case idrSlice
    /// A slice of a random-access picture that is not an IDR (H.265 CRA and BLA): a decoder starting
    /// there drops its leading pictures, so camrec's contract does not count it as a starting point.
    case randomAccessSliceNotIDR
    /// Any other slice (or slice segment) that carries a slice header.
    case slice
    /// Slice data without a header (H.264 data partitions B and C).
    case sliceData
    /// A non-VCL unit that begins a new access unit when it follows a picture.
    case otherStartingAccessUnit
    case other

    /// Units that carry picture data.
    public var isVCL: Bool {
        switch self {
        case .idrSlice, .randomAccessSliceNotIDR, .slice, .sliceData: true
        default: false
        }
    }

    /// Units after which a picture's slices end and a new access unit begins (H.264 7.4.1.2.3,
    /// H.265 7.4.2.4.4).
    public var startsAccessUnitAfterPicture: Bool {
        switch self {
        case .parameterSet, .sei, .accessUnitDelimiter, .otherStartingAccessUnit: true
        default: false
        }
    }
}
