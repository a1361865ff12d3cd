import Capture
import Frames
import Glibc
import SystemSupport

/// Retries `open` while the camera is busy, for up to `seconds` (`--wait`): overlapping cron or
/// timer runs queue for the camera instead of failing. Each retry waits for the camera to be let go:
/// a program that had `device` open closing it (inotify), or the deadline.
func waitingWhileBusy<Source>(seconds: Double?, device: String, _ open: () throws -> Source) throws -> Source {
    guard let seconds, seconds > 0 else { return try open() }
    let deadline = MonotonicClock.now() + UInt64(seconds * 1e9)
    var releases: DeviceReleases?
    while true {
        releases?.forgetPending()
        do {
            return try open()
        } catch let error as CaptureError where error.kind == .deviceBusy && MonotonicClock.now() < deadline {
            if releases == nil {
                writeStandardError("camrec: \(error.message); waiting up to \(seconds.decimalText(places: 0)) s for it\n")
                // Watched from now on; the holder may have let go since the attempt: try once more at once.
                releases = DeviceReleases(watching: device)
                continue
            }
            releases?.wait(until: deadline)
        }
    }
}

/// Closes of a device node, seen through inotify: a lock holder, or a program streaming from it, lets go
/// of a camera only by closing it. Opens and closes pair up (each attempt of ours is one of each), so
/// the count of closes over opens since the last attempt began says whether anyone who had the camera
/// then has let go of it.
private final class DeviceReleases {
    private static let events = UInt32(IN_OPEN | IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_ATTRIB | IN_DELETE_SELF)
    private let path: String
    /// -1 when there is no inotify left: then the wait lasts to the deadline.
    private let fd: Int32
    /// Closes less opens since the last attempt began.
    private var net = 0

    init(watching path: String) {
        self.path = path
        fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Before an attempt: what came before it is its own business. Watched again each time, in case
    /// the node was made anew (a node that cannot be watched is waited for to the deadline).
    func forgetPending() {
        guard fd >= 0 else { return }
        _ = inotify_add_watch(fd, path, Self.events)
        _ = drain()
        net = 0
    }

    /// Waits until someone who had the device when the last attempt began has closed it, the node
    /// changed (its permissions, or it went away), or `deadline` (monotonic ns).
    func wait(until deadline: UInt64) {
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else { return }
            var watched = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Rounded up, so the last wait does not end just before the deadline.
            let milliseconds = Int32(min((deadline - now + 999_999) / 1_000_000, UInt64(Int32.max)))
            if poll(&watched, fd >= 0 ? 1 : 0, milliseconds) > 0, drain() { return }
        }
    }

    /// Reads what inotify holds; true when it says to try again.
    private func drain() -> Bool {
        var retry = false
        let capacity = 4096
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer, capacity)
            guard count > 0 else { return retry }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                if event.mask & UInt32(IN_OPEN) != 0 { net -= 1 }
                if event.mask & UInt32(IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) != 0 { net += 1 }
                if event.mask & UInt32(IN_ATTRIB | IN_DELETE_SELF | IN_IGNORED | IN_Q_OVERFLOW) != 0 { retry = true }
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
            if net > 0 { retry = true }
        }
    }
}
