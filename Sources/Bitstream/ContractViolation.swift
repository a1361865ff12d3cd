/// One way in which a stream breaks camrec's stream contract. Repeated occurrences of the
/// same kind are folded into one violation with a count and the first offset, so a long
/// broken stream gives a short report.
public struct ContractViolation: Sendable, Hashable {
    public enum Kind: String, Sendable, CaseIterable {
        /// (a) A NAL unit preceded by a 3-byte start code.
        case threeByteStartCode
        /// (b) An IDR picture whose access unit lacks a parameter set (SPS, PPS; in H.265 also VPS)
        /// before its first slice.
        case idrWithoutParameterSets
        /// (c) The first NAL unit (after an optional AUD and SEI units) is not an SPS (a VPS in H.265).
        case doesNotBeginWithSPS
        /// (d) forbidden_zero_bit is set.
        case forbiddenZeroBit
        /// (e) Bytes before the first start code.
        case garbageBeforeFirstStartCode
        /// (f) A slice names a PPS, or its PPS names an SPS, that has not appeared.
        case unknownParameterSetID
        /// (g) The stream contains no IDR picture at all.
        case noIDR
        /// An SPS, PPS or slice header that cannot be parsed.
        case unparsableUnit
        /// (h) A picture in more slice NAL units than allowed (one, unless `--slices`).
        case tooManySlices
        /// (i) The parameter sets are in the IDR's access unit but not the units right before its
        /// first slice: something (an SEI, say) stands between the PPS and the IDR slice.
        case unitBetweenParameterSetsAndIDR
        /// (j) A random-access picture that is not an IDR (H.265 CRA or BLA).
        case randomAccessNotIDR
        /// (k) The stream is not bare: an IDR access unit holds something besides its parameter sets
        /// and slices (an SEI, an AUD), or another access unit something besides its slices.
        case notBare
    }

    public var kind: Kind
    /// Human-readable description, including the count and first offset.
    public var message: String
    /// Stream offset of the first occurrence, when it has one.
    public var offset: Int?
    /// Number of occurrences.
    public var count: Int

    public init(kind: Kind, message: String, offset: Int?, count: Int) {
        self.kind = kind
        self.message = message
        self.offset = offset
        self.count = count
    }
}
