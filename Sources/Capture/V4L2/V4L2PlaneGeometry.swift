import Frames
/// Where the planes of one frame lie when a format keeps them all in one buffer (the
/// single-planar API, and NV12/YU12 rather than NM12/YM12): V4L2 defines the chroma
/// planes' strides from the first plane's `bytesperline`, and each plane starts right
/// after the previous one.
struct V4L2PlaneGeometry: Equatable {
    var offsets: [Int]
    var strides: [Int]
    /// Bytes the frame needs, up to the end of its last plane.
    var byteCount: Int

    /// The smallest `bytesperline` a row of `width` pixels fits in.
    static func minimumBytesPerLine(_ layout: CameraPixelLayout, width: Int) -> Int {
        switch layout {
        case .yuyv, .uyvy, .yvyu, .vyuy: return (width + 1) / 2 * 4
        case .rgb24, .bgr24: return width * 3
        case .bgrx, .xrgb, .rgbx, .xbgr: return width * 4
        case .nv12, .nv21, .i420, .yv12, .nv16, .nv61, .yuv422p, .grey: return width
        }
    }

    init(offsets: [Int], strides: [Int], byteCount: Int) {
        self.offsets = offsets
        self.strides = strides
        self.byteCount = byteCount
    }

    init(_ layout: CameraPixelLayout, width: Int, height: Int, bytesPerLine bpl: Int) {
        let chromaHeight = (height + 1) / 2
        let luma = bpl * height
        switch layout {
        case .nv12, .nv21:
            self.init(offsets: [0, luma], strides: [bpl, bpl], byteCount: luma + bpl * chromaHeight)
        case .nv16, .nv61:
            self.init(offsets: [0, luma], strides: [bpl, bpl], byteCount: luma * 2)
        case .i420, .yv12:
            let c = bpl / 2
            self.init(offsets: [0, luma, luma + c * chromaHeight], strides: [bpl, c, c],
                      byteCount: luma + 2 * c * chromaHeight)
        case .yuv422p:
            let c = bpl / 2
            self.init(offsets: [0, luma, luma + c * height], strides: [bpl, c, c], byteCount: luma + 2 * c * height)
        case .yuyv, .uyvy, .yvyu, .vyuy, .grey, .rgb24, .bgr24, .bgrx, .xrgb, .rgbx, .xbgr:
            self.init(offsets: [0], strides: [bpl], byteCount: luma)
        }
    }
}
