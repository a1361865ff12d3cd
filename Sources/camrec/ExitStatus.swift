import Capture
import Encoder
import SystemSupport
import Outputs
import Recorder

/// camrec's exit statuses: one per thing a script may want to react to.
/// The table is printed by `--help` and copied into docs/EXIT-STATUS.md.
public enum ExitStatus: Int32, Sendable, CaseIterable {
    case success = 0
    /// `inspect`: the file is H.264 but breaks camrec's stream contract.
    case contractBroken = 1
    case usage = 64
    case invalidInput = 65
    case sourceMissing = 66
    case notACaptureDevice = 67
    case unsupportedFormat = 68
    case permissionDenied = 69
    case deviceBusy = 70
    case deviceLost = 71
    case deviceStalled = 72
    case encoderUnavailable = 73
    case encoderFailed = 74
    case outputError = 75
    case outputExists = 76
    case diskFull = 77
    /// `trigger`: no camrec records that device, or the pid file names none.
    case noRecording = 78
    /// A second SIGINT/SIGTERM cut the clean shutdown short.
    case interrupted = 130

    public var meaning: String {
        switch self {
        case .success: return "success (also after a clean stop by SIGINT or SIGTERM)"
        case .contractBroken: return "inspect: the stream breaks camrec's stream contract (or, with --decode, a picture fails to decode)"
        case .usage: return "usage error: unknown option, malformed value"
        case .invalidInput: return "bad input: raw input shorter than one frame, not H.264, wrong format"
        case .sourceMissing: return "input file, camera or microphone not found"
        case .notACaptureDevice: return "the device is not a video capture device"
        case .unsupportedFormat: return "the camera or microphone cannot deliver the asked size, rate, pixel format or channels"
        case .permissionDenied: return "permission denied on the device (join the video or audio group) or the input file; trigger: not allowed to signal that camrec"
        case .deviceBusy: return "the camera or microphone is busy (another camrec or program has it)"
        case .deviceLost: return "the camera went away while recording (the file is saved), or with --on-camera-lost wait=SECONDS did not come back in time"
        case .deviceStalled: return "the camera stopped delivering frames (the file is saved)"
        case .encoderUnavailable: return "the encoder (or an MJPEG camera's decoder) cannot run here (no libx264, no libjpeg, no usable VAAPI)"
        case .encoderFailed: return "the encoder failed while recording (the file is saved)"
        case .outputError: return "an output cannot be created or written"
        case .outputExists: return "the output file exists and --overwrite was not given"
        case .diskFull: return "the disk filled up while recording (the file is saved)"
        case .noRecording: return "trigger: no camrec is recording that device, or the pid file names none"
        case .interrupted: return "interrupted twice: stopped waiting for stdout and network peers (files are still finished and kept)"
        }
    }

    /// The table for `--help` and docs/EXIT-STATUS.md.
    public static var table: String {
        allCases.map { "  \(String($0.rawValue).leftPadded(to: 3, with: " "))  \($0.meaning)" }.joined(separator: "\n")
    }
}

extension RecordingFailure {
    /// The one exit status a script sees for this failure.
    var exitStatus: ExitStatus {
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
            case .libraryMissing: return .encoderUnavailable
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
