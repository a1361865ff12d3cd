/// Rewrites encoder output so it keeps camrec's stream contract, whatever the encoder does:
///
/// 1. every NAL unit is written with the 4-byte start code `00 00 00 01`;
/// 2. every IDR access unit carries the current SPS and PPS **immediately** before its first
///    slice, so any IDR is a place where a player, a late network client or a file cut can
///    start, and a receiver that reads "SPS, PPS, then the IDR" (seed 001) finds just that;
/// 3. a picture has at most `maxSlicesPerPicture` slice NAL units (camrec asks its encoders
///    for one), so a receiver that hands one NAL unit to its decoder gets a whole picture.
///
/// Give it one access unit (one encoded packet) at a time. Layout of an IDR access unit in
/// the output: `[AUD] [SEI and other non-VCL units …] SPS PPS IDR-slice …` — the leading AUD
/// if the input had one, then the units that stood before the first slice (SEI first: H.264
/// lets SEI, SPS and PPS come in any order before the first VCL unit), then the SPS units,
/// then the PPS units, then the slices and whatever followed them in input order. SPS/PPS
/// found in the access unit are moved there; missing ones are taken from earlier access
/// units (remembered per id, the latest of each id winning) and `insertedParameterSets` is
/// set. Other access units are copied unit by unit, only their start codes rewritten.
/// Encoder version SEI (libx264's and libx265's user-data-unregistered banner, ~700 bytes
/// that no receiver needs) is dropped unless `keepsEncoderVersionSEI`.
///
/// The stream must start with an IDR picture: before the first IDR, an access unit with a
/// picture throws `firstPictureNotIDR`, and one without (parameter sets only, say) is held
/// back (nothing written; its SPS/PPS are remembered).
///
/// No allocation per access unit in steady state: unit positions go into a scratch array
/// that keeps its capacity, and parameter sets are only copied when they change.
public struct AnnexBStreamWriter: Sendable {
    /// One NAL unit of the access unit being written: where it is and what it is.
    private struct UnitRef: Sendable {
        var range: Range<Int>
        var type: NALUnitType
    }

    private struct StoredPPS: Sendable {
        var bytes: [UInt8]
        var seqParameterSetID: Int
    }

    private static let startCode: [UInt8] = [0, 0, 0, 1]

    private var spsByID: [Int: [UInt8]] = [:]
    private var ppsByID: [Int: StoredPPS] = [:]
    private var latestSPSID: Int?
    private var latestPPSID: Int?
    private var scratch: [UnitRef] = []
    /// Set once an IDR access unit has been written.
    public private(set) var hasStarted = false

    /// The most recently received SPS, parsed.
    public private(set) var sequenceParameterSet: SequenceParameterSet?
    /// The most recently received PPS, parsed.
    public private(set) var pictureParameterSet: PictureParameterSet?

    /// Most slice NAL units one picture may have; nil for no limit (a receiver passing on
    /// another sender's stream).
    public let maxSlicesPerPicture: Int?
    /// Keep libx264's/libx265's version SEI instead of dropping it.
    public let keepsEncoderVersionSEI: Bool

    public init(maxSlicesPerPicture: Int? = nil, keepsEncoderVersionSEI: Bool = false) {
        self.maxSlicesPerPicture = maxSlicesPerPicture
        self.keepsEncoderVersionSEI = keepsEncoderVersionSEI
    }

    /// Forgets that the stream has started (for a new file or a new client) but keeps the
    /// parameter sets, so the next IDR gets them even if the encoder does not repeat them.
    public mutating func restartStream() {
        hasStarted = false
    }

    /// Remembers the SPS/PPS in an Annex B buffer (for example encoder extradata written
    /// with global headers) without writing anything.
    public mutating func rememberParameterSets(fromAnnexB buffer: UnsafeRawBufferPointer) {
        AnnexBScanner.forEachUnit(in: buffer) { range, _ in
            remember(UnsafeRawBufferPointer(rebasing: buffer[range]))
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
            let type = NALUnitType(headerByte: accessUnit[range.lowerBound])
            if type == .sei && !keepsEncoderVersionSEI
                && Self.isEncoderVersionSEI(UnsafeRawBufferPointer(rebasing: accessUnit[range])) {
                droppedUnits += 1
                return
            }
            if type.isVCL { sliceCount += 1 }
            scratch.append(UnitRef(range: range, type: type))
        }
        guard sawUnit else { throw StreamContractError.noNALUnits }
        if let maxSlicesPerPicture, sliceCount > maxSlicesPerPicture {
            throw StreamContractError.tooManySlices(found: sliceCount, allowed: maxSlicesPerPicture)
        }
        guard !scratch.isEmpty else {
            // Only a dropped version SEI: nothing to write.
            return AccessUnitInfo(skippedBytes: skippedBytes, heldBack: !hasStarted, droppedUnits: droppedUnits)
        }

        var isIDR = false
        var hasPicture = false
        var hasSPS = false
        var hasPPS = false
        var firstIDRIndex = 0
        for (index, unit) in scratch.enumerated() {
            switch unit.type {
            case .sps, .pps:
                if unit.type == .sps { hasSPS = true } else { hasPPS = true }
                remember(UnsafeRawBufferPointer(rebasing: accessUnit[unit.range]))
            case .idrSlice:
                if !isIDR { firstIDRIndex = index }
                isIDR = true
            default:
                break
            }
            if unit.type.isVCL { hasPicture = true }
        }

        var info = AccessUnitInfo(isIDR: isIDR, skippedBytes: skippedBytes, droppedUnits: droppedUnits)
        if !hasStarted && !isIDR {
            if hasPicture { throw StreamContractError.firstPictureNotIDR }
            info.heldBack = true
            return info
        }

        let startCount = output.count
        if !isIDR {
            for unit in scratch {
                append(UnsafeRawBufferPointer(rebasing: accessUnit[unit.range]), to: &output)
            }
            info.nalCount = scratch.count
            info.containsSPS = hasSPS
            info.containsPPS = hasPPS
            info.byteCount = output.count - startCount
            return info
        }

        // IDR: find the parameter sets it lacks before writing anything, so a throw leaves
        // `output` untouched.
        var insertedPPS: [UInt8]?
        var insertedSPS: [UInt8]?
        var ppsSPSID: Int?
        if hasPPS {
            ppsSPSID = firstPPSSeqID(in: accessUnit)
        } else {
            let idrSlice = UnsafeRawBufferPointer(rebasing: accessUnit[scratch[firstIDRIndex].range])
            guard let stored = ppsForSlice(idrSlice) else { throw StreamContractError.missingParameterSets }
            insertedPPS = stored.bytes
            ppsSPSID = stored.seqParameterSetID
        }
        if !hasSPS {
            let id = ppsSPSID ?? latestSPSID
            guard let id, let bytes = spsByID[id] else { throw StreamContractError.missingParameterSets }
            insertedSPS = bytes
        }

        var written = 0
        func copy(_ unit: UnitRef) {
            append(UnsafeRawBufferPointer(rebasing: accessUnit[unit.range]), to: &output)
            written += 1
        }
        let firstSlice = scratch.firstIndex { $0.type.isVCL } ?? firstIDRIndex
        // [AUD] [SEI and other non-VCL units that stood before the first slice]
        for (index, unit) in scratch[..<firstSlice].enumerated() where unit.type != .sps && unit.type != .pps {
            if unit.type == .accessUnitDelimiter && index != 0 { continue }  // a stray AUD has no place here
            copy(unit)
        }
        // SPS PPS, immediately before the first slice.
        if let insertedSPS {
            insertedSPS.withUnsafeBytes { append($0, to: &output) }
            written += 1
        }
        for unit in scratch where unit.type == .sps { copy(unit) }
        if let insertedPPS {
            insertedPPS.withUnsafeBytes { append($0, to: &output) }
            written += 1
        }
        for unit in scratch where unit.type == .pps { copy(unit) }
        // The slices, and whatever followed the first one, in input order.
        for unit in scratch[firstSlice...] where unit.type != .sps && unit.type != .pps { copy(unit) }

        hasStarted = true
        info.nalCount = written
        info.insertedParameterSets = insertedSPS != nil || insertedPPS != nil
        info.containsSPS = true
        info.containsPPS = true
        info.byteCount = output.count - startCount
        return info
    }

    /// The remembered parameter sets as Annex B with 4-byte start codes, every SPS then
    /// every PPS in id order: what a client joining mid-stream needs before the next IDR.
    /// Nil until at least one SPS and one PPS have been seen.
    public func parameterSetsAnnexB() -> [UInt8]? {
        guard !spsByID.isEmpty, !ppsByID.isEmpty else { return nil }
        var output: [UInt8] = []
        for id in spsByID.keys.sorted() {
            output += Self.startCode
            output += spsByID[id] ?? []
        }
        for id in ppsByID.keys.sorted() {
            output += Self.startCode
            output += ppsByID[id]?.bytes ?? []
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
    static func isEncoderVersionSEI(_ unit: UnsafeRawBufferPointer) -> Bool {
        var index = 1
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

    /// Stores an SPS or PPS unless an identical copy is already stored. Units that do not
    /// parse are still written by the caller, but never stored or inserted later.
    private mutating func remember(_ unit: UnsafeRawBufferPointer) {
        guard let header = unit.first else { return }
        switch NALUnitType(headerByte: header) {
        case .sps:
            if let id = latestSPSID, let stored = spsByID[id], stored.elementsEqual(unit) { return }
            for (id, stored) in spsByID where stored.elementsEqual(unit) {
                latestSPSID = id
                return
            }
            let bytes = [UInt8](unit)
            guard let sps = try? SequenceParameterSet(nalUnit: NALUnit(bytes: bytes)) else { return }
            spsByID[sps.seqParameterSetID] = bytes
            latestSPSID = sps.seqParameterSetID
            sequenceParameterSet = sps
        case .pps:
            if let id = latestPPSID, let stored = ppsByID[id], stored.bytes.elementsEqual(unit) { return }
            for (id, stored) in ppsByID where stored.bytes.elementsEqual(unit) {
                latestPPSID = id
                return
            }
            let bytes = [UInt8](unit)
            guard let pps = try? PictureParameterSet(nalUnit: NALUnit(bytes: bytes)) else { return }
            ppsByID[pps.picParameterSetID] = StoredPPS(bytes: bytes, seqParameterSetID: pps.seqParameterSetID)
            latestPPSID = pps.picParameterSetID
            pictureParameterSet = pps
        default:
            return
        }
    }

    /// The SPS id named by the first PPS of the access unit (as stored by `remember`).
    private func firstPPSSeqID(in accessUnit: UnsafeRawBufferPointer) -> Int? {
        for unit in scratch where unit.type == .pps {
            let bytes = UnsafeRawBufferPointer(rebasing: accessUnit[unit.range])
            for stored in ppsByID.values where stored.bytes.elementsEqual(bytes) {
                return stored.seqParameterSetID
            }
            return nil
        }
        return nil
    }

    /// The PPS an IDR slice refers to. With a single PPS stored (the usual case) no parsing
    /// is needed; otherwise the slice header says which one.
    private func ppsForSlice(_ slice: UnsafeRawBufferPointer) -> StoredPPS? {
        if ppsByID.count <= 1 { return ppsByID.values.first }
        if let header = try? SliceHeader(escapedPayload: slice.dropFirst()) {
            return ppsByID[header.picParameterSetID]
        }
        return latestPPSID.flatMap { ppsByID[$0] }
    }
}
