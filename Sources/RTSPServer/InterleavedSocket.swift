import Glibc
import NIOCore

/// A playing TCP client's socket, written directly on its connection's event loop: one `sendmsg` a picture
/// (its sender report, when due, ahead of it in the same call). NIO's write path above the system call
/// (the pipeline, pending writes, two writability flips a picture larger than the high-water mark) was a
/// sixth of a TCP client's CPU (docs/PERFORMANCE.md, issue 48), and NIO gives no access to an accepted
/// socket's descriptor, so it is found once, at PLAY, by the connection's two addresses.
///
/// NIO still reads the connection, answers its requests and closes it. Bytes are written here only while
/// NIO holds none of the connection's (`RTSPWritability` counts its writes at the pipeline's head), so the
/// two never interleave; what the kernel does not take at once goes to NIO, and until NIO has written it
/// the client counts as behind (the hub queues, then skips it to the next IDR), as with NIO's writes alone.
/// The descriptor is NIO's and is used only on the event loop while the channel is active: NIO closes it
/// on that loop, so it cannot have been closed (and its number reused) under a write.
struct InterleavedSocket {
    let descriptor: CInt

    /// The descriptor of `channel`'s TCP socket: the one whose own and peer addresses are the channel's
    /// (no other socket of the process can have both); nil when none is found (no /proc, or not TCP).
    static func find(for channel: Channel) -> InterleavedSocket? {
        guard let local = channel.localAddress, let remote = channel.remoteAddress, channel.isActive else { return nil }
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        let own = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let descriptor = CInt(name), descriptor != own else { continue }
            if isStream(descriptor), address(of: descriptor, getpeername, is: remote), address(of: descriptor, getsockname, is: local) {
                return InterleavedSocket(descriptor: descriptor)
            }
        }
        return nil
    }

    private static func isStream(_ descriptor: CInt) -> Bool {
        var type: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        return getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0 && type == CInt(SOCK_STREAM.rawValue)
    }

    private static func address(of descriptor: CInt, _ read: (CInt, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> CInt,
                                is expected: SocketAddress) -> Bool {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { read(descriptor, $0, &length) }
        } == 0
        guard ok else { return false }
        return expected.withSockAddr { bytes, count in
            count == Int(length) && withUnsafeBytes(of: &storage) { memcmp($0.baseAddress!, bytes, count) == 0 }
        }
    }

    /// What became of a `send`.
    enum Outcome {
        /// The kernel took all of it.
        case sent
        /// The kernel took `taken` bytes (perhaps 0) and has no room for the rest now.
        case full(taken: Int)
        /// The connection is broken (reset, or its output closed): NIO is to close it.
        case failed
    }

    /// Writes `head` (possibly empty) then `body` with one call, never waiting.
    func send(_ head: UnsafeRawBufferPointer, _ body: UnsafeRawBufferPointer) -> Outcome {
        var vectors = (iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress), iov_len: head.count),
                       iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress), iov_len: body.count))
        let total = head.count + body.count
        while true {
            let sent = withUnsafeMutableBytes(of: &vectors) { raw -> Int in
                var message = msghdr()
                let first = raw.baseAddress!.assumingMemoryBound(to: iovec.self)
                message.msg_iov = head.isEmpty ? first + 1 : first
                message.msg_iovlen = head.isEmpty ? 1 : 2
                return sendmsg(descriptor, &message, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            }
            if sent == total { return .sent }
            if sent >= 0 { return .full(taken: sent) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK, ENOBUFS: return .full(taken: 0)
            default: return .failed
            }
        }
    }
}
