/// `nal_unit_type` of an H.265 NAL unit header (ITU-T H.265, Table 7-1): six bits, so any header
/// maps to a type; reserved and unspecified values are named as such rather than rejected.
public struct HEVCNALUnitType: RawRepresentable, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x3F }

    public static let trailN = HEVCNALUnitType(rawValue: 0)
    public static let trailR = HEVCNALUnitType(rawValue: 1)
    public static let blaWithLeadingPictures = HEVCNALUnitType(rawValue: 16)
    public static let blaWithRADL = HEVCNALUnitType(rawValue: 17)
    public static let blaNoLeadingPictures = HEVCNALUnitType(rawValue: 18)
    public static let idrWithRADL = HEVCNALUnitType(rawValue: 19)
    public static let idrNoLeadingPictures = HEVCNALUnitType(rawValue: 20)
    public static let cra = HEVCNALUnitType(rawValue: 21)
    public static let vps = HEVCNALUnitType(rawValue: 32)
    public static let sps = HEVCNALUnitType(rawValue: 33)
    public static let pps = HEVCNALUnitType(rawValue: 34)
    public static let accessUnitDelimiter = HEVCNALUnitType(rawValue: 35)
    public static let endOfSequence = HEVCNALUnitType(rawValue: 36)
    public static let endOfBitstream = HEVCNALUnitType(rawValue: 37)
    public static let fillerData = HEVCNALUnitType(rawValue: 38)
    public static let prefixSEI = HEVCNALUnitType(rawValue: 39)
    public static let suffixSEI = HEVCNALUnitType(rawValue: 40)

    /// Coded slice segments: types 0 to 31 (reserved VCL types included).
    public var isVCL: Bool { rawValue < 32 }
    /// Intra random access points (BLA, IDR, CRA and the reserved IRAP types 22–23).
    public var isIRAP: Bool { (16...23).contains(rawValue) }
    public var isIDR: Bool { rawValue == 19 || rawValue == 20 }
    public var isParameterSet: Bool { (32...34).contains(rawValue) }
    public var isSEI: Bool { rawValue == 39 || rawValue == 40 }

    /// The "Name of nal_unit_type" column of Table 7-1.
    public var shortName: String {
        switch rawValue {
        case 0: "TRAIL_N"
        case 1: "TRAIL_R"
        case 2: "TSA_N"
        case 3: "TSA_R"
        case 4: "STSA_N"
        case 5: "STSA_R"
        case 6: "RADL_N"
        case 7: "RADL_R"
        case 8: "RASL_N"
        case 9: "RASL_R"
        case 16: "BLA_W_LP"
        case 17: "BLA_W_RADL"
        case 18: "BLA_N_LP"
        case 19: "IDR_W_RADL"
        case 20: "IDR_N_LP"
        case 21: "CRA"
        case 32: "VPS"
        case 33: "SPS"
        case 34: "PPS"
        case 35: "AUD"
        case 36: "EOS"
        case 37: "EOB"
        case 38: "FD"
        case 39: "prefix SEI"
        case 40: "suffix SEI"
        case 10...15, 22...31, 41...47: "reserved"
        default: "unspecified"
        }
    }
}

/// The two-byte H.265 NAL unit header (7.3.1.2).
public struct HEVCNALHeader: Sendable, Hashable {
    public var forbiddenZeroBit: Bool
    public var type: HEVCNALUnitType
    public var layerID: UInt8
    /// `nuh_temporal_id_plus1` - 1; -1 for the invalid value 0.
    public var temporalID: Int

    /// Nil when the unit is shorter than its header.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count >= 2 else { return nil }
        let first = bytes[bytes.startIndex], second = bytes[bytes.index(after: bytes.startIndex)]
        forbiddenZeroBit = first & 0x80 != 0
        type = HEVCNALUnitType(rawValue: (first >> 1) & 0x3F)
        layerID = (first & 0x01) << 5 | second >> 3
        temporalID = Int(second & 0x07) - 1
    }
}
