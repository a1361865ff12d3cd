/// Rewrites encoder output so it keeps camrec's stream contract, whatever the encoder does:
///
/// 1. every NAL unit is written with the 4-byte start code `00 00 00 01`;
/// 2. every IDR access unit carries the current SPS and PPS before its first slice, so
///    any IDR is a place where a player, a late network client or a file cut can start.
///
/// Give it one access unit (one encoded packet) at a time. Layout of an IDR access unit
/// in the output: the leading AUD if the input had one, then the SPS units, then the PPS
/// units, then every other unit in input order. SPS/PPS found in the access unit are
/// moved there; missing ones are taken from earlier access units (they are remembered
/// per id, the latest of each id winning) and `insertedParameterSets` is set. Other
/// access units are copied unit by unit, only their start codes rewritten.
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

    public init() {}

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
        AnnexBScanner.forEachUnit(in: accessUnit) { range, startCodeLength in
            if scratch.isEmpty { skippedBytes = range.lowerBound - startCodeLength }
            scratch.append(UnitRef(range: range, type: NALUnitType(headerByte: accessUnit[range.lowerBound])))
        }
        guard !scratch.isEmpty else { throw StreamContractError.noNALUnits }

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

        var info = AccessUnitInfo(isIDR: isIDR, skippedBytes: skippedBytes)
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
        var leadingAUD = false
        if scratch[0].type == .accessUnitDelimiter {
            append(UnsafeRawBufferPointer(rebasing: accessUnit[scratch[0].range]), to: &output)
            leadingAUD = true
            written += 1
        }
        if let insertedSPS {
            insertedSPS.withUnsafeBytes { append($0, to: &output) }
            written += 1
        }
        for unit in scratch where unit.type == .sps {
            append(UnsafeRawBufferPointer(rebasing: accessUnit[unit.range]), to: &output)
            written += 1
        }
        if let insertedPPS {
            insertedPPS.withUnsafeBytes { append($0, to: &output) }
            written += 1
        }
        for unit in scratch where unit.type == .pps {
            append(UnsafeRawBufferPointer(rebasing: accessUnit[unit.range]), to: &output)
            written += 1
        }
        for (index, unit) in scratch.enumerated() where unit.type != .sps && unit.type != .pps {
            if index == 0 && leadingAUD { continue }
            append(UnsafeRawBufferPointer(rebasing: accessUnit[unit.range]), to: &output)
            written += 1
        }

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
