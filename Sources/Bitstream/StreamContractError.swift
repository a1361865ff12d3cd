/// Why `AnnexBStreamWriter` refused an access unit. In each case writing it would
/// produce a stream that a decoder joining at that point could not decode.
public enum StreamContractError: Error, Sendable, Hashable {
    /// An IDR access unit arrived but no SPS/PPS for it has been seen, in it or before it.
    case missingParameterSets
    /// The buffer holds no NAL unit (empty, or no start code at all).
    case noNALUnits
    /// The first picture of the stream is not an IDR picture, so nothing before the next
    /// IDR could be decoded. The caller should drop access units until an IDR arrives.
    case firstPictureNotIDR
    /// A picture came in more slice NAL units than the stream may have (camrec asks its
    /// encoders for one slice per picture unless `--slices` says more).
    case tooManySlices(found: Int, allowed: Int)
}
