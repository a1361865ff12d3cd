import CV4L2
import Glibc
import Synchronization

/// The encoder controls of a camera that sends H.264 or H.265 itself (`--encoder camera`): camrec
/// encodes nothing, so the IDR period, a forced IDR for a joining receiver and the bit rate are asked
/// of the camera, through the V4L2 codec controls it has. Each is looked up once
/// (`VIDIOC_QUERYCTRL`: absent or disabled means not there) and set with `VIDIOC_S_CTRL`.
public final class CameraCodecControls: Sendable {
    /// The codec controls camrec uses (linux/v4l2-controls.h, V4L2_CID_CODEC_BASE + n).
    public enum Control: UInt32, Sendable, CaseIterable, CustomStringConvertible {
        case h264IPeriod = 0x0099_0A66       // V4L2_CID_MPEG_VIDEO_H264_I_PERIOD (+358)
        case gopSize = 0x0099_09CB           // V4L2_CID_MPEG_VIDEO_GOP_SIZE (+203)
        case forceKeyFrame = 0x0099_09E5     // V4L2_CID_MPEG_VIDEO_FORCE_KEY_FRAME (+229)
        case bitrate = 0x0099_09CF           // V4L2_CID_MPEG_VIDEO_BITRATE (+207)

        public var description: String {
            switch self {
            case .h264IPeriod: "H264_I_PERIOD"
            case .gopSize: "GOP_SIZE"
            case .forceKeyFrame: "FORCE_KEY_FRAME"
            case .bitrate: "BITRATE"
            }
        }
    }

    private let device: V4L2Device
    /// The controls the camera has, with their range.
    public let available: [Control: ClosedRange<Int32>]
    private let forcedCount = Atomic<Int>(0)

    init(device: V4L2Device) {
        self.device = device
        var found: [Control: ClosedRange<Int32>] = [:]
        for control in Control.allCases {
            var query = v4l2_queryctrl()
            query.id = control.rawValue
            guard (try? device.ioctl(.queryControl, &query)) != nil,
                  query.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0 else { continue }
            found[control] = query.minimum...max(query.minimum, query.maximum)
        }
        available = found
    }

    /// The control that sets the IDR period: H.264's I-period first (on H.264 encoders GOP_SIZE may
    /// count I-frames that are not IDRs), else GOP_SIZE.
    public var keyframePeriodControl: Control? {
        [.h264IPeriod, .gopSize].first { available[$0] != nil }
    }

    /// Sets `control` to `value` (clamped to its range). Returns what was set, or why not.
    @discardableResult
    func set(_ control: Control, to value: Int) -> Result<Int32, V4L2IoctlError>? {
        guard let range = available[control] else { return nil }
        var setting = v4l2_control(id: control.rawValue, value: min(max(Int32(clamping: value), range.lowerBound), range.upperBound))
        do {
            try device.ioctl(.setControl, &setting)
        } catch {
            return .failure(error)
        }
        return .success(setting.value)
    }

    /// Asks the camera for an IDR at its next frame; false when it has no FORCE_KEY_FRAME (or refused).
    @discardableResult
    public func forceKeyFrame() -> Bool {
        guard case .success = set(.forceKeyFrame, to: 1) else { return false }
        forcedCount.add(1, ordering: .relaxed)
        return true
    }

    /// Key frames asked of the camera so far.
    public var keyFramesForced: Int { forcedCount.load(ordering: .relaxed) }

    /// Sets the IDR period and the bit rate the recording asks for, and says in one line what the
    /// camera took and what it lacks (nil values are left as the camera has them).
    public func apply(keyframeInterval: Int?, bitsPerSecond: Int?) -> String {
        var done: [String] = []
        var lacking: [String] = []
        if let keyframeInterval {
            if let control = keyframePeriodControl {
                switch set(control, to: keyframeInterval) {
                case .success(let value)?: done.append("an IDR every \(value) frames (\(control))")
                case .failure(let error)?: lacking.append("the IDR period (\(control) refused: \(error.errno))")
                case nil: break
                }
            } else {
                lacking.append("no IDR-period control (H264_I_PERIOD, GOP_SIZE): IDRs come as the camera makes them")
            }
        }
        if let bitsPerSecond {
            switch set(.bitrate, to: bitsPerSecond) {
            case .success(let value)?: done.append("\(value) bit/s (BITRATE)")
            case .failure(let error)?: lacking.append("the bit rate (BITRATE refused: \(error.errno))")
            case nil: lacking.append("no BITRATE control: --bitrate is not applied")
            }
        }
        if available[.forceKeyFrame] != nil {
            done.append("a forced IDR for each joining receiver (FORCE_KEY_FRAME)")
        } else {
            lacking.append("no FORCE_KEY_FRAME control: a joining receiver waits for the camera's next IDR")
        }
        if available.isEmpty {
            return "the camera has none of the codec controls camrec uses (H264_I_PERIOD, GOP_SIZE, FORCE_KEY_FRAME, BITRATE): "
                + "IDRs come as the camera makes them and a joining receiver waits for the next one"
        }
        return "camera's encoder: " + (done.isEmpty ? "" : done.joined(separator: ", "))
            + (lacking.isEmpty ? "" : (done.isEmpty ? "" : "; ") + lacking.joined(separator: "; "))
    }
}
