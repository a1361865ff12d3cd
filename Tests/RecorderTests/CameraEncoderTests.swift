import Bitstream
@testable import Capture
import CV4L2
import Encoder
import Frames
import Glibc
import Hub
import Logging
import Synchronization
import XCTest

@testable import Recorder

/// A pretend camera that encodes H.264 itself, behind the V4L2 layer's `V4L2System` seam: the codec
/// controls it is given (absent ones answer EINVAL to VIDIOC_QUERYCTRL, as drivers do), and a stream
/// that obeys them as a camera's encoder would: an IDR every `I_PERIOD` (or `GOP_SIZE`) frames, or
/// every `ownPeriod` when nothing was set, and an IDR at the next frame after FORCE_KEY_FRAME. SPS and
/// PPS come once, with the first IDR; every access unit starts with an AUD and IDRs carry an SEI, as
/// some cameras send them. Slices are real libx264 units.
final class MockH264Camera: V4L2System, @unchecked Sendable {
    static let fd: Int32 = 1002
    let width = 320, height = 180
    private let controls: Set<CameraCodecControls.Control>
    private let units: (sps: [UInt8], pps: [UInt8], idr: [UInt8], p: [UInt8])
    private let frameCount: Int
    private let ownPeriod: Int
    /// Called before the camera makes frame n (a test joins a receiver there).
    private let beforeFrame: @Sendable (Int) -> Void
    /// Whether the camera may make frame n yet: a test keeps it in step with what was published.
    private let mayMake: @Sendable (Int) -> Bool
    private let lock = Mutex(State())
    struct State {
        var queued: [UInt32] = []
        var memory: [UInt] = []
        var made = 0
        var period: Int?
        var forcePending = false
        /// Every VIDIOC_S_CTRL: (control id, value, frames made before it).
        var set: [(id: UInt32, value: Int32, atFrame: Int)] = []
        /// Each access unit as sent.
        var sent: [[UInt8]] = []
        var idrFrames: [Int] = []
    }

    static let aud: [UInt8] = [0x09, 0xF0]
    static let sei: [UInt8] = [0x06, 0x05, 0x01, 0x00, 0x80]   // an empty user-data SEI

    init(controls: Set<CameraCodecControls.Control>, units: (sps: [UInt8], pps: [UInt8], idr: [UInt8], p: [UInt8]),
         frames: Int, ownPeriod: Int = 10, mayMake: @escaping @Sendable (Int) -> Bool = { _ in true },
         beforeFrame: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.mayMake = mayMake
        self.controls = controls
        self.units = units
        frameCount = frames
        self.ownPeriod = ownPeriod
        self.beforeFrame = beforeFrame
    }

    deinit { lock.withLock { $0.memory.forEach { free(UnsafeMutableRawPointer(bitPattern: $0)) } } }

    var controlsSet: [(id: UInt32, value: Int32, atFrame: Int)] { lock.withLock { $0.set } }
    var sent: [[UInt8]] { lock.withLock { $0.sent } }
    var idrFrames: [Int] { lock.withLock { $0.idrFrames } }

    func open(_ path: String, flags: Int32) -> Int32 { path == "/dev/video0" ? Self.fd : -ENOENT }
    func close(_ fd: Int32) -> Int32 { 0 }
    func lockExclusively(_ fd: Int32) -> Int32 { 0 }
    func munmap(_ address: UnsafeMutableRawPointer, length: Int) -> Int32 { 0 }

    func mmap(length: Int, fd: Int32, offset: Int) -> (UnsafeMutableRawPointer?, Int32) {
        let p = malloc(length)!
        lock.withLock { $0.memory.append(UInt(bitPattern: p)) }
        return (p, 0)
    }

    func poll(_ fds: UnsafeMutablePointer<pollfd>, count: Int, timeoutMilliseconds: Int32) -> Int32 {
        let made = lock.withLock { $0.made }
        if made < frameCount {
            guard mayMake(made) else {
                usleep(1_000)
                fds[0].revents = 0
                return 0
            }
            fds[0].revents = Int16(POLLIN)
            return 1
        }
        fds[0].revents = 0
        return Glibc.poll(fds + 1, 1, timeoutMilliseconds)
    }

    private func nextAccessUnit(_ s: inout State) -> [UInt8] {
        let n = s.made
        let period = s.period ?? ownPeriod
        let isIDR = n == 0 || s.forcePending || (s.idrFrames.last.map { n - $0 >= period } ?? true)
        s.forcePending = false
        var parts = [Self.aud]
        if isIDR {
            if n == 0 { parts += [units.sps, units.pps] }
            parts += [Self.sei, units.idr]
            s.idrFrames.append(n)
        } else {
            parts.append(units.p)
        }
        // Three-byte start codes, as some cameras write them.
        return parts.flatMap { [0, 0, 1] + $0 }
    }

    func ioctl(_ fd: Int32, _ request: UInt, _ arg: UnsafeMutableRawPointer) -> Int32 {
        switch request {
        case UInt(CAMREC_VIDIOC_QUERYCAP):
            let caps = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING)
            arg.withMemoryRebound(to: v4l2_capability.self, capacity: 1) {
                $0.pointee.capabilities = caps | UInt32(V4L2_CAP_DEVICE_CAPS)
                $0.pointee.device_caps = caps
            }
        case UInt(CAMREC_VIDIOC_S_PRIORITY), UInt(CAMREC_VIDIOC_S_PARM), UInt(CAMREC_VIDIOC_STREAMOFF),
             UInt(CAMREC_VIDIOC_STREAMON), UInt(CAMREC_VIDIOC_REQBUFS):
            break
        case UInt(CAMREC_VIDIOC_ENUM_FMT):
            let p = arg.assumingMemoryBound(to: v4l2_fmtdesc.self)
            guard p.pointee.index == 0 else { return -EINVAL }
            p.pointee.pixelformat = V4L2PixelFormat.h264.rawValue
            p.pointee.flags = UInt32(V4L2_FMT_FLAG_COMPRESSED)
        case UInt(CAMREC_VIDIOC_ENUM_FRAMESIZES):
            let p = arg.assumingMemoryBound(to: v4l2_frmsizeenum.self)
            guard p.pointee.index == 0 else { return -EINVAL }
            p.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
            p.pointee.discrete = v4l2_frmsize_discrete(width: UInt32(width), height: UInt32(height))
        case UInt(CAMREC_VIDIOC_ENUM_FRAMEINTERVALS):
            let p = arg.assumingMemoryBound(to: v4l2_frmivalenum.self)
            guard p.pointee.index == 0 else { return -EINVAL }
            p.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
            p.pointee.discrete = v4l2_fract(numerator: 1, denominator: 30)
        case UInt(CAMREC_VIDIOC_G_PARM):
            let p = arg.assumingMemoryBound(to: v4l2_streamparm.self)
            p.pointee.parm.capture.capability = UInt32(V4L2_CAP_TIMEPERFRAME)
            p.pointee.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: 30)
        case UInt(CAMREC_VIDIOC_S_FMT), UInt(CAMREC_VIDIOC_G_FMT):
            let p = arg.assumingMemoryBound(to: v4l2_format.self)
            p.pointee.fmt.pix.width = UInt32(width)
            p.pointee.fmt.pix.height = UInt32(height)
            p.pointee.fmt.pix.pixelformat = V4L2PixelFormat.h264.rawValue
            p.pointee.fmt.pix.bytesperline = 0
            p.pointee.fmt.pix.sizeimage = UInt32(width * height)
        case UInt(CAMREC_VIDIOC_QUERYBUF):
            let p = arg.assumingMemoryBound(to: v4l2_buffer.self)
            p.pointee.m.offset = p.pointee.index * UInt32(width * height)
            p.pointee.length = UInt32(width * height)
        case UInt(CAMREC_VIDIOC_QBUF):
            let index = arg.assumingMemoryBound(to: v4l2_buffer.self).pointee.index
            lock.withLock { $0.queued.append(index) }
        case UInt(CAMREC_VIDIOC_QUERYCTRL):
            let p = arg.assumingMemoryBound(to: v4l2_queryctrl.self)
            guard let control = CameraCodecControls.Control(rawValue: p.pointee.id), controls.contains(control) else { return -EINVAL }
            p.pointee.minimum = control == .forceKeyFrame ? 0 : 1
            p.pointee.maximum = control == .bitrate ? 20_000_000 : control == .forceKeyFrame ? 0 : 600
        case UInt(CAMREC_VIDIOC_S_CTRL):
            let p = arg.assumingMemoryBound(to: v4l2_control.self)
            guard let control = CameraCodecControls.Control(rawValue: p.pointee.id), controls.contains(control) else { return -EINVAL }
            lock.withLock { s in
                s.set.append((p.pointee.id, p.pointee.value, s.made))
                switch control {
                case .h264IPeriod, .gopSize: s.period = Int(p.pointee.value)
                case .forceKeyFrame: s.forcePending = true
                case .bitrate: break
                }
            }
        case UInt(CAMREC_VIDIOC_DQBUF):
            let made = lock.withLock { $0.made }
            if made < frameCount { beforeFrame(made) }
            let p = arg.assumingMemoryBound(to: v4l2_buffer.self)
            return lock.withLock { s -> Int32 in
                guard s.made < frameCount, !s.queued.isEmpty else { return -EAGAIN }
                let unit = nextAccessUnit(&s)
                let index = s.queued.removeFirst()
                let base = UnsafeMutableRawPointer(bitPattern: s.memory[Int(index)])!
                unit.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: unit.count) }
                p.pointee.index = index
                p.pointee.sequence = UInt32(s.made)
                p.pointee.bytesused = UInt32(unit.count)
                p.pointee.flags = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
                // The camera's own clock: 5000 s plus 40 ms a frame, nothing like when camrec dequeues it.
                p.pointee.timestamp = timeval(tv_sec: 5000, tv_usec: s.made * 40_000)
                s.sent.append(unit)
                s.made += 1
                return 0
            }
        default:
            return -ENOTTY
        }
        return 0
    }
}

/// `--encoder camera` against the mock camera: the controls (IDR period, forced IDR for a joiner, bit
/// rate, a camera with none of them) and the stream the recorder makes of what the camera sends.
final class CameraEncoderTests: XCTestCase {
    /// SPS, PPS, an IDR slice and a P slice from libx264 (320x180), as a camera's encoder would make them.
    private static let units: (sps: [UInt8], pps: [UInt8], idr: [UInt8], p: [UInt8]) = {
        var settings = EncoderSettings(codec: .h264, size: FrameSize(width: 320, height: 180), framesPerSecond: 30,
                                       keyframeInterval: 100, preset: "ultrafast")
        settings.planarInput = false
        let encoder = try! EncoderSelection.software(settings)
        var packets: [[UInt8]] = []
        encoder.onPacket = { packets.append(Array($0.data)) }
        encoder.onBufferDone = { _ in }
        try! encoder.start()
        let pool = PixelBufferPool(format: encoder.inputFormat, width: 320, height: 180, capacity: 2)
        for n in 0..<2 {
            let buffer = pool.tryTake()!
            for plane in buffer.planes { memset(plane.base, Int32(40 + n * 30), plane.stride * plane.height) }
            buffer.sequence = UInt64(n)
            try! encoder.encode(buffer, forceKeyframe: n == 0)
            buffer.recycle()
        }
        try! encoder.flush()
        var found: [UInt8: [UInt8]] = [:]
        for packet in packets {
            packet.withUnsafeBytes { bytes in
                AnnexBScanner.forEachUnit(in: bytes) { range, _ in
                    let unit = [UInt8](bytes[range])
                    if found[unit[0] & 0x1F] == nil { found[unit[0] & 0x1F] = unit }
                }
            }
        }
        return (found[7]!, found[8]!, found[5]!, found[1]!)
    }()

    /// In step: the camera makes frame n once frame n - 1 is published (to `published`), as a camera
    /// at its frame rate would against a recorder that keeps up.
    private func camera(_ controls: Set<CameraCodecControls.Control>, frames: Int = 40, published: Collector? = nil,
                        beforeFrame: @escaping @Sendable (Int) -> Void = { _ in }) -> MockH264Camera {
        MockH264Camera(controls: controls, units: Self.units, frames: frames,
                       mayMake: { n in published.map { n == 0 || $0.count >= n } ?? true }, beforeFrame: beforeFrame)
    }

    private func open(_ camera: MockH264Camera) throws -> V4L2CaptureSource {
        try V4L2CaptureSource(path: "/dev/video0", request: .init(pixelFormat: .h264), system: camera)
    }

    func testIDRPeriodGoesToH264IPeriodAndTheBitRateToBitrate() throws {
        let camera = camera([.h264IPeriod, .gopSize, .forceKeyFrame, .bitrate])
        let controls = try open(camera).codecControls
        let line = controls.apply(keyframeInterval: 15, bitsPerSecond: 2_000_000)
        XCTAssertEqual(camera.controlsSet.map(\.id), [CameraCodecControls.Control.h264IPeriod.rawValue, CameraCodecControls.Control.bitrate.rawValue],
                       "I_PERIOD is preferred to GOP_SIZE")
        XCTAssertEqual(camera.controlsSet.map(\.value), [15, 2_000_000])
        XCTAssertEqual(line, "camera's encoder: an IDR every 15 frames (H264_I_PERIOD), 2000000 bit/s (BITRATE), "
                       + "a forced IDR for each joining receiver (FORCE_KEY_FRAME)")
    }

    func testGOPSizeSetsTheIDRPeriodWhenTheCameraHasNoIPeriodAndValuesAreClampedToItsRange() throws {
        let camera = camera([.gopSize, .bitrate])
        let controls = try open(camera).codecControls
        let line = controls.apply(keyframeInterval: 1000, bitsPerSecond: 50_000_000)
        XCTAssertEqual(camera.controlsSet.map(\.id), [CameraCodecControls.Control.gopSize.rawValue, CameraCodecControls.Control.bitrate.rawValue])
        XCTAssertEqual(camera.controlsSet.map(\.value), [600, 20_000_000], "the camera's maxima")
        XCTAssertTrue(line.hasSuffix("no FORCE_KEY_FRAME control: a joining receiver waits for the camera's next IDR"), line)
    }

    /// The recording: the camera's IDR every 12 frames (set through I_PERIOD), a receiver joining at
    /// frame 17 whose request goes through the hub's keyframe gate to FORCE_KEY_FRAME, and the stream
    /// that comes out: every slice the camera's own bytes, SPS and PPS before every IDR although the
    /// camera sent them once, no AUD or SEI, 4-byte start codes, and the driver's timestamps.
    func testAJoinerMakesTheKeyframeGateAskTheCameraAndTheStreamKeepsTheContract() throws {
        let gate = KeyframeGate(minimumIntervalSeconds: 0)
        let hub = StreamHub(label: "h264", ring: RingBounds(seconds: 0, maximumBytes: 0, maximumFrames: 0), keyframes: gate)
        let joined = Mutex<Collector?>(nil)
        let all = Collector(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 64))))
        let camera = camera([.h264IPeriod, .forceKeyFrame, .bitrate], frames: 40, published: all) { frame in
            guard frame == 17 else { return }
            // A late receiver, as the TCP and RTSP outputs join: subscribe from the next IDR, then ask for one.
            let subscription = hub.subscribe("late", from: .nextIDR, policy: .lossless(depth: 64))!
            let collector = Collector(subscription)
            collector.start()
            joined.withLock { $0 = collector }
            gate.requestFirstIDR(joinedAfter: 16)
        }
        let source = try open(camera)
        let controls = source.codecControls
        _ = controls.apply(keyframeInterval: 12, bitsPerSecond: nil)
        let encoder = CameraStreamEncoder(codec: .h264, forceKeyFrame: { controls.forceKeyFrame() })
        let recorder = Recorder(source: source, encoder: encoder, hub: hub, keyframeInterval: 12,
                                limits: .init(frames: 40), logger: Logger(label: "test"))
        all.start()
        let result = recorder.run()
        XCTAssertNil(result.failure)
        all.waitUntilEnded()
        let late = try XCTUnwrap(joined.withLock { $0 })
        late.waitUntilEnded()

        let force = CameraCodecControls.Control.forceKeyFrame.rawValue
        // Not at the start (the camera's first frame was an IDR already): for the joiner, as frame 17 went by.
        XCTAssertEqual(camera.controlsSet.filter { $0.id == force }.map(\.atFrame), [18])
        XCTAssertEqual(camera.idrFrames, [0, 12, 18, 30], "the camera's IDRs: its period from I_PERIOD, restarted by the forced one")
        XCTAssertEqual(all.units.filter(\.isIDR).map(\.sequence), camera.idrFrames.map(UInt64.init))
        XCTAssertEqual(late.units.first?.sequence, 18, "the joiner starts at the IDR it asked for")
        XCTAssertEqual(late.units.first?.isIDR, true)

        // Every access unit: [SPS PPS] and then exactly the camera's slice, byte for byte.
        let sent = camera.sent
        XCTAssertEqual(all.units.map(\.sequence), (0..<40).map(UInt64.init))
        let p = Self.units
        for unit in all.units {
            let sentUnits = Self.split(sent[Int(unit.sequence)])
            let slice = try XCTUnwrap(sentUnits.last)
            let expected: [[UInt8]] = unit.isIDR ? [p.sps, p.pps, slice] : [slice]
            XCTAssertEqual(unit.bytes, expected.flatMap { [0, 0, 0, 1] + $0 }, "access unit \(unit.sequence)")
            // The driver's timestamp, not the time camrec dequeued it.
            XCTAssertEqual(unit.captureTime, 5000 * 1_000_000_000 + unit.sequence * 40_000_000)
        }
        let report = StreamInspector.inspect(all.units.flatMap(\.bytes))
        XCTAssertTrue(report.contractHolds, report.render(verbose: false))
    }

    /// A camera with none of the controls: camrec says so in one line, asks it for nothing, and a joiner
    /// gets the camera's next IDR (its own period, 10 frames).
    func testACameraWithNoControlsIsAskedNothingAndAJoinerWaitsForItsNextIDR() throws {
        let gate = KeyframeGate(minimumIntervalSeconds: 0)
        let hub = StreamHub(label: "h264", ring: RingBounds(seconds: 0, maximumBytes: 0, maximumFrames: 0), keyframes: gate)
        let joined = Mutex<Collector?>(nil)
        let all = Collector(try XCTUnwrap(hub.subscribe("all", from: .nextIDR, policy: .lossless(depth: 64))))
        all.start()
        let camera = camera([], frames: 30, published: all) { frame in
            guard frame == 13 else { return }
            let collector = Collector(hub.subscribe("late", from: .nextIDR, policy: .lossless(depth: 64))!)
            collector.start()
            joined.withLock { $0 = collector }
            gate.requestFirstIDR(joinedAfter: 12)
        }
        let source = try open(camera)
        let controls = source.codecControls
        XCTAssertEqual(controls.apply(keyframeInterval: 30, bitsPerSecond: 1_000_000),
                       "the camera has none of the codec controls camrec uses (H264_I_PERIOD, GOP_SIZE, FORCE_KEY_FRAME, BITRATE): "
                       + "IDRs come as the camera makes them and a joining receiver waits for the next one")
        let encoder = CameraStreamEncoder(codec: .h264, forceKeyFrame: nil)
        let recorder = Recorder(source: source, encoder: encoder, hub: hub, keyframeInterval: 30,
                                limits: .init(frames: 30), logger: Logger(label: "test"))
        XCTAssertNil(recorder.run().failure)
        all.waitUntilEnded()
        let late = try XCTUnwrap(joined.withLock { $0 })
        late.waitUntilEnded()
        XCTAssertTrue(camera.controlsSet.isEmpty, "no VIDIOC_S_CTRL reached the camera")
        XCTAssertEqual(camera.idrFrames, [0, 10, 20])
        XCTAssertEqual(late.units.first?.sequence, 20, "the joiner starts at the camera's next IDR")
    }

    /// Frames the camera sent that camrec never got (a gap in the sequence numbers): the pictures after
    /// the gap refer to them, so they are left out up to the camera's next IDR, which is asked for once.
    func testPicturesAfterAGapAreLeftOutUntilTheNextIDRWhichIsAskedFor() throws {
        let p = Self.units
        let forced = Mutex(0)
        let encoder = CameraStreamEncoder(codec: .h264, forceKeyFrame: { forced.withLock { $0 += 1 }; return true })
        var published: [UInt64] = []
        var findings: [String] = []
        encoder.onPacket = { published.append($0.sequence) }
        encoder.onBufferDone = { _ in }
        encoder.onFinding = { findings.append($0) }
        let pool = PixelBufferPool(format: .i420, width: 320, height: 180, capacity: 1)
        // Frame 3 never reached camrec; 6 is the camera's next IDR.
        let frames: [(sequence: Int, units: [[UInt8]])] = [(0, [p.sps, p.pps, p.idr]), (1, [p.p]), (2, [p.p]), (4, [p.p]), (5, [p.p]),
                                                          (6, [p.idr]), (7, [p.p])]
        for (sequence, units) in frames {
            let buffer = try XCTUnwrap(pool.tryTake())
            let bytes: [UInt8] = units.flatMap { unit -> [UInt8] in [0, 0, 0, 1] + unit }
            bytes.withUnsafeBytes { UnsafeMutableRawPointer(buffer.planes[0].base).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            buffer.payloadByteCount = bytes.count
            buffer.sequence = UInt64(sequence)
            try encoder.encode(buffer, forceKeyframe: false)
            buffer.recycle()
        }
        XCTAssertEqual(published, [0, 1, 2, 6, 7])
        XCTAssertEqual(forced.withLock { $0 }, 1, "the camera is asked for an IDR at the first picture after the gap")
        XCTAssertEqual(encoder.gapsWaitedOut, 1)
        XCTAssertEqual(findings.count, 1, findings.joined(separator: "; "))
    }

    /// The NAL units of an Annex B buffer.
    static func split(_ bytes: [UInt8]) -> [[UInt8]] {
        var units: [[UInt8]] = []
        bytes.withUnsafeBytes { raw in AnnexBScanner.forEachUnit(in: raw) { range, _ in units.append([UInt8](raw[range])) } }
        return units
    }
}

/// Everything a subscription gets until the hub closes, with the bytes.
final class Collector: @unchecked Sendable {
    struct Unit { var sequence: UInt64; var isIDR: Bool; var bytes: [UInt8]; var captureTime: UInt64 }
    private let subscription: Subscription
    private let lock = NSLock()
    private var stored: [Unit] = []
    private let ended = DispatchSemaphore(value: 0)

    init(_ subscription: Subscription) { self.subscription = subscription }

    func start() {
        Thread { [self] in
            while let chunk = subscription.next() {
                let unit = Unit(sequence: chunk.sequence, isIDR: chunk.isIDR, bytes: Array(chunk.bytes),
                                captureTime: chunk.captureTimeNanoseconds)
                chunk.release()
                lock.lock(); stored.append(unit); lock.unlock()
            }
            ended.signal()
        }.start()
    }

    func waitUntilEnded() {
        XCTAssertEqual(ended.wait(timeout: .now() + 30), .success, "the hub's end reached the subscriber")
    }

    var units: [Unit] { lock.lock(); defer { lock.unlock() }; return stored }
    var count: Int { lock.lock(); defer { lock.unlock() }; return stored.count }
}
