import Glibc
import Frames

/// The system calls the V4L2 layer makes, behind a protocol so tests can stand in
/// for a camera (swift-system's mocking idea, by injection). Every call returns the
/// kernel's convention: a value ≥ 0 on success, `-errno` on failure, so no call
/// depends on the thread-global `errno` surviving until it is read.
protocol V4L2System: Sendable {
    func open(_ path: String, flags: Int32) -> Int32
    func close(_ fd: Int32) -> Int32
    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32
    /// `poll(2)`; returns the number of ready descriptors, 0 on timeout, or -errno.
    func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, timeoutMilliseconds: Int32) -> Int32
    /// Maps `length` bytes of the device at `offset`; nil with the errno on failure.
    func mmap(length: Int, fd: Int32, offset: Int) -> (UnsafeMutableRawPointer?, Int32)
    func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> Int32
    /// `flock(fd, LOCK_EX | LOCK_NB)`.
    func lockExclusively(_ fd: Int32) -> Int32
}

/// The real kernel.
struct LinuxV4L2System: V4L2System {
    private static func result(_ r: Int32) -> Int32 { r < 0 ? -errno : r }

    func open(_ path: String, flags: Int32) -> Int32 {
        Self.result(Glibc.open(path, flags))
    }

    func close(_ fd: Int32) -> Int32 {
        Self.result(Glibc.close(fd))
    }

    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        Self.result(Glibc.ioctl(fd, request, argument))
    }

    func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, timeoutMilliseconds: Int32) -> Int32 {
        Self.result(Glibc.poll(fds, nfds_t(count), timeoutMilliseconds))
    }

    func mmap(length: Int, fd: Int32, offset: Int) -> (UnsafeMutableRawPointer?, Int32) {
        let p = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
        if p == MAP_FAILED || p == nil { return (nil, errno) }
        return (p, 0)
    }

    func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> Int32 {
        Self.result(Glibc.munmap(address, length))
    }

    func lockExclusively(_ fd: Int32) -> Int32 {
        Self.result(flock(fd, LOCK_EX | LOCK_NB))
    }
}
