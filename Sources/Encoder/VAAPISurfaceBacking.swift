import CFFmpeg
import Libav
import Capture
import Synchronization

/// Pool memory that is a VA surface, mapped for writing: when a pool buffer is taken it gets
/// a surface from the encoder's hardware frames context (`av_hwframe_get_buffer`) and that
/// surface's mapping (`av_hwframe_map` WRITE|OVERWRITE: `vaDeriveImage` when the driver
/// allows, so the source writes into the surface itself; otherwise a VA image the driver
/// copies into the surface at unmap with `vaPutImage`). The encoder then only unmaps and
/// submits (`finishUpload`).
///
/// Mapping runs on the capture thread while the encoder thread encodes on the same VADisplay:
/// FFmpeg's frame pool is thread-safe and libva drivers lock internally (the test driver
/// holds one driver-wide mutex in every entry point that touches its objects).
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
    }

    private let framesRef: UnsafeMutablePointer<AVBufferRef>
    /// Per pool buffer: the surface it holds between take and encode, and its mapping.
    private let surfaces: [UnsafeMutablePointer<AVFrame>]
    private let mappings: [UnsafeMutablePointer<AVFrame>]
    private let counters = Mutex(Counters())

    init?(frames: UnsafeMutablePointer<AVBufferRef>, capacity: Int) {
        guard let ref = av_buffer_ref(frames) else { return nil }
        framesRef = ref
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
        let started = MonotonicClock.now(), startedCPU = ThreadCPUClock.now()
        let surface = surfaces[i], mapping = mappings[i]
        var status = av_hwframe_get_buffer(framesRef, surface, 0)
        guard status >= 0 else { throw failure("no VA surface for a pool buffer", status) }
        mapping.pointee.format = AV_PIX_FMT_NV12.rawValue
        status = av_hwframe_map(mapping, surface, Int32(AV_HWFRAME_MAP_WRITE | AV_HWFRAME_MAP_OVERWRITE))
        guard status >= 0 else {
            av_frame_unref(surface)
            throw failure("cannot map a VA surface for writing", status)
        }
        withUnsafeBytes(of: mapping.pointee.data) { dataRaw in
            withUnsafeBytes(of: mapping.pointee.linesize) { lineRaw in
                let data = dataRaw.bindMemory(to: UnsafeMutablePointer<UInt8>?.self)
                let lines = lineRaw.bindMemory(to: Int32.self)
                for p in 0..<2 {  // NV12: Y, then interleaved CbCr
                    planes.append(PlaneMemory(base: data[p]!, stride: Int(lines[p])))
                }
            }
        }
        let spent = MonotonicClock.now() - started, spentCPU = ThreadCPUClock.now() - startedCPU
        counters.withLock {
            $0.mapped += 1
            $0.mapNanoseconds += spent
            $0.mapCPUNanoseconds += spentCPU
        }
    }

    /// Ends the CPU's part of the upload of buffer `i`: unmaps (with a VA image instead of a
    /// derived one, this is where the driver copies it into the surface) and moves the surface
    /// into `frame` for avcodec_send_frame. False when the buffer holds no surface (the pool
    /// gave it its own memory because mapping failed at take time).
    func finishUpload(bufferIndex i: Int, into frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        guard surfaces[i].pointee.buf.0 != nil else { return false }
        av_frame_unref(mappings[i])
        av_frame_move_ref(frame, surfaces[i])
        return true
    }

    func detach(bufferIndex i: Int) {
        guard surfaces[i].pointee.buf.0 != nil else { return }
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
        let message = "\(what): \(libavErrorDescription(status))"
        counters.withLock {
            $0.failures += 1
            if $0.firstFailure == nil { $0.firstFailure = message }
        }
        return EncoderError(.failed, message)
    }
}
