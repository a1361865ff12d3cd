import CFFmpeg
@testable import Capture
import Frames
import CV4L2
import Glibc
import Synchronization
import XCTest

/// A pretend MJPEG camera behind the `V4L2System` seam, sending real JPEGs (from
/// libavcodec's encoder) and whatever else a script says: MJPG at one size, 30 fps,
/// a ring of mapped buffers `sizeimage` long whose tails keep stale bytes.
final class MockMJPEGCamera: V4L2System, @unchecked Sendable {
    enum Frame {
        case bytes([UInt8])
        /// bytesused 0.
        case empty
        case failure(Int32)
    }

    static let fd: Int32 = 1001
    let width: Int, height: Int
    var sizeImage: Int { width * height * 2 }
    /// The frame for each DQBUF in turn; nil when the camera has nothing more to send.
    private let next: @Sendable (Int) -> Frame?
    private let lock = Mutex(State())
    struct State {
        var dequeued = 0
        var queued: [UInt32] = []
        var memory: [UInt] = []
        var finished = false
    }

    init(width: Int, height: Int, next: @escaping @Sendable (Int) -> Frame?) {
        self.width = width
        self.height = height
        self.next = next
    }

    deinit { lock.withLock { $0.memory.forEach { free(UnsafeMutableRawPointer(bitPattern: $0)) } } }

    func open(_ path: String, flags: Int32) -> Int32 { path == "/dev/video0" ? Self.fd : -ENOENT }
    func close(_ fd: Int32) -> Int32 { 0 }
    func lockExclusively(_ fd: Int32) -> Int32 { 0 }

    func ioctl(_ fd: Int32, _ request: UInt, _ arg: UnsafeMutableRawPointer) -> Int32 {
        if let answer = answerDiscovery(request, arg, format: .mjpeg, compressed: true, width: width, height: height) {
            return answer
        }
        switch request {
        case UInt(CAMREC_VIDIOC_STREAMON), UInt(CAMREC_VIDIOC_REQBUFS):
            break
        case UInt(CAMREC_VIDIOC_S_FMT):
            // As uvcvideo does for MJPEG: no bytesperline, sizeimage an upper bound.
            let p = arg.assumingMemoryBound(to: v4l2_format.self)
            p.pointee.fmt.pix.bytesperline = 0
            p.pointee.fmt.pix.sizeimage = UInt32(sizeImage)
        case UInt(CAMREC_VIDIOC_QUERYBUF):
            let p = arg.assumingMemoryBound(to: v4l2_buffer.self)
            p.pointee.m.offset = p.pointee.index * UInt32(sizeImage)
            p.pointee.length = UInt32(sizeImage)
        case UInt(CAMREC_VIDIOC_QBUF):
            let index = arg.assumingMemoryBound(to: v4l2_buffer.self).pointee.index
            lock.withLock { $0.queued.append(index) }
        case UInt(CAMREC_VIDIOC_DQBUF):
            let p = arg.assumingMemoryBound(to: v4l2_buffer.self)
            return lock.withLock { s -> Int32 in
                guard !s.finished, !s.queued.isEmpty else { return -EAGAIN }
                guard let frame = next(s.dequeued) else {
                    s.finished = true
                    return -EAGAIN
                }
                let sequence = UInt32(s.dequeued)
                s.dequeued += 1
                let index = s.queued.removeFirst()
                let base = UnsafeMutableRawPointer(bitPattern: s.memory[Int(index)])!
                p.pointee.index = index
                p.pointee.sequence = sequence
                p.pointee.flags = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
                p.pointee.timestamp = timeval(tv_sec: 100, tv_usec: Int(sequence) * 33_333)
                switch frame {
                case .failure(let errno):
                    return -errno
                case .empty:
                    p.pointee.bytesused = 0
                case .bytes(let bytes):
                    let count = min(bytes.count, sizeImage)
                    bytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: count) }
                    p.pointee.bytesused = UInt32(count)
                }
                return 0
            }
        default:
            return -ENOTTY
        }
        return 0
    }

    func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, timeoutMilliseconds: Int32) -> Int32 {
        if !lock.withLock({ $0.finished }) {
            fds[0].revents = Int16(POLLIN)
            return 1
        }
        fds[0].revents = 0
        return Glibc.poll(fds + 1, 1, timeoutMilliseconds)
    }

    func mmap(length: Int, fd: Int32, offset: Int) -> (UnsafeMutableRawPointer?, Int32) {
        let p = malloc(length)!
        // Stale bytes after bytesused: JPEG markers, to catch reads past the frame.
        memset(p, 0xD9, length)
        lock.withLock { $0.memory.append(UInt(bitPattern: p)) }
        return (p, 0)
    }

    func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> Int32 { 0 }
}

final class V4L2MJPEGCaptureTests: XCTestCase {
    private let width = 320, height = 240

    private func started(_ camera: MockMJPEGCamera, format: PixelFormat = .i420,
                         request: V4L2FormatRequest = .init()) throws -> V4L2CaptureSource {
        let source = try V4L2CaptureSource(path: "/dev/video0", request: request, system: camera)
        let pool = PixelBufferPool(format: format, width: source.frameSize.width, height: source.frameSize.height, capacity: 4)
        try source.start(pool: pool)
        return source
    }

    func testGoodFramesAreDecodedAndBadOnesCountedAsErrored() throws {
        let reference = try JPEGTestPictures.pattern(width: width, height: height)
        let good = try JPEGTestPictures.jpeg(of: reference, pixelFormat: AV_PIX_FMT_YUVJ422P)
        let truncated = Array(good.prefix(good.count / 2))
        let garbage = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        let script: [MockMJPEGCamera.Frame] = [.bytes(good), .bytes(truncated), .bytes(good), .empty, .bytes(garbage),
                                               .bytes(good), .failure(ENODEV)]
        let camera = MockMJPEGCamera(width: width, height: height) { $0 < script.count ? script[$0] : nil }
        let source = try started(camera, request: .init(pixelFormat: .mjpeg))
        XCTAssertEqual(source.pixelFormat, .mjpeg)
        var sequences: [UInt64] = []
        while let frame = try source.nextFrame() {
            sequences.append(frame.sequence)
            let lumaPSNR = JPEGTestPictures.psnr(frame, reference, plane: 0) ?? .infinity
            let chromaPSNR = JPEGTestPictures.psnr(frame, reference, plane: 1) ?? .infinity
            // Measured: luma 50.38 dB, Cb 57.68 dB on every good frame (4:2:2 JPEG at libavcodec's default
            // quality); the bounds are MJPEGDecoderTests' (2 to 3 dB below).
            XCTAssertGreaterThan(lumaPSNR, MJPEGDecoderTests.lumaPSNRBound, "frame \(frame.sequence): luma PSNR \(lumaPSNR) dB")
            XCTAssertGreaterThan(chromaPSNR, MJPEGDecoderTests.chromaPSNRBound, "frame \(frame.sequence): Cb PSNR \(chromaPSNR) dB")
            frame.recycle()
        }
        XCTAssertEqual(sequences, [0, 2, 5])
        XCTAssertEqual(source.statistics.delivered, 3)
        XCTAssertEqual(source.statistics.errored, 3, "truncated, empty, garbage")
        XCTAssertEqual(source.statistics.dropped, 3)
        guard case .deviceLost = source.end else { return XCTFail("end is \(String(describing: source.end))") }
    }

    /// Frames keep coming but none decodes: that is a stalled camera, not a busy one. (The
    /// watchdog's 2 s pass in real time; nothing here measures them.)
    func testOnlyGarbageEndsAsStalled() throws {
        let camera = MockMJPEGCamera(width: width, height: height) { _ in
            usleep(2_000)
            return .bytes([0xFF, 0xD8] + [UInt8](repeating: 0x55, count: 5000))
        }
        let source = try started(camera, format: .nv12)
        XCTAssertNil(try source.nextFrame())
        guard case .stalled(let message) = source.end else { return XCTFail("end is \(String(describing: source.end))") }
        XCTAssertTrue(message.hasPrefix("/dev/video0 delivered only unusable MJPEG frames for "), message)
        XCTAssertTrue(message.hasSuffix("(the last was a truncated JPEG (no end-of-image marker)); the camera stalled"), message)
        XCTAssertEqual(source.statistics.delivered, 0)
        XCTAssertGreaterThan(source.statistics.errored, 0)
        XCTAssertEqual(source.statistics.errored, source.statistics.dropped)
    }
}
