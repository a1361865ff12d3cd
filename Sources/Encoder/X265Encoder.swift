import CX265
import Frames
import Libav
import Synchronization

/// H.265 in software through libx265 itself, not through libavcodec, so a recording that needs no
/// container, decoder or VA-API loads none of libavcodec's ~130 libraries (issue 26: memory), as
/// `X264Encoder` does for H.264.
///
/// Asks x265 for what `SoftwareEncoder` asks it through libavcodec 5.1's wrapper, parameter for
/// parameter and in its order, so both make the same bytes (`X265EncoderTests` compares them):
/// IDRs exactly where the recorder asks, no B-frames, a closed GOP, no added latency. x265 copies
/// each picture into frames of its own inside `encoder_encode`, so a pool buffer goes back as soon
/// as that call returns.
public final class X265Encoder: VideoEncoder {
    public let name = "libx265 (software)"
    /// x265 takes no NV12.
    public let inputFormat = PixelFormat.i420
    public let maximumBuffersInFlight = 1
    public var onBufferDone: ((PixelBuffer) -> Void)?
    public var onPacket: ((EncodedPacket) -> Void)?

    private let settings: EncoderSettings
    private var parameters: UnsafeMutablePointer<x265_param>?
    private var encoder: OpaquePointer?
    private var picture = x265_picture()
    private var captureTimes = CaptureTimeRing()
    /// An access unit whose NAL units x265 did not leave side by side in memory, copied together.
    private var joined: [UInt8] = []

    public init(settings: EncoderSettings) {
        precondition(settings.codec == .hevc, "X265Encoder encodes H.265 only")
        self.settings = settings
    }

    deinit { close() }

    /// libx265's 8-bit entry points (Debian's libx265 builds 8, 10 and 12 bits into one library),
    /// the library opened on first use; nil with the reason when it cannot be.
    private static func loadAPI() -> Result<x265_api, EncoderError> {
        var api: x265_api?
        if let failure = LazyLibrary.loadFailure({ error, size in
            api = camrec_x265_api(error, size)?.pointee
            return api != nil
        }) {
            return .failure(EncoderError(.unavailable, failure))
        }
        return .success(api!)
    }
    private static let loaded = Mutex<Result<x265_api, EncoderError>?>(nil)
    private static var api: x265_api? { try? loaded.withLock { $0 }?.get() }

    private func close() {
        guard let api = Self.api else { return }
        if let encoder { api.encoder_close(encoder) }
        if let parameters { api.param_free(parameters) }
        encoder = nil
        parameters = nil
    }

    private static func openedAPI() -> Result<x265_api, EncoderError> {
        loaded.withLock { loaded in
            if loaded == nil { loaded = loadAPI() }
            return loaded!
        }
    }

    /// Why libx265 cannot be used here (it is opened to find out), or nil when it can.
    public static var unavailableReason: String? {
        if case .failure(let error) = openedAPI() { return error.message }
        return nil
    }

    public func start() throws {
        let api = try Self.openedAPI().get()
        guard let parameters = api.param_alloc() else { throw EncoderError(.unavailable, "out of memory setting up libx265") }
        self.parameters = parameters
        try configure(parameters, api)
        guard let opened = api.encoder_open(parameters) else {
            throw EncoderError(.unavailable, "libx265 refused the settings (\(settings.size) @ \(settings.framesPerSecond) fps, preset \(settings.preset))")
        }
        encoder = opened
    }

    /// What libavcodec 5.1's libx265 wrapper sets from the context `SoftwareEncoder` fills, in its
    /// order: the preset with tune=zerolatency, threads, timing, size, VUI, rate control, GOP, then
    /// the x265-params string.
    private func configure(_ p: UnsafeMutablePointer<x265_param>, _ api: x265_api) throws {
        guard api.param_default_preset(p, settings.preset, "zerolatency") >= 0 else {
            throw EncoderError(.unavailable, "libx265 has no preset \"\(settings.preset)\"")
        }
        // libavcodec's thread count is 1 unless asked; the x265-params below set frame-threads.
        p.pointee.frameNumThreads = 1
        let rate = settings.frameRateRational
        p.pointee.fpsNum = UInt32(rate.numerator)
        p.pointee.fpsDenom = UInt32(rate.denominator)
        let (width, height) = (settings.size.width, settings.size.height)
        p.pointee.sourceWidth = Int32(clamping: width)
        p.pointee.sourceHeight = Int32(clamping: height)
        p.pointee.bEnablePsnr = 0
        p.pointee.bOpenGOP = 1
        if width < 64 || height < 64 { p.pointee.maxCUSize = 32 }
        if width < 32 || height < 32 { p.pointee.maxCUSize = 16 }
        if width < 16 || height < 16 {
            throw EncoderError(.unavailable, "libx265 cannot encode \(settings.size): the picture is smaller than 16x16")
        }
        p.pointee.vui.bEnableVideoSignalTypePresentFlag = 1
        p.pointee.vui.bEnableVideoFullRangeFlag = 0
        p.pointee.vui.bEnableChromaLocInfoPresentFlag = 0
        p.pointee.internalCsp = X265_CSP_I420
        if settings.constantQP == nil {
            // One second of VBV at the bit rate, as `SoftwareEncoder` asks libavcodec for.
            let bitrate = Int64(settings.effectiveBitrate)
            p.pointee.rc.bitrate = Int32(clamping: bitrate / 1000)
            p.pointee.rc.rateControlMode = Int32(X265_RC_ABR.rawValue)
            p.pointee.rc.vbvBufferSize = Int32(clamping: Int64(Int32(clamping: bitrate)) / 1000)
            p.pointee.rc.vbvMaxBitrate = Int32(clamping: bitrate / 1000)
        } else {
            p.pointee.rc.vbvBufferSize = 0
            p.pointee.rc.vbvMaxBitrate = 0
        }
        p.pointee.bRepeatHeaders = 1
        let interval = "\(settings.keyframeInterval)"
        var options = [("keyint", interval), ("min-keyint", interval), ("bframes", "0")]
        options += Self.x265Options(settings)
        for (name, value) in options where api.param_parse(p, name, value) != 0 {
            throw EncoderError(.unavailable, "libx265 refused \(name)=\(value)")
        }
        // libavcodec starts the VBV 3/4 full (its default initial occupancy, in bits), which the
        // wrapper passes on in kbit where x265 would start 0.9 full.
        let bufferBits = settings.constantQP == nil ? Int64(Int32(clamping: Int64(settings.effectiveBitrate))) : 0
        let occupancy = bufferBits * 3 / 4
        if p.pointee.rc.vbvBufferSize != 0 && occupancy > 1000 && p.pointee.rc.vbvBufferInit == 0.9 {
            p.pointee.rc.vbvBufferInit = Double(Float(occupancy) / 1000)
        }
    }

    public func encode(_ buffer: PixelBuffer, forceKeyframe: Bool) throws {
        guard let encoder, let parameters, let api = Self.api else { preconditionFailure("start() first") }
        api.picture_init(parameters, &picture)
        let planes = buffer.planes
        precondition(planes.count == 3, "libx265 takes planar I420")
        picture.planes = (UnsafeMutableRawPointer(planes[0].base), UnsafeMutableRawPointer(planes[1].base), UnsafeMutableRawPointer(planes[2].base))
        picture.stride = (Int32(planes[0].stride), Int32(planes[1].stride), Int32(planes[2].stride))
        picture.pts = Int64(buffer.sequence)
        picture.bitDepth = 8
        // A forced keyframe must be an IDR: IDRs come exactly where the recorder asks for them.
        picture.sliceType = forceKeyframe ? X265_TYPE_IDR : X265_TYPE_AUTO
        picture.userSEI.numPayloads = 0
        captureTimes.remember(sequence: buffer.sequence, captureTimeNanoseconds: buffer.captureTimeNanoseconds,
                              presentationTimeNanoseconds: buffer.presentationTimeNanoseconds)
        let status = encodeAndDeliver(encoder, api, &picture)
        // x265 has copied the picture: the pool buffer is free again.
        onBufferDone?(buffer)
        guard status >= 0 else { throw EncoderError(.failed, "libx265 failed to encode frame \(buffer.sequence)") }
    }

    /// Hands x265's output for one call on as one access unit.
    private func encodeAndDeliver(_ encoder: OpaquePointer, _ api: x265_api, _ input: UnsafeMutablePointer<x265_picture>?) -> Int32 {
        var nals: UnsafeMutablePointer<x265_nal>?
        var count: UInt32 = 0
        var output = x265_picture()
        let status = api.encoder_encode(encoder, &nals, &count, input, &output)
        guard status >= 0, let nals, count > 0 else { return status }
        let units = UnsafeBufferPointer(start: nals, count: Int(count))
        var total = 0
        var sideBySide = true
        var keyframe = false
        for unit in units {
            sideBySide = sideBySide && unit.payload == units[0].payload.map { $0 + total }
            total += Int(unit.sizeBytes)
            // BLA, IDR and CRA pictures (NAL types 16-21), as libavcodec marks its packets.
            keyframe = keyframe || (16...21).contains(unit.type)
        }
        let sequence = UInt64(max(0, output.pts))
        let packet = { (data: UnsafeRawBufferPointer) in
            self.onPacket?(EncodedPacket(data: data, isKeyframe: keyframe, sequence: sequence,
                                         presentationTimeNanoseconds: self.captureTimes.presentationTime(of: sequence, orAt: self.settings.frameRateRational),
                                         captureTimeNanoseconds: self.captureTimes.captureTime(of: sequence)))
        }
        if sideBySide {
            packet(UnsafeRawBufferPointer(start: units[0].payload, count: total))
        } else {
            joined.removeAll(keepingCapacity: true)
            for unit in units { joined.append(contentsOf: UnsafeBufferPointer(start: unit.payload, count: Int(unit.sizeBytes))) }
            joined.withUnsafeBytes { packet($0) }
        }
        return status
    }

    public func flush() throws {
        guard let encoder, let api = Self.api else { return }
        while true {
            let status = encodeAndDeliver(encoder, api, nil)
            guard status >= 0 else { throw EncoderError(.failed, "libx265 failed to flush") }
            if status == 0 { return }
        }
    }

    /// Drains what x265's frame threads hold, then opens a new encoder, whose first frame is an IDR
    /// with its parameter sets (as libavcodec, which cannot reopen a flushed one).
    public func finishPending() throws {
        guard encoder != nil else { return }
        try flush()
        close()
        try start()
    }

    /// The x265 parameters camrec gives libx265, in order; the tests' libavcodec reference
    /// (`SoftwareEncoder`) passes the same through libavcodec's x265-params.
    public static func x265Options(_ settings: EncoderSettings) -> [(name: String, value: String)] {
        var options = [("log-level", "error"), ("info", "0"), ("scenecut", "0"), ("open-gop", "0"), ("bframes", "0"),
                       ("keyint", "\(settings.keyframeInterval)"), ("min-keyint", "\(settings.keyframeInterval)"),
                       ("slices", "\(settings.slicesPerPicture)"), ("aud", "0"), ("repeat-headers", "1"),
                       ("frame-threads", "\(max(1, settings.softwareThreads))")]
        if let qp = settings.constantQP { options.append(("qp", "\(qp)")) }
        return options
    }
}
