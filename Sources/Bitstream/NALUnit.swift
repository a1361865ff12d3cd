/// One NAL unit: the header byte and its payload, without start code or length prefix.
///
/// `bytes` is still escaped (emulation prevention bytes included), exactly as it appears
/// in the stream; use `RBSP.removingEmulationPrevention` to parse the payload.
public struct NALUnit: Sendable, Hashable {
    /// NAL header byte followed by the payload. Trailing zero bytes (`trailing_zero_8bits`
    /// in Annex B) are not part of the unit and have been stripped.
    public var bytes: [UInt8]
    /// 3 or 4 for units found in an Annex B stream; 0 for units that came from AVCC.
    public var startCodeLength: Int
    /// Offset of the first start-code byte in the stream this unit was read from.
    public var offset: Int
    /// The unit's length in the stream; more than `bytes.count` when a scanner kept only
    /// its first bytes (`AnnexBScanner(keepingAtMost:)`).
    public var byteCount: Int

    public init(bytes: [UInt8], startCodeLength: Int = 4, offset: Int = 0) {
        self.bytes = bytes
        self.byteCount = bytes.count
        self.startCodeLength = startCodeLength
        self.offset = offset
    }

    /// An empty unit has no header; reading it as 0 makes it "unspecified" rather than a trap.
    private var headerByte: UInt8 { bytes.first ?? 0 }

    /// Must be 0 in a conforming stream; a set bit usually means we are not aligned on a real unit.
    public var forbiddenZeroBit: Bool { headerByte & 0x80 != 0 }
    /// 0 means no other picture references this unit (disposable).
    public var nalRefIdc: UInt8 { (headerByte >> 5) & 0x03 }
    public var type: NALUnitType { NALUnitType(headerByte: headerByte) }

    public var isIDR: Bool { type == .idrSlice }
    public var isSPS: Bool { type == .sps }
    public var isPPS: Bool { type == .pps }

    /// Payload after the one-byte header, still escaped.
    public var payload: ArraySlice<UInt8> { bytes.dropFirst() }
}
