/// Pixel layouts camrec reads from sources and hands to encoders.
public enum PixelFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Packed 4:2:2, Y0 U Y1 V.
    case yuyv
    /// Packed 4:2:2, U Y0 V Y1.
    case uyvy
    /// Planar Y, then interleaved CbCr at half resolution (what x264 and VAAPI use internally).
    case nv12
    /// Planar Y, U, V (4:2:0), also known as YU12 or yuv420p.
    case i420

    public var description: String { rawValue }

    /// Bytes of one tightly packed frame, as a raw-frame file holds it.
    /// Odd dimensions round chroma up, the way FFmpeg's rawvideo does.
    public func packedFrameSize(width: Int, height: Int) -> Int {
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        switch self {
        case .yuyv, .uyvy:
            return chromaWidth * 2 * 2 * height
        case .nv12:
            return width * height + chromaWidth * 2 * chromaHeight
        case .i420:
            return width * height + 2 * chromaWidth * chromaHeight
        }
    }

    /// Whether the format is planar 4:2:0, which H.264 encoders take without conversion.
    public var isEncoderNative: Bool { self == .nv12 || self == .i420 }
}
