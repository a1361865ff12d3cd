import Bitstream
import ArgumentParser
import Capture
import Frames
import Encoder

extension FrameSize: ExpressibleByArgument {
    public init?(argument: String) {
        self.init(parsing: argument)
    }
}

extension PixelFormat: ExpressibleByArgument {}

/// `--input-format`: raw frames in a pixel format, or concatenated JPEGs.
enum InputFormat: String, ExpressibleByArgument, CaseIterable {
    case yuyv, uyvy, nv12, i420, mjpeg
    /// The raw frames' layout; nil for mjpeg.
    var pixelFormat: PixelFormat? { PixelFormat(rawValue: rawValue) }
}
extension H264Profile: ExpressibleByArgument {}

/// Which encoder backend to use.
/// `inspect --codec`: a codec, or auto to recognise it from the stream.
enum CodecChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, h264, hevc
    var codec: VideoCodec? { VideoCodec(rawValue: rawValue) }
}

enum EncoderChoice: String, ExpressibleByArgument, CaseIterable {
    case auto, software, vaapi, camera
}

/// A bit rate such as `4000000`, `4000k`, `4M` or `2.5M`.
struct Bitrate: ExpressibleByArgument {
    let bitsPerSecond: Int

    init?(argument: String) {
        let text = argument.lowercased()
        var multiplier = 1.0
        var number = Substring(text)
        if text.hasSuffix("k") { multiplier = 1_000; number = number.dropLast() }
        if text.hasSuffix("m") { multiplier = 1_000_000; number = number.dropLast() }
        guard let value = Double(number), value > 0 else { return nil }
        let bits = value * multiplier
        guard bits >= 10_000, bits <= 1_000_000_000 else { return nil }
        bitsPerSecond = Int(bits)
    }
}
