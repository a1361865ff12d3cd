import ArgumentParser
import Capture
import Glibc
import Outputs
import Threading
import Recorder
import Synchronization
import SystemSupport

/// `--on-camera-lost exit|wait[=SECONDS]`, as given; `validate()` checks it.
struct CameraLossPolicy: ExpressibleByArgument {
    let text: String
    init(argument: String) { text = argument }
    static let exit = CameraLossPolicy(argument: "exit")

    var waits: Bool { text == "wait" || text.hasPrefix("wait=") }
    /// With `wait=SECONDS`: how long to wait; nil for ever.
    var waitSeconds: Double? { text.hasPrefix("wait=") ? Double(text.dropFirst(5)) : nil }

    func validate() throws {
        if text == "exit" || text == "wait" { return }
        if text.hasPrefix("wait="), let seconds = Double(text.dropFirst(5)) {
            try OptionRange.checkSeconds(seconds, "--on-camera-lost wait=SECONDS")
            return
        }
        throw ValidationError("--on-camera-lost \(text): give exit (the default), wait, or wait=SECONDS")
    }
}

/// Whether the camera is there now, and how often it went and came back: for `/api/status`, the
/// metrics and the log.
final class CameraPresence: Sendable {
    struct State: Sendable {
        var lostSince: Double?
        var losses = 0
        var returns = 0
    }
    private let state = Mutex(State())
    var now: State { state.withLock { $0 } }

    func lost() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return state.withLock {
            $0.lostSince = Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
            $0.losses += 1
            return $0.losses
        }
    }

    func returned() {
        state.withLock {
            $0.lostSince = nil
            $0.returns += 1
        }
    }
}

extension RecordCommand {
    /// With `--on-camera-lost wait` and a camera: the recorder waits for it at a loss, the files end
    /// there, and each loss and return is said on stderr, counted, and handed to `--on-camera-change`.
    func prepareForCameraLoss(_ plan: RecordingPlan, presence: CameraPresence, clearStatus: String, hooks: inout Recorder.Hooks) {
        guard onCameraLost.waits, let camera = plan.source as? V4L2CaptureSource else { return }
        let say: @Sendable (String) -> Void = { writeStandardError(clearStatus + "camrec: " + $0 + "\n") }
        let watcher = CameraReturnWatcher(camera: camera, timeoutSeconds: onCameraLost.waitSeconds,
                                          recordPriority: recordPriority, log: { say("camera lost: " + $0) })
        say("if \(camera.path) goes away, camrec waits for it\(onCameraLost.waitSeconds.map { " up to \(formatWait($0)) s" } ?? ""): "
            + "it is known \(watcher.identity.matchedBy)")
        hooks.sourceReturn = watcher
        let files = plan.fileOutputs
        let events = plan.events
        let command = onCameraChange
        hooks.onSourceLost = { end in
            let reason = switch end {
            case .deviceLost(let m), .stalled(let m): m
            case .finished: "it ended"
            }
            let count = presence.lost()
            files.forEach { $0.endFileAtSourceGap() }
            events?.endClipAtSourceGap()
            say("camera lost (\(count)): \(reason); the files end here; waiting for it to come back"
                + (onCameraLost.waitSeconds.map { " (up to \(formatWait($0)) s)" } ?? ""))
            command.map { runCameraChange($0, event: "lost", device: camera.path, detail: reason) }
        }
        hooks.onSourceReturned = { source, away in
            presence.returned()
            let path = (source as? V4L2CaptureSource)?.path ?? camera.path
            say("camera back after \(formatWait(away)) s as \(path); recording on")
            command.map { runCameraChange($0, event: "returned", device: path, detail: formatWait(away)) }
        }
    }

    /// Record priority unless CAMREC_V4L2_PRIORITY=interactive (as for the first open).
    var recordPriority: Bool {
        !(getenv("CAMREC_V4L2_PRIORITY").map { String(cString: $0) == "interactive" } ?? false)
    }
}

private func formatWait(_ seconds: Double) -> String {
    seconds.isFinite ? seconds.decimalText(places: 1) : "?"
}

/// Runs `--on-camera-change CMD`: CAMREC_CAMERA_EVENT (lost or returned), CAMREC_DEVICE (the node),
/// CAMREC_CAMERA_DETAIL (why it was lost, or the seconds it was away).
func runCameraChange(_ command: String, event: String, device: String, detail: String) {
    runHookCommand(command, option: "--on-camera-change",
                   variables: ["CAMREC_CAMERA_EVENT": event, "CAMREC_DEVICE": device, "CAMREC_CAMERA_DETAIL": detail])
}
