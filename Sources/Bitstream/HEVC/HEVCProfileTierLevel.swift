/// `profile_tier_level(1, maxNumSubLayersMinus1)` (H.265 7.3.3): the general profile, tier and
/// level; the sub-layers' entries are read past, not kept.
public struct HEVCProfileTierLevel: Sendable, Hashable {
    public var profileSpace: Int
    /// Main tier (false) or High tier (true).
    public var tierFlag: Bool
    public var profileIdc: Int
    public var profileCompatibilityFlags: UInt32
    public var progressiveSourceFlag: Bool
    public var interlacedSourceFlag: Bool
    /// `general_level_idc`: 30 times the level number (Main 4.1 is 123).
    public var levelIdc: Int

    public init(reading reader: inout BitReader, maxSubLayersMinus1: Int) throws {
        profileSpace = Int(try reader.readBits(2))
        tierFlag = try reader.readFlag()
        profileIdc = Int(try reader.readBits(5))
        profileCompatibilityFlags = try reader.readBits32(32)
        progressiveSourceFlag = try reader.readFlag()
        interlacedSourceFlag = try reader.readFlag()
        // non_packed, frame_only and 44 bits of constraint flags and reserved bits.
        try reader.skipBits(2 + 43 + 1)
        levelIdc = Int(try reader.readBits(8))
        var profilePresent: [Bool] = []
        var levelPresent: [Bool] = []
        for _ in 0..<maxSubLayersMinus1 {
            profilePresent.append(try reader.readFlag())
            levelPresent.append(try reader.readFlag())
        }
        if maxSubLayersMinus1 > 0 {
            try reader.skipBits(2 * (8 - maxSubLayersMinus1))
        }
        for i in 0..<maxSubLayersMinus1 {
            if profilePresent[i] { try reader.skipBits(88) }
            if levelPresent[i] { try reader.skipBits(8) }
        }
    }

    /// "Main", "Main 10", "Main Still Picture", "Range Extensions", or the idc for the rest.
    public var profileName: String {
        // A decoder conforming to a profile may be signalled by the compatibility flag alone (A.3).
        func claims(_ idc: Int) -> Bool { profileIdc == idc || (profileIdc == 0 && profileCompatibilityFlags & (1 << (31 - UInt32(idc))) != 0) }
        if claims(1) { return "Main" }
        if claims(2) { return "Main 10" }
        if claims(3) { return "Main Still Picture" }
        if claims(4) { return "Range Extensions" }
        return "profile \(profileIdc)"
    }

    public var tierName: String { tierFlag ? "High" : "Main" }

    /// "4.1" for level_idc 123.
    public var levelName: String {
        levelIdc % 30 == 0 ? "\(levelIdc / 30)" : "\(levelIdc / 30).\(levelIdc % 30 / 3)"
    }
}
