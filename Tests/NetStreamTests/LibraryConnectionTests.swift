import Glibc
import NetStream
import XCTest

/// `LibraryConnection` against real loopback sockets: a "library" connection made with plain POSIX calls,
/// and a server that is behind at the end and writes after the library's close (as RTMP acknowledges).
final class LibraryConnectionTests: XCTestCase {
    private var opened: [Int32] = []

    override func tearDown() {
        for fd in opened { close(fd) }
        opened = []
    }

    func testFindsTheOneNewConnectionToThePort() throws {
        let (listener, port) = try listen()
        let before = LibraryConnection.sockets()
        let client = try connect(port)
        let found = LibraryConnection.opened(since: before, toPort: port)
        XCTAssertEqual(found?.descriptor, client)
        XCTAssertNil(LibraryConnection.opened(since: before, toPort: port &+ 1), "no connection to another port")
        XCTAssertNil(LibraryConnection.opened(since: LibraryConnection.sockets(), toPort: port), "nothing new since")
        _ = try accept(listener)
    }

    func testTwoNewConnectionsToThePortAreNotGuessedBetween() throws {
        let (_, port) = try listen()
        let before = LibraryConnection.sockets()
        _ = try connect(port)
        _ = try connect(port)
        XCTAssertNil(LibraryConnection.opened(since: before, toPort: port))
    }

    func testADescriptorReusedByAnotherFileIsNotHeld() throws {
        let (_, port) = try listen()
        let before = LibraryConnection.sockets()
        let client = try connect(port)
        let found = try XCTUnwrap(LibraryConnection.opened(since: before, toPort: port))
        close(client)
        opened.removeAll { $0 == client }
        let pipeEnds = UnsafeMutablePointer<Int32>.allocate(capacity: 2)
        defer { pipeEnds.deallocate() }
        XCTAssertEqual(pipe(pipeEnds), 0)
        opened += [pipeEnds[0], pipeEnds[1]]
        XCTAssertEqual(pipeEnds[0], client, "the lowest free number is the one just closed")
        let held = found.hold()
        XCTAssertTrue(held == nil)
    }

    /// The failure it exists for: the library has written the end and closed; the server, behind, reads
    /// on and writes as it goes. Its writes succeed, it reads every byte and then the end of the stream.
    func testTheServerBehindReadsEverythingAndMayWriteMeanwhile() throws {
        let (listener, port) = try listen()
        let before = LibraryConnection.sockets()
        let client = try connect(port)
        let server = try accept(listener)
        let found = try XCTUnwrap(LibraryConnection.opened(since: before, toPort: port))
        // As much as the kernel takes without the server reading: what a server behind has yet to read.
        var block = [UInt8](repeating: 7, count: 1 << 20)
        var sent = 0
        while true {
            let n = block.withUnsafeBytes { send(client, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if n <= 0 { break }
            sent += n
        }
        XCTAssertGreaterThan(sent, 4 * 65536)

        let job = LingeringJob(found.hold())
        XCTAssertTrue(job.isHeld)
        close(client)  // the library's close
        opened.removeAll { $0 == client }
        let lingering = WaitableThread { job.run() }
        lingering.start()

        var received = 0
        var writesFailed = 0
        while true {
            let n = block.withUnsafeMutableBytes { recv(server, $0.baseAddress, 4096, 0) }
            if n <= 0 { break }
            received += n
            // An acknowledgement every 64 KiB, as a server behind would send them.
            if received / 65536 != (received - n) / 65536 {
                var ack: [UInt8] = [1, 2, 3, 4]
                if ack.withUnsafeMutableBytes({ send(server, $0.baseAddress, 4, Int32(MSG_NOSIGNAL)) }) != 4 { writesFailed += 1 }
            }
        }
        XCTAssertEqual(received, sent)
        XCTAssertEqual(writesFailed, 0)
        close(server)
        opened.removeAll { $0 == server }
        XCTAssertTrue(lingering.join(seconds: 20), "the lingering close ends once the server has closed")
    }

    func testAbortEndsTheWaitForAServerThatNeverCloses() throws {
        let (listener, port) = try listen()
        let before = LibraryConnection.sockets()
        let client = try connect(port)
        _ = try accept(listener)
        guard let held = LibraryConnection.opened(since: before, toPort: port)?.hold() else { return XCTFail("no connection held") }
        close(client)
        opened.removeAll { $0 == client }
        var polls = 0
        held.lingeringClose(quietNanoseconds: 60_000_000_000, limitNanoseconds: 60_000_000_000) {
            polls += 1
            return polls > 3
        }
        XCTAssertEqual(polls, 4)
    }

    func testAServerThatSaysNothingForTheQuietTimeIsNotWaitedOn() throws {
        let (listener, port) = try listen()
        let before = LibraryConnection.sockets()
        let client = try connect(port)
        _ = try accept(listener)  // never reads, never writes, never closes: a server stopped for good
        let job = LingeringJob(LibraryConnection.opened(since: before, toPort: port)?.hold(), quiet: 200_000_000)
        XCTAssertTrue(job.isHeld)
        close(client)
        opened.removeAll { $0 == client }
        let lingering = WaitableThread { job.run() }
        lingering.start()
        XCTAssertTrue(lingering.join(seconds: 20), "let go after 0.2 s of quiet, not the 60 s limit")
    }

    /// A hostile server that never stops writing keeps the quiet time from running out: the limit ends it,
    /// reading into the one scratch buffer, so nothing grows meanwhile.
    func testAServerThatFloodsIsLetGoAtTheLimit() throws {
        let (listener, port) = try listen()
        let before = LibraryConnection.sockets()
        let client = try connect(port)
        let server = try accept(listener)
        let job = LingeringJob(LibraryConnection.opened(since: before, toPort: port)?.hold(), limit: 300_000_000)
        XCTAssertTrue(job.isHeld)
        close(client)
        opened.removeAll { $0 == client }
        let flood = WaitableThread {
            var block = [UInt8](repeating: 9, count: 65536)
            while block.withUnsafeMutableBytes({ send(server, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 {}
        }
        flood.start()
        let lingering = WaitableThread { job.run() }
        lingering.start()
        XCTAssertTrue(lingering.join(seconds: 20), "let go at the 0.3 s limit, though the server never went quiet")
        XCTAssertTrue(flood.join(seconds: 20), "the flood ends when the connection is closed")
    }

    // MARK: plain POSIX sockets on loopback

    private func listen() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        opened.append(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Bool in
                bind(fd, p, length) == 0 && Glibc.listen(fd, 8) == 0 && getsockname(fd, p, &length) == 0
            }
        }
        XCTAssertTrue(bound)
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    private func connect(_ port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        opened.append(fd)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = port.bigEndian
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(rc, 0)
        return fd
    }

    private func accept(_ listener: Int32) throws -> Int32 {
        let fd = Glibc.accept(listener, nil, nil)
        XCTAssertGreaterThanOrEqual(fd, 0)
        opened.append(fd)
        return fd
    }
}

/// The held connection, handed to the thread that closes it.
private final class LingeringJob: @unchecked Sendable {
    var held: HeldConnection?
    init(_ held: consuming HeldConnection?, quiet: UInt64 = 30_000_000_000, limit: UInt64 = 60_000_000_000) {
        self.held = held
        self.quiet = quiet
        self.limit = limit
    }
    var isHeld: Bool { held != nil }
    let quiet: UInt64
    let limit: UInt64
    func run() { held.take()?.lingeringClose(quietNanoseconds: quiet, limitNanoseconds: limit, abort: { false }) }
}

/// A thread whose end can be waited for with a limit.
private final class WaitableThread: @unchecked Sendable {
    private let body: () -> Void
    private var thread = pthread_t()
    private let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    init(_ body: @escaping () -> Void) {
        self.body = body
        sem_init(done, 0, 0)
    }

    deinit {
        sem_destroy(done)
        done.deallocate()
    }

    func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        pthread_create(&thread, nil, { box in
            let me = Unmanaged<WaitableThread>.fromOpaque(box!).takeRetainedValue()
            me.body()
            sem_post(me.done)
            return nil
        }, box)
    }

    func join(seconds: Int) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += seconds
        guard sem_timedwait(done, &deadline) == 0 else { return false }
        pthread_join(thread, nil)
        return true
    }
}
