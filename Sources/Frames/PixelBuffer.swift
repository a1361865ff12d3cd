import Glibc

/// One frame of pixel memory owned by a `PixelBufferPool`.
///
/// In an ordinary pool the memory is the buffer's own, allocated once, with each row padded
/// to a 64-byte stride so that encoders can read it with aligned vector loads; it is never
/// freed or moved while the pool lives. In a pool with a `PixelBufferBacking` (VA surfaces)
/// `planes` point at memory the backing lends at each take, with the backing's strides:
/// read `planes` after taking the buffer and never keep them past `recycle()`.
/// Sources fill it, encoders read it, and `PixelBufferPool.recycle(_:)` hands it back.
/// Sendable by its invariant: one owner at a time (the pool, a source, an encoder), handed on through the pool's lock or a queue (PixelBufferPoolTests).
public final class PixelBuffer: @unchecked Sendable {
    /// Sendable by its invariant: a pointer into the buffer's memory, valid and used only while the buffer is held.
    public struct Plane: @unchecked Sendable {
        public let base: UnsafeMutablePointer<UInt8>
        public let stride: Int
        public let width: Int
        public let height: Int
    }

    public let format: PixelFormat
    public let width: Int
    public let height: Int
    /// Where this frame's pixels are; see the type's comment for how long they stay there.
    public internal(set) var planes: [Plane]
    /// Index within the owning pool; stable for the buffer's life.
    public let index: Int
    /// The buffer's own memory: allocated in `init` for an ordinary pool, only when first
    /// needed (a backing that could not lend memory) for a backed one.
    private(set) var storage: UnsafeMutableRawPointer?
    /// Each plane's padded stride and size in the buffer's own memory.
    private let layout: [(stride: Int, width: Int, height: Int)]
    weak var owner: PixelBufferPool?
    /// Size of the buffer's own memory (allocated or not).
    public let byteCount: Int
    /// True while `planes` are the buffer's own memory, false while they are lent by the pool's backing.
    public internal(set) var isInOwnMemory: Bool
    /// Scratch for `PixelBufferBacking.attach`, kept so a take allocates nothing.
    var lent: [PlaneMemory] = []

    /// Sequence number given by the source; a gap means frames were dropped before this one.
    public var sequence: UInt64 = 0
    /// Capture time on CLOCK_MONOTONIC, in nanoseconds.
    public var captureTimeNanoseconds: UInt64 = 0
    /// Presentation time since the start of the recording, in nanoseconds.
    public var presentationTimeNanoseconds: UInt64 = 0
    /// A camera's own H.264/H.265 (`--encoder camera`): the bytes of its access unit, at the start of
    /// the first plane. 0 for a buffer of pixels.
    public var payloadByteCount = 0

    static let alignment = 64

    /// The stride of a row of `width` bytes: padded to the alignment.
    public static func paddedStride(_ width: Int) -> Int { (width + alignment - 1) / alignment * alignment }

    /// - Parameter allocate: false for a backed pool: no memory of its own until needed.
    init(format: PixelFormat, width: Int, height: Int, index: Int, allocate: Bool = true) {
        precondition(format.isEncoderNative, "pool buffers hold encoder formats only")
        self.format = format
        self.width = width
        self.height = height
        self.index = index
        let align = PixelBuffer.alignment
        let padded = PixelBuffer.paddedStride
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        // Planes are laid out back to back; every stride and plane start is aligned.
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
        byteCount = layout.reduce(0) { $0 + $1.stride * $1.height } + align * 4 + layout[0].stride
        planes = []
        planes.reserveCapacity(layout.count)
        lent.reserveCapacity(layout.count)
        isInOwnMemory = false
        if allocate { useOwnMemory() }
    }

    deinit { if let storage { munmap(storage, byteCount) } }

    /// Points `planes` at the buffer's own memory, allocating it the first time.
    func useOwnMemory() {
        if storage == nil {
            // Anonymous pages: zeroed, page-aligned, and committed only when first written, so a
            // pool's spare buffers cost no memory until a stall actually needs them.
            guard let raw = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                  raw != MAP_FAILED else {
                fatalError("out of memory allocating a \(width)x\(height) pixel buffer")
            }
            storage = raw
        }
        var offset = 0
        setPlanes(layout.indices.map { i in
            defer { offset += layout[i].stride * layout[i].height }
            return PlaneMemory(base: (storage! + offset).assumingMemoryBound(to: UInt8.self), stride: layout[i].stride)
        })
        isInOwnMemory = true
    }

    /// Points `planes` at memory a backing lent (one entry per plane, in order).
    func useLentMemory() {
        precondition(lent.count == layout.count, "a backing lent \(lent.count) planes for \(format) (\(layout.count))")
        for (memory, plane) in zip(lent, layout) {
            precondition(memory.stride >= plane.width, "a backing lent rows shorter than the frame's")
        }
        setPlanes(lent)
        isInOwnMemory = false
    }

    /// Replaces the planes in place, so taking a buffer allocates nothing once it has planes.
    private func setPlanes(_ memory: [PlaneMemory]) {
        for (i, m) in memory.enumerated() {
            let plane = Plane(base: m.base, stride: m.stride, width: layout[i].width, height: layout[i].height)
            if i < planes.count { planes[i] = plane } else { planes.append(plane) }
        }
    }

    /// The backing of the pool this buffer belongs to; nil for an ordinary pool.
    public var backing: PixelBufferBacking? { owner?.backing }

    /// Hands the buffer back to the pool it came from.
    public func recycle() {
        owner?.recycle(self)
    }
}
