import Frames
/// A V4L2 pixel format: the four-character code in a `UInt32`, as the kernel stores it
/// (first character in the lowest byte). Prints as its code, e.g. `YUYV`.
public struct V4L2PixelFormat: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `V4L2PixelFormat(fourcc: "NV12")`; nil unless exactly four ASCII characters.
    public init?(fourcc: String) {
        let bytes = Array(fourcc.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        rawValue = bytes.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
    }

    /// The four characters; a big-endian variant (bit 31 set) is marked `-BE`.
    public var fourcc: String {
        let chars = (0..<4).map { i -> Character in
            var byte = UInt8(truncatingIfNeeded: rawValue >> (8 * UInt32(i)))
            if i == 3 { byte &= 0x7f }
            return byte >= 0x20 && byte < 0x7f ? Character(Unicode.Scalar(byte)) : "."
        }
        return String(chars) + (rawValue & 0x8000_0000 != 0 ? "-BE" : "")
    }

    public var description: String { fourcc.trimmingTrailingSpaces }

    // The formats camrec knows by name (linux/videodev2.h).
    public static let nv12 = V4L2PixelFormat(fourcc: "NV12")!
    public static let nv21 = V4L2PixelFormat(fourcc: "NV21")!
    public static let nv12m = V4L2PixelFormat(fourcc: "NM12")!
    public static let nv21m = V4L2PixelFormat(fourcc: "NM21")!
    public static let yuv420 = V4L2PixelFormat(fourcc: "YU12")!
    public static let yvu420 = V4L2PixelFormat(fourcc: "YV12")!
    public static let yuv420m = V4L2PixelFormat(fourcc: "YM12")!
    public static let yvu420m = V4L2PixelFormat(fourcc: "YM21")!
    public static let nv16 = V4L2PixelFormat(fourcc: "NV16")!
    public static let nv61 = V4L2PixelFormat(fourcc: "NV61")!
    public static let nv16m = V4L2PixelFormat(fourcc: "NM16")!
    public static let nv61m = V4L2PixelFormat(fourcc: "NM61")!
    public static let yuv422p = V4L2PixelFormat(fourcc: "422P")!
    public static let yuyv = V4L2PixelFormat(fourcc: "YUYV")!
    public static let uyvy = V4L2PixelFormat(fourcc: "UYVY")!
    public static let yvyu = V4L2PixelFormat(fourcc: "YVYU")!
    public static let vyuy = V4L2PixelFormat(fourcc: "VYUY")!
    public static let grey = V4L2PixelFormat(fourcc: "GREY")!
    public static let rgb24 = V4L2PixelFormat(fourcc: "RGB3")!
    public static let bgr24 = V4L2PixelFormat(fourcc: "BGR3")!
    /// Deprecated BGR32/RGB32 ('BGR4'/'RGB4'): the same bytes as XBGR32/XRGB32.
    public static let bgr32 = V4L2PixelFormat(fourcc: "BGR4")!
    public static let rgb32 = V4L2PixelFormat(fourcc: "RGB4")!
    public static let xbgr32 = V4L2PixelFormat(fourcc: "XR24")!
    public static let abgr32 = V4L2PixelFormat(fourcc: "AR24")!
    public static let xrgb32 = V4L2PixelFormat(fourcc: "BX24")!
    public static let argb32 = V4L2PixelFormat(fourcc: "BA24")!
    public static let rgbx32 = V4L2PixelFormat(fourcc: "XB24")!
    public static let rgba32 = V4L2PixelFormat(fourcc: "AB24")!
    public static let bgrx32 = V4L2PixelFormat(fourcc: "RX24")!
    public static let bgra32 = V4L2PixelFormat(fourcc: "RA24")!
    public static let mjpeg = V4L2PixelFormat(fourcc: "MJPG")!
    public static let jpeg = V4L2PixelFormat(fourcc: "JPEG")!
    public static let h264 = V4L2PixelFormat(fourcc: "H264")!
    public static let hevc = V4L2PixelFormat(fourcc: "HEVC")!

    /// H.264 or H.265 with start codes: a camera that encodes itself, recorded as it is (`--encoder camera`).
    public var isCompressedVideo: Bool { self == .h264 || self == .hevc }

    /// How camrec reads this format's memory, or nil when it cannot convert it itself
    /// (compressed formats such as MJPEG, Bayer, 10-bit and exotic layouts).
    public var cameraLayout: CameraPixelLayout? {
        Self.layouts[self]
    }

    /// Multi-planar variants (`NM12`, `YM12`, …) keep each plane in its own buffer.
    public var isMultiPlanarVariant: Bool {
        [Self.nv12m, .nv21m, .yuv420m, .yvu420m, .nv16m, .nv61m].contains(self)
    }

    private static let layouts: [V4L2PixelFormat: CameraPixelLayout] = [
        .nv12: .nv12, .nv12m: .nv12, .nv21: .nv21, .nv21m: .nv21,
        .yuv420: .i420, .yuv420m: .i420, .yvu420: .yv12, .yvu420m: .yv12,
        .nv16: .nv16, .nv16m: .nv16, .nv61: .nv61, .nv61m: .nv61, .yuv422p: .yuv422p,
        .yuyv: .yuyv, .uyvy: .uyvy, .yvyu: .yvyu, .vyuy: .vyuy, .grey: .grey,
        .rgb24: .rgb24, .bgr24: .bgr24,
        .bgr32: .bgrx, .xbgr32: .bgrx, .abgr32: .bgrx,
        .rgb32: .xrgb, .xrgb32: .xrgb, .argb32: .xrgb,
        .rgbx32: .rgbx, .rgba32: .rgbx, .bgrx32: .xbgr, .bgra32: .xbgr,
    ]

    /// Parses what a user types for `--pixel-format`: a fourcc (`YUYV`, `NV12`, `RGB3`),
    /// case-insensitively, or a common name (`i420`, `yuv420p`, `rgb24`, `mjpeg`).
    public init?(name: String) {
        let lower = name.lowercased()
        if let alias = Self.aliases[lower] {
            self = alias
            return
        }
        if let exact = V4L2PixelFormat(fourcc: name), Self.layouts[exact] != nil || exact == .mjpeg {
            self = exact
            return
        }
        // "yuyv" → "YUYV": fourccs of YUV formats are upper case.
        guard let upper = V4L2PixelFormat(fourcc: name.uppercased()) else { return nil }
        self = upper
    }

    private static let aliases: [String: V4L2PixelFormat] = [
        "i420": .yuv420, "yuv420": .yuv420, "yuv420p": .yuv420, "yu12": .yuv420, "yv12": .yvu420,
        "yuv422p": .yuv422p, "422p": .yuv422p, "gray": .grey, "grey": .grey,
        "rgb24": .rgb24, "bgr24": .bgr24, "rgb3": .rgb24, "bgr3": .bgr24,
        "bgr32": .bgr32, "rgb32": .rgb32, "xbgr32": .xbgr32, "xrgb32": .xrgb32, "bgra": .bgr32, "bgr0": .bgr32,
        "mjpeg": .mjpeg, "mjpg": .mjpeg, "h264": .h264, "hevc": .hevc, "h265": .hevc,
    ]

    /// A human name for listings ("YUYV 4:2:2"); drivers give their own in ENUM_FMT too.
    public var commonName: String? {
        switch self {
        case .nv12, .nv12m: return "Y/UV 4:2:0"
        case .nv21, .nv21m: return "Y/VU 4:2:0"
        case .yuv420, .yuv420m: return "planar YUV 4:2:0 (I420)"
        case .yvu420, .yvu420m: return "planar YVU 4:2:0"
        case .nv16, .nv16m: return "Y/UV 4:2:2"
        case .nv61, .nv61m: return "Y/VU 4:2:2"
        case .yuv422p: return "planar YUV 4:2:2"
        case .yuyv: return "YUYV 4:2:2"
        case .uyvy: return "UYVY 4:2:2"
        case .yvyu: return "YVYU 4:2:2"
        case .vyuy: return "VYUY 4:2:2"
        case .grey: return "8-bit greyscale"
        case .rgb24: return "24-bit RGB"
        case .bgr24: return "24-bit BGR"
        case .mjpeg: return "Motion-JPEG"
        case .h264: return "H.264"
        case .hevc: return "H.265 (HEVC)"
        default: return nil
        }
    }
}

extension String {
    fileprivate var trimmingTrailingSpaces: String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
