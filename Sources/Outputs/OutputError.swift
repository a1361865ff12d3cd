/// Failures of an output, each saying what is wrong and what to do.
public struct OutputError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The target exists and `--overwrite` was not given.
        case exists
        /// The file or directory can't be created or written.
        case unwritable
        /// The disk filled up while recording.
        case diskFull
        /// The reader went away (stdout closed, peer disconnected).
        case closed
        /// Given up after a second SIGINT/SIGTERM (a pipe nobody reads); not a fault of its own.
        case abandoned
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
