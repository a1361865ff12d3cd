/// The codecs camrec encodes sound with (`--audio-codec`).
public enum SoundCodec: String, Sendable, CaseIterable {
    /// AAC-LC through libavcodec's own encoder: every container and server camrec writes.
    case aac
    /// Opus through libopus: MP4, Matroska, MPEG-TS, RTSP, SRT and the live page; not FLV (RTMP) or QuickTime.
    case opus

    public var displayName: String { self == .aac ? "AAC-LC" : "Opus" }
    /// libavcodec's encoder.
    var encoderName: String { self == .aac ? "aac" : "libopus" }
    /// The Debian package that brings the encoder.
    var package: String { self == .aac ? "libavcodec59" : "libavcodec59 (built with libopus)" }

    /// The sample rates it takes.
    public var sampleRates: [Int] {
        self == .aac ? AudioFormat.sampleRates : [8000, 12000, 16000, 24000, 48000]
    }

    /// The most bits a second it carries for `format` (AAC-LC: 6144 bits a channel per frame of 1024
    /// samples; Opus: 256 kbit/s a channel).
    public func mostBits(_ format: AudioFormat) -> Int {
        self == .aac ? 6144 * format.channels * format.sampleRate / 1024 : 256_000 * format.channels
    }

    /// Its codecs parameter in a MIME type (Media Source Extensions).
    public var mimeCodec: String { self == .aac ? "mp4a.40.2" : "opus" }
}
