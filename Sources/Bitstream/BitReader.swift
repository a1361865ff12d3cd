/// Reads bits MSB-first from an RBSP (emulation prevention already removed).
///
/// Every read checks the remaining length and throws `BitstreamError.truncated` rather
/// than reading past the end, so garbage input can only produce an error.
public struct BitReader: Sendable {
    public let bytes: [UInt8]
    /// Index of the next bit to read, counted from the first bit of `bytes`.
    public private(set) var bitPosition: Int = 0

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public var bitCount: Int { bytes.count * 8 }
    public var bitsLeft: Int { bitCount - bitPosition }
    public var isByteAligned: Bool { bitPosition % 8 == 0 }

    public mutating func readBit() throws -> UInt8 {
        guard bitPosition < bitCount else { throw BitstreamError.truncated }
        let byte = bytes[bitPosition >> 3]
        let bit = (byte >> (7 - UInt8(bitPosition & 7))) & 1
        bitPosition += 1
        return bit
    }

    public mutating func readFlag() throws -> Bool {
        try readBit() == 1
    }

    /// Reads `count` bits (0...64) as an unsigned big-endian number.
    public mutating func readBits(_ count: Int) throws -> UInt64 {
        guard count >= 0 && count <= 64 else { throw BitstreamError.invalidValue("bit count \(count)") }
        guard count <= bitsLeft else { throw BitstreamError.truncated }
        var value: UInt64 = 0
        var remaining = count
        while remaining > 0 {
            let bitInByte = bitPosition & 7
            let available = 8 - bitInByte
            let take = min(available, remaining)
            let byte = UInt64(bytes[bitPosition >> 3])
            let chunk = (byte >> UInt64(available - take)) & ((1 << UInt64(take)) - 1)
            value = (value << UInt64(take)) | chunk
            bitPosition += take
            remaining -= take
        }
        return value
    }

    /// `readBits` narrowed to 32 bits, for the common `u(n)` elements with n <= 32.
    public mutating func readBits32(_ count: Int) throws -> UInt32 {
        guard count <= 32 else { throw BitstreamError.invalidValue("bit count \(count)") }
        return UInt32(truncatingIfNeeded: try readBits(count))
    }

    public mutating func skipBits(_ count: Int) throws {
        guard count >= 0 else { throw BitstreamError.invalidValue("bit count \(count)") }
        guard count <= bitsLeft else { throw BitstreamError.truncated }
        bitPosition += count
    }

    /// `ue(v)`: unsigned Exp-Golomb (9.1). Values up to 2^32 - 2.
    public mutating func readUE() throws -> UInt32 {
        var leadingZeros = 0
        while try readBit() == 0 {
            leadingZeros += 1
            // 32 zeros would encode a value beyond UInt32; only garbage does that.
            guard leadingZeros < 32 else { throw BitstreamError.invalidExpGolomb }
        }
        let suffix = try readBits(leadingZeros)
        return UInt32((UInt64(1) << UInt64(leadingZeros)) - 1 + suffix)
    }

    /// `se(v)`: signed Exp-Golomb (9.1.1): 0, 1, -1, 2, -2, ...
    public mutating func readSE() throws -> Int32 {
        let codeNum = Int64(try readUE())
        let magnitude = (codeNum + 1) / 2
        return Int32(codeNum & 1 == 1 ? magnitude : -magnitude)
    }

    /// `ue(v)` as an Int that must not exceed `limit`: for counts and ids, so a corrupt
    /// value cannot make a parser loop billions of times or allocate a huge table.
    public mutating func readUE(max limit: Int, _ name: String) throws -> Int {
        let value = Int(try readUE())
        guard value <= limit else { throw BitstreamError.invalidValue("\(name) = \(value), max \(limit)") }
        return value
    }

    /// `more_rbsp_data()` (7.2): true while there is payload before the `rbsp_stop_one_bit`,
    /// i.e. the last 1 bit of the data lies after the current position.
    public func moreRBSPData() -> Bool {
        guard let lastNonZero = bytes.lastIndex(where: { $0 != 0 }) else { return false }
        let byte = bytes[lastNonZero]
        let stopBitPosition = lastNonZero * 8 + (7 - byte.trailingZeroBitCount)
        return bitPosition < stopBitPosition
    }

    /// Skips to the next byte boundary.
    public mutating func byteAlign() {
        bitPosition = min(bitCount, (bitPosition + 7) & ~7)
    }
}
