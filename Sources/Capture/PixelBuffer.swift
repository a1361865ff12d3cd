import Glibc

/// One frame of pixel memory owned by a `PixelBufferPool`.
///
/// Memory is allocated once, with each row padded to a 64-byte stride so that
/// encoders can read it with aligned vector loads. Sources fill it, encoders read
/// it, and `PixelBufferPool.recycle(_:)` hands it back; it is never freed while
/// the pool lives.
public final class PixelBuffer: @unchecked Sendable {
    public struct Plane: @unchecked Sendable {
        public let base: UnsafeMutablePointer<UInt8>
        public let stride: Int
        public let width: Int
        public let height: Int
    }

    public let format: PixelFormat
    public let width: Int
    public let height: Int
    public let planes: [Plane]
    /// Index within the owning pool; stable for the buffer's life.
    public let index: Int
    let storage: UnsafeMutableRawPointer
    weak var owner: PixelBufferPool?
    public let byteCount: Int

    /// Sequence number given by the source; a gap means frames were dropped before this one.
    public var sequence: UInt64 = 0
    /// Capture time on CLOCK_MONOTONIC, in nanoseconds.
    public var captureTimeNanoseconds: UInt64 = 0
    /// Presentation time since the start of the recording, in nanoseconds.
    public var presentationTimeNanoseconds: UInt64 = 0

    static let alignment = 64

    /// The stride of a row of `width` bytes: padded to the alignment.
    static func paddedStride(_ width: Int) -> Int { (width + alignment - 1) / alignment * alignment }

    init(format: PixelFormat, width: Int, height: Int, index: Int) {
        precondition(format.isEncoderNative, "pool buffers hold encoder formats only")
        self.format = format
        self.width = width
        self.height = height
        self.index = index
        let align = PixelBuffer.alignment
        func padded(_ n: Int) -> Int { (n + align - 1) / align * align }
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        // Planes are laid out back to back; every stride and plane start is aligned.
        var layout: [(stride: Int, width: Int, height: Int)] = []
        switch format {
        case .nv12:
            layout = [(padded(width), width, height), (padded(chromaWidth * 2), chromaWidth * 2, chromaHeight)]
        case .i420:
            layout = [(padded(width), width, height), (padded(chromaWidth), chromaWidth, chromaHeight),
                      (padded(chromaWidth), chromaWidth, chromaHeight)]
        case .yuyv, .uyvy:
            fatalError("unreachable")
        }
        // Encoders may read a little past the last row with SIMD; keep a spare row of slack.
        let total = layout.reduce(0) { $0 + $1.stride * $1.height } + align * 4 + layout[0].stride
        var raw: UnsafeMutableRawPointer?
        guard posix_memalign(&raw, align, total) == 0, let raw else {
            fatalError("out of memory allocating a \(width)x\(height) pixel buffer")
        }
        memset(raw, 0, total)
        storage = raw
        byteCount = total
        var offset = 0
        var planes: [Plane] = []
        for p in layout {
            planes.append(Plane(base: (raw + offset).assumingMemoryBound(to: UInt8.self),
                                stride: p.stride, width: p.width, height: p.height))
            offset += p.stride * p.height
        }
        self.planes = planes
    }

    deinit { free(storage) }

    /// Hands the buffer back to the pool it came from.
    public func recycle() {
        owner?.recycle(self)
    }
}
