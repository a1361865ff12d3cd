import CFFmpeg
import Libav
import Frames
import Synchronization

/// Pool memory that is a VA surface, mapped for writing: when a pool buffer is taken it gets
/// a surface from the encoder's hardware frames context (`av_hwframe_get_buffer`) and that
/// surface's mapping (`av_hwframe_map` WRITE|OVERWRITE: `vaDeriveImage` when the driver
/// allows, so the source writes into the surface itself; otherwise a VA image the driver
/// copies into the surface at unmap with `vaPutImage`). The encoder then only unmaps and
/// submits (`finishUpload`).
///
/// When the driver's derived mapping is not faithful (`VAAPIUploadPath`), every buffer writes
/// into a VA image of its own instead (`VAAPIImageMapping`), put into the surface at
/// `finishUpload`. A derived mapping that fails mid-recording falls back to that path for the
/// frame, so only a failure of both loses the surface (the pool then lends its own memory).
///
/// Mapping runs on the capture thread while the encoder thread encodes on the same VADisplay:
/// FFmpeg's frame pool is thread-safe and libva drivers lock internally (the test driver
/// holds one driver-wide mutex in every entry point that touches its objects).
/// Sendable by its invariant: slot `i` (surface, mapping, image) is touched only by whoever holds pool buffer `i`.
final class VAAPISurfaceBacking: PixelBufferBacking, @unchecked Sendable {
    struct Counters {
        var mapped = 0
        /// Time in attach (get surface + map), wall clock and the capture thread's CPU time.
        var mapNanoseconds: UInt64 = 0
        var mapCPUNanoseconds: UInt64 = 0
        /// Surfaces released unencoded (a frame dropped after its buffer was taken).
        var releasedUnencoded = 0
        var failures = 0
        var firstFailure: String?
        /// Frames encoded whose derived mapping failed and that went through a VA image instead.
        var imageFallbacks = 0
        var firstFallbackReason: String?
    }

    private let framesRef: UnsafeMutablePointer<AVBufferRef>
    /// Per pool buffer: the surface it holds between take and encode, and its mapping.
    private let surfaces: [UnsafeMutablePointer<AVFrame>]
    private let mappings: [UnsafeMutablePointer<AVFrame>]
    private let counters = Mutex(Counters())
    private let runQueueWait = RunQueueWaitClock()
    private let path: VAAPIUploadPath.Kind
    private let display: VADisplay
    private let width: Int, height: Int
    /// Per pool buffer: its VA image when it writes through one (made on first need), and
    /// whether the current frame is in it (else in the derived mapping). Fixed storage: the
    /// capture thread and the encoder thread touch different buffers' entries at once.
    private let images: UnsafeMutableBufferPointer<VAAPIImageMapping?>
    private let inImage: UnsafeMutableBufferPointer<Bool>

    init?(frames: UnsafeMutablePointer<AVBufferRef>, capacity: Int, path: VAAPIUploadPath.Kind, display: VADisplay,
          width: Int, height: Int) {
        guard let ref = av_buffer_ref(frames) else { return nil }
        framesRef = ref
        self.path = path
        self.display = display
        self.width = width
        self.height = height
        images = .allocate(capacity: capacity)
        images.initialize(repeating: nil)
        inImage = .allocate(capacity: capacity)
        inImage.initialize(repeating: false)
        var s: [UnsafeMutablePointer<AVFrame>] = [], m: [UnsafeMutablePointer<AVFrame>] = []
        for _ in 0..<capacity {
            guard let a = av_frame_alloc(), let b = av_frame_alloc() else { break }
            s.append(a)
            m.append(b)
        }
        surfaces = s
        mappings = m
        if s.count < capacity { return nil }
    }

    deinit {
        // The images first: unmapped and destroyed while the device (held by framesRef) lives.
        _ = images.deinitialize()
        images.deallocate()
        inImage.deallocate()
        for i in surfaces.indices {
            var m: UnsafeMutablePointer<AVFrame>? = mappings[i]
            av_frame_free(&m)  // unmaps first: the mapping holds a reference to the surface
            var s: UnsafeMutablePointer<AVFrame>? = surfaces[i]
            av_frame_free(&s)
        }
        var ref: UnsafeMutablePointer<AVBufferRef>? = framesRef
        av_buffer_unref(&ref)
    }

    var statistics: Counters { counters.withLock { $0 } }

    func attach(bufferIndex i: Int, planes: inout [PlaneMemory]) throws {
        let started = MonotonicClock.now(), startedCPU = ThreadCPUClock.now(), startedWait = runQueueWait.now()
        let surface = surfaces[i], mapping = mappings[i]
        let status = av_hwframe_get_buffer(framesRef, surface, 0)
        guard status >= 0 else { throw failure("no VA surface for a pool buffer", status) }
        inImage[i] = false
        if path == .derive {
            mapping.pointee.format = AV_PIX_FMT_NV12.rawValue
            let mapStatus = av_hwframe_map(mapping, surface, Int32(AV_HWFRAME_MAP_WRITE | AV_HWFRAME_MAP_OVERWRITE))
            if mapStatus >= 0 {
                planes.append(contentsOf: Self.planes(of: mapping))
            } else {
                let why = "mapping a derived image failed: \(libavErrorDescription(mapStatus))"
                do {
                    planes.append(contentsOf: try imageMapping(i).map())
                } catch {
                    av_frame_unref(surface)
                    throw failure("cannot map a VA surface for writing (\(why); through a VA image: \(error))")
                }
                counters.withLock { if $0.firstFallbackReason == nil { $0.firstFallbackReason = why } }
                inImage[i] = true
            }
        } else {
            do {
                planes.append(contentsOf: try imageMapping(i).map())
            } catch {
                av_frame_unref(surface)
                throw failure("cannot map a VA image for writing: \(error)")
            }
            inImage[i] = true
        }
        // Time preempted is not the driver's: left out of the wall time.
        let preempted = runQueueWait.since(startedWait), wall = MonotonicClock.now() - started
        let spent = wall > preempted ? wall - preempted : 0, spentCPU = ThreadCPUClock.now() - startedCPU
        counters.withLock {
            $0.mapped += 1
            $0.mapNanoseconds += spent
            $0.mapCPUNanoseconds += spentCPU
        }
    }

    /// Buffer `i`'s own VA image (made on first use, then reused).
    private func imageMapping(_ i: Int) throws -> VAAPIImageMapping {
        if let made = images[i] { return made }
        let made = try VAAPIImageMapping(display: display, width: width, height: height)
        images[i] = made
        return made
    }

    /// The Y and CbCr planes of a mapped NV12 AVFrame.
    static func planes(of frame: UnsafeMutablePointer<AVFrame>) -> [PlaneMemory] {
        withUnsafeBytes(of: frame.pointee.data) { dataRaw in
            withUnsafeBytes(of: frame.pointee.linesize) { lineRaw in
                let data = dataRaw.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
                let lines = lineRaw.bindMemory(to: Int32.self)
                return (0..<2).map { PlaneMemory(base: data[$0]!, stride: Int(lines[$0])) }
            }
        }
    }

    /// Ends the CPU's part of the upload of buffer `i`: unmaps (or, from a VA image, has the
    /// driver copy it into the surface with vaPutImage) and moves the surface into `frame` for
    /// avcodec_send_frame. False when the buffer holds no surface (the pool gave it its own
    /// memory because mapping failed at take time). Throws when vaPutImage fails.
    func finishUpload(bufferIndex i: Int, into frame: UnsafeMutablePointer<AVFrame>) throws -> Bool {
        guard surfaces[i].pointee.buf.0 != nil else { return false }
        if inImage[i], let image = images[i] {
            inImage[i] = false
            do {
                try image.put(into: VASurfaceID(UInt(bitPattern: surfaces[i].pointee.data.3)))
            } catch {
                av_frame_unref(surfaces[i])
                throw error
            }
            if path == .derive { counters.withLock { $0.imageFallbacks += 1 } }
        } else {
            av_frame_unref(mappings[i])
        }
        av_frame_move_ref(frame, surfaces[i])
        return true
    }

    func detach(bufferIndex i: Int) {
        guard surfaces[i].pointee.buf.0 != nil else { return }
        if inImage[i] { images[i]?.unmap(); inImage[i] = false }
        av_frame_unref(mappings[i])
        av_frame_unref(surfaces[i])
        counters.withLock { $0.releasedUnencoded += 1 }
    }

    /// The surface buffer `i` holds now, for tests; nil when it holds none.
    func surfaceID(bufferIndex i: Int) -> UInt? {
        surfaces[i].pointee.buf.0 == nil ? nil : UInt(bitPattern: surfaces[i].pointee.data.3)
    }

    private func failure(_ what: String, _ status: Int32) -> EncoderError {
        // Not LibavLogCapture.takeLastError(): this runs on the capture thread, and the log
        // lines it keeps may belong to an encoder failure being reported on the encoder thread.
        failure("\(what): \(libavErrorDescription(status))")
    }

    private func failure(_ message: String) -> EncoderError {
        counters.withLock {
            $0.failures += 1
            if $0.firstFailure == nil { $0.firstFailure = message }
        }
        return EncoderError(.failed, message)
    }
}
