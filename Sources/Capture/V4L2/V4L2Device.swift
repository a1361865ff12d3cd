import CV4L2
import Glibc
import SystemPackage
import Frames
import Synchronization

/// An open V4L2 node: its descriptor and the one place ioctls are made.
final class V4L2Device: Sendable {
    let path: String
    let fd: Int32
    let system: V4L2System
    private let closed = Atomic<Bool>(false)

    /// Opens `path` non-blocking (DQBUF must never block: `poll` is the watchdog) and
    /// close-on-exec (a child process must not keep the camera busy).
    /// Throws the `Errno` of `open(2)`; callers turn it into a message for their context.
    init(path: String, system: V4L2System) throws(Errno) {
        let fd = system.open(path, flags: O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw Errno(rawValue: -fd) }
        self.path = path
        self.fd = fd
        self.system = system
    }

    deinit { close() }

    func close() {
        // Once, whichever thread comes first (a teardown racing the capture thread's own close).
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = system.close(fd)
    }

    /// Makes one ioctl, retrying when a signal interrupts it; a failure names the request.
    func ioctl<T>(_ request: V4L2Request, _ argument: inout T) throws(V4L2IoctlError) {
        while true {
            let r = withUnsafeMutableBytes(of: &argument) { system.ioctl(fd, request.code, $0.baseAddress!) }
            if r >= 0 { return }
            if r == -EINTR { continue }
            throw V4L2IoctlError(request: request.name, errno: Errno(rawValue: -r))
        }
    }

    /// `VIDIOC_QUERYCAP`.
    func identity() throws(V4L2IoctlError) -> V4L2DeviceIdentity {
        var caps = v4l2_capability()
        try ioctl(.queryCapabilities, &caps)
        return V4L2DeviceIdentity(caps)
    }

    /// Takes an advisory exclusive lock on the node, so a second camrec fails at once
    /// instead of fighting over the camera. Returns the errno when the lock is held.
    func lockExclusively() -> Errno? {
        let r = system.lockExclusively(fd)
        return r < 0 ? Errno(rawValue: -r) : nil
    }
}
