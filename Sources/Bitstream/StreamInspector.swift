/// Examines an Annex B H.264 stream fed in chunks (for `camrec inspect FILE`, or a live
/// receiver) and reports its structure and whether it keeps camrec's stream contract.
///
/// Memory stays bounded by `unitKeepLimit` bytes per NAL unit (only headers are read;
/// larger units are counted, not held) plus the records kept (at most `recordLimit`); the
/// stream itself is never held. Works on any H.264 Annex B stream,
/// not only camrec's. Slices are not decoded: only the first bytes of each slice header
/// are read.
///
/// Contract rules checked (see `ContractViolation.Kind`):
/// - every NAL unit has a 4-byte start code;
/// - the stream begins with an SPS, optionally preceded by one AUD and by SEI units (the
///   layout of an IDR access unit is `[AUD] [SEI …] SPS PPS IDR…`);
/// - **SPS and PPS must both appear in the same access unit before its first IDR slice.**
///   AUD and SEI may come before or between them. Access units are delimited as in
///   H.264 7.4.1.2.3: an AUD, SPS, PPS, SEI or NAL type 14–18 after a picture's slices,
///   or a slice with `first_mb_in_slice == 0`, starts a new access unit;
/// - forbidden_zero_bit is 0 everywhere; nothing precedes the first start code;
/// - every slice names a PPS that has appeared, whose SPS has appeared;
/// - the stream has at least one IDR picture;
/// - **the two units right before the first slice of every IDR picture are SPS and PPS**
///   (nothing between the PPS and the IDR slice);
/// - **a picture has at most `maxSlicesPerPicture` slice NAL units** (one by default).
///
/// A picture (frame) is counted at each slice with `first_mb_in_slice == 0`, so field
/// pairs count twice; camrec writes progressive frames only.
public struct StreamInspector: Sendable {
    private struct Tally: Sendable {
        var count = 0
        var firstOffset: Int?
        var detail = ""
    }

    public let recordLimit: Int
    public let maxSlicesPerPicture: Int
    private var slicesInPicture = 0
    private var pictureOffset = 0
    private var fewestSlices = Int.max
    private var mostSlices = 0
    /// Types of the two units before the current one (nil at the start).
    private var previousType: NALUnitType?
    private var typeBeforePrevious: NALUnitType?
    /// Bytes of a NAL unit held: enough for any SPS, PPS or slice header.
    public static let unitKeepLimit = 64 * 1024
    private var scanner = AnnexBScanner(keepingAtMost: StreamInspector.unitKeepLimit)
    private var records: [NALRecord] = []
    private var nalCount = 0
    private var fourByteStartCodes = 0
    private var typeCounts: [NALUnitType: Int] = [:]
    private var tallies: [ContractViolation.Kind: Tally] = [:]

    private var spsByID: [Int: SequenceParameterSet] = [:]
    private var ppsByID: [Int: PictureParameterSet] = [:]
    private var firstSPS: SequenceParameterSet?
    private var firstPPS: PictureParameterSet?
    private var distinctSPSCount = 0

    private var frameCount = 0
    private var idrFrameIndices: [Int] = []
    private var idrCount = 0

    // Access-unit state.
    private var sawPictureInAccessUnit = false
    private var spsInAccessUnit = false
    private var ppsInAccessUnit = false
    /// The beginning check looks at the first unit that is not a leading AUD or an SEI.
    private var checkedBeginning = false

    /// - Parameter recordLimit: NAL records kept for the table; counting goes on past it.
    public init(recordLimit: Int = 1_000_000, maxSlicesPerPicture: Int = 1) {
        self.recordLimit = recordLimit
        self.maxSlicesPerPicture = max(1, maxSlicesPerPicture)
    }

    public mutating func append<C: Collection>(_ chunk: C) where C.Element == UInt8 {
        for unit in scanner.append(chunk) {
            process(unit)
        }
    }

    /// Ends the stream and returns the report.
    public mutating func finish() -> StreamReport {
        for unit in scanner.finish() {
            process(unit)
        }
        endPicture()
        let byteCount = scanner.bytesConsumed
        if scanner.skippedLeadingBytes > 0 {
            tally(.garbageBeforeFirstStartCode, offset: 0, detail: "\(scanner.skippedLeadingBytes)")
        }
        if nalCount == 0 {
            tally(.doesNotBeginWithSPS, offset: nil, detail: "")
        }
        if idrCount == 0 {
            tally(.noIDR, offset: nil, detail: "")
        }

        var gopLengths: [Int] = []
        for (position, index) in idrFrameIndices.enumerated() {
            let next = position + 1 < idrFrameIndices.count ? idrFrameIndices[position + 1] : frameCount
            gopLengths.append(next - index)
        }

        let violations = ContractViolation.Kind.allCases.compactMap { kind -> ContractViolation? in
            guard let tally = tallies[kind] else { return nil }
            return ContractViolation(kind: kind, message: message(for: kind, tally), offset: tally.firstOffset,
                                     count: tally.count)
        }

        return StreamReport(
            byteCount: byteCount, nalUnitCount: nalCount, records: records,
            recordsTruncated: nalCount > records.count, typeCounts: typeCounts,
            fourByteStartCodeCount: fourByteStartCodes, skippedLeadingBytes: scanner.skippedLeadingBytes,
            frameCount: frameCount, idrCount: idrCount, idrFrameIndices: idrFrameIndices, gopLengths: gopLengths,
            sequenceParameterSet: firstSPS, pictureParameterSet: firstPPS, distinctSPSCount: distinctSPSCount,
            slicesPerPicture: mostSlices > 0 ? fewestSlices...mostSlices : nil,
            allowedSlicesPerPicture: maxSlicesPerPicture, violations: violations)
    }

    /// Inspects a complete stream held in memory.
    public static func inspect(_ bytes: some Collection<UInt8>) -> StreamReport {
        var inspector = StreamInspector()
        inspector.append(bytes)
        return inspector.finish()
    }

    // MARK: - Private

    private mutating func process(_ unit: NALUnit) {
        let type = unit.type
        nalCount += 1
        typeCounts[type, default: 0] += 1
        if records.count < recordLimit {
            records.append(NALRecord(offset: unit.offset, startCodeLength: unit.startCodeLength, type: type,
                                     nalRefIdc: unit.nalRefIdc, size: unit.byteCount))
        }
        if unit.startCodeLength == 4 {
            fourByteStartCodes += 1
        } else {
            tally(.threeByteStartCode, offset: unit.offset, detail: "")
        }
        if unit.forbiddenZeroBit {
            tally(.forbiddenZeroBit, offset: unit.offset, detail: type.shortName)
        }
        if !checkedBeginning && !(nalCount == 1 && type == .accessUnitDelimiter) && type != .sei {
            checkedBeginning = true
            if type != .sps {
                tally(.doesNotBeginWithSPS, offset: unit.offset, detail: type.shortName)
            }
        }

        switch type.rawValue {
        case 6...9, 14...18:
            // These start a new access unit when they follow a picture's slices.
            if sawPictureInAccessUnit { startAccessUnit() }
        default:
            break
        }

        defer {
            typeBeforePrevious = previousType
            previousType = type
        }

        switch type {
        case .sps:
            spsInAccessUnit = true
            do {
                let sps = try SequenceParameterSet(nalUnit: unit)
                if spsByID[sps.seqParameterSetID] != sps { distinctSPSCount += 1 }
                spsByID[sps.seqParameterSetID] = sps
                if firstSPS == nil { firstSPS = sps }
            } catch {
                tally(.unparsableUnit, offset: unit.offset, detail: "SPS")
            }
        case .pps:
            ppsInAccessUnit = true
            do {
                let pps = try PictureParameterSet(nalUnit: unit)
                ppsByID[pps.picParameterSetID] = pps
                if firstPPS == nil { firstPPS = pps }
            } catch {
                tally(.unparsableUnit, offset: unit.offset, detail: "PPS")
            }
        case .nonIDRSlice, .idrSlice, .slicePartitionA:
            processSlice(unit)
        default:
            if type.isVCL { sawPictureInAccessUnit = true }
        }
    }

    private mutating func processSlice(_ unit: NALUnit) {
        // SliceHeader reads only a short prefix of the payload, whatever the slice size.
        guard let header = try? SliceHeader(nalUnit: unit) else {
            tally(.unparsableUnit, offset: unit.offset, detail: unit.type.shortName + " slice header")
            sawPictureInAccessUnit = true
            return
        }
        if header.firstMbInSlice == 0 {
            if sawPictureInAccessUnit { startAccessUnit() }
            endPicture()
            frameCount += 1
            pictureOffset = unit.offset
            if unit.isIDR {
                idrCount += 1
                if idrFrameIndices.count < recordLimit { idrFrameIndices.append(frameCount - 1) }
                if !(spsInAccessUnit && ppsInAccessUnit) {
                    let missing = spsInAccessUnit ? "PPS" : (ppsInAccessUnit ? "SPS" : "SPS and PPS")
                    tally(.idrWithoutParameterSets, offset: unit.offset, detail: "frame \(frameCount - 1) lacks \(missing)")
                } else if !(typeBeforePrevious == .sps && previousType == .pps) {
                    let between = previousType.map { $0 == .pps ? "SPS is not right before the PPS" : "\($0.shortName) stands between the PPS and the IDR slice" } ?? ""
                    tally(.unitBetweenParameterSetsAndIDR, offset: unit.offset, detail: "frame \(frameCount - 1): \(between)")
                }
            }
        }
        slicesInPicture += 1
        sawPictureInAccessUnit = true
        if let pps = ppsByID[header.picParameterSetID] {
            if spsByID[pps.seqParameterSetID] == nil {
                tally(.unknownParameterSetID, offset: unit.offset, detail: "SPS id \(pps.seqParameterSetID)")
            }
        } else {
            tally(.unknownParameterSetID, offset: unit.offset, detail: "PPS id \(header.picParameterSetID)")
        }
    }

    /// Closes the slice count of the picture that just ended.
    private mutating func endPicture() {
        guard slicesInPicture > 0 else { return }
        fewestSlices = min(fewestSlices, slicesInPicture)
        mostSlices = max(mostSlices, slicesInPicture)
        if slicesInPicture > maxSlicesPerPicture {
            tally(.tooManySlices, offset: pictureOffset, detail: "frame \(frameCount - 1) has \(slicesInPicture) slices")
        }
        slicesInPicture = 0
    }

    private mutating func startAccessUnit() {
        sawPictureInAccessUnit = false
        spsInAccessUnit = false
        ppsInAccessUnit = false
    }

    private mutating func tally(_ kind: ContractViolation.Kind, offset: Int?, detail: String) {
        var entry = tallies[kind] ?? Tally()
        if entry.count == 0 {
            entry.firstOffset = offset
            entry.detail = detail
        }
        entry.count += 1
        tallies[kind] = entry
    }

    private func message(for kind: ContractViolation.Kind, _ tally: Tally) -> String {
        let at = tally.firstOffset.map { " at offset \($0)" } ?? ""
        let first = tally.count > 1 ? "first" : ""
        switch kind {
        case .threeByteStartCode:
            return "\(tally.count) of \(nalCount) NAL units have a 3-byte start code (\(first.isEmpty ? "" : "first ")\(at.dropFirst()))"
        case .idrWithoutParameterSets:
            return "\(tally.count) of \(idrCount) IDR frames lack SPS+PPS before their first slice (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at))"
        case .doesNotBeginWithSPS:
            return nalCount == 0 ? "stream holds no NAL units"
                : "stream begins with \(tally.detail) instead of SPS\(at)"
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
            return "\(tally.count) of \(idrCount) IDR frames do not have SPS and PPS as the two units right before their first slice (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at))"
        case .unparsableUnit:
            return "\(tally.count) units cannot be parsed (\(first.isEmpty ? "" : "first: ")\(tally.detail)\(at))"
        }
    }
}
