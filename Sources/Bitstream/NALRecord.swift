/// One line of the NAL table in a `StreamReport`.
public struct NALRecord: Sendable, Hashable {
    /// Stream offset of the start code.
    public var offset: Int
    public var startCodeLength: Int
    public var type: NALUnitType
    public var nalRefIdc: UInt8
    /// Bytes of the unit: header and escaped payload, without start code.
    public var size: Int

    public init(offset: Int, startCodeLength: Int, type: NALUnitType, nalRefIdc: UInt8, size: Int) {
        self.offset = offset
        self.startCodeLength = startCodeLength
        self.type = type
        self.nalRefIdc = nalRefIdc
        self.size = size
    }
}
