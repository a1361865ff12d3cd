/// Writes bits MSB-first into an RBSP: the mirror of `BitReader`, used to build SEI
/// messages and test vectors. The result still needs `RBSP.addingEmulationPrevention`
/// before it goes into a NAL unit.
public struct BitWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Bits already used in the last byte of `bytes` (0 means byte aligned).
    private var usedBitsInLastByte = 0

    public init() {}

    public var isByteAligned: Bool { usedBitsInLastByte == 0 }
    public var bitCount: Int { bytes.count * 8 - (usedBitsInLastByte == 0 ? 0 : 8 - usedBitsInLastByte) }

    public mutating func writeBit(_ bit: Bool) {
        if usedBitsInLastByte == 0 { bytes.append(0) }
        if bit { bytes[bytes.count - 1] |= 0x80 >> UInt8(usedBitsInLastByte) }
        usedBitsInLastByte = (usedBitsInLastByte + 1) & 7
    }

    public mutating func writeFlag(_ flag: Bool) {
        writeBit(flag)
    }

    /// Writes the low `count` bits (0...64) of `value`, most significant first.
    public mutating func writeBits(_ value: UInt64, count: Int) {
        precondition(count >= 0 && count <= 64, "bit count out of range")
        var index = count
        while index > 0 {
            index -= 1
            writeBit((value >> UInt64(index)) & 1 == 1)
        }
    }

    public mutating func writeBits<T: BinaryInteger>(_ value: T, count: Int) {
        writeBits(UInt64(truncatingIfNeeded: value), count: count)
    }

    /// `ue(v)`: unsigned Exp-Golomb.
    public mutating func writeUE(_ value: UInt32) {
        // 2^32 - 1 would need 32 leading zeros, which readers (ours included) reject.
        precondition(value < UInt32.max, "ue(v) holds at most 2^32 - 2")
        let codeNum = UInt64(value) + 1
        let length = 64 - codeNum.leadingZeroBitCount
        writeBits(0, count: length - 1)
        writeBits(codeNum, count: length)
    }

    /// `se(v)`: signed Exp-Golomb, k > 0 maps to 2k - 1 and k <= 0 to -2k.
    public mutating func writeSE(_ value: Int32) {
        precondition(value > Int32.min, "se(v) magnitude too large")
        let wide = Int64(value)
        let codeNum = wide > 0 ? 2 * wide - 1 : -2 * wide
        writeUE(UInt32(truncatingIfNeeded: codeNum))
    }

    /// `rbsp_trailing_bits()`: a stop bit, then zeros to the byte boundary.
    public mutating func writeTrailingBits() {
        writeBit(true)
        while !isByteAligned { writeBit(false) }
    }
}
