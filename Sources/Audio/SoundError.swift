/// What can go wrong with a microphone, by what a user does about it (each maps to an exit status).
public struct SoundError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// No such device.
        case missing
        case busy
        case permissionDenied
        /// It cannot give the asked rate, channels or a sample format camrec reads.
        case unsupported
        /// libasound or libswresample cannot be loaded.
        case unavailable
        /// It failed while recording (unplugged, an error that does not recover).
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
