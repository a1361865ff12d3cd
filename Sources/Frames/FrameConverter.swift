import CYUV
/// Converts one frame from a source layout straight into a pool buffer, in a
/// single pass: there is no intermediate frame.
///
/// 4:2:2 → 4:2:0 averages the chroma of each pair of rows (rounding half up),
/// which is what a box filter does and keeps PSNR against the source high.
public enum FrameConverter {
    /// Describes source memory: a base pointer, the layout, and per-plane strides
    /// (packed formats use only the first).
    public struct SourceImage {
        public var format: PixelFormat
        public var width: Int
        public var height: Int
        public var planes: [UnsafeRawPointer]
        public var strides: [Int]

        public init(format: PixelFormat, width: Int, height: Int, planes: [UnsafeRawPointer], strides: [Int]) {
            self.format = format
            self.width = width
            self.height = height
            self.planes = planes
            self.strides = strides
        }

        /// A tightly packed frame as raw-frame files and FFmpeg's rawvideo hold it.
        public static func packed(format: PixelFormat, width: Int, height: Int, base: UnsafeRawPointer) -> SourceImage {
            let cw = (width + 1) / 2
            let ch = (height + 1) / 2
            switch format {
            case .yuyv, .uyvy:
                return SourceImage(format: format, width: width, height: height, planes: [base], strides: [cw * 4])
            case .nv12:
                return SourceImage(format: format, width: width, height: height,
                                   planes: [base, base + width * height], strides: [width, cw * 2])
            case .i420:
                return SourceImage(format: format, width: width, height: height,
                                   planes: [base, base + width * height, base + width * height + cw * ch],
                                   strides: [width, cw, cw])
            }
        }
    }

    /// Fills `destination` (NV12 or I420) from `source` of the same size.
    public static func convert(_ source: SourceImage, into destination: PixelBuffer) {
        precondition(source.width == destination.width && source.height == destination.height,
                     "conversion does not scale")
        switch (source.format, destination.format) {
        case (.yuyv, _):
            packed422(source, into: destination, lumaFirst: true)
        case (.uyvy, _):
            packed422(source, into: destination, lumaFirst: false)
        case (.nv12, .nv12), (.i420, .i420):
            for p in 0..<destination.planes.count {
                copyPlane(from: source.planes[p], stride: source.strides[p], to: destination.planes[p])
            }
        case (.i420, .nv12):
            copyPlane(from: source.planes[0], stride: source.strides[0], to: destination.planes[0])
            interleave(u: source.planes[1], uStride: source.strides[1], v: source.planes[2], vStride: source.strides[2],
                       into: destination.planes[1])
        case (.nv12, .i420):
            copyPlane(from: source.planes[0], stride: source.strides[0], to: destination.planes[0])
            deinterleave(source.planes[1], stride: source.strides[1], u: destination.planes[1], v: destination.planes[2])
        case (_, .yuyv), (_, .uyvy):
            preconditionFailure("pool buffers are never packed 4:2:2")
        }
    }

    /// Fills rows `firstRow ..< firstRow + rows` of `destination` (NV12 or I420) from `base`, those rows
    /// of a tightly packed YUYV or UYVY frame. `firstRow` is even, so each chroma row still comes from its
    /// two source rows: a frame converted strip by strip is byte for byte the frame converted whole, and a
    /// raw-file source needs a strip of staging, not a frame. Allocates nothing (it runs ~34 times a frame).
    public static func convertStrip(packed format: PixelFormat, base: UnsafeRawPointer, rows: Int,
                                    into destination: PixelBuffer, firstRow: Int) {
        precondition(format == .yuyv || format == .uyvy, "strips are for packed 4:2:2 frames")
        precondition(firstRow >= 0 && firstRow % 2 == 0 && firstRow + rows <= destination.height,
                     "a strip inside the frame, from an even row")
        let lumaFirst = format == .yuyv
        packed422(base: base, stride: (destination.width + 1) / 2 * 4, width: destination.width, height: rows,
                  into: PlanarTarget(destination, firstRow: firstRow, rows: rows),
                  yOff: lumaFirst ? 0 : 1, uOff: lumaFirst ? 1 : 0, vOff: lumaFirst ? 3 : 2)
    }

    static func copyPlane(from source: UnsafeRawPointer, stride: Int, to plane: PixelBuffer.Plane) {
        for row in 0..<plane.height {
            (plane.base + row * plane.stride).update(from: (source + row * stride).assumingMemoryBound(to: UInt8.self),
                                                     count: plane.width)
        }
    }

    static func interleave(u: UnsafeRawPointer, uStride: Int, v: UnsafeRawPointer, vStride: Int, into plane: PixelBuffer.Plane) {
        let cw = plane.width / 2
        for row in 0..<plane.height {
            let us = (u + row * uStride).assumingMemoryBound(to: UInt8.self)
            let vs = (v + row * vStride).assumingMemoryBound(to: UInt8.self)
            let d = plane.base + row * plane.stride
            for x in 0..<cw {
                d[2 * x] = us[x]
                d[2 * x + 1] = vs[x]
            }
        }
    }

    static func deinterleave(_ uv: UnsafeRawPointer, stride: Int, u: PixelBuffer.Plane, v: PixelBuffer.Plane) {
        for row in 0..<u.height {
            let s = (uv + row * stride).assumingMemoryBound(to: UInt8.self)
            let du = u.base + row * u.stride
            let dv = v.base + row * v.stride
            for x in 0..<u.width {
                du[x] = s[2 * x]
                dv[x] = s[2 * x + 1]
            }
        }
    }

    /// YUYV/UYVY → NV12/I420, two source rows per output chroma row.
    static func packed422(_ source: SourceImage, into destination: PixelBuffer, lumaFirst: Bool) {
        packed422(base: source.planes[0], stride: source.strides[0], width: source.width, height: source.height,
                  into: destination, yOff: lumaFirst ? 0 : 1, uOff: lumaFirst ? 1 : 0, vOff: lumaFirst ? 3 : 2)
    }

    /// Any packed 4:2:2 order → NV12/I420. The offsets say where, in each 4-byte group
    /// of two pixels, the first luma sample and the Cb and Cr samples are; the second
    /// luma sample is always two bytes after the first.
    /// `vectorised: false` is the scalar reference the tests compare the vector path with.
    static func packed422(base rawBase: UnsafeRawPointer, stride: Int, width: Int, height: Int,
                          into destination: PixelBuffer, yOff: Int, uOff: Int, vOff: Int, vectorised: Bool = true) {
        packed422(base: rawBase, stride: stride, width: width, height: height, into: PlanarTarget(destination),
                  yOff: yOff, uOff: uOff, vOff: vOff, vectorised: vectorised)
    }

    static func packed422(base rawBase: UnsafeRawPointer, stride: Int, width: Int, height: Int,
                          into destination: PlanarTarget, yOff: Int, uOff: Int, vOff: Int, vectorised: Bool = true) {
        // YUYV (luma at even bytes, then Cb, Cr) and UYVY (luma at odd bytes) go to libyuv for the whole
        // pixel pairs of their row pairs; an odd width's last column, an odd height's last row (where
        // libyuv 0.0.1857's YUY2ToNV12 gets a row's tail wrong) and the other orders take the loop below.
        var firstPair = 0
        let rowsDone = height & ~1
        if vectorised && uOff + 2 == vOff && ((yOff, uOff) == (0, 1) || (yOff, uOff) == (1, 0)) {
            firstPair = packed422WithLibyuv(base: rawBase, stride: stride, width: width, height: rowsDone,
                                            into: destination, lumaAtOddBytes: yOff == 1) / 2
        }
        let pairs = (width + 1) / 2
        guard firstPair < pairs || rowsDone < height else { return }
        let base = rawBase.assumingMemoryBound(to: UInt8.self)
        let luma = destination.luma
        let nv12 = destination.format == .nv12
        var row = 0
        while row < height {
            let firstPair = row < rowsDone ? firstPair : 0
            let top = base + row * stride
            let bottom = row + 1 < height ? top + stride : top
            let yTop = luma.base + row * luma.stride
            let yBottom = row + 1 < height ? yTop + luma.stride : nil
            let chromaRow = row / 2
            // Luma: copy both rows; the last column of an odd width is taken from its pair.
            for x in firstPair..<pairs {
                let t = top + 4 * x
                yTop[2 * x] = t[yOff]
                if 2 * x + 1 < width { yTop[2 * x + 1] = t[yOff + 2] }
                if let yBottom {
                    let b = bottom + 4 * x
                    yBottom[2 * x] = b[yOff]
                    if 2 * x + 1 < width { yBottom[2 * x + 1] = b[yOff + 2] }
                }
            }
            if nv12 {
                let d = destination.chroma.base + chromaRow * destination.chroma.stride
                for x in firstPair..<pairs {
                    let t = top + 4 * x
                    let b = bottom + 4 * x
                    d[2 * x] = UInt8((UInt16(t[uOff]) + UInt16(b[uOff]) + 1) >> 1)
                    d[2 * x + 1] = UInt8((UInt16(t[vOff]) + UInt16(b[vOff]) + 1) >> 1)
                }
            } else {
                let du = destination.chroma.base + chromaRow * destination.chroma.stride
                let dv = destination.chromaCr!.base + chromaRow * destination.chromaCr!.stride
                for x in firstPair..<pairs {
                    let t = top + 4 * x
                    let b = bottom + 4 * x
                    du[x] = UInt8((UInt16(t[uOff]) + UInt16(b[uOff]) + 1) >> 1)
                    dv[x] = UInt8((UInt16(t[vOff]) + UInt16(b[vOff]) + 1) >> 1)
                }
            }
            row += 2
        }
    }
}
