import Audio
import Bitstream
import Outputs

/// Which writer makes a recording file's container: MP4 without sound is camrec's own
/// (`FragmentedMP4Writer`, no libav* mapped); everything else is libavformat's (`LibavContainerWriter`).
public enum ContainerWriters {
    /// Whether `format` (with or without sound) needs libavformat.
    public static func needLibav(_ format: ContainerFormat, withSound: Bool) -> Bool {
        switch format {
        case .raw: false
        case .mp4: withSound
        case .mov, .mkv, .ts: true
        }
    }

    public static func make(format: ContainerFormat, codec: VideoCodec, sink: ByteSink, framesPerSecond: Double,
                            audio: AudioTrackFormat?) throws -> ContainerWriter {
        if !needLibav(format, withSound: audio != nil) {
            return FragmentedMP4Writer(codec: codec, sink: sink, framesPerSecond: framesPerSecond)
        }
        return try LibavContainerWriter(format: format, codec: codec, sink: sink, framesPerSecond: framesPerSecond, audio: audio)
    }
}
