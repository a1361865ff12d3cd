/// A sound source or encoder that cannot be used, in one line that says what to do.
public struct AudioError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        /// libavcodec or its AAC encoder is missing, or refuses the format.
        case unavailable
        /// Encoding failed while recording.
        case failed
    }
    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
