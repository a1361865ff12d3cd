import SystemSupport
import Glibc

/// Which camera a video node belongs to, read from sysfs, so that the same camera can be found again when
/// it comes back under another `/dev/videoN` (a USB reset, a loose cable): its USB vendor:product and
/// serial first; without a serial, its USB port path (so a camera moved to another port is not
/// recognised, and says so); the node's index tells apart the several nodes one camera registers. A camera
/// not on USB (vivid, a platform device) is known by the bus info its driver reports.
public struct CameraIdentity: Sendable, Equatable, CustomStringConvertible {
    /// `046d:0825`; nil off USB.
    public var vendorProduct: String?
    public var serial: String?
    /// The USB device's sysfs name, its port path: `1-1.2` is port 2 of the hub on port 1 of bus 1.
    public var portPath: String?
    /// VIDIOC_QUERYCAP's bus_info (`usb-0000:00:14.0-1.2`, `platform:vivid-000`).
    public var busInfo: String
    /// `/sys/class/video4linux/videoN/index`: which of a camera's nodes this is (0 for the first).
    public var nodeIndex: Int

    public init(vendorProduct: String?, serial: String?, portPath: String?, busInfo: String, nodeIndex: Int) {
        self.vendorProduct = vendorProduct
        self.serial = serial
        self.portPath = portPath
        self.busInfo = busInfo
        self.nodeIndex = nodeIndex
    }

    /// The identity of `node` (`/dev/video0`, or a by-id or by-path link to it), from `sysfs`.
    public static func of(node: String, busInfo: String, sysfs: String = "/sys") -> CameraIdentity {
        let name = nodeName(node)
        let classDirectory = "\(sysfs)/class/video4linux/\(name)"
        let index = readAttribute("\(classDirectory)/index").flatMap { Int($0) } ?? 0
        var identity = CameraIdentity(vendorProduct: nil, serial: nil, portPath: nil, busInfo: busInfo, nodeIndex: index)
        // `device` points at the USB interface (`1-1.2:1.0`); its parent directory is the USB device.
        guard let interface = realPath("\(classDirectory)/device") else { return identity }
        let usbDevice = parent(of: interface)
        guard let vendor = readAttribute("\(usbDevice)/idVendor"), let product = readAttribute("\(usbDevice)/idProduct") else {
            return identity
        }
        identity.vendorProduct = "\(vendor):\(product)"
        identity.serial = readAttribute("\(usbDevice)/serial").flatMap { $0.isEmpty ? nil : $0 }
        identity.portPath = usbDevice.split(separator: "/").last.map(String.init)
        return identity
    }

    /// Whether `other` (a node seen now) is this camera: same node index, and then the same USB
    /// vendor:product and serial, or without a serial the same vendor:product at the same port, or off
    /// USB the same bus info. Never merely the same `/dev/videoN`.
    public func isSameCamera(as other: CameraIdentity) -> Bool {
        guard nodeIndex == other.nodeIndex else { return false }
        if let vendorProduct {
            guard other.vendorProduct == vendorProduct else { return false }
            if let serial { return other.serial == serial }
            return portPath != nil && other.portPath == portPath && other.serial == nil
        }
        return other.vendorProduct == nil && busInfo == other.busInfo
    }

    /// How this camera will be recognised when it comes back, for `camrec devices` and the log.
    public var matchedBy: String {
        guard let vendorProduct else { return "by its bus info \(busInfo) (not a USB camera), node \(nodeIndex)" }
        if let serial { return "by USB \(vendorProduct) serial \(serial), node \(nodeIndex), on any port" }
        return "by USB \(vendorProduct) at port \(portPath ?? "?"), node \(nodeIndex) (it has no serial: on another port it is not recognised)"
    }

    public var description: String {
        var words: [String] = []
        if let vendorProduct { words.append("USB \(vendorProduct)") }
        if let serial { words.append("serial \(serial)") }
        if let portPath { words.append("port \(portPath)") }
        words.append("bus \(busInfo)")
        words.append("node \(nodeIndex)")
        return words.joined(separator: ", ")
    }

    /// `video0` for `/dev/video0` or any link to it.
    public static func nodeName(_ node: String) -> String {
        let resolved = realPath(node) ?? node
        return resolved.split(separator: "/").last.map(String.init) ?? resolved
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }

    private static func realPath(_ path: String) -> String? { SystemFiles.resolved(path) }

    private static func readAttribute(_ path: String) -> String? { SystemFiles.firstLine(of: path) }
}
