import Frames
/// Failures of a frame source, each with what went wrong and what to do.
public struct CaptureError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        case sourceMissing
        case invalidInput
        case notACaptureDevice
        case deviceBusy
        case unsupportedFormat
        case permissionDenied
        case deviceFailed
        /// A library the source needs (libjpeg for MJPEG) cannot be opened: the message names its package.
        case libraryMissing
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
