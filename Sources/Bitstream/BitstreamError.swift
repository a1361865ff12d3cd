/// Why a bit-level parse failed. Parsers throw these instead of trapping, because they
/// run on streams from the network and from files camrec did not write.
public enum BitstreamError: Error, Sendable, Hashable {
    /// The data ended before the syntax element did.
    case truncated
    /// An Exp-Golomb code with more than 31 leading zeros: not a valid 32-bit value.
    case invalidExpGolomb
    /// A syntax element holds a value the spec does not allow; the string names it.
    case invalidValue(String)
    /// The NAL unit is not of the type the parser expects.
    case wrongNALUnitType(NALUnitType)
}
