import CV4L2
import Glibc
import Synchronization
import SystemPackage
import Frames
import SystemSupport

/// Frames from a V4L2 camera, by mmap streaming.
///
/// `init` opens the node and settles everything that can fail before a file is
/// created: that it is a capture node, the exclusive lock and record priority, the
/// format, size and rate. `start` maps a small ring of buffers and starts streaming.
/// `nextFrame` waits in `poll` (never in a blocking DQBUF), dequeues a buffer,
/// converts it in one pass into a pool buffer (MJPEG: decodes it with `MJPEGDecoder`;
/// formats only libv4lconvert knows: converts them with it first) and queues it back at
/// once, so the camera never runs short of buffers however slow the encoder is; when the
/// pool is empty the frame is dropped and counted. Frames that can't be decoded or
/// converted are dropped and counted as errored.
///
/// Zero-copy: when the camera delivers NV12 (the pool's format) with rows laid out as the
/// pool's (camrec asks for the pool's 64-byte stride in `VIDIOC_S_FMT`), the camera writes
/// straight into pool buffers (`V4L2_MEMORY_USERPTR`) and a dequeued buffer goes to the
/// encoder as it is: no CPU pass at all. Each dequeue puts a free pool buffer in its place,
/// so the camera's ring stays full; with the pool empty the frame is dropped and its buffer
/// queued again. Drivers without USERPTR (or that refuse the pool's memory), and pools whose
/// memory moves (VA surfaces), get the mmap path.
///
/// Ends: `stop()` → `.finished`; ENODEV, POLLERR or a fatal streaming error →
/// `.deviceLost`; no frame (or only unusable MJPEG frames) for max(2 s, 4 frame
/// intervals) → `.stalled`.
///
/// Threads: what is settled in `init` is `let`s; what `stop()` and the readers of `statistics`
/// share with the capture thread is in `state` (and `stopped`); the stream itself (ring, converters,
/// sequence and clock) is a `Stream` only `start`, `nextFrame` and teardown touch, in a lock of its own.
public final class V4L2CaptureSource: FrameSource, Sendable {
    public let path: String
    public let frameSize: FrameSize
    public let framesPerSecond: Double
    public let pixelFormat: V4L2PixelFormat
    public let identity: V4L2DeviceIdentity
    /// `bytesperline` of each plane as the driver set it (rows are often padded).
    public let bytesPerLine: [Int]
    public var summary: String {
        "\(path) (\(identity.card), \(identity.driver)) \(pixelFormat) \(frameSize) @ \(formatRate(framesPerSecond)) fps"
            + (memoryMode.map { ", \($0)" } ?? "")
    }

    /// How frames get from the camera into pool buffers.
    public enum MemoryMode: Sendable, Equatable, CustomStringConvertible {
        /// mmap'd driver buffers, converted (or copied) in one CPU pass into a pool buffer.
        case converted
        /// The camera writes into pool buffers itself (USERPTR): no CPU pass.
        case zeroCopy
        /// A format only libv4lconvert understands: its pass into a scratch buffer, then ours.
        case libraryConverted
        /// MJPEG: decoded by libjpeg-turbo a strip at a time, each strip in one pass into the pool.
        case decoded
        /// H.264/H.265 from the camera: its access unit copied as it is into a pool buffer, no decoding.
        case compressed

        public var description: String {
            switch self {
            case .converted: return "mmap, one conversion pass into the pool"
            case .zeroCopy: return "zero-copy (the camera writes into pool buffers, USERPTR)"
            case .libraryConverted: return "mmap, libv4lconvert to YUV 4:2:0, then one pass into the pool"
            case .decoded: return "mmap, MJPEG decoded by libjpeg-turbo, each strip in one pass into the pool"
            case .compressed: return "mmap, the camera's stream copied as it is (no decoding, no encoding)"
            }
        }
    }

    /// Known once `start` has run.
    public var memoryMode: MemoryMode? { state.withLock { $0.memoryMode } }

    /// The ring lives in the pool when capture may be zero-copy.
    public var poolBuffersHeld: Int { zeroCopyCandidate ? Int(Self.ringSize) : 0 }

    /// Buffers in the ring: enough to ride out a slow conversion, few enough to keep latency low.
    static let ringSize: UInt32 = 4

    let device: V4L2Device
    let system: V4L2System
    let bufferType: v4l2_buf_type
    let multiplanar: Bool
    /// The camera's own layout; nil for MJPEG (decoded) and formats libv4lconvert converts.
    let layout: CameraPixelLayout?
    /// H.264/H.265 from the camera (`--encoder camera`): each buffer is one access unit, passed on as it is.
    public var deliversCompressedVideo: Bool { pixelFormat.isCompressedVideo }
    /// The camera's encoder controls (IDR period, forced IDR, bit rate), looked up on first use.
    public var codecControls: CameraCodecControls {
        codecControlsFound.withLock { found in
            if let found { return found }
            let controls = CameraCodecControls(device: device)
            found = controls
            return controls
        }
    }
    private let codecControlsFound = Mutex<CameraCodecControls?>(nil)
    /// An MJPEG camera's own JPEGs, each one that decodes, as they came (`/stream.mjpg`). Set before the
    /// first `nextFrame` (it is the stream's, so setting it waits for a `nextFrame` under way).
    public var jpegSink: JPEGPictureSink? {
        get { stream.withLock { $0.jpegSink } }
        set { stream.withLock { $0.jpegSink = newValue } }
    }
    /// For single-buffer formats: where each plane lies in the buffer.
    let geometry: V4L2PlaneGeometry?
    let memoryPlaneCount: Int
    /// NV12 from the camera: the pool's own format, so capture may go straight into it.
    let zeroCopyCandidate: Bool
    /// A pipe in the poll set: `stop()` writes to it so a waiting `nextFrame()` wakes at once.
    let wakeRead: Int32
    let wakeWrite: Int32
    /// No frame for this long means the camera stalled: `requestedStallTimeout` (at least two frame
    /// intervals), else 2 s or four frame intervals, whichever is longer.
    let stallTimeout: UInt64
    /// What the recording asked for (`--stall-timeout`), kept for opening the camera again after a loss.
    public let requestedStallTimeout: UInt64?
    /// The first frame may take longer: webcams settle exposure after STREAMON.
    static let firstFrameGrace: UInt64 = 3_000_000_000

    /// What `stop()` and the readers of `statistics` share with the capture thread.
    let state = Mutex(State())
    struct State {
        var statistics = SourceStatistics()
        var end: SourceEnd?
        var memoryMode: MemoryMode?
    }
    /// Set once by `stop()` (which then writes the wake pipe); seen at every wait without a lock.
    let stopped = Atomic(false)
    /// The stream's own: only `start`, `nextFrame` and teardown take this lock, one after another (the
    /// capture thread runs only between `start` and the end), so it is never contended; `stop()` does not
    /// touch it, so a `nextFrame` waiting in poll holds nothing up. It replaces the lock a frame took to
    /// see the end (the stream's `tornDown` says it) and the one it took to see a stop (now `stopped`).
    let stream: Mutex<Stream>

    public var statistics: SourceStatistics { state.withLock { $0.statistics } }
    public var end: SourceEnd? { state.withLock { $0.end } }

    /// - Parameter recordPriority: take `V4L2_PRIORITY_RECORD`, so no other program can change
    ///   the camera's settings or controls while camrec records. V4L2 shares priority across
    ///   all nodes of a device, so with it even `v4l2-ctl -c` on a sibling node gets EBUSY;
    ///   pass false to let a user adjust focus or exposure (or inject test faults) meanwhile.
    ///   The exclusive lock that keeps a second camrec out is taken either way.
    /// - Parameter stallTimeout: nanoseconds without a frame after which the camera counts as stalled (at
    ///   least two frame intervals); nil for 2 s or four frame intervals, whichever is longer.
    public convenience init(path: String, request: V4L2FormatRequest = V4L2FormatRequest(),
                            recordPriority: Bool = true, stallTimeout: UInt64? = nil) throws(CaptureError) {
        try self.init(path: path, request: request, recordPriority: recordPriority, stallTimeout: stallTimeout,
                      system: LinuxV4L2System())
    }

    init(path: String, request: V4L2FormatRequest, recordPriority: Bool = true, stallTimeout requested: UInt64? = nil,
         system: V4L2System) throws(CaptureError) {
        self.path = path
        requestedStallTimeout = requested
        self.system = system
        let device: V4L2Device
        do {
            device = try V4L2Device(path: path, system: system)
        } catch {
            throw Self.openError(error, path: path)
        }
        self.device = device

        // 1. Is it a camera?
        let identity: V4L2DeviceIdentity
        do {
            identity = try device.identity()
        } catch {
            if error.errno.rawValue == ENODEV {
                throw CaptureError(.sourceMissing, "\(path) exists but its device is gone (unplugged?)")
            }
            throw CaptureError(.notACaptureDevice, "\(path) is not a V4L2 video device (\(error)); "
                               + V4L2DeviceDirectory.captureNodeSummary(system: system))
        }
        self.identity = identity
        guard identity.capabilities.canCaptureVideo else {
            throw CaptureError(.notACaptureDevice,
                               "\(path) (\(identity.card), driver \(identity.driver)) is \(identity.capabilities.kind), "
                               + "not a video capture device; " + V4L2DeviceDirectory.captureNodeSummary(system: system, excluding: path))
        }
        multiplanar = !identity.capabilities.contains(.videoCapture)
        bufferType = multiplanar ? V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE : V4L2_BUF_TYPE_VIDEO_CAPTURE

        // 2. Is it ours? The lock stops a second camrec; record priority stops other
        //    well-behaved programs from changing the format under us.
        if let error = device.lockExclusively() {
            throw CaptureError(.deviceBusy, "\(path) is busy: another camrec is recording from it "
                               + "(the device lock is held: \(error))")
        }
        var priority = V4L2_PRIORITY_RECORD.rawValue
        do {
            if recordPriority { try device.ioctl(.setPriority, &priority) }
        } catch where error.errno.rawValue == EBUSY {
            throw CaptureError(.deviceBusy, "\(path) is busy: another program holds record priority (\(error))")
        } catch {
            // Drivers without priority support answer ENOTTY; the lock still guards camrec.
        }

        // 3. Format, size, rate.
        let offers: [V4L2FormatOffer]
        do {
            offers = try V4L2FormatCatalog.formats(of: device, bufferType: bufferType)
        } catch {
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): \(error)"))
        }
        let libraryConverted = multiplanar ? [] : Self.libraryConvertible(offers, device: device, type: bufferType,
                                                                          request: request)
        let choice = try V4L2FormatChooser.choose(from: offers, request: request, device: path,
                                                  libraryConverted: libraryConverted)
        let layout = choice.pixelFormat.cameraLayout
        self.layout = layout
        zeroCopyCandidate = layout == .nv12
        // Rows as long as the pool's, so the camera can write into pool buffers as they are.
        let poolStride = zeroCopyCandidate ? PixelBuffer.paddedStride(choice.size.width) : nil
        let negotiated = try Self.setFormat(device, type: bufferType, multiplanar: multiplanar, choice: choice,
                                            layout: layout, request: request, path: path, bytesPerLine: poolStride)
        frameSize = negotiated.size
        pixelFormat = choice.pixelFormat
        bytesPerLine = negotiated.bytesPerLine
        memoryPlaneCount = negotiated.bytesPerLine.count
        let jpegDecoder: MJPEGDecoder?
        let libraryConverter: LibV4LConverter?
        switch layout {
        case nil where choice.pixelFormat.isCompressedVideo:
            // One plane of H.264/H.265, `bytesused` long, copied on as it is.
            geometry = nil
            libraryConverter = nil
            jpegDecoder = nil
        case nil where choice.pixelFormat.isJPEG:
            // MJPEG: one plane of JPEG bytes, `bytesused` long, for the decoder.
            geometry = nil
            libraryConverter = nil
            jpegDecoder = try MJPEGDecoder(frameSize: frameSize)
        case nil:
            var format = v4l2_format()
            format.type = bufferType.rawValue
            try? device.ioctl(.getFormat, &format)
            guard format.fmt.pix.pixelformat == choice.pixelFormat.rawValue,
                  let converter = LibV4LConverter(fd: device.fd, source: format) else {
                throw CaptureError(.unsupportedFormat, "camrec cannot convert \(choice.pixelFormat) from \(path), "
                                   + "not even with libv4lconvert; ask for another --pixel-format (camrec devices lists them)")
            }
            libraryConverter = converter
            jpegDecoder = nil
            geometry = nil
        case let layout? where memoryPlaneCount == 1:
            jpegDecoder = nil
            libraryConverter = nil
            geometry = V4L2PlaneGeometry(layout, width: frameSize.width, height: frameSize.height,
                                         bytesPerLine: negotiated.bytesPerLine[0])
        case let layout?:
            libraryConverter = nil
            guard memoryPlaneCount == layout.planeCount else {
                throw CaptureError(.unsupportedFormat, "\(path): \(pixelFormat) came with \(memoryPlaneCount) planes, "
                                   + "camrec expects \(layout.planeCount)")
            }
            jpegDecoder = nil
            geometry = nil
        }
        framesPerSecond = try Self.setRate(device, type: bufferType, choice: choice, request: request, path: path)
        let interval = UInt64(1e9 / framesPerSecond)
        // Never under two frame intervals: a gap between two frames is no stall, whatever was asked.
        stallTimeout = requested.map { max($0, 2 * interval) } ?? max(2_000_000_000, 4 * interval)
        stream = Mutex(Stream(jpegDecoder: jpegDecoder, libraryConverter: libraryConverter,
                              clock: PresentationClock(nominalInterval: interval)))

        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw CaptureError(.deviceFailed, "cannot create a pipe: \(Errno(rawValue: errno))")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        stream.withLock { teardown($0) }
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }


    enum Dequeued {
        case frame(PixelBuffer)
        case skipped
        case nothing
        case failed(V4L2IoctlError)
    }

    public func nextFrame() throws -> PixelBuffer? {
        stream.withLock { nextFrame(in: $0) }
    }

    private func nextFrame(in stream: Stream) -> PixelBuffer? {
        guard stream.pool != nil else { preconditionFailure("start(pool:) first") }
        // Once ended (lost, stalled, stopped) the device is closed: never touch it again.
        if stream.tornDown { return nil }
        while true {
            if stopped.load(ordering: .acquiring) { return finish(.finished, stream) }
            if let lost = requeueRefused(stream) { return finish(lost, stream) }

            let now = MonotonicClock.now()
            let deadline = stream.lastSignOfLife + stallTimeout + (stream.framesSeen == 0 ? Self.firstFrameGrace : 0)
            // Past the deadline, poll once more without waiting: the time may have gone on our
            // own slow conversion while frames queued up, and that is not a stalled camera.
            var timeout = now >= deadline ? 0 : Int32(min((deadline - now + 999_999) / 1_000_000, 1000))
            // Buffers the driver refused are retried soon rather than at the next frame.
            if !stream.unqueued.isEmpty { timeout = min(timeout, 20) }

            var fds = [pollfd(fd: device.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = fds.withUnsafeMutableBufferPointer {
                system.poll($0.baseAddress!, count: 2, timeoutMilliseconds: timeout)
            }
            if now >= deadline, let failure = stream.jpegFailure {
                let waited = Double(now - stream.lastSignOfLife) / 1e9
                return finish(.stalled("\(path) delivered only unusable MJPEG frames for \(formatSeconds(waited)) s "
                                       + "(the last was \(failure)); the camera stalled"), stream)
            }
            if ready == 0 && now >= deadline {
                let waited = Double(now - stream.lastSignOfLife) / 1e9
                return finish(.stalled("\(path) delivered no frame for \(formatSeconds(waited)) s; the camera stalled"), stream)
            }
            if ready == -EINTR || ready == 0 { continue }
            if ready < 0 {
                return finish(.deviceLost("poll on \(path) failed: \(Errno(rawValue: -ready))"), stream)
            }
            if fds[1].revents != 0 { continue }
            let events = Int32(fds[0].revents)
            if events == 0 { continue }
            let trouble = events & Int32(POLLERR | POLLHUP | POLLNVAL) != 0

            switch dequeue(stream) {
            case .frame(let buffer):
                stream.spuriousWakeups = 0
                return buffer
            case .skipped:
                stream.spuriousWakeups = 0
                continue
            case .nothing:
                if trouble {
                    return finish(.deviceLost("\(path) reported an error (poll: \(describePoll(events))); "
                                              + "the camera stopped streaming"), stream)
                }
                // Ready but nothing to dequeue should not happen; never let it become a busy loop:
                // after a few, wait 5 ms for a stop only.
                stream.spuriousWakeups += 1
                if stream.spuriousWakeups > 3 {
                    var stop = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
                    _ = Glibc.poll(&stop, 1, 5)
                }
            case .failed(let error):
                return finish(.deviceLost(lostMessage(error)), stream)
            }
        }
    }

    func lostMessage(_ error: V4L2IoctlError) -> String {
        switch error.errno.rawValue {
        case ENODEV: return "\(path) was disconnected while recording (\(error))"
        case EIO: return "\(path) reported a fatal streaming error (\(error))"
        case EPIPE: return "\(path) stopped streaming (\(error))"
        default: return "\(path) failed while streaming (\(error))"
        }
    }

    func describePoll(_ events: Int32) -> String {
        var names: [String] = []
        if events & Int32(POLLERR) != 0 { names.append("POLLERR") }
        if events & Int32(POLLHUP) != 0 { names.append("POLLHUP") }
        if events & Int32(POLLNVAL) != 0 { names.append("POLLNVAL") }
        return names.joined(separator: "|")
    }

    func finish(_ reason: SourceEnd, _ stream: Stream) -> PixelBuffer? {
        state.withLock { if $0.end == nil { $0.end = reason } }
        teardown(stream)
        return nil
    }

}

private func formatSeconds(_ s: Double) -> String {
    s.decimalText(places: 2)
}
