/// The NV12 or I420 planes a conversion writes: a whole pool buffer's, or a strip of its rows. A
/// struct of planes, not an array, so converting strip by strip allocates nothing.
struct PlanarTarget {
    let format: PixelFormat
    let luma: PixelBuffer.Plane
    /// NV12's interleaved Cb/Cr plane, or I420's Cb plane.
    let chroma: PixelBuffer.Plane
    /// I420's Cr plane; nil for NV12.
    let chromaCr: PixelBuffer.Plane?

    init(_ buffer: PixelBuffer) {
        precondition(buffer.format == .nv12 || buffer.format == .i420, "pool buffers are NV12 or I420")
        let planes = buffer.planes
        format = buffer.format
        luma = planes[0]
        chroma = planes[1]
        chromaCr = planes.count > 2 ? planes[2] : nil
    }

    /// Rows `firstRow ..< firstRow + rows` of `buffer`, and the chroma rows they make; `firstRow` even.
    init(_ buffer: PixelBuffer, firstRow: Int, rows: Int) {
        let whole = PlanarTarget(buffer)
        func rowsOf(_ plane: PixelBuffer.Plane, from row: Int, count: Int) -> PixelBuffer.Plane {
            PixelBuffer.Plane(base: plane.base + row * plane.stride, stride: plane.stride, width: plane.width, height: count)
        }
        format = whole.format
        luma = rowsOf(whole.luma, from: firstRow, count: rows)
        chroma = rowsOf(whole.chroma, from: firstRow / 2, count: (rows + 1) / 2)
        chromaCr = whole.chromaCr.map { rowsOf($0, from: firstRow / 2, count: (rows + 1) / 2) }
    }
}
