/// Where a `QueuedOutput` writes bytes: a file, stdout.
public protocol ByteSink: AnyObject {
    var label: String { get }
    func open() throws
    /// Writes all of `bytes` or throws.
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// Marks the end of a whole access unit: what came before must survive a later failure.
    func commitBoundary()
    /// Settles the destination. `keep` is false when nothing was ever written.
    func close(keep: Bool) throws -> String?
}

/// A sink whose write position can move back: a container muxer fills in its header (duration,
/// index position) when the file ends. Reads are never needed.
public protocol SeekableByteSink: ByteSink {
    /// Moves the write position to `offset` bytes from the start and returns it.
    func seek(to offset: Int) throws -> Int
    /// How far the file reaches: the end of everything written so far.
    var size: Int { get }
}
