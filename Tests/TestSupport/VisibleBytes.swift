import Frames

/// Every plane's visible bytes, row by row (padding left out): what two conversions are compared by.
public func visibleBytes(_ buffer: PixelBuffer) -> [[UInt8]] {
    buffer.planes.map { plane in
        (0..<plane.height).flatMap { r in Array(UnsafeBufferPointer(start: plane.base + r * plane.stride, count: plane.width)) }
    }
}
