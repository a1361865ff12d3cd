import Capture
import Frames
import Encoder
import Outputs

/// Why a recording ended other than as asked. Each maps to one exit status.
public enum RecordingFailure: Error, Sendable, CustomStringConvertible {
    case source(CaptureError)
    case deviceLost(String)
    case deviceStalled(String)
    case encoder(EncoderError)
    case output(OutputError)

    public var description: String {
        switch self {
        case .source(let e): return e.message
        case .deviceLost(let m), .deviceStalled(let m): return m
        case .encoder(let e): return e.message
        case .output(let e): return e.message
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .source(let e):
            switch e.kind {
            case .sourceMissing: return .sourceMissing
            case .invalidInput: return .invalidInput
            case .notACaptureDevice: return .notACaptureDevice
            case .deviceBusy: return .deviceBusy
            case .unsupportedFormat: return .unsupportedFormat
            case .permissionDenied: return .permissionDenied
            case .deviceFailed: return .deviceLost
            }
        case .deviceLost: return .deviceLost
        case .deviceStalled: return .deviceStalled
        case .encoder(let e): return e.kind == .unavailable ? .encoderUnavailable : .encoderFailed
        case .output(let e):
            switch e.kind {
            case .exists: return .outputExists
            case .diskFull: return .diskFull
            case .unwritable, .closed: return .outputError
            case .abandoned: return .interrupted
            }
        }
    }
}
