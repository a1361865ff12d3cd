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

/// The layouts a camera may deliver that camrec converts itself, in one pass, into a
/// pool buffer. Kept apart from `PixelFormat` (the formats of `--input` files and of
/// pool buffers) so that switches over `PixelFormat` stay exhaustive and
/// `--input-format` keeps its short list. RGB cases are named by byte order in
/// memory; `x` is a padding or alpha byte that is ignored.
public enum CameraPixelLayout: String, Sendable, CaseIterable, CustomStringConvertible {
    /// 4:2:0: Y plane, then interleaved CbCr (nv12) or CrCb (nv21).
    case nv12, nv21
    /// 4:2:0: Y, U, V planes (i420, also YU12) or Y, V, U (yv12).
    case i420, yv12
    /// 4:2:2: Y plane, then interleaved CbCr (nv16) or CrCb (nv61) at full height.
    case nv16, nv61
    /// 4:2:2: Y, U, V planes, chroma at half width and full height.
    case yuv422p
    /// Packed 4:2:2, named by byte order: Y0 U Y1 V, U Y0 V Y1, Y0 V Y1 U, V Y0 U Y1.
    case yuyv, uyvy, yvyu, vyuy
    /// Luma only; the chroma written is neutral grey.
    case grey
    /// Three bytes per pixel.
    case rgb24, bgr24
    /// Four bytes per pixel.
    case bgrx, xrgb, rgbx, xbgr

    public var description: String { rawValue }

    /// How many separate planes of memory the layout has.
    public var planeCount: Int {
        switch self {
        case .nv12, .nv21, .nv16, .nv61: return 2
        case .i420, .yv12, .yuv422p: return 3
        default: return 1
        }
    }

    /// The `PixelFormat` with the same memory layout, when there is one.
    public var pixelFormat: PixelFormat? {
        switch self {
        case .nv12: return .nv12
        case .i420: return .i420
        case .yuyv: return .yuyv
        case .uyvy: return .uyvy
        default: return nil
        }
    }
}
