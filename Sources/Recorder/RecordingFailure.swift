import Capture
import Frames
import Encoder
import Outputs

/// Why a recording ended other than as asked. Each maps to one exit status (camrec's ExitStatus.swift).
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
}
