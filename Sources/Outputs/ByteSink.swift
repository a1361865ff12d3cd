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
