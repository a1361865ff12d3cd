/// What `AnnexBStreamWriter` did with one access unit.
public struct AccessUnitInfo: Sendable, Hashable {
    /// The access unit holds a slice of an IDR picture.
    public var isIDR: Bool
    /// NAL units appended to the output (0 when the unit was held back, see `heldBack`).
    public var nalCount: Int
    /// The writer added remembered SPS and/or PPS that the access unit lacked.
    public var insertedParameterSets: Bool
    /// Bytes appended to the output.
    public var byteCount: Int
    /// The output for this access unit contains an SPS / a PPS.
    public var containsSPS: Bool
    public var containsPPS: Bool
    /// Bytes before the first start code of the input, which were dropped.
    public var skippedBytes: Int
    /// True when nothing was written because the stream has not started yet and the
    /// access unit holds no picture (only parameter sets, SEI...). Its SPS/PPS are
    /// remembered and will be written before the first IDR.
    public var heldBack: Bool
    /// Encoder version SEI units left out.
    public var droppedUnits: Int

    public init(isIDR: Bool = false, nalCount: Int = 0, insertedParameterSets: Bool = false, byteCount: Int = 0,
                containsSPS: Bool = false, containsPPS: Bool = false, skippedBytes: Int = 0, heldBack: Bool = false,
                droppedUnits: Int = 0) {
        self.isIDR = isIDR
        self.nalCount = nalCount
        self.insertedParameterSets = insertedParameterSets
        self.byteCount = byteCount
        self.containsSPS = containsSPS
        self.containsPPS = containsPPS
        self.skippedBytes = skippedBytes
        self.heldBack = heldBack
        self.droppedUnits = droppedUnits
    }
}
