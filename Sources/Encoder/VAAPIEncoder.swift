import Bitstream
import CFFmpeg
import Libav
import Frames

/// H.264 or H.265 on the GPU: libavcodec's `h264_vaapi` or `hevc_vaapi` on a VA-API device.
///
/// A frame reaches the GPU in one CPU pass: the pool from `makePool` lends its buffers mapped
/// VA surfaces (`VAAPISurfaceBacking`: `av_hwframe_map` WRITE|OVERWRITE, which is
/// `vaDeriveImage`, the surface's own memory, when the driver allows it; otherwise a VA image
/// the driver copies into the surface at unmap with `vaPutImage`), so the source converts
/// each frame straight into the surface and `encode` only unmaps and submits it. The pool
/// buffer goes back to the pool right away; the surface stays with the encoder (through its
/// AVFrame) until the GPU is done with it.
///
/// A buffer that is not in a mapped surface (an ordinary pool, or mapping failed when the
/// buffer was taken) is copied into a freshly mapped surface at `encode`: the old two-pass path.
///
/// No B-frames and `async_depth` 1, so every frame comes out as soon as the GPU finishes it;
/// `pict_type = I` makes the frames the recorder asks for IDRs.
public final class VAAPIEncoder: VideoEncoder {
    public let inputFormat = PixelFormat.nv12
    /// Only during `encode`: the buffer is recycled once it is uploaded.
    public let maximumBuffersInFlight = 1
    public var onBufferDone: ((PixelBuffer) -> Void)?
    public var onPacket: ((EncodedPacket) -> Void)?
    /// The parameter sets from the encoder's extradata (global headers), once started; nil when
    /// the driver writes them only in the stream.
    public private(set) var parameterSets: [UInt8]?

    public let device: VAAPIDevice
    let settings: EncoderSettings
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var framesRef: UnsafeMutablePointer<AVBufferRef>?
    private let hwFrame: UnsafeMutablePointer<AVFrame>
    private let mapped: UnsafeMutablePointer<AVFrame>
    private let packet: UnsafeMutablePointer<AVPacket>
    private(set) var packets: PacketDrain

    /// What was chosen when the encoder opened, for logs and tests.
    public private(set) var chosenProfile: VAAPICapabilities.Profile?
    public private(set) var usesLowPower = false
    public internal(set) var rateControl = ""
    /// One line for the user when camrec had to choose for them (constant QP for a bit rate).
    public internal(set) var rateControlNote: String?
    /// Whether mappings are the surface itself (vaDeriveImage) or an image the driver then
    /// copies with vaPutImage (one more copy, inside the driver), and why (checked at start).
    private(set) var uploadPath = VAAPIUploadPath(kind: .image, reason: "not checked yet")
    public var uploadIsDirect: Bool { uploadPath.isDirect }
    /// The copy path's VA image, when derived mappings can't be used (made on first need).
    private var copyImage: VAAPIImageMapping?
    /// The backing of the last pool `makePool` made; nil until then.
    private(set) var backing: VAAPISurfaceBacking?
    /// Counters of the upload. Frames sent to the GPU, and bytes the CPU wrote into VA mappings
    /// for them (by the source, or by the copy in `encode`).
    public private(set) var uploadedFrames = 0
    public private(set) var uploadedBytes = 0
    /// Of `uploadedFrames`: written by the source straight into a mapped surface (1 CPU pass),
    /// and copied from pool memory into a surface at `encode` (2 CPU passes).
    public private(set) var framesWrittenInPlace = 0
    public private(set) var framesCopied = 0
    /// Frames the driver skipped: it returned an empty packet, which is dropped.
    public var framesSkippedByDriver: Int { packets.emptyPackets }
    /// Encoder-thread time of the upload: unmapping, or get surface + map + copy + unmap.
    private var encodeUploadNanoseconds: UInt64 = 0
    private let runQueueWait = RunQueueWaitClock()
    private var encodeUploadCPUNanoseconds: UInt64 = 0
    /// Time spent uploading, for measurements: mapping at take (on the capture thread) plus
    /// the encoder thread's part. Wall clock: includes waiting for the driver, e.g. for a lock
    /// an encode on the other thread holds.
    public var uploadNanoseconds: UInt64 { encodeUploadNanoseconds + (backing?.statistics.mapNanoseconds ?? 0) }
    /// The same in CPU time of the threads doing it: what the upload costs the CPU.
    public var uploadCPUNanoseconds: UInt64 { encodeUploadCPUNanoseconds + (backing?.statistics.mapCPUNanoseconds ?? 0) }

    /// libavcodec's name of the encoder: h264_vaapi or hevc_vaapi.
    public var codecName: String { settings.codec == .h264 ? "h264_vaapi" : "hevc_vaapi" }

    public var name: String {
        "\(codecName) (VA-API\(usesLowPower ? " low-power" : "") on \(device.device): \(device.capabilities.vendor))"
    }

    public init(settings: EncoderSettings, device: VAAPIDevice) throws {
        self.settings = settings
        self.device = device
        packets = PacketDrain(frameRate: settings.frameRateRational, encoderName: settings.codec == .h264 ? "h264_vaapi" : "hevc_vaapi")
        guard let hwFrame = av_frame_alloc(), let mapped = av_frame_alloc(), let packet = av_packet_alloc() else {
            throw EncoderError(.unavailable, "out of memory setting up the encoder")
        }
        self.hwFrame = hwFrame
        self.mapped = mapped
        self.packet = packet
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = hwFrame
        av_frame_free(&f)
        var m: UnsafeMutablePointer<AVFrame>? = mapped
        av_frame_free(&m)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        if context != nil { avcodec_free_context(&context) }
        if framesRef != nil { av_buffer_unref(&framesRef) }
    }

    /// The profile to encode: for H.264 the one asked for if the driver encodes it, otherwise the
    /// best one below it (most VA drivers offer all three; small ones only Constrained Baseline);
    /// for H.265 Main (8-bit 4:2:0, what camrec's pool holds).
    public static func chooseProfile(_ codec: VideoCodec, _ wanted: H264Profile, in caps: VAAPICapabilities) -> VAAPICapabilities.Profile? {
        if codec == .hevc {
            return caps.hevc.first { $0.vaProfile == VAProfileHEVCMain && ($0.canEncode || $0.canEncodeLowPower) }
        }
        let order: [H264Profile] = [.high, .main, .baseline]
        let candidates = order.drop { $0 != wanted }
        for p in candidates {
            if let found = caps.h264.first(where: { $0.camrecProfile == p && ($0.canEncode || $0.canEncodeLowPower) }) {
                return found
            }
        }
        return nil
    }

    /// Opens the encoder; safe to call again (the selection opens it early to probe).
    public func start() throws {
        if context != nil { return }
        let caps = device.capabilities
        // h264_vaapi and hevc_vaapi take QP 1-51: they ignore qp 0 and encode at their default instead.
        if settings.constantQP == 0 {
            throw EncoderError(.unavailable, "VA-API can't encode at QP 0 (\(codecName) takes QP 1-51 and would silently use "
                + "its default, \(settings.codec == .h264 ? 20 : 25)): use --qp 1, the nearest it can do")
        }
        guard let profile = Self.chooseProfile(settings.codec, settings.profile, in: caps) else {
            let offered = caps.profiles(settings.codec).filter { $0.canEncode || $0.canEncodeLowPower }.map { VAAPIDevice.shortName($0.name) }
            let wanted = settings.codec == .h264 ? "H.264 profile \(settings.profile.rawValue) or lower" : "H.265 Main (8-bit 4:2:0)"
            throw EncoderError(.unavailable, "the VA driver (\(caps.vendor)) can't encode \(wanted) "
                + "(it encodes: \(offered.isEmpty ? "nothing" : offered.joined(separator: ", ")))")
        }
        chosenProfile = profile
        // The low-power entrypoint (fixed-function encoder on Intel) only when that is all there is.
        usesLowPower = !profile.canEncode
        guard let codec = avcodec_find_encoder_by_name(codecName) else {
            throw EncoderError(.unavailable, "this FFmpeg has no \(codecName) encoder")
        }

        LibavLogCapture.begin()
        // Surfaces for the input frames, NV12 in the size of the video.
        if framesRef != nil { av_buffer_unref(&framesRef) }
        guard let frames = av_hwframe_ctx_alloc(device.deviceRef) else {
            throw EncoderError(.unavailable, "out of memory setting up VA-API frames")
        }
        framesRef = frames
        let fc = UnsafeMutableRawPointer(frames.pointee.data)!.assumingMemoryBound(to: AVHWFramesContext.self)
        fc.pointee.format = AV_PIX_FMT_VAAPI
        fc.pointee.sw_format = AV_PIX_FMT_NV12
        fc.pointee.width = Int32(settings.size.width)
        fc.pointee.height = Int32(settings.size.height)
        // 0: surfaces are created as needed and reused; the encoder holds at most a few.
        fc.pointee.initial_pool_size = 0
        let status = av_hwframe_ctx_init(frames)
        guard status >= 0 else {
            throw unavailable("the VA driver can't make \(settings.size) NV12 surfaces", status)
        }
        uploadPath = VAAPIUploadPath.choose(frames: frames, display: device.display,
                                            width: settings.size.width, height: settings.size.height)

        // One black frame on a context of its own, so a driver that refuses the settings only
        // at the first picture, or writes no parameter sets, is found out before any output exists.
        var trial: UnsafeMutablePointer<AVCodecContext>? = try openCodec(codec, frames: frames, profile: profile)
        defer { avcodec_free_context(&trial) }
        let first: VAAPIFirstFrame.Outcome
        do {
            first = try VAAPIFirstFrame.encode(context: trial!, codec: settings.codec, frames: frames, uploadPath: uploadPath,
                                               display: device.display, width: settings.size.width, height: settings.size.height)
        } catch let error as EncoderError {
            throw EncoderError(.unavailable, "the VA driver (\(caps.vendor)) refused the settings at the first frame "
                + "(\(describeSettings(profile))): \(error.message)")
        }
        guard first.packetBytes > 0 else {
            throw EncoderError(.unavailable, "the VA driver (\(caps.vendor)) returned an empty packet for a first frame "
                + "(\(describeSettings(profile)))")
        }
        guard first.hasParameterSets else {
            throw EncoderError(.unavailable, "the VA driver (\(caps.vendor)) writes no \(settings.codec.parameterSetOrder.map(\.rawValue).joined(separator: "/")) and takes none from FFmpeg "
                + "(no packed headers): its stream could not be decoded")
        }
        let ctx = try openCodec(codec, frames: frames, profile: profile)
        // With global headers the parameter sets are also in extradata: the stream writer keeps them, so
        // every IDR gets them even where the driver writes them only once or out of band.
        if let extradata = ctx.pointee.extradata, ctx.pointee.extradata_size > 0 {
            parameterSets = Array(UnsafeRawBufferPointer(start: extradata, count: Int(ctx.pointee.extradata_size)))
        }
        context = ctx
    }

    /// "640x480 @ 30 fps, H264ConstrainedBaseline, CBR 921600 bit/s", for messages.
    func describeSettings(_ profile: VAAPICapabilities.Profile) -> String {
        "\(settings.size) @ \(settings.framesPerSecond) fps, \(VAAPIDevice.shortName(profile.name))"
            + "\(usesLowPower ? " low-power" : ""), \(rateControl)"
    }

    func unavailable(_ what: String, _ status: Int32) -> EncoderError {
        let detail = LibavLogCapture.takeLastError().map { " (\($0))" } ?? ""
        return EncoderError(.unavailable, "\(what): \(libavErrorDescription(status))\(detail)")
    }

    private func failed(_ what: String, _ status: Int32) -> EncoderError {
        let detail = LibavLogCapture.takeLastError().map { " (\($0))" } ?? ""
        return EncoderError(.failed, "\(what): \(libavErrorDescription(status))\(detail)")
    }

    /// A pool whose buffers are mapped VA surfaces, so sources write straight into them.
    /// Before `start()`, or for another size, an ordinary pool (frames are then copied at `encode`).
    public func makePool(width: Int, height: Int, capacity: Int) -> PixelBufferPool {
        guard let frames = framesRef, width == settings.size.width, height == settings.size.height,
              let made = VAAPISurfaceBacking(frames: frames, capacity: capacity, path: uploadPath.kind, display: device.display,
                                             width: width, height: height) else {
            return PixelBufferPool(format: inputFormat, width: width, height: height, capacity: capacity)
        }
        backing = made
        return PixelBufferPool(format: inputFormat, width: width, height: height, capacity: capacity, backing: made)
    }

    public func encode(_ buffer: PixelBuffer, forceKeyframe: Bool) throws {
        guard let ctx = context, let frames = framesRef else { preconditionFailure("start() first") }
        packets.remember(sequence: buffer.sequence, captureTimeNanoseconds: buffer.captureTimeNanoseconds,
                         presentationTimeNanoseconds: buffer.presentationTimeNanoseconds)
        do {
            try handOver(buffer, frames: frames)
        } catch {
            onBufferDone?(buffer)
            throw error
        }
        uploadedFrames += 1
        // The pixels are in the surface: the pool buffer can take the next frame already.
        onBufferDone?(buffer)
        hwFrame.pointee.pts = Int64(buffer.sequence)
        hwFrame.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        let status = avcodec_send_frame(ctx, hwFrame)
        av_frame_unref(hwFrame)
        guard status >= 0 else {
            let error = failed("the VA-API encoder failed at frame \(buffer.sequence)", status)
            // Hand on whatever the GPU finished before it failed.
            try? drain()
            throw error
        }
        try drain()
    }

    /// Puts the frame's surface into `hwFrame`: unmaps the surface the source wrote into, or
    /// (a buffer in its own memory) copies the frame into a fresh surface.
    private func handOver(_ buffer: PixelBuffer, frames: UnsafeMutablePointer<AVBufferRef>) throws {
        let started = MonotonicClock.now(), startedCPU = ThreadCPUClock.now(), startedWait = runQueueWait.now()
        defer {
            // Time preempted is not the driver's: left out of the wall time.
            let preempted = runQueueWait.since(startedWait)
            let wall = MonotonicClock.now() - started
            encodeUploadNanoseconds += wall > preempted ? wall - preempted : 0
            encodeUploadCPUNanoseconds += ThreadCPUClock.now() - startedCPU
        }
        if let backing, !buffer.isInOwnMemory, buffer.backing === backing,
           try backing.finishUpload(bufferIndex: buffer.index, into: hwFrame) {
            // The source wrote the frame into the surface; unmapping ended the CPU's part.
            framesWrittenInPlace += 1
            uploadedBytes += buffer.planes.reduce(0) { $0 + $1.width * $1.height }
        } else {
            try upload(buffer, frames: frames)
            framesCopied += 1
        }
    }

    /// The copy path, one more CPU pass: pool memory → a freshly mapped VA surface.
    private func upload(_ buffer: PixelBuffer, frames: UnsafeMutablePointer<AVBufferRef>) throws {
        let status = av_hwframe_get_buffer(frames, hwFrame, 0)
        guard status >= 0 else { throw failed("no VA surface for frame \(buffer.sequence)", status) }
        // A derived mapping when it is faithful; a VA image when it is not, or when it fails now.
        var derivedFailure: Int32 = 0
        if uploadPath.isDirect {
            mapped.pointee.format = AV_PIX_FMT_NV12.rawValue
            derivedFailure = min(0, av_hwframe_map(mapped, hwFrame, Int32(AV_HWFRAME_MAP_WRITE | AV_HWFRAME_MAP_OVERWRITE)))
            if derivedFailure == 0 {
                uploadedBytes += Self.copy(buffer, into: VAAPISurfaceBacking.planes(of: mapped))
                av_frame_unref(mapped)  // unmapping ends the upload
                return
            }
        }
        do {
            if copyImage == nil {
                copyImage = try VAAPIImageMapping(display: device.display, width: settings.size.width, height: settings.size.height)
            }
            uploadedBytes += Self.copy(buffer, into: try copyImage!.map())
            try copyImage!.put(into: VASurfaceID(UInt(bitPattern: hwFrame.pointee.data.3)))
        } catch {
            av_frame_unref(hwFrame)
            let derived = derivedFailure < 0 ? "mapping a derived image failed: \(libavErrorDescription(derivedFailure)); " : ""
            throw EncoderError(.failed, "cannot map a VA surface for frame \(buffer.sequence): \(derived)\(error)")
        }
    }

    /// Copies a frame's two NV12 planes into mapped VA memory; returns the bytes copied.
    private static func copy(_ buffer: PixelBuffer, into destination: [PlaneMemory]) -> Int {
        var copied = 0
        for (plane, target) in zip(buffer.planes.prefix(2), destination) {
            let rowBytes = plane.width  // NV12: chroma width counts both bytes of each pair
            if target.stride == plane.stride && target.stride == rowBytes {
                target.base.update(from: plane.base, count: rowBytes * plane.height)
            } else {
                for row in 0..<plane.height {
                    (target.base + row * target.stride).update(from: plane.base + row * plane.stride, count: rowBytes)
                }
            }
            copied += rowBytes * plane.height
        }
        return copied
    }

    /// Nothing to put out: with no B-frames and `async_depth` 1 a frame's packet comes out in its own
    /// `encode` call. The next frame is forced to an IDR by the recorder.
    public func finishPending() throws {}

    public func flush() throws {
        guard let ctx = context else { return }
        let status = avcodec_send_frame(ctx, nil)
        if status < 0 && status != camrec_AVERROR_EOF {
            let error = failed("the VA-API encoder failed to flush", status)
            try? drain()
            throw error
        }
        try drain()
    }

    private func drain() throws {
        guard let ctx = context else { return }
        do {
            try packets.drain(ctx, packet, onPacket: onPacket)
        } catch let error as EncoderError {
            let detail = LibavLogCapture.takeLastError().map { " (\($0))" } ?? ""
            throw EncoderError(error.kind, error.message + detail)
        }
    }
}
