import Audio
import Hub
import Bitstream
import Outputs

/// Fragmented MP4 for a browser's Media Source Extensions, made in memory: the init segment
/// (`ftyp`+`moov`) from the first IDR, then one fragment (`moof`+`mdat`) per access unit, each
/// complete as soon as its frame is given (no frame of delay). Written by the same libavformat
/// writer as MP4 files, so the sample entry, timestamps and key marks are the files'.
public final class LiveMP4Fragmenter {
    /// `ftyp`+`moov`: what a viewer appends first. Set by the first IDR.
    public private(set) var initSegment: [UInt8]?
    /// The RFC 6381 codec string (`avc1.PPCCLL`, with `,mp4a.40.2` when there is sound) for
    /// `MediaSource.addSourceBuffer`, from the SPS.
    public private(set) var codecs: String?
    private let collector = FragmentCollector()
    private let writer: LibavContainerWriter

    /// The recording's sound (AAC), in the same fragments as the picture; nil for video only.
    private let audio: AudioTrackFormat?

    public init(framesPerSecond: Double, audio: AudioTrackFormat? = nil) throws {
        self.audio = audio
        writer = try LibavContainerWriter(format: .mp4, sink: collector, framesPerSecond: framesPerSecond,
                                          fragmentEveryFrame: true, audio: audio)
    }

    /// The fragment holding `chunk`, or nil before the first IDR (a viewer can start only there) and
    /// for sound, which goes out in the next picture's fragment.
    public func fragment(of chunk: StreamChunk) throws -> [UInt8]? {
        if chunk.kind == .audio {
            if initSegment != nil { try writer.write(chunk) }
            return nil
        }
        if initSegment == nil {
            guard chunk.isIDR else { return nil }
            // AAC-LC is `mp4a.40.2` (RFC 6381: the MPEG-4 audio object type 2); Opus is `opus`.
            codecs = Self.codecString(idrAccessUnit: chunk.bytes).map { video in audio.map { video + "," + $0.codec.mimeCodec } ?? video }
        }
        try writer.write(chunk)
        var sealed = collector.takeSealed()
        if initSegment == nil, sealed.count == 2 { initSegment = sealed.removeFirst() }
        guard sealed.count == 1 else {
            throw OutputError(.unwritable, "the live view's MP4 writer made \(sealed.count) pieces for one frame")
        }
        return sealed[0]
    }

    /// `avc1.` then profile_idc, the constraint flags and level_idc in hex: the three bytes after
    /// the SPS's NAL header.
    static func codecString(idrAccessUnit: [UInt8]) -> String? {
        guard let sps = AnnexBScanner.units(in: idrAccessUnit).first(where: \.isSPS), sps.bytes.count >= 4 else { return nil }
        let hex = sps.bytes[1...3].map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count == 1 ? "0" + digits : digits
        }
        return "avc1." + hex.joined()
    }
}

/// Collects what the writer writes, sealed into one piece at every boundary it marks (after the
/// header, after each fragment).
private final class FragmentCollector: ByteSink {
    let label = "the live view"
    private var pending: [UInt8] = []
    private var sealed: [[UInt8]] = []

    func open() throws {}
    func write(_ bytes: UnsafeRawBufferPointer) throws { pending.append(contentsOf: bytes) }
    func commitBoundary() {
        guard !pending.isEmpty else { return }
        sealed.append(pending)
        pending.removeAll(keepingCapacity: true)
    }
    func close(keep: Bool) throws -> String? { nil }

    func takeSealed() -> [[UInt8]] {
        defer { sealed.removeAll(keepingCapacity: true) }
        return sealed
    }
}
