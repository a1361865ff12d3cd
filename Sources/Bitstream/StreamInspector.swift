/// Examines an Annex B H.264 or H.265 stream fed in chunks (for `camrec inspect FILE`, or a live
/// receiver) and reports its structure and whether it keeps camrec's stream contract. The codec is
/// given, or guessed from the first NAL unit (`VideoCodec.guess`); everything that differs between
/// the two is asked of `VideoCodec`, so both are checked by the same rules below.
///
/// Memory stays bounded by `unitKeepLimit` bytes per NAL unit (only headers are read;
/// larger units are counted, not held) plus the records kept (at most `recordLimit`); the
/// stream itself is never held. Works on any H.264 Annex B stream,
/// not only camrec's. Slices are not decoded: only the first bytes of each slice header
/// are read.
///
/// Contract rules checked (see `ContractViolation.Kind`):
/// - every NAL unit has a 4-byte start code;
/// - the stream begins with its first parameter set (SPS; VPS in H.265), optionally preceded by
///   one AUD and by SEI units (the layout of an IDR access unit is `[AUD] [SEI …] SPS PPS IDR…`,
///   in H.265 `[AUD] [SEI …] VPS SPS PPS IDR…`);
/// - **every parameter set must appear in the same access unit before its first IDR slice.**
///   AUD and SEI may come before or between them. Access units are delimited as in
///   H.264 7.4.1.2.3 and H.265 7.4.2.4.4: an AUD, parameter set, (prefix) SEI and a few reserved
///   types after a picture's slices, or the first slice of a picture, start a new access unit;
/// - forbidden_zero_bit is 0 everywhere; nothing precedes the first start code;
/// - every slice names a PPS that has appeared, whose SPS (and in H.265 its VPS) has appeared;
/// - the stream has at least one IDR picture;
/// - **the units right before the first slice of every IDR picture are its parameter sets in
///   order** (SPS PPS, or VPS SPS PPS: nothing between the PPS and the IDR slice);
/// - random-access pictures are IDRs (an H.265 CRA or BLA is flagged: a player starting there
///   drops its leading pictures);
/// - **a picture has at most `maxSlicesPerPicture` slice NAL units** (one by default);
/// - **the stream is bare**: an IDR access unit holds its parameter sets and then its slice (with the
///   rules above: exactly `SPS PPS IDR`, `VPS SPS PPS IDR`), every other access unit only its slice;
///   the first access unit that holds anything else (an SEI, an AUD) is named with its layout
///   (ffmpeg's libx264 output: `SPS PPS SEI IDR`).
///
/// H.264 parameter sets are also measured against seed 001's fixed search windows (the PPS's start
/// code looked for within 40 bytes of the SPS's, the IDR's within 30 of the PPS's): a larger one is
/// a warning in the report, not a contract violation.
///
/// A picture (frame) is counted at each first slice of a picture (`first_mb_in_slice == 0`,
/// `first_slice_segment_in_pic_flag`), so H.264 field pairs count twice; camrec writes
/// progressive frames only.
public struct StreamInspector: Sendable {
    struct Tally: Sendable {
        var count = 0
        var firstOffset: Int?
        var detail = ""
    }

    public let recordLimit: Int
    public let maxSlicesPerPicture: Int
    /// The stream came out of MPEG-TS, whose carriage puts an AUD at the head of every access unit
    /// (ISO/IEC 13818-1 asks for one; libavformat's muxer adds it): such an AUD is the container's and
    /// does not make the stream less bare.
    public let delimitedByContainer: Bool
    private var slicesInPicture = 0
    private var pictureOffset = 0
    private var fewestSlices = Int.max
    private var bSlices = 0
    private var firstBSliceFrame: Int?
    private var mostSlices = 0
    /// The codec, once given or guessed from the first unit.
    var codec: VideoCodec?
    /// Roles of the units before the current one, the latest last (at most three).
    private var recentRoles: [NALRole] = []
    /// Bytes of a NAL unit held: enough for any SPS, PPS or slice header.
    public static let unitKeepLimit = 64 * 1024
    private var scanner = AnnexBScanner(keepingAtMost: StreamInspector.unitKeepLimit)
    private var records: [NALRecord] = []
    var nalCount = 0
    private var fourByteStartCodes = 0
    private var typeCounts: [UInt8: Int] = [:]
    private var tallies: [ContractViolation.Kind: Tally] = [:]

    private var spsByID: [Int: SequenceParameterSet] = [:]
    private var firstSPS: SequenceParameterSet?
    private var firstPPS: PictureParameterSet?
    private var hevcSPSByID: [Int: HEVCSequenceParameterSet] = [:]
    private var firstHEVC = StreamReport.HEVCParameterSets()
    private var distinctSPSCount = 0
    /// Which parameter sets are known, and what each refers to: the PPS's SPS, the SPS's VPS.
    private var ppsToSPS: [Int: Int] = [:]
    private var spsToVPS: [Int: Int] = [:]
    private var knownVPS: Set<Int> = []

    var frameCount = 0
    private var idrFrameIndices: [Int] = []
    var idrCount = 0

    // Access-unit state.
    /// Roles and names of the units of the access unit being read (the first `layoutLimit`), where it
    /// began and its number: for the bare-stream rule.
    private var layoutRoles: [NALRole] = []
    private var layoutNames: [String] = []
    private var accessUnitUnits = 0
    private var accessUnitOffset = 0
    var accessUnitCount = 0
    private static let layoutLimit = 8
    /// Largest H.264 SPS and PPS seen, in bytes without their start codes.
    private var largestSPS = 0
    private var largestPPS = 0
    private var sawPictureInAccessUnit = false
    private var parameterSetsInAccessUnit: Set<ParameterSetKind> = []
    /// The beginning check looks at the first unit that is not a leading AUD or an SEI.
    private var checkedBeginning = false

    /// - Parameter recordLimit: NAL records kept for the table; counting goes on past it.
    /// - Parameter codec: nil to guess it from the first NAL unit.
    public init(recordLimit: Int = 1_000_000, maxSlicesPerPicture: Int = 1, codec: VideoCodec? = nil,
                delimitedByContainer: Bool = false) {
        self.recordLimit = recordLimit
        self.delimitedByContainer = delimitedByContainer
        self.maxSlicesPerPicture = max(1, maxSlicesPerPicture)
        self.codec = codec
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
        checkBareLayout()
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
            codec: codec ?? .h264, byteCount: byteCount, nalUnitCount: nalCount, records: records,
            recordsTruncated: nalCount > records.count, typeCounts: typeCounts,
            fourByteStartCodeCount: fourByteStartCodes, skippedLeadingBytes: scanner.skippedLeadingBytes,
            frameCount: frameCount, idrCount: idrCount, idrFrameIndices: idrFrameIndices, gopLengths: gopLengths,
            sequenceParameterSet: firstSPS, pictureParameterSet: firstPPS, hevc: firstHEVC, distinctSPSCount: distinctSPSCount,
            slicesPerPicture: mostSlices > 0 ? fewestSlices...mostSlices : nil,
            allowedSlicesPerPicture: maxSlicesPerPicture, bSliceCount: bSlices, firstBSliceFrame: firstBSliceFrame,
            violations: violations,
            largestParameterSets: codec == .hevc || largestSPS == 0 ? nil : .init(sps: largestSPS, pps: largestPPS))
    }

    /// Inspects a complete stream held in memory.
    public static func inspect(_ bytes: some Collection<UInt8>) -> StreamReport {
        var inspector = StreamInspector()
        inspector.append(bytes)
        return inspector.finish()
    }

    // MARK: - Private

    private mutating func process(_ unit: NALUnit) {
        let codec = self.codec ?? VideoCodec.guess(fromFirstUnit: unit.bytes)
        self.codec = codec
        let type = codec.typeValue(of: unit.bytes)
        let role = codec.role(ofType: type)
        let name = codec.shortName(ofType: type)
        nalCount += 1
        typeCounts[type, default: 0] += 1
        if records.count < recordLimit {
            records.append(NALRecord(offset: unit.offset, startCodeLength: unit.startCodeLength, typeValue: type, typeName: name,
                                     nalRefIdc: codec == .h264 ? unit.nalRefIdc : 0, size: unit.byteCount))
        }
        if unit.startCodeLength == 4 {
            fourByteStartCodes += 1
        } else {
            tally(.threeByteStartCode, offset: unit.offset, detail: "")
        }
        if unit.forbiddenZeroBit {
            tally(.forbiddenZeroBit, offset: unit.offset, detail: name)
        }
        if !checkedBeginning && !(nalCount == 1 && role == .accessUnitDelimiter) && role != .sei {
            checkedBeginning = true
            if role != .parameterSet(codec.parameterSetOrder[0]) {
                tally(.doesNotBeginWithSPS, offset: unit.offset, detail: name)
            }
        }
        if role.startsAccessUnitAfterPicture && sawPictureInAccessUnit { startAccessUnit() }

        defer {
            recentRoles.append(role)
            if recentRoles.count > 3 { recentRoles.removeFirst() }
            if accessUnitUnits == 0 { accessUnitOffset = unit.offset }
            accessUnitUnits += 1
            if layoutRoles.count < Self.layoutLimit {
                layoutRoles.append(role)
                layoutNames.append(name)
            }
            if codec == .h264 && role == .parameterSet(.sps) { largestSPS = max(largestSPS, unit.byteCount) }
            if codec == .h264 && role == .parameterSet(.pps) { largestPPS = max(largestPPS, unit.byteCount) }
        }

        switch role {
        case .parameterSet(let kind):
            parameterSetsInAccessUnit.insert(kind)
            if !rememberParameterSet(kind, unit, codec: codec) {
                tally(.unparsableUnit, offset: unit.offset, detail: kind.rawValue)
            }
        case .idrSlice, .randomAccessSliceNotIDR, .slice:
            processSlice(unit, role: role, name: name, codec: codec)
        default:
            if role.isVCL { sawPictureInAccessUnit = true }
        }
    }

    private mutating func processSlice(_ unit: NALUnit, role: NALRole, name: String, codec: VideoCodec) {
        // Only a short prefix of the payload is read, whatever the slice size.
        guard let start = codec.sliceStart(of: unit) else {
            tally(.unparsableUnit, offset: unit.offset, detail: name + " slice header")
            sawPictureInAccessUnit = true
            return
        }
        if start.firstInPicture {
            if sawPictureInAccessUnit { startAccessUnit() }
            endPicture()
            frameCount += 1
            pictureOffset = unit.offset
            if role == .randomAccessSliceNotIDR {
                tally(.randomAccessNotIDR, offset: unit.offset, detail: "frame \(frameCount - 1) is \(name)")
            }
            if role == .idrSlice { checkIDRParameterSets(unit, codec: codec) }
        }
        slicesInPicture += 1
        sawPictureInAccessUnit = true
        // B slices break no rule of the contract (seeds 001-004 say nothing of the order pictures are
        // shown in), but a camera's own stream may have them and camrec cannot take them out: said.
        if codec == .h264, let header = try? SliceHeader(nalUnit: unit), header.sliceType == .b {
            if bSlices == 0 { firstBSliceFrame = frameCount - 1 }
            bSlices += 1
        }
        if let sps = ppsToSPS[start.picParameterSetID] {
            if let vps = spsToVPS[sps] {
                if codec == .hevc && !knownVPS.contains(vps) {
                    tally(.unknownParameterSetID, offset: unit.offset, detail: "VPS id \(vps)")
                }
            } else {
                tally(.unknownParameterSetID, offset: unit.offset, detail: "SPS id \(sps)")
            }
        } else {
            tally(.unknownParameterSetID, offset: unit.offset, detail: "PPS id \(start.picParameterSetID)")
        }
    }

    /// The first slice of an IDR picture: its access unit holds every parameter set, and they are
    /// the units right before it, in order.
    private mutating func checkIDRParameterSets(_ unit: NALUnit, codec: VideoCodec) {
        idrCount += 1
        if idrFrameIndices.count < recordLimit { idrFrameIndices.append(frameCount - 1) }
        let order = codec.parameterSetOrder
        let missing = order.filter { !parameterSetsInAccessUnit.contains($0) }
        if !missing.isEmpty {
            tally(.idrWithoutParameterSets, offset: unit.offset,
                  detail: "frame \(frameCount - 1) lacks \(missing.map(\.rawValue).joined(separator: " and "))")
        } else if recentRoles.suffix(order.count) != order.map({ NALRole.parameterSet($0) }) {
            let between = recentRoles.last.flatMap { $0 == .parameterSet(.pps) ? nil : "\(Self.describe($0)) stands between the PPS and the IDR slice" }
                ?? "\(Self.list(order.dropLast().map(\.rawValue))) \(order.count > 2 ? "are" : "is") not right before the PPS"
            tally(.unitBetweenParameterSetsAndIDR, offset: unit.offset, detail: "frame \(frameCount - 1): \(between)")
        }
    }

    private static func describe(_ role: NALRole) -> String {
        switch role {
        case .parameterSet(let kind): kind.rawValue
        case .sei: "SEI"
        case .accessUnitDelimiter: "AUD"
        case .idrSlice, .randomAccessSliceNotIDR, .slice, .sliceData: "a slice"
        case .otherStartingAccessUnit, .other: "another unit"
        }
    }

    /// Parses and remembers a parameter set; false when it does not parse.
    private mutating func rememberParameterSet(_ kind: ParameterSetKind, _ unit: NALUnit, codec: VideoCodec) -> Bool {
        switch (codec, kind) {
        case (.h264, .sps):
            guard let sps = try? SequenceParameterSet(nalUnit: unit) else { return false }
            if spsByID[sps.seqParameterSetID] != sps { distinctSPSCount += 1 }
            spsByID[sps.seqParameterSetID] = sps
            spsToVPS[sps.seqParameterSetID] = 0
            if firstSPS == nil { firstSPS = sps }
        case (.h264, .pps):
            guard let pps = try? PictureParameterSet(nalUnit: unit) else { return false }
            ppsToSPS[pps.picParameterSetID] = pps.seqParameterSetID
            if firstPPS == nil { firstPPS = pps }
        case (.hevc, .vps):
            guard let vps = try? HEVCVideoParameterSet(nalUnit: unit) else { return false }
            knownVPS.insert(vps.videoParameterSetID)
            if firstHEVC.vps == nil { firstHEVC.vps = vps }
        case (.hevc, .sps):
            guard let sps = try? HEVCSequenceParameterSet(nalUnit: unit) else { return false }
            if hevcSPSByID[sps.seqParameterSetID] != sps { distinctSPSCount += 1 }
            hevcSPSByID[sps.seqParameterSetID] = sps
            spsToVPS[sps.seqParameterSetID] = sps.videoParameterSetID
            if firstHEVC.sps == nil { firstHEVC.sps = sps }
        case (.hevc, .pps):
            guard let pps = try? HEVCPictureParameterSet(nalUnit: unit) else { return false }
            ppsToSPS[pps.picParameterSetID] = pps.seqParameterSetID
            if firstHEVC.pps == nil { firstHEVC.pps = pps }
        case (.h264, .vps):
            return false
        }
        return true
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
        checkBareLayout()
        sawPictureInAccessUnit = false
        parameterSetsInAccessUnit = []
    }

    /// The access unit just read is bare: an IDR's is its parameter sets in order and then slices
    /// only, any other's slices only.
    private mutating func checkBareLayout() {
        guard accessUnitUnits > 0 else { return }
        defer {
            accessUnitCount += 1
            accessUnitUnits = 0
            layoutRoles.removeAll(keepingCapacity: true)
            layoutNames.removeAll(keepingCapacity: true)
        }
        // Which parameter sets and in what order is checked by the rules above; this one is about
        // what else an access unit holds.
        let complete = accessUnitUnits <= layoutRoles.count
        let roles = delimitedByContainer && layoutRoles.first == .accessUnitDelimiter ? layoutRoles.dropFirst() : layoutRoles[...]
        let bare: Bool
        if roles.contains(.idrSlice) {
            bare = complete && roles.drop { if case .parameterSet = $0 { true } else { false } }.allSatisfy { $0 == .idrSlice }
        } else {
            bare = complete && !roles.isEmpty && roles.allSatisfy { $0 == .slice }
        }
        guard !bare else { return }
        let layout = layoutNames.joined(separator: " ") + (complete ? "" : " … (\(accessUnitUnits) units)")
        tally(.notBare, offset: accessUnitOffset, detail: "access unit \(accessUnitCount) is \(layout)")
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
}
