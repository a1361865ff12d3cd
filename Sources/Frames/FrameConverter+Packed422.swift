import CYUV

// Packed 4:2:2 through libyuv.
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
