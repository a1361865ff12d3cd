/// Conversion between a NAL unit payload and its raw byte sequence payload (RBSP).
///
/// Inside a NAL unit the encoder inserts `emulation_prevention_three_byte` (0x03) after
/// any two zero bytes that would otherwise be followed by 00, 01, 02 or 03, so that no
/// start code can appear inside a unit (H.264 7.4.1).
public enum RBSP {
    /// Drops every `03` that follows `00 00`. A `00 00 03` at the very end is dropped too
    /// (the spec appends it when the RBSP ends in a zero byte, as for `cabac_zero_word`).
    public static func removingEmulationPrevention(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var zeros = 0
        for byte in bytes {
            if zeros >= 2 && byte == 0x03 {
                zeros = 0
                continue
            }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return output
    }

    /// Inserts `03` wherever two zero bytes are followed by a byte <= 03, and after a
    /// final `00 00` at the end of the payload, so the result can be framed safely.
    public static func addingEmulationPrevention(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + bytes.count / 64 + 1)
        var zeros = 0
        for byte in bytes {
            if zeros >= 2 && byte <= 0x03 {
                output.append(0x03)
                zeros = 0
            }
            output.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        // An RBSP always ends in a stop bit, so this only matters for arbitrary data;
        // without it, the last zeros would read as trailing_zero_8bits and be lost.
        if zeros >= 2 { output.append(0x03) }
        return output
    }
}
