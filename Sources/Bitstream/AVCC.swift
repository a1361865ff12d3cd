/// Conversion between Annex B (start codes) and AVCC / "length-prefixed" framing, where
/// each NAL unit is preceded by its size as a big-endian integer (as in MP4 samples).
public enum AVCC {
    public enum FormatError: Error, Sendable, Hashable {
        /// The length field size must be 1, 2 or 4 bytes (ISO/IEC 14496-15).
        case invalidLengthSize(Int)
        /// Fewer bytes remain than a length field needs.
        case truncatedLength(offset: Int)
        /// A length field announces more bytes than remain.
        case lengthExceedsData(offset: Int, length: Int, available: Int)
    }

    /// Rewrites length-prefixed units as Annex B with a 4-byte start code on every unit.
    /// Zero-length units carry nothing and are dropped.
    public static func annexB(fromAVCC bytes: some Collection<UInt8>, lengthSize: Int = 4) throws -> [UInt8] {
        var output: [UInt8] = []
        try forEachUnit(inAVCC: Array(bytes), lengthSize: lengthSize) { _, unit in
            output.append(contentsOf: [0, 0, 0, 1])
            output.append(contentsOf: unit)
        }
        return output
    }

    /// The units of a length-prefixed buffer, with `startCodeLength` 0 and `offset` at
    /// their length field.
    public static func units(inAVCC bytes: some Collection<UInt8>, lengthSize: Int = 4) throws -> [NALUnit] {
        var units: [NALUnit] = []
        try forEachUnit(inAVCC: Array(bytes), lengthSize: lengthSize) { offset, unit in
            units.append(NALUnit(bytes: Array(unit), startCodeLength: 0, offset: offset))
        }
        return units
    }

    /// Rewrites an Annex B stream as 4-byte length-prefixed units.
    public static func avcc(fromAnnexB bytes: some Collection<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 16)
        _ = Array(bytes).withUnsafeBytes { appendLengthPrefixed(fromAnnexB: $0, to: &output) }
        return output
    }

    /// Appends the units of an Annex B buffer to `output`, each behind its size as a 4-byte big-endian
    /// length (an MP4 sample), without allocating beyond `output`'s growth. Start codes may be 3 or 4
    /// bytes; zero bytes before a start code (trailing_zero_8bits) belong to no unit. Returns the
    /// number of bytes appended.
    @discardableResult
    public static func appendLengthPrefixed(fromAnnexB bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) -> Int {
        let before = output.count
        let count = bytes.count
        var unitStart = -1
        func emit(_ start: Int, _ end: Int) {
            var end = end
            while end > start && bytes[end - 1] == 0 { end -= 1 }
            guard end > start else { return }
            let length = UInt32(truncatingIfNeeded: end - start)
            output.append(UInt8(length >> 24))
            output.append(UInt8((length >> 16) & 0xFF))
            output.append(UInt8((length >> 8) & 0xFF))
            output.append(UInt8(length & 0xFF))
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
        }
        var index = 0
        while index + 2 < count {
            let third = bytes[index + 2]
            if third > 1 {
                index += 3
            } else if third == 1 && bytes[index + 1] == 0 && bytes[index] == 0 {
                if unitStart >= 0 { emit(unitStart, index) }
                index += 3
                unitStart = index
            } else {
                index += 1
            }
        }
        if unitStart >= 0 { emit(unitStart, count) }
        return output.count - before
    }

    /// Calls `body` with the offset of each unit's length field and the unit's bytes.
    private static func forEachUnit(inAVCC bytes: [UInt8], lengthSize: Int,
                                    _ body: (Int, ArraySlice<UInt8>) -> Void) throws {
        guard lengthSize == 1 || lengthSize == 2 || lengthSize == 4 else {
            throw FormatError.invalidLengthSize(lengthSize)
        }
        var index = 0
        while index < bytes.count {
            guard bytes.count - index >= lengthSize else { throw FormatError.truncatedLength(offset: index) }
            var length = 0
            for byte in bytes[index..<(index + lengthSize)] {
                length = length << 8 | Int(byte)
            }
            let start = index + lengthSize
            guard length <= bytes.count - start else {
                throw FormatError.lengthExceedsData(offset: index, length: length, available: bytes.count - start)
            }
            if length > 0 {
                body(index, bytes[start..<(start + length)])
            }
            index = start + length
        }
    }
}
