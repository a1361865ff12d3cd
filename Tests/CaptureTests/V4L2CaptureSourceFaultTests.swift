@testable import Capture
import Frames
import CV4L2
import Glibc
import Synchronization
import Threading
import XCTest

/// A pretend camera behind the `V4L2System` seam: one YUYV 4x2 format at 30 fps (or NV12,
/// which may be captured zero-copy), a ring of mmap or user-pointer buffers, and a script
/// of what each DQBUF returns.
final class MockCamera: V4L2System, @unchecked Sendable {
    enum Dequeue {
        case frame(sequence: UInt32, flags: UInt32 = 0)
        case failure(Int32)
    }

    static let fd: Int32 = 1000
    let width = 4, height = 2
    let pixelFormat: V4L2PixelFormat
    /// Whether REQBUFS takes V4L2_MEMORY_USERPTR (a driver needing contiguous memory doesn't).
    let acceptsUserPointers: Bool
    private var bytesPerLine: Int
    private var frameBytes: Int { pixelFormat == .nv12 ? bytesPerLine * height * 3 / 2 : bytesPerLine * height }
    private let lock = Mutex(State())
    struct State {
        var script: [Dequeue] = []
        var dequeueCalls = 0
        var pollCalls = 0
        var queued: [UInt32] = []
        /// USERPTR: the address queued in each slot, and every address ever lent.
        var userPointers: [UInt32: UInt] = [:]
        var lentAddresses: Set<UInt> = []
        var memoryType = V4L2_MEMORY_MMAP.rawValue
        var memory: [UInt] = []   // addresses, so the state stays Sendable
        var streaming = false
        var locked = false
        /// Every ioctl from the first call of this request on fails with ENODEV: the camera was unplugged there.
        var goneAt: UInt?
        var gone = false
        var requests: [UInt] = []
        var opened: [String] = []
    }

    /// Unplugs the camera at the first call of `request` (it and every later ioctl fail with ENODEV).
    func unplug(at request: UInt) { lock.withLock { $0.goneAt = request } }
    var requestsMade: [UInt] { lock.withLock { $0.requests } }

    init(script: [Dequeue], pixelFormat: V4L2PixelFormat = .yuyv, acceptsUserPointers: Bool = true) {
        self.pixelFormat = pixelFormat
        self.acceptsUserPointers = acceptsUserPointers
        bytesPerLine = pixelFormat == .nv12 ? 4 : 8
        lock.withLock { $0.script = script }
    }

    var memory: UInt32 { lock.withLock { $0.memoryType } }
    var lentAddresses: Set<UInt> { lock.withLock { $0.lentAddresses } }
    deinit { lock.withLock { $0.memory.forEach { free(UnsafeMutableRawPointer(bitPattern: $0)) } } }

    var dequeueCalls: Int { lock.withLock { $0.dequeueCalls } }
    var pollCalls: Int { lock.withLock { $0.pollCalls } }

    /// The nodes that open (as this one camera), and every path an open was tried on.
    var nodes: Set<String> = ["/dev/video0"]
    var openedPaths: [String] { lock.withLock { $0.opened } }

    func open(_ path: String, flags: Int32) -> Int32 {
        lock.withLock { $0.opened.append(path) }
        return nodes.contains(path) ? Self.fd : -ENOENT
    }

    func close(_ fd: Int32) -> Int32 { 0 }

    func lockExclusively(_ fd: Int32) -> Int32 {
        lock.withLock { s in
            defer { s.locked = true }
            return s.locked ? -EWOULDBLOCK : 0
        }
    }

    func ioctl(_ fd: Int32, _ request: UInt, _ arg: UnsafeMutableRawPointer) -> Int32 {
        let unplugged = lock.withLock { s -> Bool in
            s.requests.append(request)
            if s.goneAt == request { s.gone = true }
            return s.gone
        }
        if unplugged { return -ENODEV }
        if let answer = answerDiscovery(request, arg, format: pixelFormat, width: width, height: height) { return answer }
        switch request {
        case UInt(CAMREC_VIDIOC_STREAMON):
            lock.withLock { $0.streaming = true }
        case UInt(CAMREC_VIDIOC_S_FMT):
            let p = arg.assumingMemoryBound(to: v4l2_format.self)
            // Like vivid: a longer row than the minimum is honoured.
            bytesPerLine = max(bytesPerLine, Int(p.pointee.fmt.pix.bytesperline))
            p.pointee.fmt.pix.bytesperline = UInt32(bytesPerLine)
            p.pointee.fmt.pix.sizeimage = UInt32(frameBytes)
        case UInt(CAMREC_VIDIOC_REQBUFS):
            let p = arg.assumingMemoryBound(to: v4l2_requestbuffers.self)
            if p.pointee.memory == V4L2_MEMORY_USERPTR.rawValue && !acceptsUserPointers { return -EINVAL }
            lock.withLock { $0.memoryType = p.pointee.memory }
        case UInt(CAMREC_VIDIOC_QUERYBUF):
            let p = arg.assumingMemoryBound(to: v4l2_buffer.self)
            p.pointee.m.offset = p.pointee.index * 4096
            p.pointee.length = UInt32(frameBytes)
        case UInt(CAMREC_VIDIOC_QBUF):
            let p = arg.assumingMemoryBound(to: v4l2_buffer.self)
            return lock.withLock { s -> Int32 in
                guard p.pointee.memory == s.memoryType else { return -EINVAL }
                if s.memoryType == V4L2_MEMORY_USERPTR.rawValue {
                    guard p.pointee.m.userptr != 0, Int(p.pointee.length) >= frameBytes else { return -EFAULT }
                    s.userPointers[p.pointee.index] = p.pointee.m.userptr
                    s.lentAddresses.insert(p.pointee.m.userptr)
                }
                s.queued.append(p.pointee.index)
                return 0
            }
        case UInt(CAMREC_VIDIOC_DQBUF):
            let p = arg.assumingMemoryBound(to: v4l2_buffer.self)
            return lock.withLock { s -> Int32 in
                s.dequeueCalls += 1
                guard !s.script.isEmpty, !s.queued.isEmpty else { return -EAGAIN }
                switch s.script.removeFirst() {
                case .failure(let errno):
                    return -errno
                case .frame(let sequence, let flags):
                    let index = s.queued.removeFirst()
                    p.pointee.index = index
                    p.pointee.sequence = sequence
                    p.pointee.flags = flags | UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
                    p.pointee.bytesused = UInt32(frameBytes)
                    if let address = s.userPointers[index], let memory = UnsafeMutableRawPointer(bitPattern: address) {
                        // The camera writes the frame into the lent memory: luma = the sequence number.
                        memset(memory, Int32(truncatingIfNeeded: sequence), bytesPerLine * height)
                        p.pointee.m.userptr = address
                    }
                    p.pointee.timestamp = timeval(tv_sec: 100, tv_usec: Int(sequence) * 33_333)
                    return 0
                }
            }
        default:
            return -ENOTTY
        }
        return 0
    }

    func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, timeoutMilliseconds: Int32) -> Int32 {
        let ready = lock.withLock { s -> Bool in
            s.pollCalls += 1
            return !s.script.isEmpty
        }
        if ready {
            fds[0].revents = Int16(POLLIN)
            return 1
        }
        // Nothing scripted: wait on the source's wake-up pipe only, as a quiet camera would.
        fds[0].revents = 0
        return Glibc.poll(fds + 1, 1, timeoutMilliseconds)
    }

    func mmap(length: Int, fd: Int32, offset: Int) -> (UnsafeMutableRawPointer?, Int32) {
        let p = malloc(length)!
        memset(p, 0x80, length)
        let address = UInt(bitPattern: p)
        lock.withLock { $0.memory.append(address) }
        return (p, 0)
    }

    func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> Int32 { 0 }
}

final class V4L2CaptureSourceFaultTests: XCTestCase {
    private func started(_ camera: MockCamera, stallTimeout: UInt64? = nil) throws -> (V4L2CaptureSource, PixelBufferPool) {
        let source = try V4L2CaptureSource(path: "/dev/video0", request: .init(), stallTimeout: stallTimeout, system: camera)
        let pool = PixelBufferPool(format: .nv12, width: source.frameSize.width, height: source.frameSize.height, capacity: 4)
        try source.start(pool: pool)
        return (source, pool)
    }

    func testDQBUFInterruptedThenENODEVEndsAsDeviceLostWithoutSpinning() throws {
        let camera = MockCamera(script: [.failure(EINTR), .failure(ENODEV)])
        let (source, _) = try started(camera)
        XCTAssertNil(try source.nextFrame())
        guard case .deviceLost(let message) = source.end else { return XCTFail("end is \(String(describing: source.end))") }
        XCTAssertEqual(message, "/dev/video0 was disconnected while recording (VIDIOC_DQBUF: No such device)")
        XCTAssertEqual(camera.dequeueCalls, 2, "EINTR retried once, ENODEV not retried")
        XCTAssertEqual(camera.pollCalls, 1)
        XCTAssertNil(try source.nextFrame(), "stays ended")
        XCTAssertEqual(camera.dequeueCalls, 2, "no ioctl on a lost device")
    }

    func testGapsAndErroredBuffersAreCountedAndFramesCarryDeviceTimes() throws {
        let error = UInt32(V4L2_BUF_FLAG_ERROR)
        let camera = MockCamera(script: [.frame(sequence: 7), .frame(sequence: 8), .frame(sequence: 12),
                                         .frame(sequence: 13, flags: error), .frame(sequence: 14), .failure(EIO)])
        let (source, _) = try started(camera)
        // Values are copied out: a recycled buffer is refilled by the next frame.
        var frames: [(sequence: UInt64, presentation: UInt64, capture: UInt64)] = []
        while let frame = try source.nextFrame() {
            frames.append((frame.sequence, frame.presentationTimeNanoseconds, frame.captureTimeNanoseconds))
            frame.recycle()
        }
        XCTAssertEqual(frames.map(\.sequence), [0, 1, 5, 7])
        XCTAssertEqual(frames.map(\.presentation), [0, 33_333_000, 166_665_000, 233_331_000])
        XCTAssertEqual(frames.first?.capture, 100_000_000_000 + 7 * 33_333_000)
        XCTAssertEqual(source.statistics.delivered, 4)
        XCTAssertEqual(source.statistics.dropped, 4, "3 missing sequence numbers + 1 errored buffer")
        XCTAssertEqual(source.statistics.errored, 1)
        guard case .deviceLost(let message) = source.end else { return XCTFail() }
        XCTAssertTrue(message.contains("fatal streaming error (VIDIOC_DQBUF: Input/output error)"), message)
    }

    func testAnEmptyPoolDropsTheFrameButRequeuesTheBuffer() throws {
        let camera = MockCamera(script: (0..<6).map { .frame(sequence: $0) } + [.failure(ENODEV)])
        let (source, pool) = try started(camera)
        var held: [PixelBuffer] = []
        while let frame = try source.nextFrame() { held.append(frame) }   // never recycled
        XCTAssertEqual(held.count, pool.capacity)
        XCTAssertEqual(source.statistics.dropped, 2)
        XCTAssertEqual(camera.dequeueCalls, 7, "the camera was never starved of buffers")
    }

    /// Also with `--stall-timeout 3600`: a stop (SIGINT) during a long wait for a paused camera is not
    /// held up by the watchdog's hour.
    func testStopFromAnotherThreadWakesAWaitingNextFrameQuickly() throws {
        for stallTimeout in [nil, 3_600_000_000_000] as [UInt64?] {
            let camera = MockCamera(script: [])
            let (source, _) = try started(camera, stallTimeout: stallTimeout)
            let stopper = Thread { usleep(50_000); source.stop() }
            let t0 = MonotonicClock.now()
            stopper.start()
            XCTAssertNil(try source.nextFrame())
            let waited = MonotonicClock.now() - t0
            XCTAssertEqual(source.end, .finished, "stall timeout \(String(describing: stallTimeout))")
            XCTAssertGreaterThanOrEqual(waited, 50_000_000)
            // Woken by the stop pipe: one poll, not a timeout (the first one would be a second away).
            XCTAssertEqual(camera.pollCalls, 1, "stall timeout \(String(describing: stallTimeout))")
        }
    }

    func testNoFrameForTwoSecondsIsAStall() throws {
        let (waited, camera) = try secondsToStall(stallTimeout: nil)
        XCTAssertGreaterThanOrEqual(waited, 2, "not before the watchdog's two seconds")
        XCTAssertLessThan(camera.pollCalls, 10, "waited in poll, not in a loop")
    }

    /// `--stall-timeout 3`: the watchdog waits the three seconds asked for, not its own two.
    func testAStallTimeoutAskedForIsWaitedOutInFull() throws {
        let (waited, _) = try secondsToStall(stallTimeout: 3_000_000_000)
        XCTAssertGreaterThanOrEqual(waited, 3, "not before the three seconds asked for")
    }

    /// 10 ms asked of the 30 fps camera: the gap between two frames (33 ms) is no stall, so it waits two.
    func testAStallTimeoutUnderTwoFrameIntervalsWaitsTwo() throws {
        let (waited, _) = try secondsToStall(stallTimeout: 10_000_000)
        XCTAssertGreaterThanOrEqual(waited, 2.0 / 30, "two frame intervals at least")
    }

    /// One frame, then none: how long the source waited before it ended as stalled (asserted).
    private func secondsToStall(stallTimeout: UInt64?) throws -> (Double, MockCamera) {
        let camera = MockCamera(script: [.frame(sequence: 0)])
        let (source, _) = try started(camera, stallTimeout: stallTimeout)
        XCTAssertEqual(source.requestedStallTimeout, stallTimeout, "kept for the camera's next opening after a loss")
        XCTAssertNotNil(try source.nextFrame())
        let t0 = MonotonicClock.now()
        XCTAssertNil(try source.nextFrame())
        let waited = Double(MonotonicClock.now() - t0) / 1e9
        if case .stalled(let message) = source.end {
            XCTAssertTrue(message.contains("delivered no frame for "), message)
        } else {
            XCTFail("end is \(String(describing: source.end))")
        }
        return (waited, camera)
    }

    func testSecondOpenOfALockedDeviceIsBusy() throws {
        let camera = MockCamera(script: [])
        let first = try V4L2CaptureSource(path: "/dev/video0", request: .init(), system: camera)
        XCTAssertThrowsError(try V4L2CaptureSource(path: "/dev/video0", request: .init(), system: camera)) { error in
            XCTAssertEqual((error as? CaptureError)?.kind, .deviceBusy)
        }
        XCTAssertEqual(first.frameSize, FrameSize(width: 4, height: 2))
        XCTAssertEqual(first.framesPerSecond, 30)
    }

    func testNV12IsCapturedZeroCopyIntoPoolBuffers() throws {
        let camera = MockCamera(script: (1...6).map { .frame(sequence: $0) } + [.failure(ENODEV)], pixelFormat: .nv12)
        let source = try V4L2CaptureSource(path: "/dev/video0", request: .init(), system: camera)
        XCTAssertEqual(source.poolBuffersHeld, 4)
        XCTAssertEqual(source.bytesPerLine, [64], "asked for the pool's stride")
        let pool = PixelBufferPool(format: .nv12, width: 4, height: 2, capacity: 4 + 2)
        try source.start(pool: pool)
        XCTAssertEqual(source.memoryMode, .zeroCopy)
        XCTAssertEqual(camera.memory, V4L2_MEMORY_USERPTR.rawValue)
        XCTAssertEqual(pool.freeCount, 2, "the ring of 4 is lent to the camera")
        var lumas: [UInt8] = []
        while let frame = try source.nextFrame() {
            // The very memory the camera wrote: no copy in between.
            XCTAssertTrue(camera.lentAddresses.contains(UInt(bitPattern: frame.planes[0].base)))
            lumas.append(frame.planes[0].base[0])
            frame.recycle()
        }
        XCTAssertEqual(lumas, [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(source.statistics.dropped, 0)
        XCTAssertEqual(pool.freeCount, pool.capacity, "after the end every buffer is back in the pool")
    }

    /// The source as a recording drives it: a capture thread takes the camera's frames while another thread
    /// reads `statistics` and `summary`, then stops it while the quiet camera keeps it waiting in poll. Each
    /// frame is the memory the camera wrote its sequence number into, numbered by that sequence from the
    /// first (the one it skipped counted as dropped); the stop ends the capture as finished, every buffer back.
    func testStatisticsAndStopFromAnotherThreadWhileACaptureThreadTakesFrames() throws {
        let sequences: [UInt32] = [1, 2, 3, 5, 6, 7, 8, 9]
        let camera = MockCamera(script: sequences.map { .frame(sequence: $0) }, pixelFormat: .nv12)
        let source = try V4L2CaptureSource(path: "/dev/video0", request: .init(), system: camera)
        let pool = PixelBufferPool(format: .nv12, width: 4, height: 2, capacity: 4 + 2)
        try source.start(pool: pool)
        let taken = Mutex<[(sequence: UInt64, luma: UInt8)]>([])
        let capture = WorkerThread(name: "test-capture") {
            while let frame = try? source.nextFrame() {
                taken.withLock { $0.append((frame.sequence, frame.planes[0].base[0])) }
                frame.recycle()
            }
        }
        capture.start()
        let deadline = MonotonicClock.now() + 10_000_000_000
        var otherSummaries = 0
        repeat {
            if !source.summary.hasSuffix("USERPTR)") { otherSummaries += 1 }
            usleep(100)
        } while source.statistics.delivered < UInt64(sequences.count) && MonotonicClock.now() < deadline
        source.stop()
        capture.join()
        let frames = taken.withLock { $0 }
        XCTAssertEqual(otherSummaries, 0, "the summary names the zero-copy path while capturing")
        XCTAssertEqual(frames.map(\.luma), sequences.map { UInt8($0) }, "the camera's own frames, in its order")
        XCTAssertEqual(frames.map(\.sequence), sequences.map { UInt64($0 - sequences[0]) })
        XCTAssertEqual(source.statistics.delivered, UInt64(sequences.count))
        XCTAssertEqual(source.statistics.dropped, 1, "sequence 4 never came")
        XCTAssertEqual(source.end, .finished)
        XCTAssertEqual(pool.freeCount, pool.capacity, "after the stop every buffer is back in the pool")
    }

    func testZeroCopyWithAnEmptyPoolDropsTheFrameButKeepsTheRingFull() throws {
        let camera = MockCamera(script: (0..<6).map { .frame(sequence: $0) } + [.failure(ENODEV)], pixelFormat: .nv12)
        let source = try V4L2CaptureSource(path: "/dev/video0", request: .init(), system: camera)
        let pool = PixelBufferPool(format: .nv12, width: 4, height: 2, capacity: 4 + 2)
        try source.start(pool: pool)
        var held: [PixelBuffer] = []
        while let frame = try source.nextFrame() { held.append(frame) }   // never recycled
        XCTAssertEqual(held.count, 2, "only the two buffers beyond the ring")
        XCTAssertEqual(source.statistics.dropped, 4)
        XCTAssertEqual(camera.dequeueCalls, 7, "the camera was never starved of buffers")
        held.forEach { $0.recycle() }
        XCTAssertEqual(pool.freeCount, pool.capacity)
    }

    func testADriverWithoutUserPointersGetsTheMmapPath() throws {
        let camera = MockCamera(script: [.frame(sequence: 0), .failure(ENODEV)], pixelFormat: .nv12, acceptsUserPointers: false)
        let source = try V4L2CaptureSource(path: "/dev/video0", request: .init(), system: camera)
        let pool = PixelBufferPool(format: .nv12, width: 4, height: 2, capacity: 4 + 2)
        try source.start(pool: pool)
        XCTAssertEqual(source.memoryMode, .converted)
        XCTAssertEqual(camera.memory, V4L2_MEMORY_MMAP.rawValue)
        XCTAssertEqual(pool.freeCount, pool.capacity, "nothing of the pool kept")
        let frame = try XCTUnwrap(try source.nextFrame())
        XCTAssertEqual(frame.planes[0].base[0], 0x80, "copied from the mmap'd buffer")
        frame.recycle()
    }

    /// A camera unplugged at any step of start-up (identifying it, negotiating its format, allocating and
    /// queueing buffers, starting the stream, or before its first frame) ends start-up at that step with
    /// one line that says it went away and names the ioctl, and nothing held: on both memory paths.
    func testAnUnplugAtEveryStepOfStartUpIsNoticedThere() throws {
        let steps: [(String, UInt)] = [
            ("VIDIOC_QUERYCAP", UInt(CAMREC_VIDIOC_QUERYCAP)), ("VIDIOC_ENUM_FMT", UInt(CAMREC_VIDIOC_ENUM_FMT)),
            ("VIDIOC_S_FMT", UInt(CAMREC_VIDIOC_S_FMT)), ("VIDIOC_S_PARM", UInt(CAMREC_VIDIOC_S_PARM)),
            ("VIDIOC_REQBUFS", UInt(CAMREC_VIDIOC_REQBUFS)), ("VIDIOC_QUERYBUF", UInt(CAMREC_VIDIOC_QUERYBUF)),
            ("VIDIOC_QBUF", UInt(CAMREC_VIDIOC_QBUF)), ("VIDIOC_STREAMON", UInt(CAMREC_VIDIOC_STREAMON)),
            ("VIDIOC_DQBUF", UInt(CAMREC_VIDIOC_DQBUF)),
        ]
        // YUYV: mmap and one conversion pass; NV12: zero-copy USERPTR; MJPEG: mmap and the decoder.
        for format in [V4L2PixelFormat.yuyv, .nv12, .mjpeg] {
            for (name, request) in steps {
                let camera = MockCamera(script: [.frame(sequence: 0)], pixelFormat: format)
                camera.unplug(at: request)
                let what = "\(format) unplugged at \(name)"
                var pool: PixelBufferPool?
                var failure: String?
                do {
                    let source = try V4L2CaptureSource(path: "/dev/video0", request: .init(), system: camera)
                    let p = PixelBufferPool(format: .nv12, width: 4, height: 2, capacity: 6)
                    pool = p
                    try source.start(pool: p)
                    let t0 = MonotonicClock.now()
                    let frame = try source.nextFrame()
                    frame?.recycle()
                    guard camera.requestsMade.contains(request) else { continue }
                    XCTAssertNil(frame, what)
                    XCTAssertLessThan(MonotonicClock.now() - t0, 2_000_000_000, "\(what): noticed within 2 s")
                    if case .deviceLost(let message) = source.end { failure = message }
                    else { XCTFail("\(what): ended \(String(describing: source.end))") }
                } catch let error as CaptureError {
                    XCTAssertEqual(error.kind, .sourceMissing, "\(what): \(error.message)")
                    failure = error.message
                }
                guard camera.requestsMade.contains(request) else { continue }   // this path never makes that call
                let message = try XCTUnwrap(failure, "\(what): start-up went on as if nothing happened")
                XCTAssertTrue(message.contains("gone") || message.contains("went away") || message.contains("disconnected")
                              || message.contains("unplugged"), "\(what): \(message)")
                XCTAssertFalse(message.contains("\n"), "\(what): one line")
                if let pool { XCTAssertEqual(pool.freeCount, pool.capacity, "\(what): every pool buffer back") }
            }
        }
    }

    func testMissingNodeIsSourceMissing() {
        XCTAssertThrowsError(try V4L2CaptureSource(path: "/dev/video7", request: .init(), system: MockCamera(script: []))) {
            XCTAssertEqual(($0 as? CaptureError)?.kind, .sourceMissing)
        }
    }
}
