import Bitstream
import Glibc
import SystemSupport

/// What `camrec inspect` checks of a container beyond the H.264 or H.265 inside it (which the stream
/// inspector judges): every IDR and only IDRs are marked as key frames, decode times rise, the
/// sample entry carries the parameter sets the stream uses, and an MP4 ends on a whole box.
public struct ContainerInspection {
    public let formatName: String
    public private(set) var samples = 0
    public private(set) var keySamples: [Int] = []
    public private(set) var keyButNotIDR: [Int] = []
    public private(set) var idrButNotKey: [Int] = []
    /// Samples whose decode time does not rise past the one before.
    public private(set) var timesNotRising: [Int] = []
    public private(set) var samplesWithoutTime = 0
    public private(set) var firstSeconds: Double?
    public private(set) var lastSeconds: Double?
    /// One line per sample, for the verbose listing (at most `listLimit`).
    public private(set) var lines: [String] = []
    public let listLimit: Int

    private let sampleEntry: ContainerReader.SampleEntry?
    private let codec: VideoCodec
    /// The first in-band unit of each parameter-set kind.
    private var firstInBand: [ParameterSetKind: [UInt8]] = [:]
    private var lastDecodeSeconds: Double?

    public init(formatName: String, codec: VideoCodec = .h264, sampleEntry: ContainerReader.SampleEntry?, listLimit: Int = 1_000_000) {
        self.formatName = formatName
        self.codec = codec
        self.sampleEntry = sampleEntry
        self.listLimit = listLimit
    }

    public mutating func add(_ sample: ContainerReader.Sample) {
        let index = samples
        samples += 1
        let units = AnnexBScanner.units(in: sample.annexB)
        let roles = units.map { codec.role(ofType: codec.typeValue(of: $0.bytes)) }
        let isIDR = roles.contains(.idrSlice)
        for (unit, role) in zip(units, roles) {
            if case .parameterSet(let kind) = role, firstInBand[kind] == nil { firstInBand[kind] = unit.bytes }
        }
        if sample.isKey { keySamples.append(index) }
        if sample.isKey && !isIDR { keyButNotIDR.append(index) }
        if isIDR && !sample.isKey { idrButNotKey.append(index) }
        if let decode = sample.decodeSeconds ?? sample.presentationSeconds {
            if let last = lastDecodeSeconds, decode <= last { timesNotRising.append(index) }
            lastDecodeSeconds = decode
        } else {
            samplesWithoutTime += 1
        }
        if let time = sample.presentationSeconds {
            firstSeconds = firstSeconds.map { min($0, time) } ?? time
            lastSeconds = lastSeconds.map { max($0, time) } ?? time
        }
        if lines.count < listLimit {
            let time = sample.presentationSeconds.map { $0.decimalText(places: 3, trimmingZeros: true) } ?? "-"
            let types = units.map { codec.shortName(ofType: codec.typeValue(of: $0.bytes)) }.joined(separator: " ")
            lines.append("sample \(index)  time \(time)  \(sample.isKey ? "key" : "   ")  \(sample.byteCount) bytes  \(types)")
        }
    }

    /// The sample entry's first parameter set of each kind is the stream's first in-band one (nil:
    /// no sample entry, as in MPEG-TS, or none in-band).
    public var sampleEntryMatchesStream: Bool? {
        guard let entry = sampleEntry, !firstInBand.isEmpty else { return nil }
        return codec.parameterSetOrder.allSatisfy { entry.parameterSets[$0]?.first == firstInBand[$0] }
    }

    /// What is wrong with the container, one phrase each; empty when nothing is.
    public func problems(end: FileEnd?, path: String) -> [String] {
        var found: [String] = []
        func samplesNamed(_ indices: [Int]) -> String {
            let shown = indices.prefix(5).map(String.init).joined(separator: ", ") + (indices.count > 5 ? ", …" : "")
            return indices.count == 1 ? "sample \(shown)" : "\(indices.count) samples (\(shown))"
        }
        let sets = codec.parameterSetOrder.map(\.rawValue).joined(separator: "/")
        if samples == 0 { found.append("no \(codec.displayName) samples") }
        if !keyButNotIDR.isEmpty { found.append("marked key but not an IDR: \(samplesNamed(keyButNotIDR))") }
        if !idrButNotKey.isEmpty { found.append("an IDR not marked key: \(samplesNamed(idrButNotKey))") }
        if !timesNotRising.isEmpty { found.append("decode time not after the one before: \(samplesNamed(timesNotRising))") }
        if samplesWithoutTime > 0 { found.append("no time on \(samplesWithoutTime) sample\(samplesWithoutTime == 1 ? "" : "s")") }
        if sampleEntry == nil && formatName != "mpegts" {
            found.append("no \(codec == .h264 ? "avcC" : "hvcC") sample entry: players cannot set up the decoder")
        }
        if sampleEntry != nil, samples > 0, !codec.parameterSetOrder.allSatisfy({ firstInBand[$0] != nil }) {
            found.append("\(sets) only in the sample entry, not in-band before the IDRs (receivers of the stream and players that start mid-file need them there)")
        }
        if sampleEntryMatchesStream == false { found.append("the sample entry's \(sets) differ from the stream's first in-band \(sets)") }
        if let end, let box = end.cutBox {
            found.append("the file ends inside its '\(box)' box: cut short (a crash, or a copy in progress); "
                + "the \(end.wholeBytes) bytes before it are whole: `truncate -s \(end.wholeBytes) \(path)` keeps them as a file that plays")
        }
        return found
    }

    /// How an MP4/QuickTime file ends: on a whole top-level box, or inside one.
    public struct FileEnd: Equatable {
        /// Bytes up to the end of the last whole top-level box (a fragment's `moof` counts only
        /// with its `mdat`).
        public var wholeBytes: Int
        /// The type of the box the file ends inside, if it does.
        public var cutBox: String?
    }

    /// Walks an MP4/QuickTime file's top-level boxes (`ftyp`, `moov`, `moof`, `mdat`, …) by their sizes.
    public static func mp4End(path: String) -> FileEnd? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        guard fseeko(file, 0, SEEK_END) == 0 else { return nil }
        let size = Int(ftello(file))
        var position = 0
        // A fragment is a moof and the mdat after it: a cut mdat takes its moof with it.
        var wholeEnd = 0
        var header = [UInt8](repeating: 0, count: 16)
        while position < size {
            guard fseeko(file, off_t(position), SEEK_SET) == 0 else { return nil }
            let n = fread(&header, 1, 16, file)
            let type = n >= 8 ? String(decoding: header[4..<8].map { (32...126).contains($0) ? $0 : 63 }, as: UTF8.self) : "?"
            guard n >= 8 else { return FileEnd(wholeBytes: wholeEnd, cutBox: type) }
            var boxSize = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
            if boxSize == 1 {
                guard n >= 16 else { return FileEnd(wholeBytes: wholeEnd, cutBox: type) }
                let large = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard let fits = Int(exactly: large) else { return FileEnd(wholeBytes: wholeEnd, cutBox: type) }
                boxSize = fits
            } else if boxSize == 0 {
                boxSize = size - position  // to the end of the file, by definition
            }
            guard boxSize >= 8, boxSize <= size - position else { return FileEnd(wholeBytes: wholeEnd, cutBox: type) }
            position += boxSize
            if type != "moof" { wholeEnd = position }
        }
        return FileEnd(wholeBytes: wholeEnd, cutBox: position == wholeEnd ? nil : "moof")
    }
}
