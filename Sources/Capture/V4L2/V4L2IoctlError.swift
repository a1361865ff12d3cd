import SystemPackage
import Frames

/// A failed ioctl: which request, and the kernel's errno. Prints as
/// "VIDIOC_S_FMT: Device or resource busy", the form users can search for.
struct V4L2IoctlError: Error, Sendable, CustomStringConvertible {
    let request: String
    let errno: Errno

    var description: String { "\(request): \(errno)" }
}
