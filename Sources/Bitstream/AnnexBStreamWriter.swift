/// Rewrites encoder output so it keeps camrec's stream contract, whatever the encoder does:
///
/// 1. every NAL unit is written with the 4-byte start code `00 00 00 01`;
/// 2. every IDR access unit carries the current SPS and PPS (in H.265 VPS, SPS and PPS)
///    **immediately** before its first slice, so any IDR is a place where a player, a late
///    network client or a file cut can start, and a receiver that reads "SPS, PPS, then the IDR"
///    (seeds 001 and 003) finds just that;
/// 3. a picture has at most `maxSlicesPerPicture` slice NAL units (camrec asks its encoders
///    for one), so a receiver that hands one NAL unit to its decoder gets a whole picture.
///
/// Give it one access unit (one encoded packet) at a time. What an access unit holds in the output
/// depends on `layout`:
/// - `.bare` (camrec's default): nothing but parameter sets and slices. An IDR access unit is
///   exactly `SPS PPS IDR-slice` (`VPS SPS PPS IDR-slice` in H.265), every other access unit is
///   exactly its slice. The encoder's SEI (version banner, HRD buffering period and picture timing,
///   recovery point), AUD, filler and end-of-sequence units are left out and counted in
///   `droppedUnits`. A receiver that reads the first unit of an access unit as the SPS, the next as
///   the PPS and all the rest as the IDR slice (seed 001) decodes every picture. A parameter set
///   that comes with a non-IDR picture is remembered and left out when it equals the stored one;
///   one that differs is kept (its picture may refer to it).
/// - `.encoderUnits`: the encoder's own non-VCL units are kept, laid out `[AUD] [SEI and other
///   non-VCL units …] SPS PPS IDR-slice …`: the leading AUD if the input had one, then the units that
///   stood before the first slice (SEI first: H.264 lets SEI, SPS and PPS come in any order before
///   the first VCL unit), then the SPS units, then the PPS units, then the slices and whatever
///   followed them in input order (H.265: SEI … VPS SPS PPS IDR). Other access units are copied
///   unit by unit. The encoder version SEI (libx264's and libx265's user-data-unregistered banner,
///   ~700 bytes that no receiver needs) is still dropped unless `keepsEncoderVersionSEI`.
/// Either way parameter sets found in an IDR access unit are moved right before its first slice;
/// missing ones are taken from earlier access units (remembered per id, the latest of each id
/// winning) and `insertedParameterSets` is set. Start codes are rewritten to 4 bytes.
///
/// The stream must start with an IDR picture: before the first IDR, an access unit with a
/// picture throws `firstPictureNotIDR`, and one without (parameter sets only, say) is held
/// back (nothing written; its SPS/PPS are remembered).
///
/// The codec's differences (NAL header, which units are parameter sets and IDR slices) come from
/// `VideoCodec`; the rules are the same code for both.
///
/// No allocation per access unit in steady state: unit positions go into a scratch array
/// that keeps its capacity, and parameter sets are only copied when they change.
public struct AnnexBStreamWriter: Sendable {
    /// One NAL unit of the access unit being written: where it is and what it is.
    private struct UnitRef: Sendable {
        var range: Range<Int>
        var role: NALRole
    }

    /// A parameter set as received, and the id of the set it refers to (a PPS's SPS, an H.265 SPS's VPS).
    private struct StoredSet: Sendable {
        var bytes: [UInt8]
        var refersTo: Int?
    }

    private static let startCode: [UInt8] = [0, 0, 0, 1]

    public let codec: VideoCodec
    private var stored: [ParameterSetKind: [Int: StoredSet]] = [:]
    private var latestID: [ParameterSetKind: Int] = [:]
    private var scratch: [UnitRef] = []
    /// Set once an IDR access unit has been written.
    public private(set) var hasStarted = false

    /// The most recently received H.264 SPS, parsed.
    public private(set) var sequenceParameterSet: SequenceParameterSet?
    /// The most recently received H.264 PPS, parsed.
    public private(set) var pictureParameterSet: PictureParameterSet?
    /// The most recently received H.265 SPS, parsed.
    public private(set) var hevcSequenceParameterSet: HEVCSequenceParameterSet?

    /// Most slice NAL units one picture may have; nil for no limit (a receiver passing on
    /// another sender's stream).
    public let maxSlicesPerPicture: Int?
    /// Which units besides parameter sets and slices are written.
    public enum Layout: Sendable, Hashable {
        /// Parameter sets and slices only (camrec's stream contract).
        case bare
        /// The encoder's SEI, AUD and other non-VCL units too (a receiver passing on a sender's stream,
        /// or `--encoder-sei`).
        case encoderUnits
    }

    public let layout: Layout
    /// With `.encoderUnits`: keep libx264's/libx265's version SEI instead of dropping it.
    public let keepsEncoderVersionSEI: Bool

    public init(codec: VideoCodec = .h264, layout: Layout = .bare, maxSlicesPerPicture: Int? = nil,
                keepsEncoderVersionSEI: Bool = false) {
        self.codec = codec
        self.layout = layout
        self.maxSlicesPerPicture = maxSlicesPerPicture
        self.keepsEncoderVersionSEI = keepsEncoderVersionSEI
    }

    /// Whether a unit of `role` is left out of the output.
    private func leavesOut(_ role: NALRole, _ unit: UnsafeRawBufferPointer) -> Bool {
        switch layout {
        case .bare:
            if case .parameterSet = role { return false }
            return !role.isVCL
        case .encoderUnits:
            return role == .sei && !keepsEncoderVersionSEI && Self.isEncoderVersionSEI(unit, headerLength: codec.nalHeaderLength)
        }
    }

    /// Forgets that the stream has started (for a new file or a new client) but keeps the
    /// parameter sets, so the next IDR gets them even if the encoder does not repeat them.
    public mutating func restartStream() {
        hasStarted = false
    }

    /// Remembers the parameter sets in an Annex B buffer (for example encoder extradata written
    /// with global headers) without writing anything.
    public mutating func rememberParameterSets(fromAnnexB buffer: UnsafeRawBufferPointer) {
        AnnexBScanner.forEachUnit(in: buffer) { range, _ in
            let unit = UnsafeRawBufferPointer(rebasing: buffer[range])
            if case .parameterSet(let kind) = codec.role(ofType: codec.typeValue(of: unit)) { remember(kind, unit) }
        }
    }

    public mutating func rememberParameterSets(fromAnnexB bytes: [UInt8]) {
        bytes.withUnsafeBytes { rememberParameterSets(fromAnnexB: $0) }
    }

    /// Appends the rewritten access unit to `output`.
    @discardableResult
    public mutating func write(accessUnit: [UInt8], into output: inout [UInt8]) throws -> AccessUnitInfo {
        try accessUnit.withUnsafeBytes { try write(accessUnit: $0, into: &output) }
    }

    /// Appends the rewritten access unit to `output`. On error nothing is appended.
    @discardableResult
    public mutating func write(accessUnit: UnsafeRawBufferPointer, into output: inout [UInt8]) throws -> AccessUnitInfo {
        scratch.removeAll(keepingCapacity: true)
        var skippedBytes = 0
        var sawUnit = false
        var droppedUnits = 0
        var sliceCount = 0
        AnnexBScanner.forEachUnit(in: accessUnit) { range, startCodeLength in
            if !sawUnit { skippedBytes = range.lowerBound - startCodeLength }
            sawUnit = true
            let unit = UnsafeRawBufferPointer(rebasing: accessUnit[range])
            let role = codec.role(ofType: codec.typeValue(of: unit))
            if leavesOut(role, unit) {
                droppedUnits += 1
                return
            }
            if role.isVCL { sliceCount += 1 }
            scratch.append(UnitRef(range: range, role: role))
        }
        guard sawUnit else { throw StreamContractError.noNALUnits }
        if let maxSlicesPerPicture, sliceCount > maxSlicesPerPicture {
            throw StreamContractError.tooManySlices(found: sliceCount, allowed: maxSlicesPerPicture)
        }
        guard !scratch.isEmpty else {
            // Only units left out (a version SEI, an AUD): nothing to write.
            return AccessUnitInfo(skippedBytes: skippedBytes, heldBack: !hasStarted, droppedUnits: droppedUnits)
        }

        var isIDR = false
        var hasPicture = false
        var present: Set<ParameterSetKind> = []
        var firstIDRIndex = 0
        // Parameter sets that differ from every stored one (checked before they are stored), one bit
        // per unit index; units past the 62nd share the last bit, so one new set keeps them all.
        var newSets = 0
        for (index, unit) in scratch.enumerated() {
            switch unit.role {
            case .parameterSet(let kind):
                present.insert(kind)
                let bytes = UnsafeRawBufferPointer(rebasing: accessUnit[unit.range])
                if !repeatsStored(kind, bytes) { newSets |= 1 << min(index, 62) }
                remember(kind, bytes)
            case .idrSlice:
                if !isIDR { firstIDRIndex = index }
                isIDR = true
            default:
                break
            }
            if unit.role.isVCL { hasPicture = true }
        }

        var info = AccessUnitInfo(isIDR: isIDR, skippedBytes: skippedBytes, droppedUnits: droppedUnits)
        if !hasStarted && !isIDR {
            if hasPicture { throw StreamContractError.firstPictureNotIDR }
            info.heldBack = true
            return info
        }

        let startCount = output.count
        if !isIDR {
            for (index, unit) in scratch.enumerated() {
                if case .parameterSet(let kind) = unit.role {
                    if layout == .bare && newSets & (1 << min(index, 62)) == 0 {
                        info.droppedUnits += 1
                        continue
                    }
                    if kind == .sps { info.containsSPS = true }
                    if kind == .pps { info.containsPPS = true }
                }
                append(UnsafeRawBufferPointer(rebasing: accessUnit[unit.range]), to: &output)
                info.nalCount += 1
            }
            info.byteCount = output.count - startCount
            return info
        }

        // IDR: find the parameter sets it lacks before writing anything, so a throw leaves
        // `output` untouched. Each set found (in the access unit, or remembered) names the one
        // before it in the chain: PPS → SPS → VPS.
        var inserted: [ParameterSetKind: [UInt8]] = [:]
        var wantedID: Int?
        for kind in codec.parameterSetOrder.reversed() {
            if present.contains(kind) {
                wantedID = referenceOfFirst(kind, in: accessUnit)
                continue
            }
            let set: StoredSet?
            if kind == .pps {
                set = storedPPS(forSlice: UnsafeRawBufferPointer(rebasing: accessUnit[scratch[firstIDRIndex].range]))
            } else {
                set = (wantedID ?? latestID[kind]).flatMap { stored[kind]?[$0] }
            }
            guard let set else { throw StreamContractError.missingParameterSets }
            inserted[kind] = set.bytes
            wantedID = set.refersTo
        }

        var written = 0
        func copy(_ unit: UnitRef) {
            append(UnsafeRawBufferPointer(rebasing: accessUnit[unit.range]), to: &output)
            written += 1
        }
        func isParameterSet(_ unit: UnitRef) -> Bool {
            if case .parameterSet = unit.role { return true }
            return false
        }
        let firstSlice = scratch.firstIndex { $0.role.isVCL } ?? firstIDRIndex
        // [AUD] [SEI and other non-VCL units that stood before the first slice]
        for (index, unit) in scratch[..<firstSlice].enumerated() where !isParameterSet(unit) {
            if unit.role == .accessUnitDelimiter && index != 0 { continue }  // a stray AUD has no place here
            copy(unit)
        }
        // [VPS] SPS PPS, immediately before the first slice.
        for kind in codec.parameterSetOrder {
            if let bytes = inserted[kind] {
                bytes.withUnsafeBytes { append($0, to: &output) }
                written += 1
            }
            for unit in scratch where unit.role == .parameterSet(kind) { copy(unit) }
        }
        // The slices, and whatever followed the first one, in input order.
        for unit in scratch[firstSlice...] where !isParameterSet(unit) { copy(unit) }

        hasStarted = true
        info.nalCount = written
        info.insertedParameterSets = !inserted.isEmpty
        info.containsSPS = true
        info.containsPPS = true
        info.byteCount = output.count - startCount
        return info
    }

    /// The remembered parameter sets as Annex B with 4-byte start codes, each kind in the codec's
    /// order ([VPS] SPS PPS), ids ascending: what a client joining mid-stream needs before the next
    /// IDR. Nil until one of each kind has been seen.
    public func parameterSetsAnnexB() -> [UInt8]? {
        guard codec.parameterSetOrder.allSatisfy({ !(stored[$0]?.isEmpty ?? true) }) else { return nil }
        var output: [UInt8] = []
        for kind in codec.parameterSetOrder {
            for (_, set) in (stored[kind] ?? [:]).sorted(by: { $0.key < $1.key }) {
                output += Self.startCode
                output += set.bytes
            }
        }
        return output
    }

    // MARK: - Private

    /// libx264's (dc45e9bd-e6d9-48b7-962c-d820d923eeef) and libx265's
    /// (2ca2de09-b517-47db-bb55-a4fe7fc2fc4e) user-data-unregistered UUIDs: their version banner.
    private static let encoderVersionUUIDs: [[UInt8]] = [
        [0xDC, 0x45, 0xE9, 0xBD, 0xE6, 0xD9, 0x48, 0xB7, 0x96, 0x2C, 0xD8, 0x20, 0xD9, 0x23, 0xEE, 0xEF],
        [0x2C, 0xA2, 0xDE, 0x09, 0xB5, 0x17, 0x47, 0xDB, 0xBB, 0x55, 0xA4, 0xFE, 0x7F, 0xC2, 0xFC, 0x4E],
    ]

    /// An SEI unit whose first message is user data unregistered (payload type 5) under an
    /// encoder's version UUID. Read on the escaped bytes: the 0xFF size bytes and these UUIDs
    /// hold no `00 00`, so no emulation-prevention byte can sit in this prefix.
    static func isEncoderVersionSEI(_ unit: UnsafeRawBufferPointer, headerLength: Int = 1) -> Bool {
        var index = headerLength
        var payloadType = 0
        while index < unit.count && unit[index] == 0xFF { payloadType += 255; index += 1 }
        guard index < unit.count else { return false }
        payloadType += Int(unit[index]); index += 1
        guard payloadType == 5 else { return false }
        while index < unit.count && unit[index] == 0xFF { index += 1 }
        index += 1  // last payload-size byte
        guard index + 16 <= unit.count else { return false }
        let uuid = UnsafeRawBufferPointer(rebasing: unit[index..<(index + 16)])
        return encoderVersionUUIDs.contains { $0.elementsEqual(uuid) }
    }

    private func append(_ unit: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        output.append(contentsOf: Self.startCode)
        output.append(contentsOf: unit)
    }

    /// Whether `unit` is byte for byte a parameter set already stored (so a bare stream can leave it
    /// out of a non-IDR access unit: the next IDR carries it anyway).
    private func repeatsStored(_ kind: ParameterSetKind, _ unit: UnsafeRawBufferPointer) -> Bool {
        (stored[kind] ?? [:]).values.contains { $0.bytes.elementsEqual(unit) }
    }

    /// Stores a parameter set unless an identical copy is already stored. Units that do not
    /// parse are still written by the caller, but never stored or inserted later.
    private mutating func remember(_ kind: ParameterSetKind, _ unit: UnsafeRawBufferPointer) {
        if let id = latestID[kind], let set = stored[kind]?[id], set.bytes.elementsEqual(unit) { return }
        for (id, set) in stored[kind] ?? [:] where set.bytes.elementsEqual(unit) {
            latestID[kind] = id
            return
        }
        let bytes = [UInt8](unit)
        let unitValue = NALUnit(bytes: bytes)
        let parsed: (id: Int, refersTo: Int?)?
        switch (codec, kind) {
        case (.h264, .sps):
            let sps = try? SequenceParameterSet(nalUnit: unitValue)
            if let sps { sequenceParameterSet = sps }
            parsed = sps.map { ($0.seqParameterSetID, nil) }
        case (.h264, .pps):
            let pps = try? PictureParameterSet(nalUnit: unitValue)
            if let pps { pictureParameterSet = pps }
            parsed = pps.map { ($0.picParameterSetID, $0.seqParameterSetID) }
        case (.hevc, .vps):
            parsed = (try? HEVCVideoParameterSet(nalUnit: unitValue)).map { ($0.videoParameterSetID, nil) }
        case (.hevc, .sps):
            let sps = try? HEVCSequenceParameterSet(nalUnit: unitValue)
            if let sps { hevcSequenceParameterSet = sps }
            parsed = sps.map { ($0.seqParameterSetID, $0.videoParameterSetID) }
        case (.hevc, .pps):
            parsed = (try? HEVCPictureParameterSet(nalUnit: unitValue)).map { ($0.picParameterSetID, $0.seqParameterSetID) }
        case (.h264, .vps):
            parsed = nil
        }
        guard let parsed else { return }
        stored[kind, default: [:]][parsed.id] = StoredSet(bytes: bytes, refersTo: parsed.refersTo)
        latestID[kind] = parsed.id
    }

    /// The id named by the first parameter set of `kind` in the access unit (as stored by `remember`).
    private func referenceOfFirst(_ kind: ParameterSetKind, in accessUnit: UnsafeRawBufferPointer) -> Int? {
        guard let unit = scratch.first(where: { $0.role == .parameterSet(kind) }) else { return nil }
        let bytes = UnsafeRawBufferPointer(rebasing: accessUnit[unit.range])
        return stored[kind]?.values.first { $0.bytes.elementsEqual(bytes) }?.refersTo
    }

    /// The PPS an IDR slice refers to. With a single PPS stored (the usual case) no parsing
    /// is needed; otherwise the slice header says which one (its first bytes are enough).
    private func storedPPS(forSlice slice: UnsafeRawBufferPointer) -> StoredSet? {
        let all = stored[.pps] ?? [:]
        if all.count <= 1 { return all.values.first }
        if let start = codec.sliceStart(of: NALUnit(bytes: Array(slice.prefix(64)))) {
            return all[start.picParameterSetID]
        }
        return latestID[.pps].flatMap { all[$0] }
    }
}
