import CV4L2
import Glibc
import Synchronization
import SystemPackage

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
public final class V4L2CaptureSource: FrameSource, @unchecked Sendable {
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
        /// MJPEG: decoded by libavcodec, then one pass into the pool.
        case decoded

        public var description: String {
            switch self {
            case .converted: return "mmap, one conversion pass into the pool"
            case .zeroCopy: return "zero-copy (the camera writes into pool buffers, USERPTR)"
            case .libraryConverted: return "mmap, libv4lconvert to YUV 4:2:0, then one pass into the pool"
            case .decoded: return "mmap, MJPEG decoded by libavcodec, then one pass into the pool"
            }
        }
    }

    /// Known once `start` has run.
    public private(set) var memoryMode: MemoryMode?

    /// The ring lives in the pool when capture may be zero-copy.
    public var poolBuffersHeld: Int { zeroCopyCandidate ? Int(Self.ringSize) : 0 }

    /// Buffers in the ring: enough to ride out a slow conversion, few enough to keep latency low.
    static let ringSize: UInt32 = 4

    private let device: V4L2Device
    private let system: V4L2System
    private let bufferType: v4l2_buf_type
    private let multiplanar: Bool
    /// The camera's own layout; nil for MJPEG (decoded) and formats libv4lconvert converts.
    private let layout: CameraPixelLayout?
    private let jpegDecoder: MJPEGDecoder?
    /// Why the last MJPEG frame was unusable, until a good one comes; undecodable frames
    /// are no sign of life, so a camera sending only those ends as stalled.
    private var jpegFailure: MJPEGFrameError?
    /// For formats only libv4lconvert understands: it turns each frame into YUV 4:2:0 first.
    private let libraryConverter: LibV4LConverter?
    /// For single-buffer formats: where each plane lies in the buffer.
    private let geometry: V4L2PlaneGeometry?
    private let memoryPlaneCount: Int
    /// NV12 from the camera: the pool's own format, so capture may go straight into it.
    private let zeroCopyCandidate: Bool
    private var memory = V4L2_MEMORY_MMAP
    private var buffersRequested = false
    private var mappings: [[(base: UnsafeMutableRawPointer, length: Int)]] = []
    /// USERPTR: the pool buffer each ring slot holds while the camera owns it.
    private var slots: [PixelBuffer?] = []
    private let planeScratch = UnsafeMutablePointer<v4l2_plane>.allocate(capacity: Int(VIDEO_MAX_PLANES))
    private var pool: PixelBufferPool?
    private var streaming = false
    private var tornDown = false
    /// A pipe in the poll set: `stop()` writes to it so a waiting `nextFrame()` wakes at once.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private var sequences = SequenceTracker()
    private var clock: PresentationClock
    private var lastSignOfLife: UInt64 = 0
    private var framesSeen = 0
    private var unqueued: [UInt32] = []
    private var refusedQueueing = 0
    private var spuriousWakeups = 0
    /// No frame for this long means the camera stalled.
    let stallTimeout: UInt64
    /// The first frame may take longer: webcams settle exposure after STREAMON.
    static let firstFrameGrace: UInt64 = 3_000_000_000

    private let state = Mutex(State())
    private struct State {
        var statistics = SourceStatistics()
        var end: SourceEnd?
        var stopped = false
    }

    public var statistics: SourceStatistics { state.withLock { $0.statistics } }
    public var end: SourceEnd? { state.withLock { $0.end } }

    /// - Parameter recordPriority: take `V4L2_PRIORITY_RECORD`, so no other program can change
    ///   the camera's settings or controls while camrec records. V4L2 shares priority across
    ///   all nodes of a device, so with it even `v4l2-ctl -c` on a sibling node gets EBUSY;
    ///   pass false to let a user adjust focus or exposure (or inject test faults) meanwhile.
    ///   The exclusive lock that keeps a second camrec out is taken either way.
    public convenience init(path: String, request: V4L2FormatRequest = V4L2FormatRequest(),
                            recordPriority: Bool = true) throws(CaptureError) {
        try self.init(path: path, request: request, recordPriority: recordPriority, system: LinuxV4L2System())
    }

    init(path: String, request: V4L2FormatRequest, recordPriority: Bool = true, system: V4L2System) throws(CaptureError) {
        self.path = path
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
        let offers = V4L2FormatCatalog.formats(of: device, bufferType: bufferType)
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
        switch layout {
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
        stallTimeout = max(2_000_000_000, 4 * interval)
        clock = PresentationClock(nominalInterval: interval)

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
        teardown()
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
        planeScratch.deallocate()
    }

    // MARK: - Negotiation

    /// The offered formats camrec can't convert itself but libv4lconvert can (it converts a
    /// blank frame of the format's geometry from `VIDIOC_TRY_FMT`). Compressed formats are
    /// left out: a blank frame proves nothing about them. Single-planar API only, as libv4lconvert.
    static func libraryConvertible(_ offers: [V4L2FormatOffer], device: V4L2Device, type: v4l2_buf_type,
                                   request: V4L2FormatRequest) -> Set<V4L2PixelFormat> {
        let compressed: Set<V4L2PixelFormat> = [.mjpeg, .jpeg, .h264]
        var convertible: Set<V4L2PixelFormat> = []
        for offer in offers where offer.pixelFormat.cameraLayout == nil && !compressed.contains(offer.pixelFormat) {
            // Only worth the probe when it may be chosen: asked for, or nothing else is offered.
            let asked = request.pixelFormat == offer.pixelFormat
            let othersUsable = offers.contains { $0.pixelFormat.isRecordable }
            guard asked || (request.pixelFormat == nil && !othersUsable) else { continue }
            var format = v4l2_format()
            format.type = type.rawValue
            let size = request.size ?? V4L2FormatChooser.defaultSize([offer])
            format.fmt.pix.width = UInt32(size.width)
            format.fmt.pix.height = UInt32(size.height)
            format.fmt.pix.pixelformat = offer.pixelFormat.rawValue
            format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
            guard (try? device.ioctl(.tryFormat, &format)) != nil,
                  format.fmt.pix.pixelformat == offer.pixelFormat.rawValue,
                  LibV4LConverter(fd: device.fd, source: format) != nil else { continue }
            convertible.insert(offer.pixelFormat)
        }
        return convertible
    }

    static func openError(_ error: Errno, path: String) -> CaptureError {
        switch error.rawValue {
        case ENOENT:
            return CaptureError(.sourceMissing, "no such device \(path); "
                                + V4L2DeviceDirectory.captureNodeSummary(system: LinuxV4L2System()))
        case EACCES, EPERM:
            return CaptureError(.permissionDenied, "cannot open \(path): permission denied "
                                + "(add your user to the 'video' group: sudo usermod -aG video $USER, then log in again)")
        case EBUSY:
            return CaptureError(.deviceBusy, "\(path) is busy: another program is using it (\(error))")
        case ENODEV, ENXIO:
            return CaptureError(.sourceMissing, "\(path) exists but has no device behind it (unplugged?)")
        default:
            return CaptureError(.deviceFailed, "cannot open \(path): \(error)")
        }
    }

    private static func busyOr(_ error: V4L2IoctlError, path: String, _ otherwise: CaptureError) -> CaptureError {
        if error.errno.rawValue == EBUSY {
            return CaptureError(.deviceBusy, "\(path) is busy: another program is streaming from it (\(error))")
        }
        if error.errno.rawValue == ENODEV {
            return CaptureError(.sourceMissing, "\(path) went away while camrec set it up (\(error))")
        }
        return otherwise
    }

    /// `VIDIOC_S_FMT`, then checks what the driver made of it. Returns the size and each
    /// memory plane's `bytesperline` (one entry unless the format is multi-planar).
    private static func setFormat(_ device: V4L2Device, type: v4l2_buf_type, multiplanar: Bool,
                                  choice: V4L2FormatChoice, layout: CameraPixelLayout?, request: V4L2FormatRequest,
                                  path: String, bytesPerLine wanted: Int?) throws(CaptureError) -> (size: FrameSize, bytesPerLine: [Int]) {
        var format = v4l2_format()
        format.type = type.rawValue
        if multiplanar {
            format.fmt.pix_mp.width = UInt32(choice.size.width)
            format.fmt.pix_mp.height = UInt32(choice.size.height)
            format.fmt.pix_mp.pixelformat = choice.pixelFormat.rawValue
            format.fmt.pix_mp.field = V4L2_FIELD_NONE.rawValue
            if let wanted {
                withUnsafeMutableBytes(of: &format.fmt.pix_mp.plane_fmt) { raw in
                    let planes = raw.bindMemory(to: v4l2_plane_pix_format.self)
                    for p in 0..<2 { planes[p].bytesperline = UInt32(wanted) }
                }
            }
        } else {
            format.fmt.pix.width = UInt32(choice.size.width)
            format.fmt.pix.height = UInt32(choice.size.height)
            format.fmt.pix.pixelformat = choice.pixelFormat.rawValue
            format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
            // A wish only: drivers may keep their own (UVC does); then capture copies.
            format.fmt.pix.bytesperline = UInt32(wanted ?? 0)
        }
        do {
            try device.ioctl(.setFormat, &format)
        } catch {
            throw busyOr(error, path: path, CaptureError(.unsupportedFormat, "\(path) refused \(choice.pixelFormat) "
                                                         + "\(choice.size) (\(error))"))
        }
        let pixelformat = multiplanar ? format.fmt.pix_mp.pixelformat : format.fmt.pix.pixelformat
        let size = multiplanar
            ? FrameSize(width: Int(format.fmt.pix_mp.width), height: Int(format.fmt.pix_mp.height))
            : FrameSize(width: Int(format.fmt.pix.width), height: Int(format.fmt.pix.height))
        let field = multiplanar ? format.fmt.pix_mp.field : format.fmt.pix.field
        guard pixelformat == choice.pixelFormat.rawValue else {
            throw CaptureError(.unsupportedFormat, "\(path) answered \(choice.pixelFormat) with "
                               + "\(V4L2PixelFormat(rawValue: pixelformat)) instead")
        }
        if size != choice.size && request.size != nil {
            throw CaptureError(.unsupportedFormat, "\(path) cannot deliver \(choice.size) in \(choice.pixelFormat); "
                               + "the driver offered \(size)")
        }
        guard field == V4L2_FIELD_NONE.rawValue || field == V4L2_FIELD_ANY.rawValue else {
            throw CaptureError(.unsupportedFormat, "\(path) delivers interlaced video (field order \(field)); "
                               + "camrec records progressive frames only")
        }
        // Compressed frames and formats only libv4lconvert knows (layout nil): their rows
        // are not ours to check; drivers report 0 or anything.
        let minimum = layout.map { V4L2PlaneGeometry.minimumBytesPerLine($0, width: size.width) } ?? 0
        if multiplanar {
            let planes = Int(format.fmt.pix_mp.num_planes)
            let lines: [Int] = withUnsafeBytes(of: format.fmt.pix_mp.plane_fmt) { raw in
                let p = raw.bindMemory(to: v4l2_plane_pix_format.self)
                return (0..<min(planes, p.count)).map { Int(p[$0].bytesperline) }
            }
            guard !lines.isEmpty else {
                throw CaptureError(.unsupportedFormat, "\(path) reported a format with no planes")
            }
            // A driver that leaves bytesperline 0 means tightly packed rows.
            return (size, lines.enumerated().map { $0.element > 0 ? $0.element : ($0.offset == 0 ? minimum : minimum / 2) })
        }
        let bpl = Int(format.fmt.pix.bytesperline)
        guard bpl == 0 || bpl >= minimum else {
            throw CaptureError(.unsupportedFormat, "\(path) reported \(bpl) bytes per line for \(size.width) "
                               + "\(choice.pixelFormat) pixels, fewer than the \(minimum) they need")
        }
        return (size, [bpl > 0 ? bpl : minimum])
    }

    /// Sets the frame rate with `VIDIOC_S_PARM` when the driver supports it, and returns
    /// the rate it reports back.
    private static func setRate(_ device: V4L2Device, type: v4l2_buf_type, choice: V4L2FormatChoice,
                                request: V4L2FormatRequest, path: String) throws(CaptureError) -> Double {
        var parm = v4l2_streamparm()
        parm.type = type.rawValue
        if (try? device.ioctl(.getParameters, &parm)) == nil {
            // Older kernels take only the single-planar type for G/S_PARM.
            parm = v4l2_streamparm()
            parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            if (try? device.ioctl(.getParameters, &parm)) == nil {
                return request.framesPerSecond ?? choice.interval?.framesPerSecond ?? 30
            }
        }
        let settable = parm.parm.capture.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0
        if settable, let interval = choice.interval {
            parm.parm.capture.timeperframe = v4l2_fract(numerator: interval.numerator, denominator: interval.denominator)
            do {
                try device.ioctl(.setParameters, &parm)
            } catch {
                throw busyOr(error, path: path, CaptureError(.unsupportedFormat,
                                                             "\(path) refused \(interval) fps (\(error))"))
            }
        }
        let actual = V4L2Fraction(numerator: parm.parm.capture.timeperframe.numerator,
                                  denominator: parm.parm.capture.timeperframe.denominator)
        if let fps = request.framesPerSecond {
            if actual.framesPerSecond > 0 && !actual.matches(framesPerSecond: fps) {
                throw CaptureError(.unsupportedFormat, "\(path) runs at \(actual) fps at \(choice.size), "
                                   + "not the \(formatRate(fps)) fps asked for")
            }
            return actual.framesPerSecond > 0 ? actual.framesPerSecond : fps
        }
        return actual.framesPerSecond > 0 ? actual.framesPerSecond : (choice.interval?.framesPerSecond ?? 30)
    }

    // MARK: - Streaming

    public func start(pool: PixelBufferPool) throws {
        precondition(pool.width == frameSize.width && pool.height == frameSize.height, "pool size differs from the camera's")
        self.pool = pool
        if zeroCopyCandidate && pool.format == .nv12 && pool.hasStableMemory, try startZeroCopy(pool) {
            memoryMode = .zeroCopy
        } else {
            try startMapped()
            memoryMode = jpegDecoder != nil ? .decoded : libraryConverter != nil ? .libraryConverted : .converted
        }
        var type = Int32(bitPattern: bufferType.rawValue)
        do {
            try device.ioctl(.streamOn, &type)
        } catch {
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed,
                                                              "\(path) failed to start streaming (\(error))"))
        }
        streaming = true
        lastSignOfLife = MonotonicClock.now()
    }

    /// Lends the camera a ring of pool buffers to write into. False (and nothing held)
    /// when the pool's layout differs from the camera's or the driver refuses USERPTR.
    private func startZeroCopy(_ pool: PixelBufferPool) throws(CaptureError) -> Bool {
        var ring: [PixelBuffer] = []
        while ring.count < Int(Self.ringSize), let buffer = pool.tryTake() { ring.append(buffer) }
        func giveUp() -> Bool {
            ring.forEach { $0.recycle() }
            slots = []
            memory = V4L2_MEMORY_MMAP
            return false
        }
        guard ring.count == Int(Self.ringSize), let sample = ring.first, fitsCameraLayout(sample) else { return giveUp() }

        let count: UInt32
        do {
            count = try requestRing(V4L2_MEMORY_USERPTR)
        } catch where error.errno.rawValue == EBUSY || error.errno.rawValue == ENODEV {
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot allocate capture buffers (\(error))"))
        } catch {
            return giveUp()   // no USERPTR here: the mmap path it is
        }
        guard count >= 2 else {
            releaseBuffers()
            return giveUp()
        }
        while ring.count > Int(count) { ring.removeLast().recycle() }
        slots = ring
        for index in 0..<count {
            do {
                try queueAtStart(index)
            } catch where error.errno.rawValue == ENODEV {
                throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot queue capture buffer (\(error))"))
            } catch {
                // EFAULT/EINVAL: a driver that needs contiguous memory can't use pool buffers.
                releaseBuffers()
                return giveUp()
            }
        }
        return true
    }

    /// `VIDIOC_REQBUFS` for a ring of `memory` buffers; returns how many the driver gave.
    private func requestRing(_ memory: v4l2_memory) throws(V4L2IoctlError) -> UInt32 {
        var request = v4l2_requestbuffers()
        request.count = Self.ringSize
        request.type = bufferType.rawValue
        request.memory = memory.rawValue
        try device.ioctl(.requestBuffers, &request)
        self.memory = memory
        buffersRequested = true
        return request.count
    }

    /// Queues ring slot `index` before streaming starts, once more on failure: a transient
    /// refusal (vivid's inject_vidioc_qbuf_error) is not fatal.
    private func queueAtStart(_ index: UInt32) throws(V4L2IoctlError) {
        var buffer = queueableBuffer(index: index)
        do { try device.ioctl(.queueBuffer, &buffer) } catch where error.errno.rawValue != ENODEV {
            buffer = queueableBuffer(index: index)
            try device.ioctl(.queueBuffer, &buffer)
        }
    }

    /// Whether a pool buffer has the very layout the camera writes: same strides and, for
    /// a single-buffer format, the chroma plane where V4L2 puts it.
    private func fitsCameraLayout(_ buffer: PixelBuffer) -> Bool {
        guard buffer.planes.count == 2 else { return false }
        if let geometry {
            let chromaOffset = buffer.planes[1].base - buffer.planes[0].base
            return geometry.strides == [buffer.planes[0].stride, buffer.planes[1].stride]
                && geometry.offsets == [0, chromaOffset] && geometry.byteCount <= buffer.byteCount
        }
        return bytesPerLine == [buffer.planes[0].stride, buffer.planes[1].stride]
    }

    /// mmap streaming: the driver's own buffers, converted into pool buffers as they come.
    private func startMapped() throws {
        let count: UInt32
        do {
            count = try requestRing(V4L2_MEMORY_MMAP)
        } catch {
            throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot allocate capture buffers (\(error))"))
        }
        guard count >= 2 else {
            throw CaptureError(.deviceFailed, "\(path) gave only \(count) capture buffer(s); camrec needs at least 2")
        }
        for index in 0..<count {
            var buffer = emptyBuffer(index: index)
            do {
                try device.ioctl(.queryBuffer, &buffer)
            } catch {
                throw CaptureError(.deviceFailed, "\(path): cannot query capture buffer \(index) (\(error))")
            }
            var planes: [(base: UnsafeMutableRawPointer, length: Int)] = []
            let regions: [(offset: Int, length: Int)] = multiplanar
                ? (0..<Int(buffer.length)).map { (Int(planeScratch[$0].m.mem_offset), Int(planeScratch[$0].length)) }
                : [(Int(buffer.m.offset), Int(buffer.length))]
            for region in regions {
                let (base, error) = system.mmap(length: region.length, fd: device.fd, offset: region.offset)
                guard let base else {
                    throw CaptureError(.deviceFailed, "\(path): cannot map capture buffer \(index): \(Errno(rawValue: error))")
                }
                planes.append((base, region.length))
            }
            mappings.append(planes)
        }
        for index in 0..<count {
            do {
                try queueAtStart(index)
            } catch {
                throw Self.busyOr(error, path: path, CaptureError(.deviceFailed, "\(path): cannot queue capture buffer (\(error))"))
            }
        }
    }

    public func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        if first {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    /// A `v4l2_buffer` for `index`, pointing at the plane scratch array when multi-planar.
    private func emptyBuffer(index: UInt32 = 0) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = bufferType.rawValue
        buffer.memory = memory.rawValue
        if multiplanar {
            planeScratch.update(repeating: v4l2_plane(), count: Int(VIDEO_MAX_PLANES))
            buffer.m.planes = planeScratch
            buffer.length = UInt32(VIDEO_MAX_PLANES)
        }
        return buffer
    }

    /// The buffer to hand the driver for ring slot `index`: with USERPTR, the memory of the
    /// pool buffer in that slot.
    private func queueableBuffer(index: UInt32) -> v4l2_buffer {
        var buffer = emptyBuffer(index: index)
        guard memory == V4L2_MEMORY_USERPTR, let pixels = slots[Int(index)] else { return buffer }
        if multiplanar {
            for (p, plane) in pixels.planes.prefix(2).enumerated() {
                planeScratch[p].m.userptr = UInt(bitPattern: plane.base)
                planeScratch[p].length = UInt32(plane.stride * plane.height)
            }
            buffer.length = 2
        } else {
            buffer.m.userptr = UInt(bitPattern: pixels.planes[0].base)
            buffer.length = UInt32(pixels.byteCount)
        }
        return buffer
    }

    private enum Dequeued {
        case frame(PixelBuffer)
        case skipped
        case nothing
        case failed(V4L2IoctlError)
    }

    public func nextFrame() throws -> PixelBuffer? {
        guard pool != nil else { preconditionFailure("start(pool:) first") }
        // Once ended (lost, stalled, stopped) the device is closed: never touch it again.
        if state.withLock({ $0.end }) != nil { return nil }
        while true {
            if state.withLock({ $0.stopped }) { return finish(.finished) }
            if let lost = requeueRefused() { return finish(lost) }

            let now = MonotonicClock.now()
            let deadline = lastSignOfLife + stallTimeout + (framesSeen == 0 ? Self.firstFrameGrace : 0)
            // Past the deadline, poll once more without waiting: the time may have gone on our
            // own slow conversion while frames queued up, and that is not a stalled camera.
            var timeout = now >= deadline ? 0 : Int32(min((deadline - now + 999_999) / 1_000_000, 1000))
            // Buffers the driver refused are retried soon rather than at the next frame.
            if !unqueued.isEmpty { timeout = min(timeout, 20) }

            var fds = [pollfd(fd: device.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = fds.withUnsafeMutableBufferPointer {
                system.poll($0.baseAddress!, count: 2, timeoutMilliseconds: timeout)
            }
            if now >= deadline, let failure = jpegFailure {
                let waited = Double(now - lastSignOfLife) / 1e9
                return finish(.stalled("\(path) delivered only unusable MJPEG frames for \(formatSeconds(waited)) s "
                                       + "(the last was \(failure)); the camera stalled"))
            }
            if ready == 0 && now >= deadline {
                let waited = Double(now - lastSignOfLife) / 1e9
                return finish(.stalled("\(path) delivered no frame for \(formatSeconds(waited)) s; the camera stalled"))
            }
            if ready == -EINTR || ready == 0 { continue }
            if ready < 0 {
                return finish(.deviceLost("poll on \(path) failed: \(Errno(rawValue: -ready))"))
            }
            if fds[1].revents != 0 { continue }
            let events = Int32(fds[0].revents)
            if events == 0 { continue }
            let trouble = events & Int32(POLLERR | POLLHUP | POLLNVAL) != 0

            switch dequeue() {
            case .frame(let buffer):
                spuriousWakeups = 0
                return buffer
            case .skipped:
                spuriousWakeups = 0
                continue
            case .nothing:
                if trouble {
                    return finish(.deviceLost("\(path) reported an error (poll: \(describePoll(events))); "
                                              + "the camera stopped streaming"))
                }
                // Ready but nothing to dequeue should not happen; never let it become a busy loop.
                spuriousWakeups += 1
                if spuriousWakeups > 3 { usleep(5_000) }
            case .failed(let error):
                return finish(.deviceLost(lostMessage(error)))
            }
        }
    }

    private func lostMessage(_ error: V4L2IoctlError) -> String {
        switch error.errno.rawValue {
        case ENODEV: return "\(path) was disconnected while recording (\(error))"
        case EIO: return "\(path) reported a fatal streaming error (\(error))"
        case EPIPE: return "\(path) stopped streaming (\(error))"
        default: return "\(path) failed while streaming (\(error))"
        }
    }

    private func describePoll(_ events: Int32) -> String {
        var names: [String] = []
        if events & Int32(POLLERR) != 0 { names.append("POLLERR") }
        if events & Int32(POLLHUP) != 0 { names.append("POLLHUP") }
        if events & Int32(POLLNVAL) != 0 { names.append("POLLNVAL") }
        return names.joined(separator: "|")
    }

    private func dequeue() -> Dequeued {
        var buffer = emptyBuffer()
        do {
            try device.ioctl(.dequeueBuffer, &buffer)
        } catch {
            if error.errno.rawValue == EAGAIN { return .nothing }
            return .failed(error)
        }
        let index = buffer.index
        let now = MonotonicClock.now()
        let previousSignOfLife = lastSignOfLife
        lastSignOfLife = now
        framesSeen += 1
        // Whatever happens to the frame, the buffer goes straight back to the camera.
        defer { requeue(index) }

        let flags = V4L2BufferFlags(rawValue: buffer.flags)
        let gap = sequences.record(buffer.sequence)
        let wraps = sequences.wraps
        state.withLock {
            $0.statistics.dropped += gap
            $0.statistics.sequenceWraps = wraps
        }
        if flags.contains(.error) {
            state.withLock {
                $0.statistics.dropped += 1
                $0.statistics.errored += 1
            }
            return .skipped
        }
        // A short buffer (bytesused below one frame) is as corrupt as a flagged one.
        func corrupt() -> Dequeued {
            state.withLock {
                $0.statistics.dropped += 1
                $0.statistics.errored += 1
            }
            return .skipped
        }
        func poolEmpty() -> Dequeued {
            state.withLock { $0.statistics.dropped += 1 }
            return .skipped
        }
        if memory == V4L2_MEMORY_USERPTR {
            guard holdsWholeFrame(buffer) else { return corrupt() }
            // The filled buffer goes on as it is; a free one takes its place in the ring.
            guard let replacement = pool?.tryTake() else { return poolEmpty() }
            let filled = slots[Int(index)]!
            slots[Int(index)] = replacement
            return deliver(filled, buffer, flags: flags, now: now, copied: false)
        }
        if let jpegDecoder {
            guard let out = pool?.tryTake() else { return poolEmpty() }
            do {
                try jpegDecoder.decode(jpegPayload(buffer, index: Int(index)), into: out)
                jpegFailure = nil
            } catch {
                out.recycle()
                jpegFailure = error
                // An undecodable frame is no sign of life (see `jpegFailure`).
                lastSignOfLife = previousSignOfLife
                return corrupt()
            }
            return deliver(out, buffer, flags: flags, now: now)
        }
        let image: FrameConverter.CameraImage
        if let libraryConverter {
            let used = Int(buffer.bytesused) > 0 ? Int(buffer.bytesused) : mappings[Int(index)][0].length
            guard let converted = libraryConverter.convert(mappings[Int(index)][0].base, byteCount: used) else {
                return corrupt()
            }
            image = converted
        } else {
            guard let own = cameraImage(buffer, index: Int(index)) else { return corrupt() }
            image = own
        }
        guard let out = pool?.tryTake() else { return poolEmpty() }
        FrameConverter.convert(image, into: out)
        return deliver(out, buffer, flags: flags, now: now)
    }

    /// Stamps a filled pool buffer with the frame's sequence and times, and counts it.
    /// `copied`: the CPU wrote the frame into `out` (every path but zero-copy).
    private func deliver(_ out: PixelBuffer, _ buffer: v4l2_buffer, flags: V4L2BufferFlags, now: UInt64,
                         copied: Bool = true) -> Dequeued {
        let stamp = UInt64(buffer.timestamp.tv_sec) &* 1_000_000_000 &+ UInt64(buffer.timestamp.tv_usec) &* 1_000
        let captured = flags.hasMonotonicTimestamp && stamp != 0 ? stamp : now
        out.sequence = sequences.extended
        out.captureTimeNanoseconds = captured
        out.presentationTimeNanoseconds = clock.presentationTime(capturedAt: captured)
        let written = copied ? UInt64(out.planes.reduce(0) { $0 + $1.width * $1.height }) : 0
        state.withLock {
            $0.statistics.delivered += 1
            $0.statistics.bytesWrittenByCPU += written
        }
        return .frame(out)
    }

    /// Whether a dequeued USERPTR buffer holds a whole frame where the pool buffer expects it.
    private func holdsWholeFrame(_ buffer: v4l2_buffer) -> Bool {
        if let geometry {
            let used = multiplanar ? Int(planeScratch[0].bytesused) : Int(buffer.bytesused)
            let offset = multiplanar ? Int(planeScratch[0].data_offset) : 0
            return offset == 0 && (used == 0 || used >= geometry.byteCount)
        }
        for p in 0..<memoryPlaneCount {
            let rows = p == 0 ? frameSize.height : (frameSize.height + 1) / 2
            let used = Int(planeScratch[p].bytesused)
            // Data further into the plane than its start would be a shifted picture.
            if planeScratch[p].data_offset != 0 || (used != 0 && used < bytesPerLine[p] * rows) { return false }
        }
        return true
    }

    /// The JPEG bytes of a dequeued buffer: `bytesused` (past `data_offset` when multi-planar),
    /// empty when the driver reports none or more than the buffer holds.
    private func jpegPayload(_ buffer: v4l2_buffer, index: Int) -> UnsafeRawBufferPointer {
        let mapping = mappings[index][0]
        let used = multiplanar ? Int(planeScratch[0].bytesused) : Int(buffer.bytesused)
        let offset = multiplanar ? Int(planeScratch[0].data_offset) : 0
        guard used > offset, used <= mapping.length else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: mapping.base + offset, count: used - offset)
    }

    /// The planes of a dequeued buffer, or nil when it holds less than one frame.
    private func cameraImage(_ buffer: v4l2_buffer, index: Int) -> FrameConverter.CameraImage? {
        let mapping = mappings[index]
        var planes: [UnsafeRawPointer] = []
        var strides: [Int] = []
        if let geometry {
            let used = multiplanar ? Int(planeScratch[0].bytesused) : Int(buffer.bytesused)
            let offset = multiplanar ? Int(planeScratch[0].data_offset) : 0
            if used != 0 && used - offset < geometry.byteCount { return nil }
            if mapping[0].length - offset < geometry.byteCount { return nil }
            planes = geometry.offsets.map { UnsafeRawPointer(mapping[0].base + offset + $0) }
            strides = geometry.strides
        } else {
            for p in 0..<memoryPlaneCount {
                let offset = Int(planeScratch[p].data_offset)
                let rows = p == 0 || layout == .nv16 || layout == .nv61 || layout == .yuv422p
                    ? frameSize.height : (frameSize.height + 1) / 2
                let needed = bytesPerLine[p] * rows
                let used = Int(planeScratch[p].bytesused)
                if used != 0 && used - offset < needed { return nil }
                if mapping[p].length - offset < needed { return nil }
                planes.append(UnsafeRawPointer(mapping[p].base + offset))
                strides.append(bytesPerLine[p])
            }
        }
        return FrameConverter.CameraImage(layout: layout!, width: frameSize.width, height: frameSize.height,
                                          planes: planes, strides: strides)
    }

    private func requeue(_ index: UInt32) {
        var buffer = queueableBuffer(index: index)
        do {
            try device.ioctl(.queueBuffer, &buffer)
        } catch {
            // Kept aside and retried: vivid's inject_vidioc_qbuf_error, like a real
            // driver's transient failure, refuses one QBUF and takes the next.
            unqueued.append(index)
            lastQueueError = error
        }
    }

    private var lastQueueError: V4L2IoctlError?

    /// Retries buffers the driver refused. Three refusals in a row end the recording:
    /// the ring would run dry and the camera stall.
    private func requeueRefused() -> SourceEnd? {
        guard !unqueued.isEmpty else { return nil }
        if let error = lastQueueError, error.errno.rawValue == ENODEV {
            return .deviceLost(lostMessage(error))
        }
        let pending = unqueued
        unqueued = []
        for index in pending { requeue(index) }
        let taken = UInt64(pending.count - unqueued.count)
        state.withLock { $0.statistics.requeuedAfterRefusal += taken }
        if unqueued.isEmpty {
            refusedQueueing = 0
            return nil
        }
        refusedQueueing += 1
        if refusedQueueing >= 3, let error = lastQueueError {
            return .deviceLost("\(path) keeps refusing capture buffers (\(error))")
        }
        return nil
    }

    private func finish(_ reason: SourceEnd) -> PixelBuffer? {
        state.withLock { if $0.end == nil { $0.end = reason } }
        teardown()
        return nil
    }

    /// Stops streaming and releases the buffers and the node (and with it the lock).
    private func teardown() {
        guard !tornDown else { return }
        tornDown = true
        if streaming {
            var type = Int32(bitPattern: bufferType.rawValue)
            try? device.ioctl(.streamOff, &type)
            streaming = false
        }
        for buffer in mappings {
            for plane in buffer { _ = system.munmap(plane.base, length: plane.length) }
        }
        mappings = []
        releaseBuffers()
        // After STREAMOFF the camera holds none of them: the ring goes back to the pool.
        for case let buffer? in slots { buffer.recycle() }
        slots = []
        device.close()
    }

    /// `VIDIOC_REQBUFS` with a count of 0: the driver lets go of the ring.
    private func releaseBuffers() {
        guard buffersRequested else { return }
        buffersRequested = false
        var release = v4l2_requestbuffers()
        release.type = bufferType.rawValue
        release.memory = memory.rawValue
        try? device.ioctl(.requestBuffers, &release)
    }
}

private func formatSeconds(_ s: Double) -> String {
    String(format2: s)
}
