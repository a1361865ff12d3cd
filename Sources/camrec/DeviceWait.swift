import Capture
import Frames
import Glibc
import SystemSupport

/// Retries `open` while the camera is busy, for up to `seconds` (`--wait`): overlapping cron or
/// timer runs queue for the camera instead of failing.
func waitingWhileBusy<Source>(seconds: Double?, _ open: () throws -> Source) throws -> Source {
    guard let seconds, seconds > 0 else { return try open() }
    let deadline = MonotonicClock.now() + UInt64(seconds * 1e9)
    var said = false
    while true {
        do {
            return try open()
        } catch let error as CaptureError where error.kind == .deviceBusy && MonotonicClock.now() < deadline {
            if !said {
                writeStandardError("camrec: \(error.message); waiting up to \(seconds.decimalText(places: 0)) s for it\n")
                said = true
            }
            usleep(250_000)
        }
    }
}
