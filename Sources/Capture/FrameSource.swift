import Frames
/// Why a source stopped delivering frames.
public enum SourceEnd: Sendable, Equatable {
    /// A file or pipe reached its end, or `stop()` was called.
    case finished
    /// The device went away while recording (unplugged camera, ENODEV).
    case deviceLost(String)
    /// No frame arrived within the watchdog's time.
    case stalled(String)
}

/// Counters a source keeps while it runs.
public struct SourceStatistics: Sendable, Equatable {
    /// Frames handed on to the encoder.
    public var delivered: UInt64 = 0
    /// Frames lost before reaching the encoder: sequence gaps at the device,
    /// errored buffers, or an empty pool.
    public var dropped: UInt64 = 0
    /// Of `dropped`, how many were buffers the device flagged as errored.
    public var errored: UInt64 = 0
    /// Bytes the CPU wrote into pool buffers (conversion or copy passes): 0 when the camera
    /// writes into them itself (zero-copy), one frame's pixels per frame otherwise. For tests
    /// and `--log-level info`, so "zero-copy" is measured, not just announced.
    public var bytesWrittenByCPU: UInt64 = 0
    /// Buffers the driver refused to take back (a failed QBUF) and took on a retry.
    public var requeuedAfterRefusal: UInt64 = 0
    /// Times the device's 32-bit frame sequence number wrapped around.
    public var sequenceWraps: UInt64 = 0
    /// Of `dropped`, frames the device never delivered: gaps in its sequence numbers (the driver
    /// late, or its queue empty). Tests tell them from drops camrec made itself.
    public var skippedByDevice: UInt64 = 0
    /// Of `dropped`, frames camrec dropped because no pool buffer was free: the encoder behind (for
    /// want of CPU) rather than wait and make the camera drop them unseen.
    public var poolEmpty: UInt64 = 0

    public init() {}

    /// The counters as key=value pairs, for the info log (tests read them).
    public var fields: String {
        "delivered=\(delivered) dropped=\(dropped) errored=\(errored) cpu_bytes=\(bytesWrittenByCPU) "
            + "requeued_after_refusal=\(requeuedAfterRefusal) sequence_wraps=\(sequenceWraps) skipped_by_device=\(skippedByDevice) "
            + "pool_empty=\(poolEmpty)"
    }
}

/// Something that fills pool buffers with frames: a camera, the test pattern, a raw file.
///
/// A source is driven from one capture thread: `start`, then `nextFrame()` until
/// it returns nil, then `end` says why. `stop()` may be called from any thread and
/// makes `nextFrame()` return nil promptly.
public protocol FrameSource: AnyObject, Sendable {
    /// What the source is, for logs ("test pattern 1280x720 @ 30 fps").
    var summary: String { get }
    var frameSize: FrameSize { get }
    /// Nominal frame rate; raw files and pipes use it for timestamps.
    var framesPerSecond: Double { get }
    var statistics: SourceStatistics { get }
    var end: SourceEnd? { get }

    /// Pool buffers the source keeps for itself while it runs (a camera capturing straight
    /// into pool memory keeps its ring there); the pool must be that much larger.
    var poolBuffersHeld: Int { get }

    /// A live source (a camera, the paced test pattern) drops a frame rather than wait when
    /// the encoder is behind; a file or pipe waits, so nothing is lost.
    var isLive: Bool { get }

    func start(pool: PixelBufferPool) throws
    /// The next filled buffer, owned by the caller until recycled to the pool.
    func nextFrame() throws -> PixelBuffer?
    func stop()
}

extension FrameSource {
    public var poolBuffersHeld: Int { 0 }
    public var isLive: Bool { true }
}
