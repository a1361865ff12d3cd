/// `nal_unit_type` from the H.264 NAL unit header (ITU-T H.264, Table 7-1).
///
/// Every 5-bit value has a case, so any header byte maps to a type without failing:
/// a stream we did not write may use reserved or unspecified values and we still
/// want to describe it rather than reject it.
public enum NALUnitType: UInt8, Sendable, CaseIterable, Hashable {
    case unspecified0 = 0
    case nonIDRSlice = 1
    case slicePartitionA = 2
    case slicePartitionB = 3
    case slicePartitionC = 4
    case idrSlice = 5
    case sei = 6
    case sps = 7
    case pps = 8
    case accessUnitDelimiter = 9
    case endOfSequence = 10
    case endOfStream = 11
    case fillerData = 12
    case spsExtension = 13
    case prefixNALUnit = 14
    case subsetSPS = 15
    case depthParameterSet = 16
    case reserved17 = 17
    case reserved18 = 18
    case auxiliarySlice = 19
    case sliceExtension = 20
    case sliceExtensionDepth = 21
    case reserved22 = 22
    case reserved23 = 23
    case unspecified24 = 24
    case unspecified25 = 25
    case unspecified26 = 26
    case unspecified27 = 27
    case unspecified28 = 28
    case unspecified29 = 29
    case unspecified30 = 30
    case unspecified31 = 31

    /// The type encoded in the low five bits of a NAL header byte.
    public init(headerByte: UInt8) {
        // All 32 values have a case, so the fallback is unreachable; it only avoids a `!`.
        self = NALUnitType(rawValue: headerByte & 0x1F) ?? .unspecified0
    }

    /// The "Content of NAL unit" column of Table 7-1, shortened to the structure's name.
    public var name: String {
        switch self {
        case .unspecified0, .unspecified24, .unspecified25, .unspecified26, .unspecified27,
             .unspecified28, .unspecified29, .unspecified30, .unspecified31:
            return "Unspecified"
        case .nonIDRSlice: return "Coded slice of a non-IDR picture"
        case .slicePartitionA: return "Coded slice data partition A"
        case .slicePartitionB: return "Coded slice data partition B"
        case .slicePartitionC: return "Coded slice data partition C"
        case .idrSlice: return "Coded slice of an IDR picture"
        case .sei: return "Supplemental enhancement information"
        case .sps: return "Sequence parameter set"
        case .pps: return "Picture parameter set"
        case .accessUnitDelimiter: return "Access unit delimiter"
        case .endOfSequence: return "End of sequence"
        case .endOfStream: return "End of stream"
        case .fillerData: return "Filler data"
        case .spsExtension: return "Sequence parameter set extension"
        case .prefixNALUnit: return "Prefix NAL unit"
        case .subsetSPS: return "Subset sequence parameter set"
        case .depthParameterSet: return "Depth parameter set"
        case .reserved17, .reserved18, .reserved22, .reserved23: return "Reserved"
        case .auxiliarySlice: return "Coded slice of an auxiliary coded picture without partitioning"
        case .sliceExtension: return "Coded slice extension"
        case .sliceExtensionDepth: return "Coded slice extension for a depth view component or a 3D-AVC texture view component"
        }
    }

    /// A compact label for tables and log lines.
    public var shortName: String {
        switch self {
        case .unspecified0, .unspecified24, .unspecified25, .unspecified26, .unspecified27,
             .unspecified28, .unspecified29, .unspecified30, .unspecified31:
            return "unspecified"
        case .nonIDRSlice: return "non-IDR"
        case .slicePartitionA: return "part-A"
        case .slicePartitionB: return "part-B"
        case .slicePartitionC: return "part-C"
        case .idrSlice: return "IDR"
        case .sei: return "SEI"
        case .sps: return "SPS"
        case .pps: return "PPS"
        case .accessUnitDelimiter: return "AUD"
        case .endOfSequence: return "end-of-seq"
        case .endOfStream: return "end-of-stream"
        case .fillerData: return "filler"
        case .spsExtension: return "SPS-ext"
        case .prefixNALUnit: return "prefix"
        case .subsetSPS: return "subset-SPS"
        case .depthParameterSet: return "DPS"
        case .reserved17, .reserved18, .reserved22, .reserved23: return "reserved"
        case .auxiliarySlice: return "aux-slice"
        case .sliceExtension: return "slice-ext"
        case .sliceExtensionDepth: return "slice-ext-3D"
        }
    }

    /// Video coding layer units as a plain (Annex A) decoder sees them: types 1 to 5.
    /// Types 20 and 21 are VCL only for SVC/MVC decoders, which camrec never produces.
    public var isVCL: Bool {
        (1...5).contains(rawValue)
    }

    /// Units whose payload begins with a `slice_header()`: non-IDR and IDR slices and
    /// data partition A. Partitions B and C carry no header, so they cannot start a picture.
    public var isSlice: Bool {
        self == .nonIDRSlice || self == .idrSlice || self == .slicePartitionA
    }
}
