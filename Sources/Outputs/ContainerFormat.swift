import Hub
/// What a recording file holds its H.264 in: raw Annex-B (`.h264`), or a container (MP4, QuickTime,
/// Matroska, MPEG-TS), chosen by the file's extension unless `--format` says.
public enum ContainerFormat: String, Sendable, CaseIterable {
    case raw, mp4, mov, mkv, ts

    /// The format a file name asks for: `.mp4`/`.m4v`, `.mov`, `.mkv`, `.ts`; anything else
    /// (`.h264`, `.264`, no extension, unknown) stays raw Annex-B.
    public init(fileName: String) {
        let name = fileName.split(separator: "/").last.map(String.init) ?? fileName
        guard let dot = name.lastIndex(of: ".") else { self = .raw; return }
        switch name[name.index(after: dot)...].lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov": self = .mov
        case "mkv": self = .mkv
        case "ts", "m2ts": self = .ts
        default: self = .raw
        }
    }
}

/// Writes one recording file's access units in its container. A file's first chunk is an IDR
/// with SPS and PPS ahead of it (files are cut only there).
public protocol ContainerWriter: AnyObject {
    /// Writes one access unit; calls the sink's `commitBoundary()` once what is on disk ends whole.
    func write(_ chunk: StreamChunk) throws
    /// Ends the container (its trailer) before the file is closed.
    func finish() throws
    /// Presentation times that went backwards or stood still and were moved forward.
    var clampedTimestamps: Int { get }
    /// A file with sound: whether the audio packet `chunk` begins before the picture written so far
    /// ends (a file that was cut keeps taking the sound of its last moments, which comes after the cut).
    func beginsBeforeVideoEnd(_ chunk: StreamChunk) -> Bool
    /// The sound taken reaches the end of the picture (always, for a file without sound).
    var soundReachesVideoEnd: Bool { get }
    /// At a cut: the audio packets taken that begin at or after the end of the picture, removed, each
    /// with its reference. When the picture lags the sound (a slow encoder), they are the next file's.
    func takeSoundPastVideoEnd() -> [StreamChunk]
}

extension ContainerWriter {
    public func beginsBeforeVideoEnd(_ chunk: StreamChunk) -> Bool { false }
    public var soundReachesVideoEnd: Bool { true }
    public func takeSoundPastVideoEnd() -> [StreamChunk] { [] }
}

/// Makes the container writer of each new file, writing through that file's sink.
public typealias ContainerWriterFactory = @Sendable (_ format: ContainerFormat, _ sink: ByteSink) throws -> ContainerWriter
