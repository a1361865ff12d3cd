import Foundation
import Glibc
import NetStream
import Receiver
import Synchronization
import XCTest

/// `camrec receive` against a sender this test plays itself, on a socket of its own.
final class StreamReceiverTests: XCTestCase {
    /// Bytes with no start code are not H.264: the receiver hangs up on the sender once it has taken
    /// `garbageLimitBytes` of them, and writes nothing.
    func testASenderOfBytesWithoutAStartCodeIsHungUpOn() throws {
        let server = try LoopbackServer()
        defer { server.close() }
        var options = StreamReceiver.Options(source: .connect(try TCPEndpoint(url: "tcp://127.0.0.1:\(server.port)")))
        options.garbageLimitBytes = 64 << 10
        let receiver = StreamReceiver(options: options, sink: { nil }, log: { _ in })
        let ended = DispatchSemaphore(value: 0)
        let result = Mutex<StreamReceiver.Result?>(nil)
        Task {
            await receiver.run()
            let outcome = try? receiver.finishedOutcome.get()
            result.withLock { $0 = outcome }
            ended.signal()
        }
        let sender = try server.accept()
        defer { Glibc.close(sender) }

        // Zeros until the receiver hangs up (the socket's own error says so), or 32 MiB: far past the
        // limit and the kernel's buffers in between.
        let zeros = [UInt8](repeating: 0, count: 4096)
        var sent = 0
        var hangUp: Int32 = 0
        while sent < 32 << 20 {
            let n = send(sender, zeros, zeros.count, Int32(MSG_NOSIGNAL))
            if n < 0 { hangUp = errno; break }
            sent += n
        }
        XCTAssertTrue(hangUp == EPIPE || hangUp == ECONNRESET, "the receiver hung up (\(sent) bytes sent, errno \(hangUp))")
        XCTAssertGreaterThanOrEqual(sent, options.garbageLimitBytes, "not before the limit")

        receiver.stop()
        XCTAssertEqual(ended.wait(timeout: .now() + 10), .success, "run() ends when stopped")
        let progress = try XCTUnwrap(result.withLock { $0 }).progress
        XCTAssertEqual(progress.garbageConnections, 1)
        XCTAssertEqual(progress.frames, 0)
    }
}

/// A TCP socket listening on 127.0.0.1, on a port the kernel picks.
private struct LoopbackServer {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, length) == 0 && Glibc.listen(fd, 1) == 0 && getsockname(fd, sa, &length) == 0
            }
        }
        guard bound else {
            let failure = errno
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EINVAL)
        }
        descriptor = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    /// The receiver's connection, within 10 s.
    func accept() throws -> Int32 {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 10_000) == 1 else { throw POSIXError(.ETIMEDOUT) }
        let peer = Glibc.accept(descriptor, nil, nil)
        guard peer >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL) }
        return peer
    }

    func close() { Glibc.close(descriptor) }
}
