import Bitstream

/// One access unit put back together from a byte stream.
public struct ReceivedAccessUnit: Sendable {
    public var codec: VideoCodec
    /// The NAL units in stream order, without camrec timing notes.
    public var units: [NALUnit]
    /// The camrec timing note it carried, if the sender was camrec.
    public var timestamp: TimestampSEI?
    public var isIDR: Bool
    public var hasSPS: Bool
    public var hasPPS: Bool
    /// Stream offset just past its last byte (for arrival times).
    public var endOffset: Int
    /// Bytes of its units with their start codes, timing note excluded.
    public var byteCount: Int
    /// Units with the forbidden_zero_bit set: not H.264, or misaligned garbage.
    public var invalidUnitCount: Int

    /// True when a timing note says how long the access unit is and it is shorter:
    /// the sender went away in the middle of it.
    public var isTruncated: Bool {
        guard let timestamp else { return false }
        return UInt64(byteCount) < timestamp.accessUnitByteCount
    }

    /// The access unit as Annex B, every unit behind the start code it came with.
    public func annexB() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(byteCount)
        for unit in units {
            bytes.append(contentsOf: unit.startCodeLength == 3 ? [0, 0, 1] : [0, 0, 0, 1])
            bytes.append(contentsOf: unit.bytes)
        }
        return bytes
    }
}

/// Reassembles NAL units and access units from whatever pieces a transport delivers
/// (one byte at a time, whole frames, or anything between), with `AnnexBScanner` doing
/// the start-code work.
///
/// An access unit ends where the next one begins (H.264 7.4.1.2.3 and H.265 7.4.2.4.4, as
/// decoders apply them): after a picture's slices, an AUD, parameter set, (prefix) SEI or a few
/// reserved types start a new one, and so does the first slice of a picture
/// (`VideoCodec.startsAccessUnit`). The codec is given, or guessed from the first NAL unit. Since that is only known once the next unit's
/// start code has arrived, an access unit is returned when the following one starts, or by
/// `finish()`.
public struct AccessUnitAssembler: Sendable {
    private var scanner = AnnexBScanner()
    private var current: [NALUnit] = []
    private var currentTimestamp: TimestampSEI?
    private var currentHasPicture = false
    private var lastUnitEnd = 0
    private var unitsSeen = 0
    /// Given, or guessed from the first unit.
    public private(set) var codec: VideoCodec?

    public init(codec: VideoCodec? = nil) {
        self.codec = codec
    }

    /// Bytes taken in that are not yet part of a returned unit: the unit being collected
    /// (or leading garbage). A receiver bounds this so a stream without start codes can't
    /// grow memory without limit.
    public var pendingByteCount: Int { scanner.bytesConsumed - lastUnitEnd }
    /// Bytes held for the access unit not yet returned: its units so far (timing note
    /// included) and the unit being collected. A receiver bounds this by what the SPS's
    /// level allows (`AccessUnitLimit`), so filler units or endless slices can't grow memory.
    public var openAccessUnitByteCount: Int { scanner.bytesConsumed - (currentStartOffset ?? lastUnitEnd) }
    public var bytesConsumed: Int { scanner.bytesConsumed }
    /// Bytes before the first start code.
    public var skippedLeadingBytes: Int { unitsSeen == 0 ? scanner.bytesConsumed : scanner.skippedLeadingBytes }
    /// NAL units seen so far (timing notes included).
    public var nalUnitCount: Int { unitsSeen }

    public mutating func append<C: Collection>(_ bytes: C) -> [ReceivedAccessUnit] where C.Element == UInt8 {
        var completed: [ReceivedAccessUnit] = []
        for unit in scanner.append(bytes) { take(unit, into: &completed) }
        return completed
    }

    /// Ends the stream: returns what is left as a last access unit.
    public mutating func finish() -> [ReceivedAccessUnit] {
        var completed: [ReceivedAccessUnit] = []
        for unit in scanner.finish() { take(unit, into: &completed) }
        if let unit = closeCurrent() { completed.append(unit) }
        return completed
    }

    /// NAL units only, for tests and fuzzing: the units of `units` flattened.
    public static func nalUnits(of units: [ReceivedAccessUnit]) -> [NALUnit] { units.flatMap(\.units) }

    private mutating func take(_ unit: NALUnit, into completed: inout [ReceivedAccessUnit]) {
        unitsSeen += 1
        lastUnitEnd = unit.offset + unit.startCodeLength + unit.bytes.count
        let codec = self.codec ?? VideoCodec.guess(fromFirstUnit: unit.bytes)
        self.codec = codec
        let role = codec.role(ofType: codec.typeValue(of: unit.bytes))
        if currentHasPicture && codec.startsAccessUnit(unit) {
            if let done = closeCurrent() { completed.append(done) }
        }
        if currentStartOffset == nil { currentStartOffset = unit.offset }
        if role == .sei, let note = TimestampSEI(nalUnit: unit.bytes, codec: codec) {
            // A second note before the picture would mean two access units; keep the first.
            if currentTimestamp == nil { currentTimestamp = note }
            currentEnd = lastUnitEnd
            return
        }
        if role.isVCL { currentHasPicture = true }
        current.append(unit)
        currentEnd = lastUnitEnd
    }

    private var currentEnd = 0
    /// Stream offset of the first unit of the access unit being collected.
    private var currentStartOffset: Int?

    private mutating func closeCurrent() -> ReceivedAccessUnit? {
        defer {
            current.removeAll(keepingCapacity: true)
            currentTimestamp = nil
            currentHasPicture = false
            currentStartOffset = nil
        }
        guard !current.isEmpty, let codec else { return nil }
        var isIDR = false, hasSPS = false, hasPPS = false
        var bytes = 0, invalid = 0
        for unit in current {
            switch codec.role(ofType: codec.typeValue(of: unit.bytes)) {
            case .idrSlice: isIDR = true
            case .parameterSet(.sps): hasSPS = true
            case .parameterSet(.pps): hasPPS = true
            default: break
            }
            if unit.forbiddenZeroBit { invalid += 1 }
            bytes += unit.startCodeLength + unit.bytes.count
        }
        return ReceivedAccessUnit(codec: codec, units: current, timestamp: currentTimestamp, isIDR: isIDR, hasSPS: hasSPS, hasPPS: hasPPS,
                                  endOffset: currentEnd, byteCount: bytes, invalidUnitCount: invalid)
    }
}
