import Bitstream
import Frames

/// `--encoder camera`: the camera encodes, camrec does not. Each pool buffer holds one access unit of
/// the camera's H.264 or H.265 (`PixelBuffer.payloadByteCount` bytes), which goes on as it is to the
/// stream writer, which holds it to camrec's contract like any encoder's output (4-byte start codes,
/// the parameter sets put back before every IDR, AUD, SEI and filler left out). No library, no thread:
/// the recorder calls it inline (`isPassthrough`).
///
/// A forced IDR is asked of the camera (`forceKeyFrame`, its FORCE_KEY_FRAME control); without one the
/// stream's next IDR is the camera's own. Until the first IDR, and again after frames the camera sent but
/// camrec never got (a gap in the sequence numbers: the pictures after it refer to them), pictures are left
/// out, as no receiver could decode them, and an IDR is asked for; their parameter sets still go to the
/// writer, which remembers them for the IDRs that come without.
///
/// What the writer cannot repair it reports once each through `onFinding`: several slices per picture,
/// B slices (H.264).
public final class CameraStreamEncoder: VideoEncoder {
    public let name: String
    public let codec: VideoCodec
    /// Pool buffers only carry bytes here; any format will do.
    public let inputFormat: PixelFormat = .i420
    public let maximumBuffersInFlight = 1
    public var onBufferDone: ((PixelBuffer) -> Void)?
    public var onPacket: ((EncodedPacket) -> Void)?
    /// Called on the recording thread, once per kind, with a sentence about the camera's stream.
    public var onFinding: ((String) -> Void)?

    private let forceKeyFrame: (() -> Bool)?
    private var seenIDR = false
    private var lastSequence: UInt64?
    private var reportedSlices = false
    private var reportedBSlices = false
    private var parameterSetScratch: [UInt8] = []

    /// Pictures left out because no IDR had come yet (at the start, or after a gap).
    public private(set) var picturesBeforeIDR = 0
    /// Buffers with no NAL unit in them (a driver's empty or stale buffer).
    public private(set) var buffersWithoutUnits = 0
    /// Gaps in the camera's frames after which pictures were left out until its next IDR.
    public private(set) var gapsWaitedOut = 0
    /// The most slice NAL units seen in one access unit.
    public private(set) var mostSlicesPerPicture = 0

    /// - Parameter forceKeyFrame: asks the camera for an IDR; nil (or false back) when it cannot.
    public init(codec: VideoCodec, forceKeyFrame: (() -> Bool)?) {
        self.codec = codec
        self.forceKeyFrame = forceKeyFrame
        name = "the camera's own \(codec.displayName) (no encoding)"
    }

    public var isPassthrough: Bool { true }

    public func start() throws {}

    public func encode(_ buffer: PixelBuffer, forceKeyframe: Bool) throws {
        let bytes = UnsafeRawBufferPointer(start: buffer.planes[0].base, count: buffer.payloadByteCount)
        var isIDR = false
        var slices = 0
        var bSlice = false
        var hasParameterSets = false
        AnnexBScanner.forEachUnit(in: bytes) { range, _ in
            let unit = UnsafeRawBufferPointer(rebasing: bytes[range])
            let role = codec.role(ofType: codec.typeValue(of: unit))
            if case .parameterSet = role { hasParameterSets = true }
            guard role.isVCL else { return }
            slices += 1
            if role == .idrSlice { isIDR = true }
            if codec == .h264 && !bSlice && slices == 1,
               let header = try? SliceHeader(nalUnit: NALUnit(bytes: Array(unit.prefix(32)))), header.sliceType == .b {
                bSlice = true
            }
        }
        defer { onBufferDone?(buffer) }
        // A frame missing before this one: what follows refers to it, up to the camera's next IDR.
        let afterGap = lastSequence.map { buffer.sequence != $0 &+ 1 } ?? false
        lastSequence = buffer.sequence
        if afterGap && seenIDR && !isIDR {
            seenIDR = false
            gapsWaitedOut += 1
            if gapsWaitedOut == 1 {
                onFinding?("frames of the camera were lost before camrec got them (counted in dropped=); the pictures after "
                    + "such a gap are left out until the camera's next IDR, so every output stays decodable")
            }
        }
        // Asked for an IDR (at the start, for a joiner, after a gap): unless this is one, the camera makes its next one.
        if (forceKeyframe || afterGap) && !isIDR { _ = forceKeyFrame?() }
        if slices == 0 && !hasParameterSets {
            buffersWithoutUnits += 1
            return
        }
        report(slices: slices, bSlice: bSlice)
        if !seenIDR && !isIDR {
            if slices > 0 { picturesBeforeIDR += 1 }
            // The parameter sets alone, for the writer to remember: the camera may never send them again.
            if hasParameterSets { passParameterSets(of: bytes, buffer) }
            return
        }
        seenIDR = true
        onPacket?(EncodedPacket(data: bytes, isKeyframe: isIDR, sequence: buffer.sequence,
                                presentationTimeNanoseconds: buffer.presentationTimeNanoseconds,
                                captureTimeNanoseconds: buffer.captureTimeNanoseconds))
    }

    public func flush() throws {}

    /// After a gap in the source the camera's next pictures may refer to ones camrec never got.
    public func finishPending() throws {
        seenIDR = false
        lastSequence = nil
    }

    private func report(slices: Int, bSlice: Bool) {
        mostSlicesPerPicture = max(mostSlicesPerPicture, slices)
        if slices > 1 && !reportedSlices {
            reportedSlices = true
            onFinding?("the camera sends \(slices) slices per picture; camrec cannot join them, so receivers that hand "
                + "one NAL unit to their decoder see part pictures (camrec inspect says so)")
        }
        if bSlice && !reportedBSlices {
            reportedBSlices = true
            onFinding?("the camera sends B-frames; camrec passes them on but cannot remove them (camrec inspect says so)")
        }
    }

    private func passParameterSets(of bytes: UnsafeRawBufferPointer, _ buffer: PixelBuffer) {
        parameterSetScratch.removeAll(keepingCapacity: true)
        AnnexBScanner.forEachUnit(in: bytes) { range, _ in
            let unit = UnsafeRawBufferPointer(rebasing: bytes[range])
            guard case .parameterSet = codec.role(ofType: codec.typeValue(of: unit)) else { return }
            parameterSetScratch += [0, 0, 0, 1]
            parameterSetScratch.append(contentsOf: unit)
        }
        parameterSetScratch.withUnsafeBytes { sets in
            onPacket?(EncodedPacket(data: sets, isKeyframe: false, sequence: buffer.sequence,
                                    presentationTimeNanoseconds: buffer.presentationTimeNanoseconds,
                                    captureTimeNanoseconds: buffer.captureTimeNanoseconds))
        }
    }
}
