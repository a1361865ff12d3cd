/// One line of the NAL table in a `StreamReport`.
public struct NALRecord: Sendable, Hashable {
    /// Stream offset of the start code.
    public var offset: Int
    public var startCodeLength: Int
    /// `nal_unit_type`, and its short name in the stream's codec.
    public var typeValue: UInt8
    public var typeName: String
    /// H.264's nal_ref_idc; 0 in H.265, which has none.
    public var nalRefIdc: UInt8
    /// Bytes of the unit: header and escaped payload, without start code.
    public var size: Int

    public init(offset: Int, startCodeLength: Int, typeValue: UInt8, typeName: String, nalRefIdc: UInt8, size: Int) {
        self.offset = offset
        self.startCodeLength = startCodeLength
        self.typeValue = typeValue
        self.typeName = typeName
        self.nalRefIdc = nalRefIdc
        self.size = size
    }

    /// An H.264 unit's record.
    public init(offset: Int, startCodeLength: Int, type: NALUnitType, nalRefIdc: UInt8, size: Int) {
        self.init(offset: offset, startCodeLength: startCodeLength, typeValue: type.rawValue, typeName: type.shortName,
                  nalRefIdc: nalRefIdc, size: size)
    }
}
