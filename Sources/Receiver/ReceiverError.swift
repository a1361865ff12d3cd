/// What stops `camrec receive` before a byte arrives: it cannot listen where it was told to, or cannot
/// write its latency log. (The copy it writes fails with the sink's own `OutputError`.)
public struct ReceiverError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The address is taken, needs root, or does not resolve.
        case cannotListen
        /// `--latency-log` names a file that cannot be written.
        case latencyLogUnwritable
    }

    public let kind: Kind
    public let message: String
    public var description: String { message }

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
