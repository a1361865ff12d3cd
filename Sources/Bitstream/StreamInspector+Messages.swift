/// The text of the report's contract violations: one message per kind, from its tally.
extension StreamInspector {
    /// "SPS", "SPS and PPS", "VPS, SPS and PPS".
    static func list(_ names: [String]) -> String {
        names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " and " + names.last!
    }

    func message(for kind: ContractViolation.Kind, _ tally: Tally) -> String {
        let at = tally.firstOffset.map { " at offset \($0)" } ?? ""
        let first = tally.count > 1 ? "first" : ""
        let codec = self.codec ?? .h264
        let sets = codec.parameterSetNames
        switch kind {
        case .threeByteStartCode:
            return "\(tally.count) of \(nalCount) NAL units have a 3-byte start code (\(first.isEmpty ? "" : "first ")\(at.dropFirst()))"
        case .idrWithoutParameterSets:
            return "\(tally.count) of \(idrCount) IDR frames lack \(sets) before their first slice (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at))"
        case .doesNotBeginWithSPS:
            return nalCount == 0 ? "stream holds no NAL units"
                : "stream begins with \(tally.detail) instead of \(codec.parameterSetOrder[0].rawValue)\(at)"
        case .forbiddenZeroBit:
            return "\(tally.count) NAL units have forbidden_zero_bit set (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at))"
        case .garbageBeforeFirstStartCode:
            return "\(tally.detail) bytes before the first start code"
        case .unknownParameterSetID:
            return "\(tally.count) slices refer to a parameter set never seen (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at))"
        case .noIDR:
            return "no IDR frame in the stream"
        case .tooManySlices:
            let allowed = maxSlicesPerPicture == 1 ? "one slice NAL unit" : "at most \(maxSlicesPerPicture) slice NAL units"
            return "\(tally.count) of \(frameCount) pictures are cut into more than \(allowed) (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at)); "
                + "receivers that hand one NAL unit to their decoder see partial pictures"
        case .unitBetweenParameterSetsAndIDR:
            let order = codec.parameterSetOrder
            return "\(tally.count) of \(idrCount) IDR frames do not have \(Self.list(order.map(\.rawValue))) as the \(order.count == 2 ? "two" : "three") units right before their first slice (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at))"
        case .randomAccessNotIDR:
            return "\(tally.count) random-access pictures are not IDRs (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at)); "
                + "a player starting there drops their leading pictures"
        case .notBare:
            let sets = codec.parameterSetOrder.map(\.rawValue).joined(separator: " ")
            return "\(tally.count) of \(accessUnitCount) access units are not bare (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at)); "
                + "an IDR access unit must be exactly \(sets) IDR and any other exactly its slice, or a receiver that reads "
                + "the first unit as the \(codec.parameterSetOrder[0].rawValue) or the slice (seed 001) loses the picture"
        case .unparsableUnit:
            return "\(tally.count) units cannot be parsed (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at))"
        }
    }
}
