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

// MARK: - Packed 4:2:2 through libyuv

extension FrameConverter {
    /// YUYV or UYVY → NV12 or I420 for the whole pixel pairs of every row (all of an even width), by
    /// libyuv's SIMD rows: the same arithmetic as the scalar loop (luma copied, each pair of chroma rows
    /// averaged rounding half up; an odd height's last row averaged with itself), which
    /// `PackedVectorPathTests` checks byte for byte. Returns how many pixels of each row it did.
    static func packed422WithLibyuv(base: UnsafeRawPointer, stride: Int, width: Int, height: Int,
                                    into destination: PlanarTarget, lumaAtOddBytes: Bool) -> Int {
        let evenWidth = width & ~1
        guard evenWidth > 0, height > 0, let sourceStride = Int32(exactly: stride), let w = Int32(exactly: evenWidth),
              let h = Int32(exactly: height) else { return 0 }
        let source = base.assumingMemoryBound(to: UInt8.self)
        let y = destination.luma
        let result: Int32
        if destination.format == .nv12 {
            let uv = destination.chroma
            result = lumaAtOddBytes
                ? uyvyToNV12(source, sourceStride: stride, luma: y, chroma: uv, width: w, height: h)
                : YUY2ToNV12(source, sourceStride, y.base, Int32(y.stride), uv.base, Int32(uv.stride), w, h)
        } else {
            let u = destination.chroma, v = destination.chromaCr!
            result = lumaAtOddBytes
                ? UYVYToI420(source, sourceStride, y.base, Int32(y.stride), u.base, Int32(u.stride), v.base, Int32(v.stride), w, h)
                : YUY2ToI420(source, sourceStride, y.base, Int32(y.stride), u.base, Int32(u.stride), v.base, Int32(v.stride), w, h)
        }
        return result == 0 ? evenWidth : 0
    }

    /// UYVY → NV12 from libyuv's allocation-free planar calls (its UYVYToNV12 allocates a row buffer on
    /// every call, 34 a frame when a file is read in strips). A UYVY row's even bytes are Cb0 Cr0 Cb1 Cr1…,
    /// NV12's chroma row as it stands, so YUY2ToY (which keeps even bytes) takes them out: the top rows'
    /// into the chroma plane, the bottom rows' into the odd luma rows for a moment; InterpolatePlane at
    /// one half averages the two in place (rounding half up, as the scalar loop does); then the luma.
    /// `height` is even.
    static func uyvyToNV12(_ source: UnsafePointer<UInt8>, sourceStride stride: Int, luma y: PixelBuffer.Plane,
                           chroma uv: PixelBuffer.Plane, width w: Int32, height h: Int32) -> Int32 {
        guard let sourceStride = Int32(exactly: stride), let pairStride = Int32(exactly: 2 * stride),
              let lumaStride = Int32(exactly: y.stride), let lumaPairStride = Int32(exactly: 2 * y.stride),
              let chromaStride = Int32(exactly: uv.stride) else { return -1 }
        let pairs = h / 2
        let oddLumaRows = y.base + y.stride
        var result = YUY2ToY(source, pairStride, uv.base, chromaStride, w, pairs)
        if result == 0 { result = YUY2ToY(source + stride, pairStride, oddLumaRows, lumaPairStride, w, pairs) }
        if result == 0 {
            result = InterpolatePlane(uv.base, chromaStride, oddLumaRows, lumaPairStride, uv.base, chromaStride, w, pairs, 128)
        }
        if result == 0 { result = UYVYToY(source, sourceStride, y.base, lumaStride, w, h) }
        return result
    }

    /// One row of 4:2:0 chroma from two source rows whose Cb and Cr samples are `step` bytes apart (at
    /// `cb` and `cr`): their average, rounding half up, into NV12's interleaved plane or I420's two.
    /// Inlined, so that with constant offsets the loops vectorise.
    @inline(__always)
    static func averageChromaRow(_ top: UnsafePointer<UInt8>, _ bottom: UnsafePointer<UInt8>, step: Int, cb: Int, cr: Int,
                                 count: Int, into destination: PixelBuffer, row: Int) {
        @inline(__always) func average(_ a: UInt8, _ b: UInt8) -> UInt8 { UInt8((UInt16(a) + UInt16(b) + 1) >> 1) }
        if destination.format == .nv12 {
            let d = destination.planes[1].base + row * destination.planes[1].stride
            for x in 0..<count {
                d[2 * x] = average(top[step * x + cb], bottom[step * x + cb])
                d[2 * x + 1] = average(top[step * x + cr], bottom[step * x + cr])
            }
        } else {
            let du = destination.planes[1].base + row * destination.planes[1].stride
            let dv = destination.planes[2].base + row * destination.planes[2].stride
            for x in 0..<count {
                du[x] = average(top[step * x + cb], bottom[step * x + cb])
                dv[x] = average(top[step * x + cr], bottom[step * x + cr])
            }
        }
    }
}

// MARK: - Camera layouts

extension FrameConverter {
    /// Camera memory: a layout, and one base pointer and stride per plane, taken from
    /// the device's own `bytesperline` (rows are often padded).
    public struct CameraImage {
        public var layout: CameraPixelLayout
        public var width: Int
        public var height: Int
        public var planes: [UnsafeRawPointer]
        public var strides: [Int]

        public init(layout: CameraPixelLayout, width: Int, height: Int, planes: [UnsafeRawPointer], strides: [Int]) {
            precondition(planes.count == layout.planeCount && strides.count == layout.planeCount,
                         "\(layout) has \(layout.planeCount) planes")
            self.layout = layout
            self.width = width
            self.height = height
            self.planes = planes
            self.strides = strides
        }
    }

    /// Fills `destination` (NV12 or I420) from camera memory of the same size, in one pass.
    ///
    /// 4:2:2 sources average each pair of chroma rows (rounding half up), as the packed
    /// conversions above do. RGB becomes BT.601 limited-range YCbCr, the matrix FFmpeg
    /// and most players assume for untagged SD and webcam video; the chroma of each 2x2
    /// block is that of the block's average colour.
    public static func convert(_ source: CameraImage, into destination: PixelBuffer) {
        precondition(source.width == destination.width && source.height == destination.height,
                     "conversion does not scale")
        let p = source.planes, s = source.strides
        func image(_ format: PixelFormat, _ planes: [UnsafeRawPointer], _ strides: [Int]) -> SourceImage {
            SourceImage(format: format, width: source.width, height: source.height, planes: planes, strides: strides)
        }
        switch source.layout {
        case .nv12: convert(image(.nv12, p, s), into: destination)
        case .i420: convert(image(.i420, p, s), into: destination)
        case .yv12: convert(image(.i420, [p[0], p[2], p[1]], [s[0], s[2], s[1]]), into: destination)
        case .yuyv: convert(image(.yuyv, p, s), into: destination)
        case .uyvy: convert(image(.uyvy, p, s), into: destination)
        case .yvyu:
            packed422(base: p[0], stride: s[0], width: source.width, height: source.height, into: destination,
                      yOff: 0, uOff: 3, vOff: 1)
        case .vyuy:
            packed422(base: p[0], stride: s[0], width: source.width, height: source.height, into: destination,
                      yOff: 1, uOff: 2, vOff: 0)
        case .nv21:
            copyPlane(from: p[0], stride: s[0], to: destination.planes[0])
            chromaFromInterleaved(p[1], stride: s[1], swapped: true, rowsPerChromaRow: 1, into: destination)
        case .nv16, .nv61:
            copyPlane(from: p[0], stride: s[0], to: destination.planes[0])
            chromaFromInterleaved(p[1], stride: s[1], swapped: source.layout == .nv61, rowsPerChromaRow: 2,
                                  into: destination)
        case .yuv422p:
            copyPlane(from: p[0], stride: s[0], to: destination.planes[0])
            chromaFromPlanar422(u: p[1], uStride: s[1], v: p[2], vStride: s[2], into: destination)
        case .grey:
            copyPlane(from: p[0], stride: s[0], to: destination.planes[0])
            for plane in destination.planes.dropFirst() {
                for row in 0..<plane.height {
                    (plane.base + row * plane.stride).update(repeating: 128, count: plane.width)
                }
            }
        case .rgb24: rgb(p[0], stride: s[0], bytesPerPixel: 3, r: 0, g: 1, b: 2, into: destination)
        case .bgr24: rgb(p[0], stride: s[0], bytesPerPixel: 3, r: 2, g: 1, b: 0, into: destination)
        case .bgrx: rgb(p[0], stride: s[0], bytesPerPixel: 4, r: 2, g: 1, b: 0, into: destination)
        case .xrgb: rgb(p[0], stride: s[0], bytesPerPixel: 4, r: 1, g: 2, b: 3, into: destination)
        case .rgbx: rgb(p[0], stride: s[0], bytesPerPixel: 4, r: 0, g: 1, b: 2, into: destination)
        case .xbgr: rgb(p[0], stride: s[0], bytesPerPixel: 4, r: 3, g: 2, b: 1, into: destination)
        }
    }

    /// Interleaved chroma (CbCr, or CrCb when `swapped`) at half width → the destination's
    /// chroma. With `rowsPerChromaRow` 2 (4:2:2 sources) each pair of rows is averaged.
    static func chromaFromInterleaved(_ base: UnsafeRawPointer, stride: Int, swapped: Bool, rowsPerChromaRow: Int,
                                      into destination: PixelBuffer) {
        let src = base.assumingMemoryBound(to: UInt8.self)
        let sourceRows = rowsPerChromaRow == 2 ? destination.height : (destination.height + 1) / 2
        let chromaWidth = (destination.width + 1) / 2
        let chromaHeight = (destination.height + 1) / 2
        let cbOff = swapped ? 1 : 0, crOff = swapped ? 0 : 1
        for row in 0..<chromaHeight {
            let top = src + (row * rowsPerChromaRow) * stride
            let bottom = rowsPerChromaRow == 2 && row * 2 + 1 < sourceRows ? top + stride : top
            averageChromaRow(top, bottom, step: 2, cb: cbOff, cr: crOff, count: chromaWidth, into: destination, row: row)
        }
    }

    /// Planar 4:2:2 chroma (half width, full height) → 4:2:0 chroma, averaging row pairs.
    static func chromaFromPlanar422(u: UnsafeRawPointer, uStride: Int, v: UnsafeRawPointer, vStride: Int,
                                    into destination: PixelBuffer) {
        let us = u.assumingMemoryBound(to: UInt8.self)
        let vs = v.assumingMemoryBound(to: UInt8.self)
        let nv12 = destination.format == .nv12
        let chromaWidth = (destination.width + 1) / 2
        let chromaHeight = (destination.height + 1) / 2
        for row in 0..<chromaHeight {
            let last = row * 2 + 1 >= destination.height
            let uTop = us + row * 2 * uStride, uBottom = last ? uTop : uTop + uStride
            let vTop = vs + row * 2 * vStride, vBottom = last ? vTop : vTop + vStride
            if nv12 {
                let d = destination.planes[1].base + row * destination.planes[1].stride
                for x in 0..<chromaWidth {
                    d[2 * x] = UInt8((UInt16(uTop[x]) + UInt16(uBottom[x]) + 1) >> 1)
                    d[2 * x + 1] = UInt8((UInt16(vTop[x]) + UInt16(vBottom[x]) + 1) >> 1)
                }
            } else {
                let du = destination.planes[1].base + row * destination.planes[1].stride
                let dv = destination.planes[2].base + row * destination.planes[2].stride
                for x in 0..<chromaWidth {
                    du[x] = UInt8((UInt16(uTop[x]) + UInt16(uBottom[x]) + 1) >> 1)
                    dv[x] = UInt8((UInt16(vTop[x]) + UInt16(vBottom[x]) + 1) >> 1)
                }
            }
        }
    }

    /// Packed RGB → BT.601 limited range, with 8-bit fixed-point coefficients:
    /// Y = 16 + (66R + 129G + 25B + 128) >> 8, Cb = 128 + (-38R - 74G + 112B + 128) >> 8,
    /// Cr = 128 + (112R - 94G - 18B + 128) >> 8.
    /// Whole 2x2 blocks take the fast path (inlined per byte order, so offsets are constants
    /// and nothing divides): 2.9 ms instead of 6.6 ms per 1280x720 frame on this machine. An odd
    /// last column or row averages what it has.
    @inline(__always)
    static func rgb(_ base: UnsafeRawPointer, stride: Int, bytesPerPixel bpp: Int, r: Int, g: Int, b: Int,
                    into destination: PixelBuffer) {
        let src = base.assumingMemoryBound(to: UInt8.self)
        let width = destination.width, height = destination.height
        let luma = destination.planes[0]
        let nv12 = destination.format == .nv12
        // Each result is within 16...240 for inputs 0...255, so truncation never changes it.
        @inline(__always) func y(_ R: Int, _ G: Int, _ B: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: 16 &+ ((66 &* R &+ 129 &* G &+ 25 &* B &+ 128) >> 8))
        }
        @inline(__always) func cb(_ R: Int, _ G: Int, _ B: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: 128 &+ ((-38 &* R &- 74 &* G &+ 112 &* B &+ 128) >> 8))
        }
        @inline(__always) func cr(_ R: Int, _ G: Int, _ B: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: 128 &+ ((112 &* R &- 94 &* G &- 18 &* B &+ 128) >> 8))
        }
        let wholeColumns = width & ~1
        var row = 0
        while row < height {
            let rows = row + 1 < height ? 2 : 1
            let chromaRow = row / 2
            let dc = destination.planes[1].base + chromaRow * destination.planes[1].stride
            let dv = nv12 ? dc : destination.planes[2].base + chromaRow * destination.planes[2].stride
            let top = src + row * stride
            let outTop = luma.base + row * luma.stride
            var x = 0
            if rows == 2 {
                let bottom = top + stride
                let outBottom = outTop + luma.stride
                while x < wholeColumns {
                    let a = top + x &* bpp, c = bottom + x &* bpp
                    let r0 = Int(a[r]), g0 = Int(a[g]), b0 = Int(a[b])
                    let r1 = Int(a[bpp + r]), g1 = Int(a[bpp + g]), b1 = Int(a[bpp + b])
                    let r2 = Int(c[r]), g2 = Int(c[g]), b2 = Int(c[b])
                    let r3 = Int(c[bpp + r]), g3 = Int(c[bpp + g]), b3 = Int(c[bpp + b])
                    outTop[x] = y(r0, g0, b0)
                    outTop[x + 1] = y(r1, g1, b1)
                    outBottom[x] = y(r2, g2, b2)
                    outBottom[x + 1] = y(r3, g3, b3)
                    let R = (r0 &+ r1 &+ r2 &+ r3 &+ 2) >> 2
                    let G = (g0 &+ g1 &+ g2 &+ g3 &+ 2) >> 2
                    let B = (b0 &+ b1 &+ b2 &+ b3 &+ 2) >> 2
                    if nv12 {
                        dc[x] = cb(R, G, B)
                        dc[x + 1] = cr(R, G, B)
                    } else {
                        dc[x >> 1] = cb(R, G, B)
                        dv[x >> 1] = cr(R, G, B)
                    }
                    x += 2
                }
            }
            // The odd last column, or every column of an odd last row.
            while x < width {
                let cols = x + 1 < width ? 2 : 1
                var sumR = 0, sumG = 0, sumB = 0
                for dy in 0..<rows {
                    let line = top + dy * stride
                    let out = outTop + dy * luma.stride
                    for dx in 0..<cols {
                        let px = line + (x + dx) * bpp
                        let R = Int(px[r]), G = Int(px[g]), B = Int(px[b])
                        out[x + dx] = y(R, G, B)
                        sumR += R; sumG += G; sumB += B
                    }
                }
                let n = rows * cols
                let R = (sumR + n / 2) / n, G = (sumG + n / 2) / n, B = (sumB + n / 2) / n
                if nv12 {
                    dc[x] = cb(R, G, B)
                    dc[x + 1] = cr(R, G, B)
                } else {
                    dc[x / 2] = cb(R, G, B)
                    dv[x / 2] = cr(R, G, B)
                }
                x += 2
            }
            row += 2
        }
    }
}
