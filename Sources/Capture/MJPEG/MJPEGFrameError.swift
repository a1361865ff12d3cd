import Frames
/// Why one MJPEG frame from a camera could not be used. The frame is dropped and counted
/// as errored; the recording goes on (UVC cameras send such frames after USB errors).
public enum MJPEGFrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The buffer held no bytes (`bytesused` 0).
    case empty
    /// The bytes do not start with a JPEG start-of-image marker.
    case notJPEG
    /// No end-of-image marker at the end: the frame was cut short.
    case truncated
    /// libjpeg refused the data (its own words).
    case undecodable(String)
    /// libjpeg found damaged data (a bad Huffman code, data cut short): the picture is not whole.
    case damaged
    /// The picture is not the size the camera was set to.
    case wrongSize(width: Int, height: Int, expected: FrameSize)
    /// A JPEG camrec cannot convert: what it is ("an RGB JPEG", "a 12-bit JPEG").
    case unsupportedPicture(String)

    public var description: String {
        switch self {
        case .empty: return "an empty buffer"
        case .notJPEG: return "data that is not JPEG (no start-of-image marker)"
        case .truncated: return "a truncated JPEG (no end-of-image marker)"
        case .undecodable(let why): return "a JPEG libjpeg could not decode (\(why))"
        case .damaged: return "a damaged JPEG"
        case .wrongSize(let width, let height, let expected):
            return "a \(width)x\(height) JPEG where \(expected) was set"
        case .unsupportedPicture(let what):
            return "\(what), which camrec cannot convert (only 8-bit YCbCr or grey)"
        }
    }
}
