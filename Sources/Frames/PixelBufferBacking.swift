/// One plane of memory that a `PixelBufferBacking` lends to a pool buffer.
/// Sendable by its invariant: memory the backing lends to one taken buffer, used only until it is recycled.
public struct PlaneMemory: @unchecked Sendable {
    public var base: UnsafeMutablePointer<UInt8>
    /// Bytes from one row to the next; at least the plane's row width.
    public var stride: Int

    public init(base: UnsafeMutablePointer<UInt8>, stride: Int) {
        self.base = base
        self.stride = stride
    }
}

/// Memory a pool lends its buffers instead of their own, e.g. mapped GPU surfaces, so
/// sources write each frame straight where the encoder reads it (no copy in between).
///
/// The pool calls `attach` when a buffer is taken and `detach` when it is recycled. A
/// backing keeps its per-buffer state by `bufferIndex` (`PixelBuffer.index`); only the
/// buffer's current holder uses that slot, so slots need no lock of their own.
///
/// The memory may be slow to read (GPU mappings are often write-combined): sources only
/// write whole rows into it and never read it back.
public protocol PixelBufferBacking: AnyObject, Sendable {
    /// Lends memory for one frame to buffer `bufferIndex`: appends one `PlaneMemory` per plane of
    /// the pool's format to `planes` (empty on entry). Runs on the taker's thread, outside the
    /// pool's lock. Throws when nothing can be lent now; the pool then gives that buffer its own
    /// memory for this frame instead (so a frame is never lost to a failed mapping).
    func attach(bufferIndex: Int, planes: inout [PlaneMemory]) throws

    /// Ends the loan `attach` made, if it still stands: called whenever the buffer is recycled,
    /// from any thread. A consumer may have ended it already (an encoder that took the surface),
    /// so it must be harmless to call again.
    func detach(bufferIndex: Int)
}
