import CV4L2
import SystemSupport

/// What a V4L2 node can do (`v4l2_capability.device_caps`, or `capabilities` on old
/// drivers that do not report per-node caps).
public struct V4L2Capabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let videoCapture = Self(rawValue: UInt32(V4L2_CAP_VIDEO_CAPTURE))
    public static let videoCaptureMultiplanar = Self(rawValue: UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE))
    public static let videoOutput = Self(rawValue: UInt32(V4L2_CAP_VIDEO_OUTPUT))
    public static let videoOutputMultiplanar = Self(rawValue: UInt32(V4L2_CAP_VIDEO_OUTPUT_MPLANE))
    public static let videoOverlay = Self(rawValue: UInt32(V4L2_CAP_VIDEO_OVERLAY))
    public static let videoMemoryToMemory = Self(rawValue: UInt32(V4L2_CAP_VIDEO_M2M))
    public static let videoMemoryToMemoryMultiplanar = Self(rawValue: UInt32(V4L2_CAP_VIDEO_M2M_MPLANE))
    public static let vbiCapture = Self(rawValue: UInt32(V4L2_CAP_VBI_CAPTURE))
    public static let vbiOutput = Self(rawValue: UInt32(V4L2_CAP_VBI_OUTPUT))
    public static let slicedVBICapture = Self(rawValue: UInt32(V4L2_CAP_SLICED_VBI_CAPTURE))
    public static let radio = Self(rawValue: UInt32(V4L2_CAP_RADIO))
    public static let tuner = Self(rawValue: UInt32(V4L2_CAP_TUNER))
    public static let sdrCapture = Self(rawValue: UInt32(V4L2_CAP_SDR_CAPTURE))
    public static let sdrOutput = Self(rawValue: UInt32(V4L2_CAP_SDR_OUTPUT))
    public static let metadataCapture = Self(rawValue: UInt32(V4L2_CAP_META_CAPTURE))
    public static let metadataOutput = Self(rawValue: UInt32(V4L2_CAP_META_OUTPUT))
    public static let touch = Self(rawValue: UInt32(V4L2_CAP_TOUCH))
    public static let readWrite = Self(rawValue: UInt32(V4L2_CAP_READWRITE))
    public static let streaming = Self(rawValue: UInt32(V4L2_CAP_STREAMING))
    public static let deviceCapabilities = Self(rawValue: UInt32(V4L2_CAP_DEVICE_CAPS))

    /// A capture node camrec can record from: video capture (either API) and streaming I/O.
    public var canCaptureVideo: Bool {
        !intersection([.videoCapture, .videoCaptureMultiplanar]).isEmpty && contains(.streaming)
    }

    /// What kind of node this is, in words, for error messages and listings.
    public var kind: String {
        if contains(.videoMemoryToMemory) || contains(.videoMemoryToMemoryMultiplanar) {
            return "a memory-to-memory (codec or converter) device"
        }
        if !intersection([.videoCapture, .videoCaptureMultiplanar]).isEmpty {
            return contains(.streaming) ? "a video capture device" : "a video capture device without streaming I/O"
        }
        if !intersection([.videoOutput, .videoOutputMultiplanar]).isEmpty { return "a video output device" }
        if contains(.videoOverlay) { return "a video overlay device" }
        if !intersection([.vbiCapture, .slicedVBICapture]).isEmpty { return "a VBI (teletext) capture device" }
        if contains(.vbiOutput) { return "a VBI output device" }
        if contains(.sdrCapture) || contains(.sdrOutput) { return "a software-defined radio device" }
        if contains(.radio) { return "a radio device" }
        if contains(.metadataCapture) { return "a metadata capture device" }
        if contains(.metadataOutput) { return "a metadata output device" }
        if contains(.touch) { return "a touch sensor device" }
        return "not a video capture device"
    }
}

/// `VIDIOC_QUERYCAP`'s answer, with strings decoded.
public struct V4L2DeviceIdentity: Sendable {
    public var driver: String
    public var card: String
    public var busInfo: String
    /// The capabilities of this node (not of the whole device).
    public var capabilities: V4L2Capabilities

    init(_ raw: v4l2_capability) {
        driver = String(cArray: raw.driver)
        card = String(cArray: raw.card)
        busInfo = String(cArray: raw.bus_info)
        let all = V4L2Capabilities(rawValue: raw.capabilities)
        capabilities = all.contains(.deviceCapabilities) ? V4L2Capabilities(rawValue: raw.device_caps) : all
    }
}
