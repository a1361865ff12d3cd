import CV4L2
import Frames

/// What `camrec devices` shows about one node: identity, and for capture nodes every
/// format with its sizes and rates. Reading it takes no lock and changes no setting,
/// so it works while another program records.
public struct V4L2DeviceInfo: Sendable {
    public var path: String
    public var identity: V4L2DeviceIdentity
    /// Empty unless the node captures video.
    public var formats: [V4L2FormatOffer]
    public var isMultiplanar: Bool

    public static func inspect(path: String) throws(CaptureError) -> V4L2DeviceInfo {
        try inspect(path: path, system: LinuxV4L2System())
    }

    static func inspect(path: String, system: V4L2System) throws(CaptureError) -> V4L2DeviceInfo {
        let device: V4L2Device
        do {
            device = try V4L2Device(path: path, system: system)
        } catch {
            throw V4L2CaptureSource.openError(error, path: path)
        }
        defer { device.close() }
        let identity: V4L2DeviceIdentity
        do {
            identity = try device.identity()
        } catch {
            throw CaptureError(.notACaptureDevice, "\(path) is not a V4L2 video device (\(error))")
        }
        guard identity.capabilities.canCaptureVideo else {
            return V4L2DeviceInfo(path: path, identity: identity, formats: [], isMultiplanar: false)
        }
        let multiplanar = !identity.capabilities.contains(.videoCapture)
        let type = multiplanar ? V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE : V4L2_BUF_TYPE_VIDEO_CAPTURE
        return V4L2DeviceInfo(path: path, identity: identity,
                              formats: (try? V4L2FormatCatalog.formats(of: device, bufferType: type)) ?? [], isMultiplanar: multiplanar)
    }

    /// Every `/dev/video*` node, capture or not; nodes that cannot be opened are left out.
    public static func all() -> [V4L2DeviceInfo] {
        V4L2DeviceDirectory.videoNodes().compactMap { try? inspect(path: $0) }
    }
}
