import Frames
import Glibc
import SystemSupport

/// A TCP connection that a library opens and closes by itself (libavformat's RTMP and RTSP
/// publishing), found among the process's descriptors so that camrec can end it gracefully.
///
/// The library's plain close() can cost a server that is behind the end of the recording: what the
/// server writes after it (RTMP acknowledgements, RTCP reports) meets a closed socket, the kernel
/// answers with a reset, the server's next write fails, and it stops reading with the last frames
/// still unread in its buffer (ffmpeg's RTMP listener does). A descriptor of camrec's own for the
/// same connection keeps it open through the library's close; `HeldConnection` then ends it.
public struct LibraryConnection: Sendable {
    public let descriptor: Int32
    /// The socket's inode: the library may close the descriptor and the number be reused.
    let inode: UInt64

    /// The process's sockets at one moment, by descriptor.
    public struct Sockets: Sendable {
        let inodes: [Int32: UInt64]
    }

    /// The sockets open now: taken just before the library call that connects.
    public static func sockets() -> Sockets {
        var inodes: [Int32: UInt64] = [:]
        for name in SystemFiles.entries(of: "/proc/self/fd") {
            guard let fd = Int32(name), let inode = socketInode(fd) else { continue }
            inodes[fd] = inode
        }
        return Sockets(inodes: inodes)
    }

    /// The one stream socket that is new since `before` and connected to `port`; nil when there is
    /// none, or more than one (another connection to the same port made meanwhile): then nothing is
    /// held, and the connection ends as the library ends it.
    public static func opened(since before: Sockets, toPort port: UInt16) -> LibraryConnection? {
        let found = sockets().inodes.filter { fd, inode in
            before.inodes[fd] != inode && isStream(fd) && peerPort(fd) == port
        }
        guard found.count == 1, let (fd, inode) = found.first else { return nil }
        return LibraryConnection(descriptor: fd, inode: inode)
    }

    /// A descriptor of camrec's own for the connection, taken while the library still has it open;
    /// nil when the descriptor no longer names this socket.
    public func hold() -> HeldConnection? {
        guard Self.socketInode(descriptor) == inode else { return nil }
        let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { return nil }
        return HeldConnection(descriptor: copy)
    }

    static func socketInode(_ fd: Int32) -> UInt64? {
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return UInt64(status.st_ino)
    }

    private static func isStream(_ fd: Int32) -> Bool {
        var type: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == Int32(SOCK_STREAM.rawValue)
    }

    private static func peerPort(_ fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard rc == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: storage) { UInt16(bigEndian: $0.load(as: sockaddr_in.self).sin_port) }
        case AF_INET6:
            return withUnsafeBytes(of: storage) { UInt16(bigEndian: $0.load(as: sockaddr_in6.self).sin6_port) }
        default:
            return nil
        }
    }
}

/// camrec's own descriptor for a library's connection: it outlives the library's close, so the
/// connection ends when camrec says, the graceful way.
public struct HeldConnection: ~Copyable {
    let descriptor: Int32

    /// Half-closes the connection (the FIN goes after everything written), then reads and discards
    /// what the server still sends until it closes its side, the connection fails, `abort` says so, the
    /// server has said nothing for `quietNanoseconds` (one stopped for good is not waited on: its
    /// acknowledgements, the writes that would meet a closed socket, would show it reading), or
    /// `limitNanoseconds` have passed; then closes. At most 64 KiB are read per wake.
    public consuming func lingeringClose(quietNanoseconds: UInt64, limitNanoseconds: UInt64, abort: () -> Bool) {
        let fd = descriptor
        discard self
        defer { _ = Glibc.close(fd) }
        guard shutdown(fd, Int32(SHUT_WR)) == 0 else { return }
        let start = MonotonicClock.now()
        var heard = start
        var scratch = [UInt8](repeating: 0, count: 65536)
        while !abort() {
            let now = MonotonicClock.now()
            guard now - start < limitNanoseconds, now - heard < quietNanoseconds else { return }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Short waits: `abort` is polled, not signalled.
            let rc = poll(&ready, 1, 50)
            if rc < 0 && errno == EINTR { continue }
            guard rc >= 0 else { return }
            guard rc > 0 else { continue }
            let count = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count <= 0 { return }  // the server closed its side, or the connection failed
            heard = MonotonicClock.now()
        }
    }

    deinit { _ = Glibc.close(descriptor) }
}
