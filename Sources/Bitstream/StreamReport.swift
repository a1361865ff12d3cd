import SystemSupport

/// What `StreamInspector` found in a stream.
public struct StreamReport: Sendable, Equatable {
    /// Min, max and most common length of the GOPs, in frames.
    public struct GOPSummary: Sendable, Hashable {
        public var minimum: Int
        public var maximum: Int
        /// The most common length (the larger one on a tie).
        public var typical: Int
        public var isRegular: Bool { minimum == maximum }
    }

    /// The first parameter sets of each kind that parsed, in an H.265 stream.
    public struct HEVCParameterSets: Sendable, Equatable {
        public var vps: HEVCVideoParameterSet?
        public var sps: HEVCSequenceParameterSet?
        public var pps: HEVCPictureParameterSet?
        public init() {}
    }

    public var codec: VideoCodec
    public var byteCount: Int
    public var nalUnitCount: Int
    /// The first `recordLimit` NAL units.
    public var records: [NALRecord]
    public var recordsTruncated: Bool
    /// Units per `nal_unit_type` value (of the stream's codec).
    public var typeCounts: [UInt8: Int]
    public var fourByteStartCodeCount: Int
    public var skippedLeadingBytes: Int
    /// Pictures: first slices of a picture.
    public var frameCount: Int
    public var idrCount: Int
    /// Frame index of each IDR picture.
    public var idrFrameIndices: [Int]
    /// Frames from each IDR to the next, the last one running to the end of the stream
    /// (so it may be cut short). Frames before the first IDR belong to no GOP.
    public var gopLengths: [Int]
    /// The first SPS / PPS that parsed, in an H.264 stream.
    public var sequenceParameterSet: SequenceParameterSet?
    public var pictureParameterSet: PictureParameterSet?
    public var hevc: HEVCParameterSets
    /// How many different SPS contents appeared (more than 1 means the format changed).
    public var distinctSPSCount: Int
    /// Fewest and most slice NAL units in one picture; nil without pictures.
    public var slicesPerPicture: ClosedRange<Int>?
    /// The most the contract allowed (`inspect --slices`).
    public var allowedSlicesPerPicture: Int
    /// H.264 B slices (pictures shown in another order than decoded; no rule of the contract), and the
    /// frame of the first.
    public var bSliceCount = 0
    public var firstBSliceFrame: Int?
    public var violations: [ContractViolation]
    /// Sizes of an SPS and a PPS, in bytes without start codes.
    public struct ParameterSetSizes: Sendable, Equatable {
        public var sps: Int
        public var pps: Int
    }

    /// H.264: the largest SPS and PPS (nil in H.265 or without an SPS).
    public var largestParameterSets: ParameterSetSizes?

    public var contractHolds: Bool { violations.isEmpty }

    /// Nothing but parameter sets and slices: IDR access units exactly `SPS PPS IDR`, others exactly a slice.
    public var isBare: Bool { !violations.contains { $0.kind == .notBare } }

    /// Seed 001's receiver finds the PPS's start code only within 40 bytes of the SPS's (so an SPS
    /// of at most 35 bytes) and the IDR's within 30 bytes of the PPS's (a PPS of at most 25).
    public static let seed001Windows = ParameterSetSizes(sps: 35, pps: 25)


    /// GOP lengths summarized over complete GOPs (between two IDRs); when there is only
    /// one IDR, over the single GOP that runs to the end. Nil without IDRs.
    public var gopSummary: GOPSummary? {
        let complete = gopLengths.count > 1 ? Array(gopLengths.dropLast()) : gopLengths
        guard let minimum = complete.min(), let maximum = complete.max() else { return nil }
        var counts: [Int: Int] = [:]
        for length in complete { counts[length, default: 0] += 1 }
        let typical = counts.max { ($0.value, $0.key) < ($1.value, $1.key) }?.key ?? maximum
        return GOPSummary(minimum: minimum, maximum: maximum, typical: typical)
    }

    /// Text for `camrec inspect`: header, GOP line, contract verdict, and with `verbose`
    /// the NAL table. No trailing newline, so it can go straight to `print`.
    public func render(verbose: Bool) -> String {
        var lines: [String] = []
        lines.append("size: \(byteCount) bytes (\(Self.humanSize(byteCount))), \(nalUnitCount) NAL units, \(frameCount) frames")
        lines.append(videoDescription())
        if distinctSPSCount > 1 { lines.append("note: \(distinctSPSCount) different SPS in the stream") }
        lines.append("GOP: " + gopDescription())
        if let slices = slicesPerPicture {
            let count = slices.lowerBound == slices.upperBound ? "\(slices.lowerBound)" : "\(slices.lowerBound)–\(slices.upperBound)"
            lines.append("slices per picture: \(count)")
        }
        if bSliceCount > 0 {
            lines.append("B slices: \(bSliceCount) (first in frame \(firstBSliceFrame ?? 0)): pictures come in decoding order, not "
                         + "display order; camrec passes a camera's B-frames on as they are (not a rule of the contract)")
        }

        lines.append("bare: " + (isBare ? "yes (parameter sets and slices only)" : "no"))
        if let sizes = largestParameterSets {
            let limits = Self.seed001Windows
            if sizes.sps > limits.sps || sizes.pps > limits.pps {
                lines.append("warning: the largest SPS is \(sizes.sps) bytes and PPS \(sizes.pps) (without start codes): over the \(limits.sps) and \(limits.pps) "
                             + "that a receiver searching fixed windows for the next start code (seed 001) can take; it would not find the picture")
            } else {
                lines.append("parameter sets: SPS \(sizes.sps) bytes, PPS \(sizes.pps) (within seed 001's windows of \(limits.sps) and \(limits.pps))")
            }
        }
        if contractHolds {
            let slices = allowedSlicesPerPicture == 1 ? "one slice per picture" : "at most \(allowedSlicesPerPicture) slices per picture"
            lines.append("stream contract: OK — 4-byte start codes on all \(nalUnitCount) NAL units, "
                         + "\(codec.parameterSetNames) right before all \(idrCount) IDRs, \(slices), bare")
        } else {
            let problems = violations.count == 1 ? "1 problem" : "\(violations.count) problems"
            lines.append("stream contract: BROKEN — \(problems):")
            for violation in violations {
                lines.append("  - \(violation.message)")
            }
        }

        if verbose {
            lines.append("")
            lines.append(Self.pad("offset", 12) + "  sc  " + Self.pad("type", 18, left: true) + " ref " + Self.pad("size", 9))
            for record in records {
                let type = "\(record.typeValue) \(record.typeName)"
                lines.append(Self.pad(String(record.offset), 12) + "   \(record.startCodeLength)  "
                             + Self.pad(type, 18, left: true) + "   \(record.nalRefIdc) " + Self.pad(String(record.size), 9))
            }
            if recordsTruncated {
                lines.append("… \(nalUnitCount - records.count) more NAL units not listed")
            }
        }
        return lines.joined(separator: "\n")
    }

    // MARK: - Private

    private func videoDescription() -> String {
        switch codec {
        case .h264:
            guard let sps = sequenceParameterSet else { return "video: no parsable SPS" }
            var video = "video: H.264 \(sps.profileName) profile, level \(sps.levelName), \(sps.width)x\(sps.height)"
            video += sps.frameRate.map { ", \($0.decimalText(places: 3, trimmingZeros: true)) fps" } ?? ", frame rate not signalled"
            if let pps = pictureParameterSet { video += ", \(pps.entropyCodingName)" }
            if !sps.frameMbsOnlyFlag { video += ", interlaced" }
            return video
        case .hevc:
            guard let sps = hevc.sps else { return "video: H.265/HEVC, no parsable SPS" }
            let ptl = sps.profileTierLevel
            var video = "video: H.265/HEVC \(ptl.profileName) profile, \(ptl.tierName) tier, level \(ptl.levelName), "
                + "\(sps.displayedWidth)x\(sps.displayedHeight), \(sps.chromaFormatName) \(sps.bitDepthLuma)-bit"
            video += sps.framesPerSecond.map { ", \($0.decimalText(places: 3, trimmingZeros: true)) fps" } ?? ", frame rate not signalled"
            if let pps = hevc.pps, pps.tilesEnabledFlag { video += ", tiles" }
            if let pps = hevc.pps, pps.entropyCodingSyncEnabledFlag { video += ", wavefront" }
            return video
        }
    }

    private func gopDescription() -> String {
        guard let summary = gopSummary, let firstIDR = idrFrameIndices.first else { return "no IDR frames" }
        var shown = idrFrameIndices.prefix(3).map(String.init).joined(separator: ", ")
        if idrFrameIndices.count > 3 { shown += ", …" }
        var text: String
        if idrFrameIndices.count == 1 {
            text = "single IDR at frame \(firstIDR), \(gopLengths[0]) frames from there"
        } else if summary.isRegular {
            text = "IDR every \(summary.typical) frames (frames \(shown))"
        } else {
            text = "IDR every \(summary.minimum)–\(summary.maximum) frames, typically \(summary.typical) (frames \(shown))"
        }
        if firstIDR > 0 { text += "; \(firstIDR) frames before the first IDR" }
        return text
    }

    static func humanSize(_ bytes: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : "\(value.decimalText(places: 1, trimmingZeros: true)) \(units[unit])"
    }

    private static func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return left ? text + padding : padding + text
    }
}
